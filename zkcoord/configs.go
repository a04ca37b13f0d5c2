package zkcoord

import "github.com/isrbroker/isrbroker/zkcoord/zkdata"

// DefaultBrokerEntity names the cluster-wide default broker config entity ("<default>") for
// Reader.BrokerEntityConfig and Admin.AlterBrokerConfig.
const DefaultBrokerEntity = zkdata.DefaultBrokerEntity
