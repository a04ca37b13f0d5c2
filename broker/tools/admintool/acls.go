package admintool

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/isrbroker/isrbroker/broker/security/acl"
)

// `isrbroker acls`: Kafka 2.4's kafka-acls.sh (AclCommand). With --authorizer-properties
// zookeeper.connect=... (Kafka 2.4's default path) it reads and writes the ACL znodes through
// zkcoord/admin's ACLStore, the brokers' own write path: conditional writes and a change
// notification, so every broker's cache follows. With --bootstrap-server it uses DescribeAcls,
// CreateAcls and DeleteAcls (franz-go's kadm). The flags, checks and output are AclCommand's;
// docs/acls-tool.md.

const aclsDescription = `Add, remove or list ACLs, like Kafka's kafka-acls.sh.

Exactly one of --add, --remove or --list, and either --authorizer-properties
zookeeper.connect=HOST:PORT[/chroot] (writes the ACL znodes; the brokers follow the change
notifications) or --bootstrap-server (through the ACL APIs; --command-config FILE holds the
client's properties). Resources: --topic, --group, --transactional-id, --delegation-token
(repeatable; '*' is every resource of the type) and --cluster. --resource-pattern-type is
literal (the default) or prefixed; --list and --remove also take any (every pattern type with
exactly the name) and match (every pattern that applies to the name).

An ACL is each --allow-principal (or --deny-principal) with each --operation (default All) and
each --allow-host (or --deny-host; default *). --producer grants WRITE, DESCRIBE, CREATE on the
topics and WRITE, DESCRIBE on the --transactional-id (--idempotent adds IDEMPOTENT_WRITE on the
cluster); --consumer grants READ, DESCRIBE on the topics and READ on the --group. --remove asks
y/N on stdin for each resource unless --force; --remove without principals removes every ACL of
the resource. --list --principal P shows only P's ACLs.

Examples:
  isrbroker acls --authorizer-properties zookeeper.connect=localhost:2181 --add --allow-principal User:alice --operation Read --operation Write --topic orders
  isrbroker acls --authorizer-properties zookeeper.connect=localhost:2181 --add --allow-principal User:bob --producer --topic orders- --resource-pattern-type prefixed
  isrbroker acls --authorizer-properties zookeeper.connect=localhost:2181 --add --allow-principal User:carol --consumer --topic orders --group billing
  isrbroker acls --authorizer-properties zookeeper.connect=localhost:2181 --list --topic orders --resource-pattern-type match
  isrbroker acls --bootstrap-server localhost:9092 --command-config admin.properties --list --principal User:alice
  isrbroker acls --bootstrap-server localhost:9092 --remove --allow-principal User:alice --operation Write --topic orders --force

Output:
  Adding ACLs for resource ` + "`ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`" + `:
   	(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)
  	(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)

  Current ACLs for resource ` + "`ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`" + `:
   	(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)
  	(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)`

func aclsCommand() *cli.Command {
	return &cli.Command{
		Name:        "acls",
		Usage:       "add, remove or list ACLs (kafka-acls.sh)",
		Description: aclsDescription,
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "authorizer-properties", Usage: "the authorizer's key=value properties: zookeeper.connect=HOST:PORT[/chroot] (repeatable)"},
			&cli.StringFlag{Name: "authorizer", Usage: "kafka.security.authorizer.AclAuthorizer (the default) or kafka.security.auth.SimpleAclAuthorizer"},
			&cli.StringFlag{Name: "bootstrap-server", Usage: "Kafka brokers host:port[,host:port]: use the ACL APIs instead of ZooKeeper"},
			&cli.StringFlag{Name: "command-config", Usage: "with --bootstrap-server: a properties file of the admin client's configs (security.protocol, sasl.*, client.id)"},
			&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "give up on ZooKeeper or the brokers after this time"},
			&cli.BoolFlag{Name: "add", Usage: "add ACLs"},
			&cli.BoolFlag{Name: "remove", Usage: "remove ACLs"},
			&cli.BoolFlag{Name: "list", Usage: "list the ACLs of the resources named, or every ACL"},
			&cli.StringSliceFlag{Name: "topic", Usage: "a topic ('*': every topic) (repeatable)"},
			&cli.StringSliceFlag{Name: "group", Usage: "a consumer group ('*': every group) (repeatable)"},
			&cli.BoolFlag{Name: "cluster", Usage: "the cluster resource"},
			&cli.StringSliceFlag{Name: "transactional-id", Usage: "a transactional id ('*': every one) (repeatable)"},
			&cli.StringSliceFlag{Name: "delegation-token", Usage: "a delegation token id ('*': every one) (repeatable)"},
			&cli.StringFlag{Name: "resource-pattern-type", Value: "literal", Usage: "literal or prefixed; with --list and --remove also any or match"},
			&cli.StringSliceFlag{Name: "operation", Usage: "an operation to allow or deny, default All (repeatable): " + strings.Join(operationNames(), ", ")},
			&cli.StringSliceFlag{Name: "allow-principal", Usage: "a principal Type:name to allow, e.g. User:alice; User:* is every user (repeatable)"},
			&cli.StringSliceFlag{Name: "deny-principal", Usage: "a principal Type:name to deny (deny rules take precedence) (repeatable)"},
			&cli.StringSliceFlag{Name: "principal", Usage: "with --list: only this principal's ACLs (repeatable)"},
			&cli.StringSliceFlag{Name: "allow-host", Usage: "a host the allowed principals connect from, default * (repeatable)"},
			&cli.StringSliceFlag{Name: "deny-host", Usage: "a host the denied principals are denied from, default * (repeatable)"},
			&cli.BoolFlag{Name: "producer", Usage: "the producer role: WRITE, DESCRIBE, CREATE on the topics, WRITE, DESCRIBE on the transactional ids"},
			&cli.BoolFlag{Name: "idempotent", Usage: "with --producer: IDEMPOTENT_WRITE on the cluster"},
			&cli.BoolFlag{Name: "consumer", Usage: "the consumer role: READ, DESCRIBE on the topics, READ on the groups"},
			&cli.BoolFlag{Name: "force", Usage: "do not ask for confirmation on --remove"},
		},
		Action: aclsAction,
	}
}

// aclsBackend is where the ACLs are: the znodes (--authorizer-properties) or the brokers'
// ACL APIs (--bootstrap-server).
type aclsBackend interface {
	// create adds entries to the resource pattern r.
	create(c *cli.Context, r acl.Resource, entries []acl.Entry) error
	// remove deletes entries (every entry when none) from each pattern the filter matches.
	remove(c *cli.Context, f acl.ResourceFilter, entries []acl.Entry) error
	// bindings lists every ACL the filters match (every ACL when none), sorted, each once.
	bindings(c *cli.Context, filters []acl.ResourceFilter) ([]acl.Binding, error)
	close()
}

// aclsTarget is one resource pattern (filter) of the command line with its entries, in the
// order AclCommand builds them.
type aclsTarget struct {
	filter  acl.Resource // Pattern may be ANY or MATCH (a filter) for --list and --remove
	entries []acl.Entry
}

func aclsAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return failf("unexpected argument %q", c.Args().First())
	}
	if err := checkACLsArgs(c); err != nil {
		return err
	}
	pattern, err := acl.ParsePatternType(strings.TrimSpace(c.String("resource-pattern-type")))
	if err != nil || pattern == acl.PatternUnknown {
		return failf("invalid --resource-pattern-type %q: literal, prefixed, any or match", c.String("resource-pattern-type"))
	}
	var targets []aclsTarget
	if !c.Bool("list") {
		if c.Bool("add") && pattern != acl.PatternLiteral && pattern != acl.PatternPrefixed {
			return failf("A '--resource-pattern-type' value of '%v' is not valid when adding acls.", pattern)
		}
		if targets, err = aclTargets(c, pattern); err != nil {
			return err
		}
	}
	if c.Bool("add") {
		// Every ACL is checked before anything is written (CreateAcls' checks).
		for _, t := range targets {
			if len(t.entries) == 0 {
				return failf("You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.")
			}
			for _, e := range t.entries {
				if err := (acl.Binding{Resource: t.filter, Entry: e}).Validate(); err != nil {
					return failf("cannot add %s to %s: %s", entryString(e), patternString(t.filter), strings.TrimPrefix(err.Error(), "acl: "))
				}
			}
		}
	}
	var listPrincipals []string
	for _, p := range c.StringSlice("principal") {
		p = strings.TrimSpace(p)
		if _, _, err := acl.ParsePrincipal(p); err != nil {
			return failf("invalid --principal %q: not of the form Type:name (User:alice)", p)
		}
		listPrincipals = append(listPrincipals, p)
	}
	filters := resourceFilters(c, pattern)

	b, err := newACLsBackend(c)
	if err != nil {
		return err
	}
	defer b.close()
	out := c.App.Writer
	switch {
	case c.Bool("add"):
		for _, t := range targets {
			fmt.Fprintf(out, "Adding ACLs for resource `%s`: \n %s \n\n", patternString(t.filter), entriesString(t.entries))
			if err := b.create(c, t.filter, t.entries); err != nil {
				return err
			}
		}
	case c.Bool("remove"):
		for _, t := range targets {
			var msg string
			if len(t.entries) == 0 {
				msg = fmt.Sprintf("Are you sure you want to delete all ACLs for resource filter `%s`? (y/n)", patternString(t.filter))
			} else {
				msg = fmt.Sprintf("Are you sure you want to remove ACLs: \n %s \n from resource filter `%s`? (y/n)", entriesString(t.entries), patternString(t.filter))
			}
			if !confirm(c, msg) {
				continue
			}
			if err := b.remove(c, filterOf(t.filter), t.entries); err != nil {
				return err
			}
		}
	}
	return listACLs(c, b, filters, listPrincipals)
}

// listACLs prints the ACLs of the filters (every ACL when none) as AclCommand's listAcls,
// per principal of --principal when given.
func listACLs(c *cli.Context, b aclsBackend, filters []acl.Resource, principals []string) error {
	fs := make([]acl.ResourceFilter, 0, len(filters))
	for _, f := range filters {
		fs = append(fs, filterOf(f))
	}
	bindings, err := b.bindings(c, fs)
	if err != nil {
		return err
	}
	out := c.App.Writer
	print := func(keep func(acl.Entry) bool) {
		var cur *acl.Resource
		var entries []acl.Entry
		flush := func() {
			if cur != nil && len(entries) > 0 {
				fmt.Fprintf(out, "Current ACLs for resource `%s`: \n %s \n\n", patternString(*cur), entriesString(entries))
			}
			entries = nil
		}
		for i := range bindings {
			bd := bindings[i]
			if cur == nil || *cur != bd.Resource {
				flush()
				cur = &bindings[i].Resource
			}
			if keep(bd.Entry) {
				entries = append(entries, bd.Entry)
			}
		}
		flush()
	}
	if len(principals) == 0 {
		print(func(acl.Entry) bool { return true })
		return nil
	}
	for _, p := range principals {
		fmt.Fprintf(out, "ACLs for principal `%s`\n", p)
		print(func(e acl.Entry) bool { return e.Principal == p })
	}
	return nil
}

// confirm is AclCommand's confirmAction: true with --force, else the message and a line of
// stdin that must be y or Y (end of input is no).
func confirm(c *cli.Context, msg string) bool {
	if c.Bool("force") {
		return true
	}
	fmt.Fprintln(c.App.Writer, msg)
	var line []byte
	buf := make([]byte, 1)
	for {
		n, err := c.App.Reader.Read(buf)
		if n == 1 {
			if buf[0] == '\n' {
				break
			}
			line = append(line, buf[0])
		}
		if err != nil {
			break
		}
	}
	return strings.EqualFold(strings.TrimRight(string(line), "\r"), "y")
}

// checkACLsArgs is AclCommandOptions.checkArgs, each failure naming the flags.
func checkACLsArgs(c *cli.Context) error {
	bs := strings.TrimSpace(c.String("bootstrap-server")) != ""
	switch {
	case bs && c.IsSet("authorizer"):
		return failf("Only one of --bootstrap-server or --authorizer must be specified")
	case !bs && !c.IsSet("authorizer-properties"):
		return failf("--authorizer-properties zookeeper.connect=HOST:PORT[/chroot] or --bootstrap-server is required")
	case c.IsSet("command-config") && !bs:
		return failf("The --command-config option can only be used with --bootstrap-server option")
	case c.IsSet("authorizer-properties") && bs:
		return failf("The --authorizer-properties option cannot be used with --bootstrap-server")
	}
	actions := 0
	for _, a := range []string{"add", "remove", "list"} {
		if c.Bool(a) {
			actions++
		}
	}
	if actions != 1 {
		return failf("Command must include exactly one action: --list, --add, --remove.")
	}
	invalidWith := func(opt string, others ...string) error {
		if !c.Bool(opt) {
			return nil
		}
		for _, o := range others {
			if c.IsSet(o) {
				return failf("Option --%s can't be used with option --%s", opt, o)
			}
		}
		return nil
	}
	if err := invalidWith("list", "producer", "consumer", "allow-host", "allow-principal", "deny-host", "deny-principal"); err != nil {
		return err
	}
	for _, role := range []string{"producer", "consumer"} {
		if err := invalidWith(role, "operation", "deny-principal", "deny-host"); err != nil {
			return err
		}
	}
	switch {
	case c.IsSet("principal") && !c.Bool("list"):
		return failf("The --principal option is only available if --list is set")
	case c.Bool("producer") && !c.IsSet("topic"):
		return failf("With --producer you must specify a --topic")
	case c.Bool("idempotent") && !c.Bool("producer"):
		return failf("The --idempotent option is only available if --producer is set")
	case c.Bool("consumer") && (!c.IsSet("topic") || !c.IsSet("group") || (!c.Bool("producer") && (c.Bool("cluster") || c.IsSet("transactional-id")))):
		return failf("With --consumer you must specify a --topic and a --group and no --cluster or --transactional-id option should be specified.")
	}
	return nil
}

// resourceFilters is AclCommand's getResourceFilter: the named resources with the pattern
// type, in the order topics, cluster, groups, transactional ids, delegation tokens. The
// cluster is named only with a LITERAL pattern type (--cluster or --idempotent).
func resourceFilters(c *cli.Context, pattern acl.PatternType) []acl.Resource {
	var out []acl.Resource
	seen := map[acl.Resource]bool{}
	add := func(typ acl.ResourceType, name string) {
		r := acl.Resource{Type: typ, Name: name, Pattern: pattern}
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	for _, t := range c.StringSlice("topic") {
		add(acl.ResourceTopic, strings.TrimSpace(t))
	}
	if pattern == acl.PatternLiteral && (c.Bool("cluster") || c.Bool("idempotent")) {
		add(acl.ResourceCluster, acl.ClusterName)
	}
	for _, g := range c.StringSlice("group") {
		add(acl.ResourceGroup, strings.TrimSpace(g))
	}
	for _, x := range c.StringSlice("transactional-id") {
		add(acl.ResourceTransactionalID, x)
	}
	for _, d := range c.StringSlice("delegation-token") {
		add(acl.ResourceDelegationToken, strings.TrimSpace(d))
	}
	return out
}

// aclTargets is AclCommand's getResourceFilterToAcls for --add and --remove: the command
// line's ACLs on each named resource, or the --producer and --consumer roles' (merged when
// both are given), each operation checked against what the resource type supports.
func aclTargets(c *cli.Context, pattern acl.PatternType) ([]aclsTarget, error) {
	filters := resourceFilters(c, pattern)
	if len(filters) == 0 {
		return nil, failf("You must provide at least one resource: --topic <topic> or --cluster or --group <group> or --transactional-id <id> or --delegation-token <Delegation Token ID>")
	}
	var targets []aclsTarget
	index := map[acl.Resource]int{}
	put := func(r acl.Resource, entries []acl.Entry) {
		if i, ok := index[r]; ok {
			targets[i].entries = sortEntries(dedupACLEntries(append(targets[i].entries, entries...)))
			return
		}
		index[r] = len(targets)
		targets = append(targets, aclsTarget{filter: r, entries: entries})
	}
	producer, consumer := c.Bool("producer"), c.Bool("consumer")
	if !producer && !consumer {
		ops := []acl.Operation{acl.OpAll}
		if c.IsSet("operation") {
			ops = nil
			for _, s := range c.StringSlice("operation") {
				op, err := acl.ParseOperation(strings.TrimSpace(s))
				if err != nil {
					return nil, failf("invalid --operation %q: valid operations are %s", s, strings.Join(operationNames(), ", "))
				}
				ops = append(ops, op)
			}
		}
		entries, err := aclEntries(c, ops)
		if err != nil {
			return nil, err
		}
		for _, f := range filters {
			put(f, entries)
		}
	}
	if producer {
		topicACLs, err := aclEntries(c, []acl.Operation{acl.OpWrite, acl.OpDescribe, acl.OpCreate})
		if err != nil {
			return nil, err
		}
		txnACLs, _ := aclEntries(c, []acl.Operation{acl.OpWrite, acl.OpDescribe})
		for _, f := range filters {
			switch f.Type {
			case acl.ResourceTopic:
				put(f, topicACLs)
			case acl.ResourceTransactionalID:
				put(f, txnACLs)
			}
		}
		if c.Bool("idempotent") {
			idem, _ := aclEntries(c, []acl.Operation{acl.OpIdempotentWrite})
			put(acl.Resource{Type: acl.ResourceCluster, Name: acl.ClusterName, Pattern: acl.PatternLiteral}, idem)
		}
	}
	if consumer {
		topicACLs, err := aclEntries(c, []acl.Operation{acl.OpRead, acl.OpDescribe})
		if err != nil {
			return nil, err
		}
		groupACLs, _ := aclEntries(c, []acl.Operation{acl.OpRead})
		for _, f := range filters {
			switch f.Type {
			case acl.ResourceTopic:
				put(f, topicACLs)
			case acl.ResourceGroup:
				put(f, groupACLs)
			}
		}
	}
	for _, t := range targets {
		supported := acl.SupportedOperations(t.filter.Type)
		for _, e := range t.entries {
			if e.Operation != acl.OpAll && !containsOp(supported, e.Operation) {
				names := []string{}
				for _, o := range append(append([]acl.Operation{}, supported...), acl.OpAll) {
					names = append(names, javaName(o.String()))
				}
				return nil, failf("invalid --operation %s: ResourceType %s only supports operations %s", e.Operation, javaName(t.filter.Type.String()), strings.Join(names, ", "))
			}
		}
	}
	return targets, nil
}

// aclEntries is AclCommand's getAcl: each allowed principal with each operation and each
// allowed host (default *), then the same for the denied ones; sorted.
func aclEntries(c *cli.Context, ops []acl.Operation) ([]acl.Entry, error) {
	var out []acl.Entry
	for _, side := range []struct {
		principals, hosts string
		perm              acl.Permission
	}{{"allow-principal", "allow-host", acl.Allow}, {"deny-principal", "deny-host", acl.Deny}} {
		hosts := []string{acl.WildcardHost}
		if c.IsSet(side.hosts) {
			hosts = nil
			for _, h := range c.StringSlice(side.hosts) {
				if h = strings.TrimSpace(h); h == "" {
					return nil, failf("invalid --%s: empty (use '*' for every host)", side.hosts)
				}
				hosts = append(hosts, acl.NormalizeHost(h))
			}
		}
		for _, p := range c.StringSlice(side.principals) {
			p = strings.TrimSpace(p)
			if _, _, err := acl.ParsePrincipal(p); err != nil {
				return nil, failf("invalid --%s %q: not of the form Type:name (User:alice)", side.principals, p)
			}
			for _, op := range ops {
				for _, h := range hosts {
					out = append(out, acl.Entry{Principal: p, Host: h, Operation: op, Permission: side.perm})
				}
			}
		}
	}
	return sortEntries(dedupACLEntries(out)), nil
}

func filterOf(r acl.Resource) acl.ResourceFilter {
	name := r.Name
	return acl.ResourceFilter{Type: r.Type, Name: &name, Pattern: r.Pattern}
}

// patternString is Kafka's ResourcePattern (and ResourcePatternFilter) toString.
func patternString(r acl.Resource) string {
	return fmt.Sprintf("ResourcePattern(resourceType=%s, name=%s, patternType=%s)", javaName(r.Type.String()), r.Name, r.Pattern)
}

// entryString is Kafka's AccessControlEntry toString.
func entryString(e acl.Entry) string {
	return fmt.Sprintf("(principal=%s, host=%s, operation=%s, permissionType=%s)", e.Principal, e.Host, javaName(e.Operation.String()), javaName(e.Permission.String()))
}

// entriesString is AclCommand's acls.map("\t" + _).mkString(Newline).
func entriesString(es []acl.Entry) string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = "\t" + entryString(e)
	}
	return strings.Join(lines, "\n")
}

// javaName writes a model name as Kafka's Java enum constant: "IdempotentWrite" →
// "IDEMPOTENT_WRITE", "TransactionalId" → "TRANSACTIONAL_ID".
func javaName(s string) string {
	var b strings.Builder
	for i, r := range s {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return strings.ToUpper(b.String())
}

// operationNames are the operations --operation accepts, as kafka-acls.sh lists them.
func operationNames() []string {
	var out []string
	for o := acl.OpAll; o <= acl.OpIdempotentWrite; o++ {
		out = append(out, o.String())
	}
	return out
}

func containsOp(ops []acl.Operation, o acl.Operation) bool {
	for _, x := range ops {
		if x == o {
			return true
		}
	}
	return false
}

func dedupACLEntries(es []acl.Entry) []acl.Entry {
	seen := map[acl.Entry]bool{}
	out := es[:0:0]
	for _, e := range es {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out
}

func sortEntries(es []acl.Entry) []acl.Entry {
	sort.Slice(es, func(i, j int) bool {
		x, y := es[i], es[j]
		if x.Principal != y.Principal {
			return x.Principal < y.Principal
		}
		if x.Host != y.Host {
			return x.Host < y.Host
		}
		if x.Operation != y.Operation {
			return x.Operation < y.Operation
		}
		return x.Permission < y.Permission
	})
	return es
}
