package configdef

import (
	"fmt"
	"strings"
)

// Markdown renders the table as docs/configuration.md.
func Markdown() string {
	var b strings.Builder
	b.WriteString(`# Configuration

<!-- Generated from the configdef table (broker/config/configdef/keys.go) by TestConfigurationDoc; do not edit.
     Regenerate with: go test ./broker/config -run TestConfigurationDoc -update -->

isrbroker reads Kafka 2.4's ` + "`server.properties`" + ` (` + "`isrbroker broker --config FILE [--override key=value]...`" + `).
Every key is declared once, in ` + "`broker/config/configdef/keys.go`" + `, with its type, default, valid values, scope and
isrbroker's status; parsing, validation, typo hints, the checks of topic configs and this page all come from it.

- **used**: typed, validated and acted on.
- **accepted, unused**: a real Kafka 2.4 setting isrbroker does not act on. Its value is still typed and
  validated as Kafka would; start-up logs one warning naming the reason.
- **unsupported**: isrbroker cannot honour a non-default value and will not ignore it silently: the Kafka
  default is accepted (with a warning), any other value stops start-up, or fails CreateTopics with
  INVALID_CONFIG, naming the reason.
- A key that is not in these tables stops start-up with the nearest known key as a hint
  (` + "`unknown config key \"zookeeper.session.tmeout.ms\" (did you mean \"zookeeper.session.timeout.ms\"?)`" + `);
  a topic-level key in ` + "`server.properties`" + ` names its broker-level synonym. ` + "`listener.name.<name>.<config>`" + `
  keys (per-listener SSL/SASL settings) are accepted as unused.
- *Dynamic* is Kafka's KIP-226 update mode (read-only, per-broker, cluster-wide): where the key may be set in
  ZooKeeper (/config/brokers/<id>, /config/brokers/<default>). **live** marks the keys every broker applies
  at once when their dynamic value changes; a dynamic key without it is stored but takes effect at the next
  restart only. Precedence, highest first: topic override, /config/brokers/<id>, /config/brokers/<default>,
  server.properties, default.
- Topic keys are set with CreateTopics ` + "`configs`" + ` or ` + "`isrbroker topics --create --config key=value`" + `; their
  default is the broker synonym's value. Every used topic key applies live: a change in /config/topics/<t>
  reaches every replica of the topic within moments (min.insync.replicas at the next acks=all produce,
  retention at the next retention check, segment.bytes/segment.ms at the next roll, cleanup.policy at the
  cleaner's next pass, the timestamp and size settings at the next append); a deleted override falls back
  to the broker level.

`)
	section := func(title string, scope Scope, intro string) {
		fmt.Fprintf(&b, "## %s\n\n%s\n\n", title, intro)
		dyn := scope != Topic
		if dyn {
			b.WriteString("| Key | Type | Default | Valid values | Dynamic | Synonym | isrbroker | Description |\n|---|---|---|---|---|---|---|---|\n")
		} else {
			b.WriteString("| Key | Type | Default | Valid values | Broker synonym | isrbroker | Description |\n|---|---|---|---|---|---|---|\n")
		}
		for _, k := range table {
			if k.Scope != scope {
				continue
			}
			def := code(k.Default)
			switch {
			case k.Required:
				def = "required"
			case k.Default == "":
				def = "(none)"
			}
			if k.Unit != 0 && k.Default != "" {
				def += " " + unitName(k)
			}
			valid := ""
			if k.Valid != nil {
				valid = code(k.Valid.Doc)
			}
			status := k.Status.String()
			if k.Status != Used {
				status += ": " + k.Reason
			}
			syn := ""
			if k.Synonym != "" {
				syn = code(k.Synonym)
			}
			if dyn {
				mode := k.Dynamic.String()
				if k.Dynamic != ReadOnly && k.AppliesLive() {
					mode += ", live"
				}
				fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s | %s |\n", k.Name, k.Type, def, valid, mode, syn, cell(status), cell(k.Doc))
			} else {
				fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s |\n", k.Name, k.Type, def, valid, syn, cell(status), cell(k.Doc))
			}
		}
		b.WriteString("\n")
	}
	section("Broker keys (server.properties)", Broker,
		"Every Kafka 2.4.1 broker key (KafkaConfig), the two keys of Kafka's ACL authorizer plug-in and isrbroker's own keys.")
	section("Topic keys", Topic, "Every Kafka 2.4.1 topic key (LogConfig).")
	section("Dynamic-only broker keys", DynamicBroker,
		"Kafka's DynamicConfig.Broker keys: written to ZooKeeper (/config/brokers/<id> or /config/brokers/<default>, for example by `isrbroker reassign --throttle`), never in server.properties.")
	return b.String()
}

func code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + strings.ReplaceAll(s, "|", `\|`) + "`"
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func unitName(k *Key) string {
	switch k.Unit.String() {
	case "1ms":
		return "ms"
	case "1s":
		return "s"
	case "1m0s":
		return "min"
	case "1h0m0s":
		return "h"
	}
	return k.Unit.String()
}
