package admintool

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/isrbroker/isrbroker/broker/security/sasl"
	"github.com/isrbroker/isrbroker/zkcoord/admin"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// `isrbroker configs --entity-type users`: the SCRAM credentials of Kafka 2.4's kafka-configs.sh
// --zookeeper (ConfigCommand's preProcessScramCredentials, docs/sasl.md §3). --add-config
// 'SCRAM-SHA-256=[iterations=8192,password=pw]' stores the credential derived from the password
// (salt, stored and server key, iterations; never the password) in /config/users/<sanitized
// user>, and the brokers' credential caches reload the user from the change notification.
// --describe shows each mechanism with its iterations only: Kafka 2.4 prints the stored text,
// salt and keys included; isrbroker keeps those out of terminals and logs (Kafka 2.7's
// KIP-554 describe shows the iterations alone too).

// userConfigReader and userConfigWriter are what the users and clients entities need of
// ZooKeeper (admin.Reader, admin.Admin).
type userConfigReader interface {
	QuotaConfig(user, client string) (map[string]string, error)
	QuotaEntityNames(parent string) ([]string, error)
}

type userConfigWriter interface {
	AlterQuotaConfig(user, client string, edit func(map[string]string)) error
}

// quotaKeys are the client quota keys (Kafka's DynamicConfig.Client, also valid for users;
// docs/quotas.md): the byte rates are longs, request_percentage a double.
var quotaKeys = map[string]bool{"producer_byte_rate": true, "consumer_byte_rate": true, "request_percentage": true}

// quotaEntity is the request's users/clients entity; a request built without one (tests, the
// users entity of older callers) is the users entity r.name.
func (r *configsRequest) quotaEntity() *quotaEntity {
	if r.quota != nil {
		return r.quota
	}
	return &quotaEntity{user: r.name, hasUser: true, userNamed: r.named}
}

// usersAction runs --describe or --alter for users and clients through ZooKeeper.
func usersAction(c *cli.Context, r *configsRequest, zkc string, out io.Writer) error {
	if zkc == "" {
		return failf("--entity-type %s needs --zookeeper: Kafka 2.4's kafka-configs writes SCRAM credentials and quotas to ZooKeeper only (the AlterUserScramCredentials and AlterClientQuotas APIs are Kafka 2.6-2.7)", c.String("entity-type"))
	}
	// No /brokers/ids check: the SCRAM credential of an inter-broker login must exist before
	// the brokers start (Kafka's kafka-configs --zookeeper writes it into an empty ZooKeeper).
	coord, err := connectZKSession(c, false)
	if err != nil {
		return err
	}
	defer coord.Close()
	if c.Bool("alter") {
		err = alterUserConfigs(coord.Reader, coord.Admin, r, out)
	} else {
		err = describeUserConfigs(coord.Reader, r, out)
	}
	var ee *exitError
	if err != nil && !errors.As(err, &ee) {
		return zkErr(c, err)
	}
	return err
}

// userAdditions checks --add-config's keys for entity e: quota keys take positive numbers;
// SCRAM keys (a named user's own entity only) become the credential text (Kafka's
// preProcessScramCredentials: iterations default 4096, fewer is an error, a fresh salt).
func userAdditions(add map[string]string, e *quotaEntity) (map[string]string, error) {
	out := make(map[string]string, len(add))
	for _, k := range sortedKeys(add) {
		if quotaKeys[k] {
			v := strings.TrimSpace(add[k])
			var err error
			if k == "request_percentage" {
				_, err = strconv.ParseFloat(v, 64)
			} else {
				_, err = strconv.ParseInt(v, 10, 64)
			}
			if err != nil || strings.HasPrefix(v, "-") {
				return nil, failf("Invalid value %s for configuration %s: a positive number is required", v, k)
			}
			out[k] = v
			continue
		}
		m, ok := sasl.ScramMechanismByName(k)
		if !ok || e.hasClient {
			return nil, failf("Unknown Dynamic Configuration '%s' for %s: valid keys are %s", k, e, validUserKeys(e))
		}
		if e.user == zkdata.DefaultBrokerEntity {
			return nil, failf("%s is a user's credential: the <default> user entity takes quotas only", k)
		}
		iterations, password, err := sasl.ParseScramConfigValue(m, add[k])
		if err != nil {
			return nil, failf("%s", err)
		}
		cred, err := sasl.NewScramCredential(m, password, iterations, nil)
		if err != nil {
			return nil, failf("%s", err)
		}
		out[k] = cred.Format()
	}
	return out, nil
}

func validUserKeys(e *quotaEntity) string {
	keys := "producer_byte_rate, consumer_byte_rate, request_percentage"
	if !e.hasClient {
		keys += ", " + sasl.ScramSHA256 + ", " + sasl.ScramSHA512
	}
	return keys
}

// alterUserConfigs applies --add-config and --delete-config to the user's znode in one
// compare-and-set write and notifies the brokers.
func alterUserConfigs(rd userConfigReader, w userConfigWriter, r *configsRequest, out io.Writer) error {
	e := r.quotaEntity()
	add, err := userAdditions(r.add, e)
	if err != nil {
		return err
	}
	edit := &configsRequest{users: true, quota: e, add: add, del: r.del}
	cur, err := rd.QuotaConfig(e.zkUser(), e.zkClient())
	if err != nil {
		return err
	}
	if _, err := edit.applyEdit(cur); err != nil {
		return err
	}
	var editErr error
	err = w.AlterQuotaConfig(e.zkUser(), e.zkClient(), func(m map[string]string) {
		next, err := edit.applyEdit(m)
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
		return err
	}
	if editErr != nil {
		return editErr
	}
	fmt.Fprintf(out, "Completed Updating config for entity: %s.\n", r.entityString())
	return nil
}

// describeUserConfigs prints "Configs for <entity> are ..." for the named entity, or for every
// entity of an unnamed level (ConfigCommand's getAllEntities; empty user znodes are skipped
// when describing all users, as ConfigCommand does). A SCRAM value shows as iterations=<n>.
func describeUserConfigs(rd userConfigReader, r *configsRequest, out io.Writer) error {
	e := r.quotaEntity()
	var entities []quotaEntity
	users := []string{e.user}
	if e.hasUser && !e.userNamed {
		var err error
		if users, err = rd.QuotaEntityNames(zkdata.PathConfigUsers); err != nil {
			return err
		}
	}
	for _, u := range users {
		if !e.hasClient {
			entities = append(entities, quotaEntity{user: u, hasUser: true, userNamed: true})
			continue
		}
		clients := []string{e.client}
		if !e.clientNamed {
			parent := zkdata.PathConfigClients
			if e.hasUser {
				parent = zkdata.UserClientsPath(u)
			}
			var err error
			if clients, err = rd.QuotaEntityNames(parent); err != nil {
				return err
			}
		}
		for _, c := range clients {
			entities = append(entities, quotaEntity{user: u, client: c, hasUser: e.hasUser, userNamed: e.hasUser, hasClient: true, clientNamed: true})
		}
	}
	describeAllUsers := e.hasUser && !e.userNamed && !e.hasClient
	for i := range entities {
		x := &entities[i]
		cfg, err := rd.QuotaConfig(x.zkUser(), x.zkClient())
		if err != nil {
			return err
		}
		if len(cfg) == 0 && describeAllUsers {
			continue
		}
		var kv []string
		for _, k := range sortedKeys(cfg) {
			kv = append(kv, k+"="+describeUserValue(k, cfg[k]))
		}
		fmt.Fprintf(out, "Configs for %s are %s\n", x, strings.Join(kv, ","))
	}
	return nil
}

// describeUserValue is a SCRAM credential's iterations, without its salt and keys.
func describeUserValue(key, value string) string {
	if _, ok := sasl.ScramMechanismByName(key); !ok {
		return value
	}
	cred, err := sasl.ParseScramCredential(value)
	if err != nil {
		return "<credential does not parse>"
	}
	return fmt.Sprintf("iterations=%d", cred.Iterations)
}

var (
	_ userConfigReader = (*admin.Reader)(nil)
	_ userConfigWriter = (*admin.Admin)(nil)
)
