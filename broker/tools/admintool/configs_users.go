package admintool

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/isrbroker/isrbroker/broker/security/sasl"
	"github.com/isrbroker/isrbroker/zkcoord/admin"
)

// `isrbroker configs --entity-type users`: the SCRAM credentials of Kafka 2.4's kafka-configs.sh
// --zookeeper (ConfigCommand's preProcessScramCredentials, docs/sasl.md §3). --add-config
// 'SCRAM-SHA-256=[iterations=8192,password=pw]' stores the credential derived from the password
// (salt, stored and server key, iterations; never the password) in /config/users/<sanitized
// user>, and the brokers' credential caches reload the user from the change notification.
// --describe shows each mechanism with its iterations only: Kafka 2.4 prints the stored text,
// salt and keys included; isrbroker keeps those out of terminals and logs (Kafka 2.7's
// KIP-554 describe shows the iterations alone too).

// userConfigReader and userConfigWriter are what the users entity needs of ZooKeeper
// (admin.Reader, admin.Admin).
type userConfigReader interface {
	UserConfig(user string) (map[string]string, error)
	Users() ([]string, error)
}

type userConfigWriter interface {
	AlterUserConfig(user string, edit func(map[string]string)) error
}

// quotaKeys are the user quota keys Kafka 2.4 also accepts for users (DynamicConfig.User).
var quotaKeys = map[string]bool{"producer_byte_rate": true, "consumer_byte_rate": true, "request_percentage": true}

// usersAction runs --describe or --alter for users through ZooKeeper.
func usersAction(c *cli.Context, r *configsRequest, zkc string, out io.Writer) error {
	if zkc == "" {
		return failf("--entity-type users needs --zookeeper: Kafka 2.4's kafka-configs writes SCRAM credentials to ZooKeeper only (the AlterUserScramCredentials API is Kafka 2.7)")
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

// userAdditions checks --add-config's keys and turns each SCRAM value into the credential text
// (Kafka's preProcessScramCredentials: iterations default 4096, fewer is an error, a fresh salt).
func userAdditions(add map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(add))
	for _, k := range sortedKeys(add) {
		m, ok := sasl.ScramMechanismByName(k)
		if !ok {
			if quotaKeys[k] {
				return nil, failf("%s is a client quota: isrbroker has no client quotas", k)
			}
			return nil, failf("Unknown Dynamic Configuration '%s' for users: isrbroker knows %s and %s", k, sasl.ScramSHA256, sasl.ScramSHA512)
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

// alterUserConfigs applies --add-config and --delete-config to the user's znode in one
// compare-and-set write and notifies the brokers.
func alterUserConfigs(rd userConfigReader, w userConfigWriter, r *configsRequest, out io.Writer) error {
	add, err := userAdditions(r.add)
	if err != nil {
		return err
	}
	edit := &configsRequest{users: true, name: r.name, add: add, del: r.del}
	cur, err := rd.UserConfig(r.name)
	if err != nil {
		return err
	}
	if _, err := edit.applyEdit(cur); err != nil {
		return err
	}
	var editErr error
	err = w.AlterUserConfig(r.name, func(m map[string]string) {
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

// describeUserConfigs prints "Configs for user-principal '<u>' are ..." for the named user, or
// for every user with a non-empty config (ConfigCommand skips empty user znodes when describing
// all users). A SCRAM value shows as iterations=<n>; other keys (quotas Kafka wrote) as stored.
func describeUserConfigs(rd userConfigReader, r *configsRequest, out io.Writer) error {
	users := []string{r.name}
	if !r.named {
		var err error
		if users, err = rd.Users(); err != nil {
			return err
		}
	}
	for _, u := range users {
		cfg, err := rd.UserConfig(u)
		if err != nil {
			return err
		}
		if len(cfg) == 0 && !r.named {
			continue
		}
		var kv []string
		for _, k := range sortedKeys(cfg) {
			kv = append(kv, k+"="+describeUserValue(k, cfg[k]))
		}
		e := &configsRequest{users: true, name: u}
		fmt.Fprintf(out, "Configs for %s are %s\n", e.entityString(), strings.Join(kv, ","))
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
