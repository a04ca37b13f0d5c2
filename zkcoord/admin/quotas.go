package admin

import (
	"errors"
	"sort"

	"github.com/go-zookeeper/zk"

	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// Client quota entities (docs/quotas.md): /config/users/<user>, /config/clients/<client-id>
// and /config/users/<user>/clients/<client-id>. user and client are desanitized names or
// <default>; "" is a level the entity lacks.

// AlterQuotaConfig is AlterTopicConfig for a quota entity's config znode; the brokers are
// notified with the entity path (users/<u>, clients/<c> or users/<u>/clients/<c>). A
// user+client entity's parents are created first, /config/users/<u> with an empty config, as
// Kafka's createRecursive leaves them.
func (adm *Admin) AlterQuotaConfig(user, client string, edit func(map[string]string)) error {
	if user != "" && client != "" {
		parent := zkdata.QuotaConfigPath(user, "")
		for _, p := range []struct {
			path string
			data []byte
		}{{parent, zkdata.EncodeConfig(map[string]string{})}, {zkdata.UserClientsPath(user), nil}} {
			if _, err := adm.conn.Create(p.path, p.data, 0); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				return err
			}
		}
	}
	return adm.alterConfig(zkdata.QuotaConfigPath(user, client), zkdata.QuotaEntity(user, client), edit)
}

// QuotaConfig returns the "config" map of a quota entity's znode (empty when absent).
func (r *Reader) QuotaConfig(user, client string) (map[string]string, error) {
	data, _, err := r.conn.Get(zkdata.QuotaConfigPath(user, client))
	if errors.Is(err, zk.ErrNoNode) || err == nil && len(data) == 0 {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	return zkdata.DecodeConfig(data)
}

// QuotaEntityNames returns the entity names below parent (/config/clients, /config/users or
// a user's clients), desanitized (<default> kept) and sorted.
func (r *Reader) QuotaEntityNames(parent string) ([]string, error) {
	names, err := r.conn.Children(parent)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		if u, err := zkdata.DesanitizeEntityName(n); err == nil {
			out = append(out, u)
		}
	}
	sort.Strings(out)
	return out, nil
}
