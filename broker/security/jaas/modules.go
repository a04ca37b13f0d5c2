package jaas

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Kafka's login module classes (docs/sasl.md §1).
const (
	PlainLoginModule       = "org.apache.kafka.common.security.plain.PlainLoginModule"
	ScramLoginModule       = "org.apache.kafka.common.security.scram.ScramLoginModule"
	OAuthBearerLoginModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
	Krb5LoginModule        = "com.sun.security.auth.module.Krb5LoginModule"
)

// PlainUserPrefix is the prefix of PlainLoginModule's accepted users: user_<name>="<password>".
const PlainUserPrefix = "user_"

// ConfigEntryOption returns the option key of the first entry whose login module is moduleClass,
// as Kafka's JaasContext.configEntryOption does (a section may hold several modules).
func ConfigEntryOption(entries []Entry, key, moduleClass string) (string, bool) {
	for _, e := range entries {
		if e.LoginModule != moduleClass {
			continue
		}
		if v, ok := e.Options[key]; ok {
			return v, true
		}
	}
	return "", false
}

// FindModule returns the first entry of moduleClass.
func FindModule(entries []Entry, moduleClass string) (Entry, bool) {
	for _, e := range entries {
		if e.LoginModule == moduleClass {
			return e, true
		}
	}
	return Entry{}, false
}

// PlainUsers returns the users PlainLoginModule entries accept: name → password from every
// user_<name> option (the first entry naming a user wins, as ConfigEntryOption).
func PlainUsers(entries []Entry) map[string]string {
	users := map[string]string{}
	for _, e := range entries {
		if e.LoginModule != PlainLoginModule {
			continue
		}
		for k, v := range e.Options {
			name, ok := strings.CutPrefix(k, PlainUserPrefix)
			if !ok || name == "" {
				continue
			}
			if _, seen := users[name]; !seen {
				users[name] = v
			}
		}
	}
	return users
}

// Credentials returns the entry's username and password options: the broker's own credentials for
// inter-broker connections (PlainLoginModule, ScramLoginModule). Both must be present.
func (e Entry) Credentials() (username, password string, err error) {
	u, uok := e.Options["username"]
	p, pok := e.Options["password"]
	switch {
	case !uok || u == "":
		return "", "", fmt.Errorf("%s: option username not set", e.LoginModule)
	case !pok || p == "":
		return "", "", fmt.Errorf("%s: option password not set", e.LoginModule)
	}
	return u, p, nil
}

// TokenAuth reports ScramLoginModule's tokenauth option (a delegation token login, KIP-48):
// "true" case-insensitively, as Java's Boolean.parseBoolean.
func (e Entry) TokenAuth() bool { return strings.EqualFold(e.Options["tokenauth"], "true") }

// UnsecuredValidatorOptions are the options of Kafka's OAuthBearerUnsecuredValidatorCallbackHandler.
type UnsecuredValidatorOptions struct {
	PrincipalClaimName string        // unsecuredValidatorPrincipalClaimName, default "sub"
	ScopeClaimName     string        // unsecuredValidatorScopeClaimName, default "scope"
	RequiredScope      []string      // unsecuredValidatorRequiredScope, space-separated
	AllowableClockSkew time.Duration // unsecuredValidatorAllowableClockSkewMs, default 0
}

// DefaultUnsecuredValidatorOptions are the defaults when no option is given.
func DefaultUnsecuredValidatorOptions() UnsecuredValidatorOptions {
	return UnsecuredValidatorOptions{PrincipalClaimName: "sub", ScopeClaimName: "scope"}
}

// trimmedOr returns the trimmed option, or def when it is absent or blank.
func trimmedOr(e Entry, key, def string) string {
	if v := strings.TrimSpace(e.Options[key]); v != "" {
		return v
	}
	return def
}

// UnsecuredValidator reads the validator options of an OAuthBearerLoginModule entry.
func (e Entry) UnsecuredValidator() (UnsecuredValidatorOptions, error) {
	o := DefaultUnsecuredValidatorOptions()
	o.PrincipalClaimName = trimmedOr(e, "unsecuredValidatorPrincipalClaimName", o.PrincipalClaimName)
	o.ScopeClaimName = trimmedOr(e, "unsecuredValidatorScopeClaimName", o.ScopeClaimName)
	for _, item := range strings.Split(strings.TrimSpace(e.Options["unsecuredValidatorRequiredScope"]), " ") {
		if item == "" {
			continue
		}
		if !validScopeItem(item) {
			return o, fmt.Errorf("%s: option unsecuredValidatorRequiredScope: invalid scope value %q (RFC 6749 scope-token)", e.LoginModule, item)
		}
		o.RequiredScope = append(o.RequiredScope, item)
	}
	if v := strings.TrimSpace(e.Options["unsecuredValidatorAllowableClockSkewMs"]); v != "" {
		ms, err := strconv.ParseInt(v, 10, 32)
		if err != nil || ms < 0 {
			return o, fmt.Errorf("%s: option unsecuredValidatorAllowableClockSkewMs must be a non-negative integer, got %q", e.LoginModule, v)
		}
		o.AllowableClockSkew = time.Duration(ms) * time.Millisecond
	}
	return o, nil
}

// validScopeItem is RFC 6749's scope-token, 1*( %x21 / %x23-5B / %x5D-7E ), as Kafka's
// OAuthBearerScopeUtils checks it.
func validScopeItem(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7E || c == '"' || c == '\\' {
			return false
		}
	}
	return s != ""
}

// UnsecuredLoginOptions are the options of Kafka's OAuthBearerUnsecuredLoginCallbackHandler (the
// client side: the token a broker would present on an inter-broker connection).
type UnsecuredLoginOptions struct {
	PrincipalClaimName string              // unsecuredLoginPrincipalClaimName, default "sub"
	ScopeClaimName     string              // unsecuredLoginScopeClaimName, default "scope"
	Lifetime           time.Duration       // unsecuredLoginLifetimeSeconds, default 3600 s
	StringClaims       map[string]string   // unsecuredLoginStringClaim_<name>
	NumberClaims       map[string]float64  // unsecuredLoginNumberClaim_<name>
	ListClaims         map[string][]string // unsecuredLoginListClaim_<name>: first char is the separator, empty items dropped
	Extensions         map[string]string   // unsecuredLoginExtension_<name>
}

// UnsecuredLogin reads the login options of an OAuthBearerLoginModule entry. The principal claim
// must be given as a non-blank string claim.
func (e Entry) UnsecuredLogin() (UnsecuredLoginOptions, error) {
	o := UnsecuredLoginOptions{
		PrincipalClaimName: trimmedOr(e, "unsecuredLoginPrincipalClaimName", "sub"),
		ScopeClaimName:     trimmedOr(e, "unsecuredLoginScopeClaimName", "scope"),
		Lifetime:           time.Hour,
		StringClaims:       map[string]string{},
		NumberClaims:       map[string]float64{},
		ListClaims:         map[string][]string{},
		Extensions:         map[string]string{},
	}
	if v := strings.TrimSpace(e.Options["unsecuredLoginLifetimeSeconds"]); v != "" {
		s, err := strconv.ParseInt(v, 10, 64)
		if err != nil || s <= 0 {
			return o, fmt.Errorf("%s: option unsecuredLoginLifetimeSeconds must be a positive integer, got %q", e.LoginModule, v)
		}
		o.Lifetime = time.Duration(s) * time.Second
	}
	for _, k := range e.OptionKeys() {
		v := e.Options[k]
		for _, prefix := range []string{"unsecuredLoginStringClaim_", "unsecuredLoginNumberClaim_", "unsecuredLoginListClaim_"} {
			if c := strings.TrimPrefix(k, prefix); c != k && (c == "iat" || c == "exp") {
				return o, fmt.Errorf("%s: option %s: the %s claim is set automatically and cannot be given", e.LoginModule, k, c)
			}
		}
		switch {
		case strings.HasPrefix(k, "unsecuredLoginStringClaim_"):
			o.StringClaims[strings.TrimPrefix(k, "unsecuredLoginStringClaim_")] = v
		case strings.HasPrefix(k, "unsecuredLoginNumberClaim_"):
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return o, fmt.Errorf("%s: option %s must be a number, got %q", e.LoginModule, k, v)
			}
			o.NumberClaims[strings.TrimPrefix(k, "unsecuredLoginNumberClaim_")] = n
		case strings.HasPrefix(k, "unsecuredLoginListClaim_"):
			items := []string{} // "" or a lone separator: an empty list
			if _, size := utf8.DecodeRuneInString(v); len(v) > size {
				for _, it := range strings.Split(v[size:], v[:size]) {
					if it != "" {
						items = append(items, it)
					}
				}
			}
			o.ListClaims[strings.TrimPrefix(k, "unsecuredLoginListClaim_")] = items
		case strings.HasPrefix(k, "unsecuredLoginExtension_"):
			o.Extensions[strings.TrimPrefix(k, "unsecuredLoginExtension_")] = v
		}
	}
	if strings.TrimSpace(o.StringClaims[o.PrincipalClaimName]) == "" {
		return o, fmt.Errorf("%s: option unsecuredLoginStringClaim_%s (the principal) must be set", e.LoginModule, o.PrincipalClaimName)
	}
	return o, nil
}
