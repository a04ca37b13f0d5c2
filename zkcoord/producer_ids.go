package zkcoord

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"
)

// AllocateProducerIDBlock takes the next block of ProducerIDBlockSize producer ids for this
// broker, like Kafka 2.4's ProducerIdManager: it reads /latest_producer_id_block, writes
// the block after the one recorded there with a compare-and-set on the znode version, and
// retries on BADVERSION (another broker took a block meanwhile). The returned range
// [start, end] is inclusive; blocks of different brokers never overlap.
func (c *Coordinator) AllocateProducerIDBlock(ctx context.Context) (start, end int64, err error) {
	for {
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		data, st, err := c.get(pathProducerIDBlock)
		if errors.Is(err, zk.ErrNoNode) {
			// Normally created at setup; create it empty and read again.
			if _, err := c.create(pathProducerIDBlock, nil, 0); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				return 0, 0, err
			}
			continue
		}
		if err != nil {
			return 0, 0, err
		}
		_, prevEnd, err := decodeProducerIDBlock(data)
		if err != nil {
			return 0, 0, err
		}
		if prevEnd > math.MaxInt64-ProducerIDBlockSize {
			return 0, 0, fmt.Errorf("zkcoord: producer ids exhausted (last block ends at %d)", prevEnd)
		}
		start, end = prevEnd+1, prevEnd+ProducerIDBlockSize
		_, err = c.set(pathProducerIDBlock, encodeProducerIDBlock(c.cfg.BrokerID, start, end), st.Version)
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
