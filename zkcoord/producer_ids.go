package zkcoord

import (
	"context"
	"errors"
	"fmt"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"math"

	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"
)

// AllocateProducerIDBlock takes the next block of zkdata.ProducerIDBlockSize producer ids for this
// broker, like Kafka 2.4's ProducerIdManager: it reads /latest_producer_id_block, writes
// the block after the one recorded there with a compare-and-set on the znode version, and
// retries on BADVERSION (another broker took a block meanwhile). The returned range
// [start, end] is inclusive; blocks of different brokers never overlap.
func (c *Coordinator) AllocateProducerIDBlock(ctx context.Context) (start, end int64, err error) {
	for {
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		data, st, err := c.get(zkdata.PathProducerIDBlock)
		if errors.Is(err, zk.ErrNoNode) {
			// Normally created at setup; create it empty and read again.
			if _, err := c.create(zkdata.PathProducerIDBlock, nil, 0); err != nil && !errors.Is(err, zk.ErrNodeExists) {
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
		_, err = c.set(zkdata.PathProducerIDBlock, zkdata.EncodeProducerIDBlock(c.cfg.BrokerID, start, end), st.Version)
		if errors.Is(err, zk.ErrBadVersion) {
			continue
		}
		if err != nil {
			return 0, 0, err
		}
		c.log.WithFields(logrus.Fields{"blockStart": start, "blockEnd": end}).Info("allocated producer id block")
		return start, end, nil
	}
}
