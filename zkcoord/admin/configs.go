package admin

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/isrbroker/isrbroker/zkcoord/zkclient"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// Config writes: the one path by which isrbroker changes /config/topics/<t> and
// /config/brokers/<id|<default>>, always followed by a /config/changes notification so every
// broker's dynamic config listener applies the change (docs/kafka-facts.md, dynamic configs).

// AlterTopicConfig applies edit to topic's config znode (/config/topics/<topic>) and notifies
// every broker. edit receives the current config (empty when the znode is absent) and changes it
// in place; nothing is written when it leaves the config unchanged. Values are not validated
// here: callers check them against broker/config/configdef first.
func (adm *Admin) AlterTopicConfig(topic string, edit func(map[string]string)) error {
	return adm.alterConfig(zkdata.TopicConfigPath(topic), zkdata.TopicEntity(topic), edit)
}

// AlterBrokerConfig is AlterTopicConfig for /config/brokers/<entity>, where entity is a broker
// id ("1") or zkdata.DefaultBrokerEntity for the cluster-wide default.
func (adm *Admin) AlterBrokerConfig(entity string, edit func(map[string]string)) error {
	return adm.alterConfig(zkdata.BrokerEntityConfigPath(entity), zkdata.BrokerEntity(entity), edit)
}

// alterConfig applies edit to the config znode at path (created when missing) with a
// compare-and-set, then writes a /config/changes/config_change_ notification naming entity
// ("topics/<t>" or "brokers/<id>"), like Kafka's AdminZkClient.changeConfigs. Nothing is
// written when edit leaves the config unchanged.
func (adm *Admin) alterConfig(path, entity string, edit func(map[string]string)) error {
	for attempt := 0; attempt < 10; attempt++ {
		data, st, err := adm.conn.Get(path)
		exists := err == nil
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		cfg := map[string]string{}
		if exists {
			if cfg, err = zkdata.DecodeConfig(data); err != nil {
				return err
			}
		}
		before := fmt.Sprint(cfg)
		edit(cfg)
		if fmt.Sprint(cfg) == before {
			return nil
		}
		if exists {
			_, err = adm.conn.Set(path, zkdata.EncodeConfig(cfg), st.Version)
		} else {
			_, err = adm.conn.Create(path, zkdata.EncodeConfig(cfg), 0)
			if errors.Is(err, zk.ErrNoNode) {
				// The parent is missing before the first broker has started (a SCRAM credential
				// written ahead of the brokers): Kafka's createOrSet creates parents.
				if err = zkclient.CreateRecursive(adm.conn, parentPath(path)); err != nil {
					return err
				}
				continue
			}
		}
		if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return err
		}
		return adm.notifyConfigChange(entity)
	}
	return fmt.Errorf("zkcoord: %s keeps changing", path)
}

// notifyConfigChange writes the /config/changes notification, creating /config/changes when no
// broker has yet.
func (adm *Admin) notifyConfigChange(entity string) error {
	_, err := adm.conn.Create(zkdata.ConfigChangeSequential, zkdata.EncodeConfigChange(entity), zk.FlagSequence)
	if errors.Is(err, zk.ErrNoNode) {
		if err = zkclient.CreateRecursive(adm.conn, parentPath(zkdata.ConfigChangeSequential)); err != nil {
			return err
		}
		_, err = adm.conn.Create(zkdata.ConfigChangeSequential, zkdata.EncodeConfigChange(entity), zk.FlagSequence)
	}
	return err
}
