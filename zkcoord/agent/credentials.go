package agent

import (
	"errors"
	"sync"

	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"

	"github.com/isrbroker/isrbroker/broker/security/sasl"
	"github.com/isrbroker/isrbroker/zkcoord/zkclient"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// CredentialCache is the broker's cache of SCRAM credentials (Kafka's CredentialCache, filled by
// CredentialProvider through the DynamicConfigManager): the credential text each user's znode
// /config/users/<sanitized user> holds under a mechanism's name (docs/sasl.md §3). Load reads
// every user at start; Follow keeps it current through the users/<user> change notifications,
// so a user created or changed with `isrbroker configs --entity-type users` logs in without a
// restart. It implements broker/security/sasl's CredentialStore; safe for concurrent use.
type CredentialCache struct {
	conn zkclient.Conn
	log  logrus.FieldLogger

	mu    sync.RWMutex
	creds map[string]map[string]sasl.ScramCredential // mechanism → user → credential
}

var _ sasl.CredentialStore = (*CredentialCache)(nil)

// scramMechanisms are the mechanisms whose credentials are cached (Kafka's ScramMechanism
// values). Kafka caches only the enabled ones; a server mechanism asks only for its own, so
// caching both changes nothing a client sees.
var scramMechanisms = []string{sasl.ScramSHA256, sasl.ScramSHA512}

// NewCredentialCache returns an empty cache over conn.
func NewCredentialCache(conn zkclient.Conn, log logrus.FieldLogger) *CredentialCache {
	c := &CredentialCache{conn: conn, log: log.WithField("component", "dynamic-config"), creds: map[string]map[string]sasl.ScramCredential{}}
	for _, m := range scramMechanisms {
		c.creds[m] = map[string]sasl.ScramCredential{}
	}
	return c
}

// ScramCredential is sasl.CredentialStore's lookup: the cached credential of username for
// mechanism.
func (c *CredentialCache) ScramCredential(mechanism, username string) (sasl.ScramCredential, bool, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	cred, ok := c.creds[mechanism][username]
	return cred, ok, nil
}

// Load reads every user's znode into the cache (the start-up scan; Follow's first full scan
// reads them again).
func (c *CredentialCache) Load() error {
	names, err := c.conn.Children(zkdata.PathConfigUsers)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, n := range names {
		user, err := zkdata.DesanitizeUser(n)
		if err != nil || n == zkdata.DefaultBrokerEntity {
			continue
		}
		data, _, err := c.conn.Get(zkdata.UserConfigPath(user))
		if errors.Is(err, zk.ErrNoNode) || err == nil && len(data) == 0 { // gone, or a bare quota parent
			continue
		}
		if err != nil {
			return err
		}
		cfg, err := zkdata.DecodeConfig(data)
		if err != nil {
			c.log.WithField("path", zkdata.UserConfigPath(user)).WithError(err).Warn("ignoring undecodable user config znode")
			continue
		}
		c.UpdateUser(user, cfg)
	}
	return nil
}

// Follow registers the cache with the config listener: every users/<user> notification
// re-reads that user.
func (c *CredentialCache) Follow(l *ConfigListener) { l.OnUserConfig(c.UpdateUser) }

// UpdateUser replaces user's credentials by those of cfg, the user's complete config (Kafka's
// CredentialProvider.updateCredentials): a mechanism's key sets its credential, a missing key
// removes it. Text that does not parse removes the credential too, with a warning (Kafka keeps
// the old one and logs the error; a credential that cannot be read should not keep an old
// password working).
func (c *CredentialCache) UpdateUser(user string, cfg map[string]string) {
	parsed := map[string]sasl.ScramCredential{}
	for _, m := range scramMechanisms {
		text, ok := cfg[m]
		if !ok {
			continue
		}
		cred, err := sasl.ParseScramCredential(text)
		if err != nil {
			c.log.WithField("entity", zkdata.UserEntity(user)).WithError(err).Warn("ignoring " + m + " credential that does not parse")
			continue
		}
		parsed[m] = cred
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range scramMechanisms {
		if cred, ok := parsed[m]; ok {
			c.creds[m][user] = cred
		} else {
			delete(c.creds[m], user)
		}
	}
}
