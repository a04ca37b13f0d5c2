// Package jaas parses Kafka's JAAS configuration text: the value of a broker's
// listener.name.<listener>.<mechanism>.sasl.jaas.config property and the sections of a JAAS file
// (KafkaServer, <listener>.KafkaServer), with helpers for the options of Kafka's login modules
// (PlainLoginModule's user_<name>, ScramLoginModule, OAuthBearerLoginModule's unsecured options).
// The grammar and the lookup order are docs/sasl.md §1.
//
// The package imports nothing of the repository: it is a named shared leaf of docs/design.md
// ("Layering"). Errors name the module, the option or the line that is wrong, never a password.
package jaas

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ControlFlag is a login module's control flag.
type ControlFlag string

// The four flags of javax.security.auth.login.AppConfigurationEntry.
const (
	Required   ControlFlag = "required"
	Requisite  ControlFlag = "requisite"
	Sufficient ControlFlag = "sufficient"
	Optional   ControlFlag = "optional"
)

// Entry is one login module entry: `<module class> <flag> key=value ...;`.
type Entry struct {
	LoginModule string
	Flag        ControlFlag
	// Options maps each option to its value; a key given twice keeps its last value, as Kafka's
	// HashMap does.
	Options map[string]string
}

// Option returns an option's value.
func (e Entry) Option(key string) (string, bool) {
	v, ok := e.Options[key]
	return v, ok
}

// OptionKeys returns the option names, sorted.
func (e Entry) OptionKeys() []string {
	keys := make([]string, 0, len(e.Options))
	for k := range e.Options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ErrSyntax is wrapped by every parse error.
var ErrSyntax = errors.New("invalid JAAS configuration")

func syntaxErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrSyntax, fmt.Sprintf(format, args...))
}

// parser reads entries from a tokenizer, one token of look-ahead.
type parser struct {
	tz  *tokenizer
	tok token
}

func (p *parser) advance() error {
	t, err := p.tz.next()
	if err != nil {
		return syntaxErr("%v", err)
	}
	p.tok = t
	return nil
}

// entry parses one entry; p.tok is its first token (the module class).
func (p *parser) entry() (Entry, error) {
	if !p.tok.hasValue() {
		return Entry{}, syntaxErr("login module class expected, found %s", p.tok.describe())
	}
	e := Entry{LoginModule: p.tok.text, Options: map[string]string{}}
	if err := p.advance(); err != nil {
		return Entry{}, err
	}
	if !p.tok.hasValue() {
		return Entry{}, syntaxErr("login module control flag not specified for %s (required, requisite, sufficient or optional), found %s",
			e.LoginModule, p.tok.describe())
	}
	switch f := ControlFlag(strings.ToLower(p.tok.text)); f {
	case Required, Requisite, Sufficient, Optional:
		e.Flag = f
	default:
		return Entry{}, syntaxErr("invalid login module control flag %q for %s (required, requisite, sufficient or optional)",
			p.tok.text, e.LoginModule)
	}
	for {
		if err := p.advance(); err != nil {
			return Entry{}, err
		}
		if p.tok.is(";") {
			return e, nil
		}
		if p.tok.kind == tokEOF || p.tok.is("}") {
			return Entry{}, syntaxErr("JAAS config entry for %s not terminated by semi-colon", e.LoginModule)
		}
		if !p.tok.hasValue() {
			return Entry{}, syntaxErr("option name expected in the entry for %s, found %s", e.LoginModule, p.tok.describe())
		}
		key := p.tok.text
		if err := p.advance(); err != nil {
			return Entry{}, err
		}
		if !p.tok.is("=") {
			return Entry{}, syntaxErr("value not specified for key '%s' in the entry for %s ('=' expected, found %s)",
				key, e.LoginModule, p.tok.describe())
		}
		if err := p.advance(); err != nil {
			return Entry{}, err
		}
		if !p.tok.hasValue() {
			return Entry{}, syntaxErr("value not specified for key '%s' in the entry for %s (found %s)",
				key, e.LoginModule, p.tok.describe())
		}
		e.Options[key] = p.tok.text
	}
}

// ParseEntries parses a sequence of entries, the text of a sasl.jaas.config value. At least one
// entry is required.
func ParseEntries(text string) ([]Entry, error) {
	p := &parser{tz: newTokenizer(text)}
	var out []Entry
	for {
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind == tokEOF {
			break
		}
		e, err := p.entry()
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		return nil, syntaxErr("login module not specified in JAAS config")
	}
	return out, nil
}

// ParseConfigProperty parses a broker's sasl.jaas.config value (Kafka's JaasContext: the property
// holds exactly one login module).
func ParseConfigProperty(value string) (Entry, error) {
	entries, err := ParseEntries(value)
	if err != nil {
		return Entry{}, err
	}
	if len(entries) != 1 {
		return Entry{}, syntaxErr("JAAS config property contains %d login modules, should be 1 module", len(entries))
	}
	return entries[0], nil
}

// File is a parsed JAAS file: its sections by name.
type File struct {
	Sections map[string][]Entry
}

// ParseFile parses a JAAS file: `Name { entries };` repeated. A section name given twice is an
// error, as in Java's ConfigFile.
func ParseFile(text string) (File, error) {
	p := &parser{tz: newTokenizer(text)}
	f := File{Sections: map[string][]Entry{}}
	for {
		if err := p.advance(); err != nil {
			return File{}, err
		}
		if p.tok.kind == tokEOF {
			return f, nil
		}
		if !p.tok.hasValue() {
			return File{}, syntaxErr("section name expected, found %s", p.tok.describe())
		}
		name := p.tok.text
		if _, dup := f.Sections[name]; dup {
			return File{}, syntaxErr("can not specify multiple entries for section %s", name)
		}
		if err := p.advance(); err != nil {
			return File{}, err
		}
		if !p.tok.is("{") {
			return File{}, syntaxErr("'{' expected after section name %s, found %s", name, p.tok.describe())
		}
		entries := []Entry{}
		for {
			if err := p.advance(); err != nil {
				return File{}, err
			}
			if p.tok.is("}") {
				break
			}
			if p.tok.kind == tokEOF {
				return File{}, syntaxErr("section %s is not closed with '}'", name)
			}
			e, err := p.entry()
			if err != nil {
				return File{}, fmt.Errorf("section %s: %w", name, err)
			}
			entries = append(entries, e)
		}
		if err := p.advance(); err != nil {
			return File{}, err
		}
		if !p.tok.is(";") {
			return File{}, syntaxErr("';' expected after the '}' of section %s, found %s", name, p.tok.describe())
		}
		f.Sections[name] = entries
	}
}

// ServerSectionName is the broker's JAAS file section; ListenerSectionName(l) is tried first.
const ServerSectionName = "KafkaServer"

// ListenerSectionName is the listener's own section, `<listener lower-case>.KafkaServer`.
func ListenerSectionName(listener string) string {
	return strings.ToLower(listener) + "." + ServerSectionName
}

// ServerConfigKey is the broker property of a listener's and mechanism's JAAS config:
// listener.name.<listener lower-case>.<mechanism lower-case>.sasl.jaas.config.
func ServerConfigKey(listener, mechanism string) string {
	return "listener.name." + strings.ToLower(listener) + "." + strings.ToLower(mechanism) + ".sasl.jaas.config"
}

// ErrNoServerConfig is returned by ServerEntries when neither the property nor a file section exists.
var ErrNoServerConfig = errors.New("no JAAS configuration for the listener")

// ServerEntries finds a listener's and mechanism's server entries as Kafka's
// JaasContext.loadServerContext does: the property ServerConfigKey(listener, mechanism) (one login
// module) read through lookup, else the file's section ListenerSectionName(listener), else
// KafkaServer. file may be nil (no JAAS file). source names where the entries came from.
func ServerEntries(listener, mechanism string, lookup func(key string) (string, bool), file *File) (entries []Entry, source string, err error) {
	key := ServerConfigKey(listener, mechanism)
	if lookup != nil {
		if v, ok := lookup(key); ok {
			e, err := ParseConfigProperty(v)
			if err != nil {
				return nil, key, fmt.Errorf("%s: %w", key, err)
			}
			return []Entry{e}, key, nil
		}
	}
	if file != nil {
		for _, name := range []string{ListenerSectionName(listener), ServerSectionName} {
			if es, ok := file.Sections[name]; ok {
				return es, "JAAS file section " + name, nil
			}
		}
	}
	return nil, "", fmt.Errorf("%w %s, mechanism %s: set %s or a '%s' or '%s' section in the JAAS file",
		ErrNoServerConfig, listener, mechanism, key, ListenerSectionName(listener), ServerSectionName)
}
