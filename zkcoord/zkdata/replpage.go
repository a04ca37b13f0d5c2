package zkdata

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// ---- /isrbroker/replication_page/<id> (isrbroker's own; Kafka has no such znode) ----

// PathReplicationPages holds, per broker id, the HTTP address of the broker's metrics listener
// that serves its replication page (docs/replication-page.md). Kafka's tools never read it; it is
// kept out of /brokers/ids/<id>, whose JSON stays exactly Kafka's. The children are persistent:
// a broker rewrites its own at every start, and readers only look up registered brokers.
const PathReplicationPages = "/isrbroker/replication_page"

// ReplicationPagePath is /isrbroker/replication_page/<id>.
func ReplicationPagePath(id int32) string {
	return PathReplicationPages + "/" + strconv.Itoa(int(id))
}

type replicationPageZNode struct {
	Version int32  `json:"version"`
	Address string `json:"address"` // host:port of the HTTP listener
}

// EncodeReplicationPage is {"version":1,"address":"host:port"}.
func EncodeReplicationPage(address string) []byte {
	b, _ := json.Marshal(replicationPageZNode{Version: 1, Address: address})
	return b
}

// DecodeReplicationPage returns the address of a replication page znode.
func DecodeReplicationPage(data []byte) (string, error) {
	var z replicationPageZNode
	if err := json.Unmarshal(data, &z); err != nil {
		return "", fmt.Errorf("zkcoord: replication page znode: %w", err)
	}
	if z.Address == "" {
		return "", fmt.Errorf("zkcoord: replication page znode has no address")
	}
	return z.Address, nil
}
