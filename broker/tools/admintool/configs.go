package admintool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"

	"github.com/isrbroker/isrbroker/broker/config/configdef"
	"github.com/isrbroker/isrbroker/zkcoord/admin"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// `isrbroker configs`: Kafka's kafka-configs.sh for topic and broker entities. With
// --zookeeper it reads and writes /config/topics/<t> and /config/brokers/<id|<default>>
// through zkcoord's one config write path, with Kafka 2.4.1's ConfigCommand output; with
// --bootstrap-server it uses DescribeConfigs and IncrementalAlterConfigs, with the output of
// Kafka 2.6's ConfigCommand (2.4 has no bootstrap path for topics). docs/configs-tool.md.

const configsDescription = `Describe or change the dynamic configs of a topic, a broker, a user or a client id, like Kafka's kafka-configs.sh.

Exactly one of --zookeeper or --bootstrap-server, and of --describe or --alter. --entity-type is
topics, brokers, users (SCRAM credentials and quotas) or clients (quotas), users and clients
--zookeeper only and combinable; --entity-name names the topic, the broker id, the user or the
client id; --entity-default is the cluster-wide default. --add-config takes k1=v1,k2=[a,b] (brackets keep
the commas of a list value); --delete-config takes k1,k2 (repeatable).

Every change is checked before anything is written: an unknown key (with the nearest key as a
hint), a value of the wrong type or out of range, or a broker key that cannot be changed while
brokers run fails naming the key. Through --zookeeper, broker keys other than the replication
throttle rates may only be written while the broker (or, for the default, every broker) is
stopped, as in Kafka.

Examples:
  isrbroker configs --bootstrap-server localhost:9092 --entity-type topics --entity-name orders --alter --add-config retention.ms=3600000,cleanup.policy=[compact,delete]
  isrbroker configs --bootstrap-server localhost:9092 --entity-type topics --entity-name orders --describe
  isrbroker configs --bootstrap-server localhost:9092 --entity-type brokers --entity-name 1 --describe --all
  isrbroker configs --bootstrap-server localhost:9092 --entity-type brokers --entity-default --alter --add-config log.cleaner.threads=2
  isrbroker configs --zookeeper localhost:2181 --entity-type brokers --entity-name 1 --alter --add-config leader.replication.throttled.rate=1048576
  isrbroker configs --zookeeper localhost:2181 --entity-type topics --entity-name orders --alter --delete-config retention.ms
  isrbroker configs --zookeeper localhost:2181 --entity-type users --entity-name alice --alter --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-secret]'
  isrbroker configs --zookeeper localhost:2181 --entity-type users --entity-name alice --entity-type clients --entity-default --alter --add-config producer_byte_rate=1048576

Output (--zookeeper):
  Completed Updating config for entity: topic 'orders'.
  Configs for topic 'orders' are cleanup.policy=compact,delete,retention.ms=3600000
Output (--bootstrap-server):
  Completed updating config for topic orders.
  Dynamic configs for topic orders are:
    retention.ms=3600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=3600000}`

func configsCommand() *cli.Command {
	flags := append(zkFlags(), entityFlags()...) // configs_entities.go
	flags = append(flags,
		&cli.StringFlag{Name: "bootstrap-server", Usage: "Kafka brokers host:port[,host:port] to talk to instead of ZooKeeper"},
		&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "with --bootstrap-server: give up after this time"},
		&cli.BoolFlag{Name: "describe", Usage: "list the configs of the entity"},
		&cli.BoolFlag{Name: "all", Usage: "with --describe --bootstrap-server: every config, static and default ones too (Kafka 2.6, KIP-524)"},
		&cli.BoolFlag{Name: "alter", Usage: "change the configs of the entity"},
		&cli.StringFlag{Name: "add-config", Usage: "configs to add or set: k1=v1,k2=[v1,v2,v2],k3=v3"},
		&cli.StringSliceFlag{Name: "delete-config", Usage: "config keys to remove: k1,k2 (repeatable)"},
	)
	return &cli.Command{
		Name:        "configs",
		Usage:       "describe or alter topic, broker, user and client configs (kafka-configs.sh)",
		Description: configsDescription,
		Flags:       flags,
		Action:      configsAction,
	}
}

// configsRequest is the parsed command line.
type configsRequest struct {
	topics  bool         // entity type topics, else brokers (or users)
	users   bool         // entity type users and/or clients: SCRAM credentials, quotas (configs_users.go)
	quota   *quotaEntity // the users/clients entity (configs_entities.go)
	name    string       // topic or broker id; "" for the broker default
	dflt    bool         // --entity-default
	named   bool         // an entity was named (name or default)
	all     bool         // --all: every entry of DescribeConfigs, not only the dynamic source's
	add     map[string]string
	addKeys []string
	del     []string
}

func configsAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return failf("unexpected argument %q", c.Args().First())
	}
	if c.Bool("describe") == c.Bool("alter") {
		return failf("Command must include exactly one action: --describe, --alter")
	}
	zkc, bs := strings.TrimSpace(c.String("zookeeper")), strings.TrimSpace(c.String("bootstrap-server"))
	if (zkc == "") == (bs == "") {
		return failf("exactly one of --zookeeper or --bootstrap-server is required")
	}
	r, err := parseConfigsRequest(c)
	if err != nil {
		return err
	}
	if r.all && (bs == "" || !c.Bool("describe")) {
		return failf("--all is only valid with --describe and --bootstrap-server")
	}
	out := c.App.Writer
	if r.users {
		return usersAction(c, r, zkc, out)
	}
	if bs != "" {
		cl, err := dialKafka(bs, c.Duration("timeout"), "isrbroker-configs")
		if err != nil {
			return err
		}
		defer cl.Close()
		b := &kafkaBackend{c: c, addr: bs, cl: cl, adm: kadm.NewClient(cl)}
		if c.Bool("alter") {
			return b.alterConfigs(c.Context, r, out)
		}
		return b.describeConfigs(c.Context, r, out)
	}
	coord, err := connectZK(c)
	if err != nil {
		return err
	}
	defer coord.Close()
	if c.Bool("alter") {
		return zkAlterConfigs(c, coord, r, out)
	}
	return zkDescribeConfigs(c, coord, r, out)
}

func parseConfigsRequest(c *cli.Context) (*configsRequest, error) {
	r := &configsRequest{name: c.String("entity-name"), dflt: c.Bool("entity-default"), all: c.Bool("all")}
	switch c.String("entity-type") {
	case "topics":
		r.topics = true
		if r.dflt {
			return nil, failf("--entity-default applies to brokers only")
		}
	case "brokers":
		if r.name != "" && r.dflt {
			return nil, failf("only one of --entity-name or --entity-default may be given")
		}
		if r.name != "" {
			if _, err := strconv.ParseInt(r.name, 10, 32); err != nil {
				return nil, failf("The entity name for brokers must be a valid integer broker id, but it is: %s", r.name)
			}
		}
	case "users", "clients": // SCRAM credentials and client quotas (configs_users.go)
		q, err := parseQuotaEntity(c)
		if err != nil {
			return nil, err
		}
		r.users, r.quota, r.name, r.dflt, r.named = true, q, q.zkUser(), false, q.userNamed || q.clientNamed
	case "":
		return nil, failf("--entity-type (topics, brokers, users or clients) is required")
	default:
		return nil, failf("Invalid entity-type %s, --entity-type must be one of topics,brokers,users,clients", c.String("entity-type"))
	}
	r.named = r.named || r.name != "" || r.dflt
	if !c.Bool("alter") {
		return r, nil
	}
	if !r.named {
		if r.topics || r.users {
			return nil, failf("--entity-name must be specified with --alter of %s", c.String("entity-type"))
		}
		return nil, failf("--entity-name or --entity-default must be specified with --alter of brokers")
	}
	if !c.IsSet("add-config") && !c.IsSet("delete-config") {
		return nil, failf("At least one of --add-config or --delete-config must be specified with --alter")
	}
	var err error
	if r.add, r.addKeys, err = parseAddConfig(c.String("add-config")); err != nil {
		return nil, err
	}
	for _, d := range c.StringSlice("delete-config") {
		for _, k := range strings.Split(d, ",") {
			if k = strings.TrimSpace(k); k != "" {
				r.del = append(r.del, k)
			}
		}
	}
	return r, nil
}

// parseAddConfig parses --add-config as ConfigCommand does: pairs separated by commas outside
// square brackets, key=value each; the brackets are removed from the value.
func parseAddConfig(s string) (map[string]string, []string, error) {
	out := map[string]string{}
	var keys []string
	if strings.TrimSpace(s) == "" {
		return out, nil, nil
	}
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth = max(depth-1, 0)
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	parts = append(parts, s[start:])
	for _, p := range parts {
		k, v, _ := strings.Cut(p, "=")
		k = strings.TrimSpace(k)
		if equalsOutsideBrackets(p) != 1 || k == "" {
			return nil, nil, failf(`Invalid entity config: all configs to be added must be in the format "key=val" (got %q)`, p)
		}
		if _, dup := out[k]; !dup {
			keys = append(keys, k)
		}
		out[k] = strings.TrimSpace(strings.NewReplacer("[", "", "]", "").Replace(v))
	}
	return out, keys, nil
}

// equalsOutsideBrackets counts the '=' of a key=value pair that are not inside [...].
func equalsOutsideBrackets(p string) int {
	n, depth := 0, 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '[':
			depth++
		case ']':
			depth = max(depth-1, 0)
		case '=':
			if depth == 0 {
				n++
			}
		}
	}
	return n
}

// entityString is Kafka 2.4's ConfigCommand Entity.toString.
func (r *configsRequest) entityString() string {
	switch {
	case r.topics:
		return "topic '" + r.name + "'"
	case r.users:
		return r.quotaEntity().String()
	case r.dflt:
		return "default brokers"
	}
	return "brokers '" + r.name + "'"
}

// zkEntity is the broker config entity of the request: an id or "<default>".
func (r *configsRequest) zkEntity() string {
	if r.dflt {
		return zkdata.DefaultBrokerEntity
	}
	return r.name
}

// throttleRateKeys may be written through ZooKeeper while brokers run (ConfigCommand's
// BrokerConfigsUpdatableUsingZooKeeperWhileBrokerRunning).
var throttleRateKeys = map[string]bool{
	"leader.replication.throttled.rate": true, "follower.replication.throttled.rate": true,
	"replica.alter.log.dirs.io.max.bytes.per.second": true,
}

// applyEdit computes the new config: cur with the additions set and the deletions removed;
// deleting a key that is not set is an error ("Invalid config(s)").
func (r *configsRequest) applyEdit(cur map[string]string) (map[string]string, error) {
	var missing []string
	for _, k := range r.del {
		if _, ok := cur[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return nil, failf("Invalid config(s): %s", strings.Join(missing, ","))
	}
	next := make(map[string]string, len(cur)+len(r.add))
	for k, v := range cur {
		next[k] = v
	}
	for k, v := range r.add {
		next[k] = v
	}
	for _, k := range r.del {
		delete(next, k)
	}
	return next, nil
}

func zkAlterConfigs(c *cli.Context, coord *admin.Session, r *configsRequest, out io.Writer) error {
	var (
		validate func(map[string]string) *configdef.ChangeError
		write    func(func(map[string]string)) error
		cur      map[string]string
		err      error
	)
	if r.topics {
		cur, err = coord.Reader.TopicConfig(r.name)
		if errors.Is(err, admin.ErrUnknownTopic) {
			return failf("Topic %q does not exist.", r.name)
		}
		validate = configdef.ValidateTopicChange
		write = func(edit func(map[string]string)) error { return coord.Admin.AlterTopicConfig(r.name, edit) }
	} else {
		if err := checkBrokersStopped(c, coord, r); err != nil {
			return err
		}
		cur, err = coord.Reader.BrokerEntityConfig(r.zkEntity())
		validate = func(m map[string]string) *configdef.ChangeError { return configdef.ValidateBrokerChange(m, !r.dflt) }
		write = func(edit func(map[string]string)) error { return coord.Admin.AlterBrokerConfig(r.zkEntity(), edit) }
	}
	if err != nil {
		return zkErr(c, err)
	}
	check := func(cur map[string]string) (map[string]string, error) {
		next, err := r.applyEdit(cur)
		if err != nil {
			return nil, err
		}
		if ce := validate(next); ce != nil {
			return nil, failf("%s", ce.Msg)
		}
		return next, nil
	}
	if _, err := check(cur); err != nil {
		return err
	}
	var editErr error
	err = write(func(m map[string]string) {
		next, err := check(m)
		if editErr = err; err != nil {
			return
		}
		for k := range m {
			delete(m, k)
		}
		for k, v := range next {
			m[k] = v
		}
	})
	if err != nil {
		return zkErr(c, err)
	}
	if editErr != nil {
		return editErr
	}
	fmt.Fprintf(out, "Completed Updating config for entity: %s.\n", r.entityString())
	return nil
}

// checkBrokersStopped refuses, as Kafka does, to write broker keys other than the throttle
// rates through ZooKeeper while the broker (or, for the default, any broker) is running.
func checkBrokersStopped(c *cli.Context, coord *admin.Session, r *configsRequest) error {
	var dynamic []string
	for _, k := range r.addKeys {
		if !throttleRateKeys[k] {
			dynamic = append(dynamic, k)
		}
	}
	if len(dynamic) == 0 {
		return nil
	}
	live, err := coord.Reader.LiveBrokers()
	if err != nil {
		return zkErr(c, err)
	}
	msg := "--bootstrap-server option must be specified to update broker configs Set(" + strings.Join(dynamic, ", ") + ")"
	const info = " Broker configuration updates using ZooKeeper are supported for bootstrapping before brokers are started."
	for _, b := range live {
		if r.dflt {
			return failf("%s for default cluster if any broker is running.%s", msg, info)
		}
		if strconv.Itoa(int(b.ID)) == r.name {
			return failf("%s when broker %s is running.%s", msg, r.name, info)
		}
	}
	return nil
}

func zkDescribeConfigs(c *cli.Context, coord *admin.Session, r *configsRequest, out io.Writer) error {
	var entities []*configsRequest
	switch {
	case r.named:
		entities = append(entities, r)
	case r.topics:
		topics, err := coord.Reader.Topics()
		if err != nil {
			return zkErr(c, err)
		}
		sort.Strings(topics)
		for _, t := range topics {
			entities = append(entities, &configsRequest{topics: true, name: t, all: r.all})
		}
	default:
		live, err := coord.Reader.LiveBrokers()
		if err != nil {
			return zkErr(c, err)
		}
		for _, b := range live {
			entities = append(entities, &configsRequest{name: strconv.Itoa(int(b.ID))})
		}
		entities = append(entities, &configsRequest{dflt: true})
	}
	for _, e := range entities {
		var cfg map[string]string
		var err error
		if e.topics {
			cfg, err = coord.Reader.TopicConfig(e.name)
			if errors.Is(err, admin.ErrUnknownTopic) {
				cfg, err = map[string]string{}, nil // Kafka prints the empty config of any name
			}
		} else {
			cfg, err = coord.Reader.BrokerEntityConfig(e.zkEntity())
		}
		if err != nil {
			return zkErr(c, err)
		}
		var kv []string
		for _, k := range sortedKeys(cfg) {
			kv = append(kv, k+"="+cfg[k])
		}
		fmt.Fprintf(out, "Configs for %s are %s\n", e.entityString(), strings.Join(kv, ","))
	}
	return nil
}

// alterConfigs is the --bootstrap-server --alter: SET and DELETE operations of one
// IncrementalAlterConfigs, after checking that the deleted keys are set.
func (b *kafkaBackend) alterConfigs(parent context.Context, r *configsRequest, out io.Writer) error {
	current, err := b.dynamicConfigs(parent, r)
	if err != nil {
		return err
	}
	cur := map[string]string{}
	for _, e := range current {
		cur[e.Key] = ""
	}
	if _, err := r.applyEdit(cur); err != nil {
		return err
	}
	var ops []kadm.AlterConfig
	for _, k := range r.addKeys {
		v := r.add[k]
		ops = append(ops, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
	}
	for _, k := range r.del {
		ops = append(ops, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	ctx, cancel := b.ctx(parent)
	defer cancel()
	var resps kadm.AlterConfigsResponses
	switch {
	case r.topics:
		resps, err = b.adm.AlterTopicConfigs(ctx, ops, r.name)
	case r.dflt:
		resps, err = b.adm.AlterBrokerConfigs(ctx, ops)
	default:
		id, _ := strconv.ParseInt(r.name, 10, 32)
		resps, err = b.adm.AlterBrokerConfigs(ctx, ops, int32(id))
	}
	if err != nil {
		return b.reqErr(err)
	}
	for _, resp := range resps {
		if resp.Err != nil {
			msg := oneLine(resp.Err.Error())
			if resp.ErrMessage != "" {
				msg += ": " + oneLine(resp.ErrMessage)
			}
			return failf("cannot alter configs of %s: %s", r.entityString(), msg)
		}
	}
	switch {
	case r.topics:
		fmt.Fprintf(out, "Completed updating config for topic %s.\n", r.name)
	case r.dflt:
		fmt.Fprintln(out, "Completed updating default config for brokers in the cluster.")
	default:
		fmt.Fprintf(out, "Completed updating config for broker %s.\n", r.name)
	}
	return nil
}

// dynamicConfigs describes one entity and keeps the entries of its dynamic source
// (DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG or DYNAMIC_DEFAULT_BROKER_CONFIG).
func (b *kafkaBackend) dynamicConfigs(parent context.Context, r *configsRequest) ([]kadm.Config, error) {
	ctx, cancel := b.ctx(parent)
	defer cancel()
	var rcs kadm.ResourceConfigs
	var err error
	source := kmsg.ConfigSourceDynamicTopicConfig
	switch {
	case r.topics:
		rcs, err = b.adm.DescribeTopicConfigs(ctx, r.name)
	case r.dflt:
		source = kmsg.ConfigSourceDynamicDefaultBrokerConfig
		rcs, err = b.adm.DescribeBrokerConfigs(ctx)
	default:
		source = kmsg.ConfigSourceDynamicBrokerConfig
		id, _ := strconv.ParseInt(r.name, 10, 32)
		rcs, err = b.adm.DescribeBrokerConfigs(ctx, int32(id))
	}
	if err == nil && len(rcs) != 1 {
		err = fmt.Errorf("%d resources described", len(rcs))
	}
	if err != nil {
		return nil, b.reqErr(err)
	}
	if rcs[0].Err != nil {
		msg := oneLine(rcs[0].Err.Error())
		if rcs[0].ErrMessage != "" {
			msg += ": " + oneLine(rcs[0].ErrMessage)
		}
		return nil, failf("cannot describe configs of %s: %s", r.entityString(), msg)
	}
	var out []kadm.Config
	for _, e := range rcs[0].Configs {
		if e.Source == source || r.all {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// describeConfigs is the --bootstrap-server --describe (Kafka 2.6's output).
func (b *kafkaBackend) describeConfigs(parent context.Context, r *configsRequest, out io.Writer) error {
	var entities []*configsRequest
	switch {
	case r.named:
		entities = append(entities, r)
	case r.topics:
		m, err := b.metadata(parent)
		if err != nil {
			return err
		}
		for _, t := range m.Topics.Names() {
			entities = append(entities, &configsRequest{topics: true, name: t, all: r.all})
		}
	default:
		m, err := b.metadata(parent)
		if err != nil {
			return err
		}
		var ids []int
		for _, br := range m.Brokers {
			ids = append(ids, int(br.NodeID))
		}
		sort.Ints(ids)
		for _, id := range ids {
			entities = append(entities, &configsRequest{name: strconv.Itoa(id), all: r.all})
		}
		entities = append(entities, &configsRequest{dflt: true})
	}
	for _, e := range entities {
		cfgs, err := b.dynamicConfigs(parent, e)
		if err != nil {
			return err
		}
		switch {
		case r.all && e.topics:
			fmt.Fprintf(out, "All configs for topic %s are:\n", e.name)
		case r.all && !e.dflt:
			fmt.Fprintf(out, "All configs for broker %s are:\n", e.name)
		case e.dflt:
			fmt.Fprintln(out, "Default configs for brokers in the cluster are:")
		case e.topics:
			fmt.Fprintf(out, "Dynamic configs for topic %s are:\n", e.name)
		default:
			fmt.Fprintf(out, "Dynamic configs for broker %s are:\n", e.name)
		}
		for _, cfg := range cfgs {
			var syn []string
			for _, s := range cfg.Synonyms {
				syn = append(syn, fmt.Sprintf("%s:%s=%s", s.Source, s.Key, nullable(s.Value)))
			}
			fmt.Fprintf(out, "  %s=%s sensitive=%v synonyms={%s}\n", cfg.Key, nullable(cfg.Value), cfg.Sensitive, strings.Join(syn, ", "))
		}
	}
	return nil
}
