package admin

import (
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// BrokerEntityConfig returns the "config" map of /config/brokers/<entity> (empty when absent),
// where entity is a broker id ("1") or zkdata.DefaultBrokerEntity for the cluster default.
// DescribeConfigs and the incremental config changes read the entity through it.
func (r *Reader) BrokerEntityConfig(entity string) (map[string]string, error) {
	data, _, err := r.conn.Get(zkdata.BrokerEntityConfigPath(entity))
	if errors.Is(err, zk.ErrNoNode) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	return zkdata.DecodeConfig(data)
}
