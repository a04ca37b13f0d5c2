package admintool

import (
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// Client quota entities on the command line (docs/quotas.md), as Kafka 2.4's ConfigCommand:
// --entity-type users and/or clients, each followed by --entity-name N or --entity-default;
// `--entity-type users --entity-name alice --entity-type clients --entity-name app` is the
// user+client-id entity /config/users/alice/clients/app. The names pair with the types by
// their order on the command line (ConfigCommandOptions.entityNames), which the flags below
// record.

// entityArgs records --entity-type, --entity-name and --entity-default in command-line order.
type entityArgs struct {
	types []string
	names []string // "" for --entity-default
	dflt  bool     // --entity-default was given
}

// entityFlag is one of the three flags over the shared record; a flag.Value (IsBoolFlag for
// --entity-default, which takes no value). String is the first value (c.String, c.Bool).
type entityFlag struct {
	a    *entityArgs
	kind string // "type", "name" or "default"
}

func (f *entityFlag) Set(v string) error {
	switch f.kind {
	case "type":
		f.a.types = append(f.a.types, v)
	case "name":
		f.a.names = append(f.a.names, v)
	default:
		if b, err := strconv.ParseBool(v); err != nil || b {
			f.a.names = append(f.a.names, "")
			f.a.dflt = true
		}
	}
	return nil
}

func (f *entityFlag) String() string {
	if f == nil || f.a == nil {
		return ""
	}
	switch f.kind {
	case "type":
		if len(f.a.types) > 0 {
			return f.a.types[0]
		}
	case "name":
		for _, n := range f.a.names {
			if n != "" {
				return n
			}
		}
	default:
		return strconv.FormatBool(f.a.dflt)
	}
	return ""
}

func (f *entityFlag) IsBoolFlag() bool { return f.kind == "default" }

// entityFlags are fresh --entity-type, --entity-name and --entity-default flags.
func entityFlags() []cli.Flag {
	a := &entityArgs{}
	return []cli.Flag{
		&cli.GenericFlag{Name: "entity-type", Value: &entityFlag{a, "type"}, Usage: "topics, brokers, users or clients (users and clients may be combined)"},
		&cli.GenericFlag{Name: "entity-name", Value: &entityFlag{a, "name"}, Usage: "name of the topic, the broker id, the user or the client id"},
		switchFlag{&cli.GenericFlag{Name: "entity-default", Value: &entityFlag{a, "default"}, Usage: "brokers: the cluster-wide default config; users, clients: the <default> entity"}},
	}
}

// switchFlag is a GenericFlag that takes no value (its Value is a bool flag.Value), shown so
// in the help.
type switchFlag struct{ *cli.GenericFlag }

func (f switchFlag) TakesValue() bool { return false }
func (f switchFlag) String() string   { return cli.FlagStringer(f) }

// entityArgsOf returns the recorded order of the entity flags.
func entityArgsOf(c *cli.Context) *entityArgs {
	if g, ok := c.Generic("entity-type").(*entityFlag); ok {
		return g.a
	}
	return &entityArgs{}
}

// quotaEntity is a users, clients or users+clients entity: user and client are desanitized
// names or <default>; has* says whether the level is present, *Named whether it is named
// (an unnamed one is described as all its entities).
type quotaEntity struct {
	user, client           string
	hasUser, hasClient     bool
	userNamed, clientNamed bool
}

// parseQuotaEntity is ConfigCommand's parseClientQuotaEntity: users first when both types
// are given, the names in their command-line order, "" (--entity-default) as <default>.
func parseQuotaEntity(c *cli.Context) (*quotaEntity, error) {
	a := entityArgsOf(c)
	types, names := a.types, a.names
	if len(types) > 2 || len(types) == 2 && (types[0] == types[1] || !isQuotaType(types[0]) || !isQuotaType(types[1])) {
		return nil, failf("Only '--entity-type users --entity-type clients' may be combined, got %s", strings.Join(types, ","))
	}
	if c.Bool("alter") && len(types) != len(names) {
		return nil, failf("--entity-name or --entity-default must be specified with each --entity-type for --alter")
	}
	if len(names) > len(types) {
		return nil, failf("more --entity-name/--entity-default than --entity-type")
	}
	if len(types) == 2 && types[0] == "clients" {
		types = []string{types[1], types[0]}
		if len(names) == 2 {
			names = []string{names[1], names[0]}
		}
	}
	e := &quotaEntity{}
	for i, t := range types {
		name, named := "", i < len(names)
		if named {
			name = names[i]
			if name == "" {
				name = zkdata.DefaultBrokerEntity
			}
		}
		if t == "users" {
			e.hasUser, e.userNamed, e.user = true, named, name
		} else {
			e.hasClient, e.clientNamed, e.client = true, named, name
		}
	}
	return e, nil
}

func isQuotaType(t string) bool { return t == "users" || t == "clients" }

// String is ConfigCommand's ConfigEntity.toString: "user-principal 'alice', client-id 'app'",
// "default client-id".
func (e *quotaEntity) String() string {
	one := func(typ, name string, named bool) string {
		switch {
		case !named:
			return typ
		case name == zkdata.DefaultBrokerEntity:
			return "default " + typ
		}
		return typ + " '" + name + "'"
	}
	var parts []string
	if e.hasUser {
		parts = append(parts, one("user-principal", e.user, e.userNamed))
	}
	if e.hasClient {
		parts = append(parts, one("client-id", e.client, e.clientNamed))
	}
	return strings.Join(parts, ", ")
}

// zkUser and zkClient are the names admin.AlterQuotaConfig and QuotaConfig take ("": the
// level is absent).
func (e *quotaEntity) zkUser() string {
	if !e.hasUser {
		return ""
	}
	return e.user
}

func (e *quotaEntity) zkClient() string {
	if !e.hasClient {
		return ""
	}
	return e.client
}

func nullable(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}
