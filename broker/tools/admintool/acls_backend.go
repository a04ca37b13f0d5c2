package admintool

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"github.com/urfave/cli/v2"

	"github.com/isrbroker/isrbroker/broker/security/acl"
	"github.com/isrbroker/isrbroker/broker/security/jaas"
	"github.com/isrbroker/isrbroker/zkcoord/admin"
	"github.com/isrbroker/isrbroker/zkcoord/zkclient"
)

// The two places `isrbroker acls` works on (acls.go): the ACL znodes through zkcoord/admin's
// ACLStore (Kafka 2.4's AuthorizerService), or the ACL APIs through kadm (AdminClientService).

// authorizerClasses are the --authorizer values kafka-acls.sh 2.4 accepts for ZooKeeper's ACLs.
var authorizerClasses = []string{"kafka.security.authorizer.AclAuthorizer", "kafka.security.auth.SimpleAclAuthorizer"}

func newACLsBackend(c *cli.Context) (aclsBackend, error) {
	if bs := strings.TrimSpace(c.String("bootstrap-server")); bs != "" {
		return newKafkaACLs(c, bs)
	}
	if a := strings.TrimSpace(c.String("authorizer")); a != "" && !containsString(authorizerClasses, a) {
		return nil, failf("unsupported --authorizer %q: %s", a, strings.Join(authorizerClasses, " or "))
	}
	props := map[string]string{}
	for _, kv := range c.StringSlice("authorizer-properties") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" || strings.TrimSpace(v) == "" {
			return nil, failf("invalid --authorizer-properties %q: want key=value (zookeeper.connect=HOST:PORT[/chroot])", kv)
		}
		props[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	connect := props["zookeeper.connect"]
	if connect == "" {
		return nil, failf("--authorizer-properties must set zookeeper.connect=HOST:PORT[/chroot]")
	}
	store, closer, err := dialACLStore(c, connect)
	if err != nil {
		return nil, err
	}
	return &zkACLs{store: store, closer: closer, connect: connect}, nil
}

// dialACLStore opens the tool's ZooKeeper session (a variable: the unit tests use an
// in-memory ZooKeeper).
var dialACLStore = func(c *cli.Context, connect string) (*admin.ACLStore, func(), error) {
	timeout := c.Duration("timeout")
	log := logrus.New()
	log.SetOutput(io.Discard)
	ctx, cancel := context.WithTimeout(c.Context, timeout)
	defer cancel()
	sess, err := admin.ConnectWithoutCluster(ctx, connect, timeout, log)
	switch {
	case err == nil:
		return sess.ACLs, func() { sess.Close() }, nil
	case errors.Is(err, zkclient.ErrNoSession):
		return nil, nil, failf("cannot reach ZooKeeper at %s (--authorizer-properties zookeeper.connect): no session within %v", connect, timeout)
	default:
		return nil, nil, failf("cannot use ZooKeeper at %s (--authorizer-properties zookeeper.connect): %s", connect, clean(err))
	}
}

// zkACLs is the ZooKeeper path: the writes are the brokers' own (admin.ACLStore.Update), each
// announced by a change notification that every broker's watcher follows.
type zkACLs struct {
	store   *admin.ACLStore
	closer  func()
	connect string
}

func (z *zkACLs) close() { z.closer() }

func (z *zkACLs) err(err error) error {
	if errors.Is(err, zk.ErrNoNode) {
		// The ACL paths are created as needed; only a missing chroot is left.
		return failf("ZooKeeper at %s: %s (does the chroot exist? a broker creates it when it first starts)", z.connect, clean(err))
	}
	return failf("ZooKeeper at %s: %s", z.connect, clean(err))
}

func (z *zkACLs) create(_ *cli.Context, r acl.Resource, entries []acl.Entry) error {
	_, err := z.store.Update(r, func(cur []acl.Entry) []acl.Entry { return append(cur, entries...) })
	if err != nil {
		return z.err(err)
	}
	return nil
}

func (z *zkACLs) remove(_ *cli.Context, f acl.ResourceFilter, entries []acl.Entry) error {
	patterns, err := z.store.Patterns()
	if err != nil {
		return z.err(err)
	}
	drop := map[acl.Entry]bool{}
	for _, e := range entries {
		drop[e] = true
	}
	for _, r := range patterns {
		if !f.Matches(r) {
			continue
		}
		_, err := z.store.Update(r, func(cur []acl.Entry) []acl.Entry {
			if len(entries) == 0 {
				return nil
			}
			var keep []acl.Entry
			for _, e := range cur {
				if !drop[e] {
					keep = append(keep, e)
				}
			}
			return keep
		})
		if err != nil {
			return z.err(err)
		}
	}
	return nil
}

func (z *zkACLs) bindings(_ *cli.Context, filters []acl.ResourceFilter) ([]acl.Binding, error) {
	if len(filters) == 0 {
		filters = []acl.ResourceFilter{{Type: acl.ResourceAny, Pattern: acl.PatternAny}}
	}
	anyEntry := acl.EntryFilter{Operation: acl.OpAny, Permission: acl.PermissionAny}
	var out []acl.Binding
	seen := map[acl.Binding]bool{}
	for _, f := range filters {
		bs, err := z.store.Bindings(acl.Filter{Resource: f, Entry: anyEntry})
		if err != nil {
			return nil, z.err(err)
		}
		for _, b := range bs {
			if !seen[b] {
				seen[b] = true
				out = append(out, b)
			}
		}
	}
	return acl.SortBindings(out), nil
}

// kafkaACLs is the --bootstrap-server path: DescribeAcls, CreateAcls and DeleteAcls v0-1.
type kafkaACLs struct {
	addr string
	cl   *kgo.Client
	adm  *kadm.Client
}

func newKafkaACLs(c *cli.Context, bootstrap string) (*kafkaACLs, error) {
	opts := []kgo.Opt{kgo.ClientID("isrbroker-acls")}
	if f := c.String("command-config"); f != "" {
		more, err := commandConfigOpts(f)
		if err != nil {
			return nil, err
		}
		opts = append(opts, more...)
	}
	var seeds []string
	for _, s := range strings.Split(bootstrap, ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	if len(seeds) == 0 {
		return nil, failf("--bootstrap-server %q names no broker", bootstrap)
	}
	timeout := c.Duration("timeout")
	opts = append(opts, kgo.SeedBrokers(seeds...), kgo.RetryTimeout(timeout), kgo.RequestTimeoutOverhead(timeout))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, failf("invalid --bootstrap-server %q: %s", bootstrap, oneLine(err.Error()))
	}
	return &kafkaACLs{addr: bootstrap, cl: cl, adm: kadm.NewClient(cl)}, nil
}

// commandConfigOpts reads --command-config, a Java properties file of admin client configs:
// client.id, security.protocol PLAINTEXT or SASL_PLAINTEXT, sasl.mechanism PLAIN,
// SCRAM-SHA-256 or SCRAM-SHA-512 with sasl.jaas.config's username and password. Other keys are
// ignored, as Kafka's AdminClient ignores (and warns about) unknown configs.
func commandConfigOpts(path string) ([]kgo.Opt, error) {
	props, err := readProperties(path)
	if err != nil {
		return nil, failf("cannot read --command-config %s: %s", path, oneLine(err.Error()))
	}
	var opts []kgo.Opt
	if id := props["client.id"]; id != "" {
		opts = append(opts, kgo.ClientID(id))
	}
	switch proto := strings.ToUpper(props["security.protocol"]); proto {
	case "", "PLAINTEXT":
		return opts, nil
	case "SASL_PLAINTEXT":
	default:
		return nil, failf("--command-config %s: security.protocol=%s is not supported by isrbroker acls (PLAINTEXT or SASL_PLAINTEXT)", path, proto)
	}
	mech := strings.ToUpper(props["sasl.mechanism"])
	if mech == "" {
		mech = "GSSAPI" // Kafka's default
	}
	entry, err := jaas.ParseConfigProperty(props["sasl.jaas.config"])
	if err != nil {
		return nil, failf("--command-config %s: sasl.jaas.config: %s", path, oneLine(err.Error()))
	}
	user, pass := entry.Options["username"], entry.Options["password"]
	switch mech {
	case "PLAIN":
		return append(opts, kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism())), nil
	case "SCRAM-SHA-256":
		return append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism())), nil
	case "SCRAM-SHA-512":
		return append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism())), nil
	}
	return nil, failf("--command-config %s: sasl.mechanism=%s is not supported by isrbroker acls (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)", path, mech)
}

// readProperties reads the key=value (or key: value) lines of a Java properties file; '#' and
// '!' start comments, a trailing '\' continues a line.
func readProperties(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	var pending string
	for sc.Scan() {
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if pending == "" && (line == "" || line[0] == '#' || line[0] == '!') {
			continue
		}
		if strings.HasSuffix(line, `\`) && !strings.HasSuffix(line, `\\`) {
			pending += strings.TrimSuffix(line, `\`)
			continue
		}
		line, pending = pending+line, ""
		i := strings.IndexAny(line, "=:")
		if i < 0 {
			out[strings.TrimSpace(line)] = ""
			continue
		}
		out[strings.TrimSpace(line[:i])] = strings.TrimSpace(line[i+1:])
	}
	return out, sc.Err()
}

func (k *kafkaACLs) close() { k.cl.Close() }

func (k *kafkaACLs) ctx(c *cli.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.Context, c.Duration("timeout"))
}

func (k *kafkaACLs) reqErr(c *cli.Context, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kgo.ErrClientClosed) {
		return failf("cannot reach Kafka brokers at %s within %v", k.addr, c.Duration("timeout"))
	}
	return failf("Kafka brokers at %s: %s", k.addr, oneLine(err.Error()))
}

// builder is a kadm ACL builder for one resource pattern (or filter; name nil is any) and one
// entry (nil: any entry).
func aclBuilder(typ acl.ResourceType, name *string, pattern acl.PatternType, e *acl.Entry) *kadm.ACLBuilder {
	b := kadm.NewACLs().ResourcePatternType(kmsg.ACLResourcePatternType(pattern))
	names := []string{}
	if name != nil {
		names = []string{*name}
	}
	switch {
	case typ == acl.ResourceAny:
		b.AnyResource(names...)
	case typ == acl.ResourceTopic:
		b.Topics(names...)
	case typ == acl.ResourceGroup:
		b.Groups(names...)
	case typ == acl.ResourceCluster:
		b.Clusters()
	case typ == acl.ResourceTransactionalID:
		b.TransactionalIDs(names...)
	case typ == acl.ResourceDelegationToken:
		b.DelegationTokens(names...)
	}
	switch {
	case e == nil:
		b.Allow().AllowHosts().Deny().DenyHosts().Operations()
	case e.Permission == acl.Allow:
		b.Allow(e.Principal).AllowHosts(e.Host).Operations(kmsg.ACLOperation(e.Operation))
	default:
		b.Deny(e.Principal).DenyHosts(e.Host).Operations(kmsg.ACLOperation(e.Operation))
	}
	return b
}

func (k *kafkaACLs) create(c *cli.Context, r acl.Resource, entries []acl.Entry) error {
	for i := range entries {
		ctx, cancel := k.ctx(c)
		rs, err := k.adm.CreateACLs(ctx, aclBuilder(r.Type, &r.Name, r.Pattern, &entries[i]))
		cancel()
		if err != nil {
			return k.reqErr(c, err)
		}
		for _, res := range rs {
			if res.Err != nil {
				msg := oneLine(res.Err.Error())
				if res.ErrMessage != "" {
					msg += ": " + oneLine(res.ErrMessage)
				}
				return failf("cannot add %s to %s: %s", entryString(entries[i]), patternString(r), msg)
			}
		}
	}
	return nil
}

func (k *kafkaACLs) remove(c *cli.Context, f acl.ResourceFilter, entries []acl.Entry) error {
	var builders []*kadm.ACLBuilder
	if len(entries) == 0 {
		builders = append(builders, aclBuilder(f.Type, f.Name, f.Pattern, nil))
	}
	for i := range entries {
		builders = append(builders, aclBuilder(f.Type, f.Name, f.Pattern, &entries[i]))
	}
	for _, b := range builders {
		ctx, cancel := k.ctx(c)
		rs, err := k.adm.DeleteACLs(ctx, b)
		cancel()
		if err != nil {
			return k.reqErr(c, err)
		}
		for _, res := range rs {
			if res.Err != nil {
				return failf("cannot remove ACLs of %s: %s %s", patternString(acl.Resource{Type: f.Type, Name: deref(f.Name), Pattern: f.Pattern}), oneLine(res.Err.Error()), oneLine(res.ErrMessage))
			}
		}
	}
	return nil
}

func (k *kafkaACLs) bindings(c *cli.Context, filters []acl.ResourceFilter) ([]acl.Binding, error) {
	if len(filters) == 0 {
		filters = []acl.ResourceFilter{{Type: acl.ResourceAny, Pattern: acl.PatternAny}}
	}
	var out []acl.Binding
	seen := map[acl.Binding]bool{}
	for _, f := range filters {
		ctx, cancel := k.ctx(c)
		rs, err := k.adm.DescribeACLs(ctx, aclBuilder(f.Type, f.Name, f.Pattern, nil))
		cancel()
		if err != nil {
			return nil, k.reqErr(c, err)
		}
		for _, res := range rs {
			if res.Err != nil {
				return nil, failf("cannot list ACLs: %s %s", oneLine(res.Err.Error()), oneLine(res.ErrMessage))
			}
			for _, d := range res.Described {
				b := acl.Binding{
					Resource: acl.Resource{Type: acl.ResourceType(d.Type), Name: d.Name, Pattern: acl.PatternType(d.Pattern)},
					Entry:    acl.Entry{Principal: d.Principal, Host: d.Host, Operation: acl.Operation(d.Operation), Permission: acl.Permission(d.Permission)},
				}
				if !seen[b] {
					seen[b] = true
					out = append(out, b)
				}
			}
		}
	}
	return acl.SortBindings(out), nil
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
