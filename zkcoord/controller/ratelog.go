package controller

import "github.com/isrbroker/isrbroker/broker/ratelog"

// responseWarnings rate-limits the warnings about brokers' error responses to controller
// requests (STALE_CONTROLLER_EPOCH per partition, K3): once per 10 s per broker, partition and
// error, then a line with suppressed=<n> (docs/logging.md, "Rate-limited warnings").
var responseWarnings = ratelog.New(ratelog.DefaultInterval, nil)
