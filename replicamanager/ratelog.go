package replicamanager

import "github.com/isrbroker/isrbroker/logstore/ratelog"

// requestWarnings rate-limits the warnings of the request path that repeat per request: a
// produce rejected below min.insync.replicas (K2), requests of a stale controller (K3). Once
// per 10 s per key, then a line with suppressed=<n> (docs/logging.md, "Rate-limited warnings").
var requestWarnings = ratelog.New(ratelog.DefaultInterval, nil)
