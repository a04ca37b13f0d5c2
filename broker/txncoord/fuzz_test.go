package txncoord

import (
	"testing"

	"github.com/sirupsen/logrus"
)

// FuzzTransactionLogRecords feeds arbitrary log bytes to the loader's decoding: it must return
// errors, never panic (a corrupt __transaction_state must not stop the broker).
func FuzzTransactionLogRecords(f *testing.F) {
	v, _ := valueBytes(txnRecord{producerID: 1, state: Ongoing, partitions: map[topicPartition]struct{}{tp0: {}}, lastUpdate: 1, start: 1})
	f.Add(encodeBatch(1, []kv{{key: keyBytes("a"), value: v}, {key: keyBytes("b")}}))
	f.Add(v)
	f.Add(keyBytes("a"))
	log := logrus.New()
	log.SetLevel(logrus.PanicLevel)
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, _ = parseKey(raw)
		_, _ = parseValue(raw)
		batches, _, _ := decodeBatches(raw)
		out := map[string]*txnMetadata{}
		for _, b := range batches {
			for _, r := range b.records {
				applyRecord(out, r, log)
			}
		}
	})
}
