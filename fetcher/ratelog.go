package fetcher

import (
	"github.com/isrbroker/isrbroker/broker/ratelog"
)

// backoffWarnings rate-limits a fetcher's warnings about a leader it cannot reach: with the
// leader down, every replica.fetch.backoff.ms (S17) would write one line until the controller
// moves the leadership. Once per 10 s per fetcher, then a line with suppressed=<n>
// (docs/logging.md, "Rate-limited warnings").
var backoffWarnings = ratelog.New(ratelog.DefaultInterval, nil)

// A fetcher's warnings are keyed by fetcherThread.warnKey: the broker and Kafka's thread name.
