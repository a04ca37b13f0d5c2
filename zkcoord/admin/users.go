package admin

import (
	"errors"
	"sort"

	"github.com/go-zookeeper/zk"

	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// User config entities (/config/users/<sanitized user>): the SCRAM credentials that
// kafka-configs --entity-type users writes (docs/sasl.md §3).

// AlterUserConfig is AlterTopicConfig for a user's config znode: edit changes the config in
// place (the SCRAM credential text under each mechanism's name), then every broker is notified
// with entity_path users/<sanitized user> and reloads the user's credentials.
func (adm *Admin) AlterUserConfig(user string, edit func(map[string]string)) error {
	return adm.alterConfig(zkdata.UserConfigPath(user), zkdata.UserEntity(user), edit)
}

// UserConfig returns the "config" map of a user's znode (empty when absent).
func (r *Reader) UserConfig(user string) (map[string]string, error) {
	data, _, err := r.conn.Get(zkdata.UserConfigPath(user))
	if errors.Is(err, zk.ErrNoNode) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	return zkdata.DecodeConfig(data)
}

// Users returns the users with a config znode, desanitized and sorted. Children that do not
// desanitize (not written by Kafka's Sanitizer) are skipped.
func (r *Reader) Users() ([]string, error) {
	names, err := r.conn.Children(zkdata.PathConfigUsers)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		if u, err := zkdata.DesanitizeUser(n); err == nil {
			out = append(out, u)
		}
	}
	sort.Strings(out)
	return out, nil
}
