package config

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/isrbroker/isrbroker/broker/config/configdef"
)

// Load reads a server.properties file, applies the --override key=value pairs after it (later
// wins), and returns the typed, validated config and the warnings to print (one per known
// Kafka setting that isrbroker ignores). It does not read the environment (LoadAll does).
func Load(path string, overrides []string) (*Config, []string, error) {
	c, r, err := LoadAll(Sources{Path: path, Overrides: overrides})
	return c, r.Warnings, err
}

// Sources are where the broker's properties come from, lowest precedence first.
type Sources struct {
	Path      string   // server.properties
	Environ   []string // "NAME=value" entries (os.Environ()): the KAFKA_ variables (FromEnv)
	Overrides []string // --override key=value, later wins
}

// Report tells what LoadAll applied besides the file, for the start-up log.
type Report struct {
	Warnings   []string     // one per known Kafka setting that isrbroker ignores
	FromEnv    []EnvSetting // properties set by environment variables (not overridden)
	SkippedEnv []string     // KAFKA_ variables of the JVM, logging or JMX (EnvNotConfig)
}

// LoadAll reads src.Path, applies the KAFKA_ environment variables of src.Environ over it and
// the --override pairs over both (docs/containers.md), and returns the typed, validated config.
// An error caused by an environment variable's key or value names the variable (*EnvError).
func LoadAll(src Sources) (*Config, Report, error) {
	var r Report
	f, err := os.Open(src.Path)
	if err != nil {
		return nil, r, fmt.Errorf("config file: %w", err)
	}
	defer f.Close()
	props, err := ParseProperties(f)
	if err != nil {
		return nil, r, fmt.Errorf("config file %s: %w", src.Path, err)
	}
	env, skipped, err := FromEnv(src.Environ)
	if err != nil {
		return nil, r, err
	}
	r.SkippedEnv = skipped
	envVar := map[string]string{} // key -> the variable that set it
	for _, s := range env {
		props[s.Key] = s.Value
		envVar[s.Key] = s.Var
	}
	for _, o := range src.Overrides {
		k, v, err := ParseOverride(o)
		if err != nil {
			return nil, r, err
		}
		props[k] = v
		delete(envVar, k)
	}
	for _, s := range env {
		if _, ok := envVar[s.Key]; ok {
			r.FromEnv = append(r.FromEnv, s)
		}
	}
	c, warnings, err := Parse(props)
	if err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			if v, ok := envVar[ce.Key]; ok {
				return nil, r, &EnvError{Var: v, Err: err}
			}
		}
		return nil, r, err
	}
	r.Warnings = warnings
	return c, r, nil
}

// ParseOverride splits a --override argument "key=value" (Kafka's kafka-server-start.sh
// --override syntax). The value may itself contain '='.
func ParseOverride(s string) (string, string, error) {
	k, v, ok := strings.Cut(s, "=")
	k = strings.TrimSpace(k)
	if !ok || k == "" {
		return "", "", fmt.Errorf("invalid override %q: expected key=value", s)
	}
	return k, strings.TrimSpace(v), nil
}

// knownPrefixes are Kafka's prefixed per-listener settings (listener.name.<name>.<config>),
// which configure SSL and SASL listeners.
var knownPrefixes = []string{"listener.name."}

// compositeKeys are used keys handled together in parseComposite because of a precedence rule
// or a derived default. Every other used key is bound to a Config field by its struct tag.
var compositeKeys = []string{
	"broker.id", "zookeeper.connect", "zookeeper.connection.timeout.ms",
	"log.dirs", "log.dir",
	"log.retention.ms", "log.retention.minutes", "log.retention.hours",
	"log.roll.ms", "log.roll.hours",
	"log.flush.interval.ms", "log.flush.scheduler.interval.ms",
	"listeners", "advertised.listeners", "port", "host.name", "advertised.host.name", "advertised.port",
	"listener.security.protocol.map", "inter.broker.listener.name", "security.inter.broker.protocol",
} // + perListenerKeys (security.go)

// Class says how isrbroker treats a property name.
type Class int

// Property classes.
const (
	Unknown Class = iota // no Kafka 2.4 broker setting: a typo, start-up stops
	Used                 // typed and validated by isrbroker
	Ignored              // a real Kafka 2.4 setting isrbroker does not use: one warning
)

// Classify reports how a property name is treated.
func Classify(key string) Class {
	if k, ok := configdef.Lookup(key, configdef.Broker); ok {
		if k.Status == configdef.Used {
			return Used
		}
		return Ignored
	}
	if cl, _ := classifyPrefixed(key); cl != Unknown {
		return cl
	}
	for _, p := range knownPrefixes {
		if strings.HasPrefix(key, p) && len(key) > len(p) {
			return Ignored
		}
	}
	return Unknown
}

// Suggest returns the broker key nearest to key, or "" if none is close; a topic-level key
// suggests its broker-level synonym.
func Suggest(key string) string { return configdef.Suggest(key, configdef.Broker) }

// unknownKey is the error for a key that is not a broker setting, with the best hint.
func unknownKey(k string) *Error {
	e := &Error{Kind: ErrUnknownKey, Key: k, Hint: Suggest(k)}
	if t, ok := configdef.Lookup(k, configdef.Topic); ok && t.Synonym != "" {
		e.Reason = "it is a topic-level setting; the broker-wide default is " + strconv.Quote(t.Synonym)
	} else if _, ok := configdef.Lookup(k, configdef.DynamicBroker); ok {
		e.Reason = "it is a dynamic broker setting, written to ZooKeeper (/config/brokers), not to server.properties"
	}
	return e
}

// fromTable converts configdef's value error into this package's.
func fromTable(err error) error {
	var pe *configdef.ParseError
	if errors.As(err, &pe) {
		return &Error{Kind: ErrInvalidValue, Key: pe.Key, Value: pe.Value, Reason: pe.Reason}
	}
	return err
}

// Parse types and validates merged properties (file then overrides). Unknown keys are an
// error with the nearest known key as a hint; known Kafka settings isrbroker does not use
// are typed and validated as Kafka would, then each produces one warning, sorted by key.
func Parse(props map[string]string) (*Config, []string, error) {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)

	var warnings []string
	for _, k := range keys {
		switch Classify(k) {
		case Unknown:
			return nil, nil, unknownKey(k)
		case Used:
			if err := checkPrefixed(k, props[k]); err != nil {
				return nil, nil, err
			}
		case Ignored:
			why := "a per-listener setting of SSL and SASL listeners"
			if key, ok := configdef.Lookup(k, configdef.Broker); ok {
				if _, err := key.ParseValid(props[k]); err != nil {
					return nil, nil, fromTable(err)
				}
				if err := key.CheckSupported(props[k]); err != nil {
					return nil, nil, fromTable(err)
				}
				why = key.Reason
			}
			warnings = append(warnings, fmt.Sprintf("config key %q is a Kafka 2.4 broker setting that isrbroker does not use (%s); ignored", k, why))
		}
	}

	c := Default()
	// Props before Validate: the listeners' security keys are read from it (security.go).
	c.Props = make(map[string]string, len(props))
	for k, v := range props {
		c.Props[k] = v
	}
	for _, k := range keys {
		if b, ok := bound[k]; ok && !slices.Contains(compositeKeys, k) {
			if err := b.set(c, props[k]); err != nil {
				return nil, nil, err
			}
		}
	}
	// derived remembers which property set a canonical field, so that Validate's error names
	// the key and value the operator wrote (log.retention.hours rather than log.retention.ms).
	derived := map[string][2]string{}
	if err := c.parseComposite(props, derived); err != nil {
		return nil, nil, err
	}
	if err := c.Validate(); err != nil {
		var ce *Error
		if errors.As(err, &ce) && ce.Kind == ErrInvalidValue {
			if d, ok := derived[ce.Key]; ok && d[0] != ce.Key {
				ce.Key, ce.Value = d[0], d[1]
			}
		}
		return nil, nil, err
	}
	return c, warnings, nil
}

func (c *Config) parseComposite(props map[string]string, derived map[string][2]string) error {
	get := func(k string) (string, bool) { v, ok := props[k]; return v, ok }

	if v, ok := get("zookeeper.connect"); ok {
		c.ZookeeperConnect = v
		if v != "" {
			servers, chroot, err := parseZkConnect(v)
			if err != nil {
				return invalid("zookeeper.connect", v, "%v", err)
			}
			c.ZookeeperServers, c.ZookeeperChroot = servers, chroot
		}
	}
	// zookeeper.connection.timeout.ms defaults to zookeeper.session.timeout.ms.
	c.ZookeeperConnectionTimeout = c.ZookeeperSessionTimeout
	if v, ok := get("zookeeper.connection.timeout.ms"); ok {
		if err := bound["zookeeper.connection.timeout.ms"].set(c, v); err != nil {
			return err
		}
	}

	if v, ok := get("broker.id"); ok {
		if err := setInt32(&c.BrokerID, "broker.id", v); err != nil {
			return err
		}
		if c.BrokerID < 0 {
			return invalid("broker.id", v, "must be at least 0 (isrbroker does not generate broker ids)")
		}
	}

	// log.dirs > log.dir.
	if v, ok := get("log.dirs"); ok {
		dirs, err := splitList(v)
		if err != nil || len(dirs) == 0 {
			return invalid("log.dirs", v, "must be a comma-separated list of directories")
		}
		c.LogDirs = dirs
	} else if v, ok := get("log.dir"); ok {
		dirs, err := splitList(v)
		if err != nil || len(dirs) == 0 {
			return invalid("log.dir", v, "must be a directory")
		}
		c.LogDirs = dirs
		derived["log.dirs"] = [2]string{"log.dir", v}
	}

	// Retention: ms > minutes > hours; a negative result means unlimited (-1), as in
	// KafkaConfig.getLogRetentionTimeMillis.
	switch {
	case has(props, "log.retention.ms"):
		if err := bound["log.retention.ms"].set(c, props["log.retention.ms"]); err != nil {
			return err
		}
	case has(props, "log.retention.minutes"):
		if err := setMsFrom(&c.LogRetentionMs, 60*1000, "log.retention.minutes", props["log.retention.minutes"], derived, "log.retention.ms"); err != nil {
			return err
		}
	case has(props, "log.retention.hours"):
		if err := setMsFrom(&c.LogRetentionMs, 3600*1000, "log.retention.hours", props["log.retention.hours"], derived, "log.retention.ms"); err != nil {
			return err
		}
	}
	if c.LogRetentionMs < 0 {
		c.LogRetentionMs = -1
	}

	// Segment roll: ms > hours (log.roll.hours must be at least 1 in Kafka).
	switch {
	case has(props, "log.roll.ms"):
		if err := bound["log.roll.ms"].set(c, props["log.roll.ms"]); err != nil {
			return err
		}
	case has(props, "log.roll.hours"):
		if err := setMsFrom(&c.LogRollMs, 3600*1000, "log.roll.hours", props["log.roll.hours"], derived, "log.roll.ms"); err != nil {
			return err
		}
	}

	// log.flush.interval.ms defaults to log.flush.scheduler.interval.ms (Long.MaxValue).
	switch {
	case has(props, "log.flush.interval.ms"):
		if err := bound["log.flush.interval.ms"].set(c, props["log.flush.interval.ms"]); err != nil {
			return err
		}
	case has(props, "log.flush.scheduler.interval.ms"):
		v := props["log.flush.scheduler.interval.ms"]
		if err := setInt64(&c.LogFlushIntervalMs, "log.flush.scheduler.interval.ms", v); err != nil {
			return err
		}
		derived["log.flush.interval.ms"] = [2]string{"log.flush.scheduler.interval.ms", v}
	}

	return c.parseListeners(props, derived)
}

func (c *Config) parseListeners(props map[string]string, derived map[string][2]string) error {
	if v, ok := props["listener.security.protocol.map"]; ok {
		m, err := parseProtocolMap(v)
		if err != nil {
			return invalid("listener.security.protocol.map", v, "%v", err)
		}
		c.ListenerSecurityProtocolMap = m
	}

	// listeners; without it the deprecated host.name/port (Kafka 2.4 still honours them).
	switch {
	case has(props, "listeners"):
		v := props["listeners"]
		ls, err := parseListenerList(v)
		if err != nil {
			return invalid("listeners", v, "%v", err)
		}
		c.Listeners = ls
	case has(props, "port") || has(props, "host.name"):
		host := props["host.name"]
		port := 9092
		if v, ok := props["port"]; ok {
			p, err := parsePort("port", v)
			if err != nil {
				return err
			}
			port = p
		}
		c.Listeners = []Listener{{Name: "PLAINTEXT", Host: host, Port: port}}
		derived["listeners"] = [2]string{"port", props["port"]}
		if has(props, "host.name") && !has(props, "port") {
			derived["listeners"] = [2]string{"host.name", host}
		}
	}

	// advertised.listeners; else advertised.host.name/advertised.port; else listeners.
	switch {
	case has(props, "advertised.listeners"):
		v := props["advertised.listeners"]
		ls, err := parseListenerList(v)
		if err != nil {
			return invalid("advertised.listeners", v, "%v", err)
		}
		c.AdvertisedListeners = ls
	case has(props, "advertised.host.name") || has(props, "advertised.port"):
		base := Listener{Name: "PLAINTEXT", Port: 9092}
		if len(c.Listeners) > 0 {
			base = c.Listeners[0]
		}
		if v, ok := props["advertised.host.name"]; ok {
			base.Host = v
			derived["advertised.listeners"] = [2]string{"advertised.host.name", v}
		}
		if v, ok := props["advertised.port"]; ok {
			p, err := parsePort("advertised.port", v)
			if err != nil {
				return err
			}
			base.Port = p
			derived["advertised.listeners"] = [2]string{"advertised.port", v}
		}
		c.AdvertisedListeners = []Listener{base}
	default:
		c.AdvertisedListeners = append([]Listener(nil), c.Listeners...)
		// Like Kafka, an empty listener host is advertised as this machine's host name.
		for i := range c.AdvertisedListeners {
			if c.AdvertisedListeners[i].Host == "" {
				if h, err := os.Hostname(); err == nil {
					c.AdvertisedListeners[i].Host = h
				}
			}
		}
		if d, ok := derived["listeners"]; ok {
			derived["advertised.listeners"] = d
		} else if v, ok := props["listeners"]; ok {
			derived["advertised.listeners"] = [2]string{"listeners", v}
		}
	}
	for i := range c.Listeners {
		c.Listeners[i].SecurityProtocol = c.ListenerSecurityProtocolMap[c.Listeners[i].Name]
	}
	for i := range c.AdvertisedListeners {
		c.AdvertisedListeners[i].SecurityProtocol = c.ListenerSecurityProtocolMap[c.AdvertisedListeners[i].Name]
	}

	// Inter-broker listener: inter.broker.listener.name, or the listener named after
	// security.inter.broker.protocol (default PLAINTEXT); Kafka rejects both set.
	ibl, hasName := props["inter.broker.listener.name"]
	proto, hasProto := props["security.inter.broker.protocol"]
	if hasName && hasProto {
		return invalid("security.inter.broker.protocol", proto, "only one of inter.broker.listener.name and security.inter.broker.protocol may be set")
	}
	if hasProto {
		p := strings.ToUpper(proto)
		if !securityProtocols[p] {
			return invalid("security.inter.broker.protocol", proto, "must be one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL")
		}
		c.InterBrokerListenerName = p
		derived["inter.broker.listener.name"] = [2]string{"security.inter.broker.protocol", proto}
	}
	if hasName {
		c.InterBrokerListenerName = strings.ToUpper(ibl)
		derived["inter.broker.listener.name"] = [2]string{"inter.broker.listener.name", ibl}
	}
	return nil
}

func has(props map[string]string, k string) bool { _, ok := props[k]; return ok }

// splitList splits a comma-separated list, trimming entries; an empty entry is an error.
func splitList(v string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, fmt.Errorf("empty entry")
		}
		out = append(out, p)
	}
	return out, nil
}

var securityProtocols = map[string]bool{"PLAINTEXT": true, "SSL": true, "SASL_PLAINTEXT": true, "SASL_SSL": true}

// parseProtocolMap parses listener.security.protocol.map: NAME:PROTOCOL[,NAME:PROTOCOL].
func parseProtocolMap(v string) (map[string]string, error) {
	m := map[string]string{}
	entries, err := splitList(v)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		name, proto, ok := strings.Cut(e, ":")
		name, proto = strings.ToUpper(strings.TrimSpace(name)), strings.ToUpper(strings.TrimSpace(proto))
		if !ok || name == "" || proto == "" {
			return nil, fmt.Errorf("entry %q is not NAME:PROTOCOL", e)
		}
		if !securityProtocols[proto] {
			return nil, fmt.Errorf("unknown security protocol %q (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)", proto)
		}
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("listener name %s is mapped twice", name)
		}
		m[name] = proto
	}
	return m, nil
}

// parseListenerList parses NAME://host:port[,NAME://host:port]; IPv6 hosts go in brackets.
func parseListenerList(v string) ([]Listener, error) {
	entries, err := splitList(v)
	if err != nil {
		return nil, err
	}
	var out []Listener
	for _, e := range entries {
		name, addr, ok := strings.Cut(e, "://")
		if !ok || name == "" {
			return nil, fmt.Errorf("%q is not NAME://host:port", e)
		}
		i := strings.LastIndexByte(addr, ':')
		if i < 0 {
			return nil, fmt.Errorf("%q has no port", e)
		}
		host, portStr := addr[:i], addr[i+1:]
		if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
			host = host[1 : len(host)-1]
		} else if strings.ContainsAny(host, "[]/") {
			return nil, fmt.Errorf("%q has an invalid host", e)
		}
		port, err := strconv.Atoi(portStr)
		if err != nil || port < 0 || port > 65535 {
			return nil, fmt.Errorf("%q: port %q is not a number between 0 and 65535", e, portStr)
		}
		out = append(out, Listener{Name: strings.ToUpper(name), Host: host, Port: port})
	}
	return out, nil
}

// parseZkConnect parses host:port[,host:port][/chroot] (the ZooKeeper client's connect
// string; a missing port is 2181).
func parseZkConnect(s string) ([]string, string, error) {
	s = strings.TrimSpace(s)
	hosts, chroot := s, ""
	if i := strings.IndexByte(s, '/'); i >= 0 {
		hosts, chroot = s[:i], s[i:]
		if chroot == "/" {
			chroot = ""
		} else if strings.HasSuffix(chroot, "/") || strings.Contains(chroot, "//") {
			return nil, "", fmt.Errorf("invalid chroot path %q", chroot)
		}
	}
	var servers []string
	for _, h := range strings.Split(hosts, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			return nil, "", fmt.Errorf("empty server in the host:port list")
		}
		host, port := h, "2181"
		if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.HasSuffix(h, "]") {
			host, port = h[:i], h[i+1:]
		}
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		if host == "" {
			return nil, "", fmt.Errorf("server %q has no host", h)
		}
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 {
			return nil, "", fmt.Errorf("server %q: port %q is not a number between 1 and 65535", h, port)
		}
		servers = append(servers, hostPort(host, p))
	}
	return servers, chroot, nil
}

func hostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}

func parsePort(key, raw string) (int, error) {
	p, err := strconv.Atoi(strings.TrimSpace(raw))
	if err != nil {
		return 0, invalid(key, raw, "not an integer")
	}
	if p < 0 || p > 65535 {
		return 0, invalid(key, raw, "must be between 0 and 65535")
	}
	return p, nil
}

func parseInteger(key, raw string, bits int) (int64, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(raw), 10, bits)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return 0, invalid(key, raw, "out of range for a %d-bit integer", bits)
		}
		return 0, invalid(key, raw, "not an integer")
	}
	return v, nil
}

func setInt32(dst *int32, key, raw string) error {
	v, err := parseInteger(key, raw, 32)
	*dst = int32(v)
	return err
}

// setMsFrom types a minutes/hours property into a millisecond field, recording which
// property it came from.
func setMsFrom(dst *int64, factor int64, key, raw string, derived map[string][2]string, canonical string) error {
	v, err := parseInteger(key, raw, 32)
	if err != nil {
		return err
	}
	*dst = v * factor
	derived[canonical] = [2]string{key, raw}
	return nil
}

func setInt64(dst *int64, key, raw string) error {
	v, err := parseInteger(key, raw, 64)
	*dst = v
	return err
}
