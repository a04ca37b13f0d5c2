package sasl

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
)

// Kafka's unsecured JWS (OAuthBearerUnsecuredJws) and the checks of its validator
// (OAuthBearerUnsecuredValidatorCallbackHandler), docs/sasl.md §4.

// unsecuredJWS is a validated unsecured token.
type unsecuredJWS struct {
	principal string
	expiry    time.Time
}

// validationError is a failed validation: the challenge's status and, for a missing scope, the
// required scope in Java's List.toString form.
type validationError struct {
	reason string // logged only
	scope  string
}

func (e *validationError) json() string {
	if e.scope != "" {
		b, _ := json.Marshal(e.scope)
		return `{"status":"insufficient_scope", "scope":` + string(b) + `}`
	}
	return `{"status":"invalid_token"}`
}

func invalidToken(format string, args ...any) *validationError {
	return &validationError{reason: fmt.Sprintf(format, args...)}
}

// claimValue is a claim as Kafka's toMap converts it from JSON: a string, a json.Number, or, for
// an array, a list of each element's text. Jackson's asText turns the other JSON values into
// strings: true/false, null into "null", an object into "".
func claimValue(v any) any {
	switch v := v.(type) {
	case string, json.Number:
		return v
	case []any:
		out := make([]string, len(v))
		for i, e := range v {
			out[i], _ = claimValue(e).(string)
			if n, ok := e.(json.Number); ok {
				out[i] = n.String()
			}
		}
		return out
	case bool:
		return fmt.Sprint(v)
	case nil:
		return "null"
	default:
		return ""
	}
}

// decodeJWSPart decodes one base64url part as a JSON object (the token grammar of the initial
// response admits neither '+', '/' nor '=').
func decodeJWSPart(part, what string) (map[string]any, *validationError) {
	b, err := base64.RawURLEncoding.DecodeString(part)
	if err != nil {
		return nil, invalidToken("%s: malformed Base64 URL encoded value", what)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var raw any
	if err := d.Decode(&raw); err != nil {
		return nil, invalidToken("%s: malformed JSON", what)
	}
	obj, _ := raw.(map[string]any) // Jackson: a non-object has no fields
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		out[k] = claimValue(v)
	}
	return out, nil
}

// validate is OAuthBearerUnsecuredJws plus the validator's checks.
func (s oauthServer) validate(token string) (unsecuredJWS, *validationError) {
	var out unsecuredJWS
	if strings.Contains(token, "..") {
		return out, invalidToken("malformed compact serialization contains '..'")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return out, invalidToken("unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values")
	}
	header, verr := decodeJWSPart(parts[0], "header")
	if verr != nil {
		return out, verr
	}
	claims, verr := decodeJWSPart(parts[1], "claims")
	if verr != nil {
		return out, verr
	}
	if alg, _ := header["alg"].(string); alg != "none" {
		return out, invalidToken("unsecured JWS must have 'none' for an algorithm")
	}
	if parts[2] != "" {
		return out, invalidToken("unsecured JWS must not contain a digital signature")
	}
	scope, verr := scopeClaim(claims, s.opts.ScopeClaimName)
	if verr != nil {
		return out, verr
	}
	name := s.opts.PrincipalClaimName
	principal, ok := claims[name].(string)
	if !ok || strings.TrimSpace(principal) == "" {
		return out, invalidToken("required claim %s missing, not a string or blank", name)
	}
	now := s.now()
	skew := s.opts.AllowableClockSkew
	iat, hasIat, verr := numericClaim(claims, "iat")
	if verr != nil {
		return out, verr
	}
	if hasIat && now.Add(skew).Before(iat) {
		return out, invalidToken("the Issued At value was after the indicated time plus allowable clock skew")
	}
	exp, hasExp, verr := numericClaim(claims, "exp")
	if verr != nil {
		return out, verr
	}
	if !hasExp {
		return out, invalidToken("required claim missing: exp")
	}
	if !now.Add(-skew).Before(exp) {
		return out, invalidToken("the indicated time minus allowable clock skew was on or after the Expiration Time value")
	}
	if hasIat && !exp.After(iat) {
		return out, invalidToken("the Expiration Time was not after the Issued At time")
	}
	for _, req := range s.opts.RequiredScope {
		if !scope[req] {
			return out, &validationError{reason: "the provided scope was missing a required scope " + req,
				scope: "[" + strings.Join(s.opts.RequiredScope, ", ") + "]"}
		}
	}
	return unsecuredJWS{principal: principal, expiry: exp}, nil
}

// numericClaim reads a NumericDate claim (seconds, maybe fractional) as Kafka does: ms = round(s*1000).
func numericClaim(claims map[string]any, name string) (time.Time, bool, *validationError) {
	v, ok := claims[name]
	if !ok {
		return time.Time{}, false, nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return time.Time{}, false, invalidToken("the '%s' claim was not of type Number", name)
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || math.Abs(f) > 1e14 {
		return time.Time{}, false, invalidToken("the '%s' claim is out of range", name)
	}
	return time.UnixMilli(int64(math.Round(f * 1000))), true, nil
}

// scopeClaim reads the scope claim as Kafka's calculateScope: a string is ONE scope item (trimmed;
// Kafka does not split it at spaces), a list gives its non-blank items trimmed; absent or blank is
// empty; a number is an error.
func scopeClaim(claims map[string]any, name string) (map[string]bool, *validationError) {
	out := map[string]bool{}
	switch v := claims[name].(type) {
	case nil:
	case string:
		if t := strings.TrimSpace(v); t != "" {
			out[t] = true
		}
	case []string:
		for _, it := range v {
			if t := strings.TrimSpace(it); t != "" {
				out[t] = true
			}
		}
	default:
		return nil, invalidToken("the '%s' claim was not of type List", name)
	}
	return out, nil
}

// UnsecuredJWS builds an unsecured token (alg none, no signature, base64url without padding) from
// claims: for tests and an inter-broker client.
func UnsecuredJWS(claims map[string]any) (string, error) {
	c, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc(c) + ".", nil
}
