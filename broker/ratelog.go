package broker

import "github.com/isrbroker/isrbroker/broker/ratelog"

// requestWarnings rate-limits the lines a client can repeat on every request (bad frames,
// requests before the first UpdateMetadata, failed topic auto-creation): once per 10 s per
// key, then a line with suppressed=<n> (docs/logging.md, "Rate-limited warnings").
var requestWarnings = ratelog.New(ratelog.DefaultInterval, nil)
