package agent

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/go-zookeeper/zk"
	"github.com/isrbroker/isrbroker/zkcoord/zkclient"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"github.com/sirupsen/logrus"
)

// ProducerIDs hands out blocks of producer ids from /latest_producer_id_block.
type ProducerIDs struct {
	conn     zkclient.Conn
	brokerID int32
	log      logrus.FieldLogger
}

// NewProducerIDs returns the allocator of broker brokerID.
func NewProducerIDs(conn zkclient.Conn, brokerID int32, log logrus.FieldLogger) *ProducerIDs {
	return &ProducerIDs{conn: conn, brokerID: brokerID, log: log}
}

// AllocateProducerIDBlock takes the next block of zkdata.ProducerIDBlockSize producer ids for
// this broker, like Kafka 2.4's ProducerIdManager: it reads /latest_producer_id_block, writes
// the block after the one recorded there with a compare-and-set on the znode version, and
// retries on BADVERSION (another broker took a block meanwhile). The returned range
// [start, end] is inclusive; blocks of different brokers never overlap.
func (a *ProducerIDs) AllocateProducerIDBlock(ctx context.Context) (start, end int64, err error) {
	for {
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		data, st, err := a.conn.Get(zkdata.PathProducerIDBlock)
		if errors.Is(err, zk.ErrNoNode) {
			// Normally created at setup; create it empty and read again.
			if _, err := a.conn.Create(zkdata.PathProducerIDBlock, nil, 0); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				return 0, 0, err
			}
			continue
		}
		if err != nil {
			return 0, 0, err
		}
		_, prevEnd, err := zkdata.DecodeProducerIDBlock(data)
		if err != nil {
			return 0, 0, err
		}
		if prevEnd > math.MaxInt64-zkdata.ProducerIDBlockSize {
			return 0, 0, fmt.Errorf("zkcoord: producer ids exhausted (last block ends at %d)", prevEnd)
		}
		start, end = prevEnd+1, prevEnd+zkdata.ProducerIDBlockSize
		_, err = a.conn.Set(zkdata.PathProducerIDBlock, zkdata.EncodeProducerIDBlock(a.brokerID, start, end), st.Version)
		if errors.Is(err, zk.ErrBadVersion) {
			continue
		}
		if err != nil {
			return 0, 0, err
		}
		a.log.WithFields(logrus.Fields{"blockStart": start, "blockEnd": end}).Info("allocated producer id block")
		return start, end, nil
	}
}
