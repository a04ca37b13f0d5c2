package config

import (
	"net"
	"strconv"
)

// MetricsAdvertisedAddress is the host:port at which other brokers and browsers reach this
// broker's metrics listener, published for the replication page (docs/replication-page.md):
// metrics.advertised.listen when set; otherwise metrics.listen, whose host, when it is a
// wildcard ("", 0.0.0.0, ::), is replaced by the first advertised listener's host (the
// container's host name in docker-compose). boundPort, when > 0, is the port actually bound
// (metrics.listen may name port 0). "" when metrics are off.
func (c *Config) MetricsAdvertisedAddress(boundPort int) string {
	if c.MetricsAdvertisedListen != "" {
		return c.MetricsAdvertisedListen
	}
	if c.MetricsListen == "" {
		return ""
	}
	host, port, err := net.SplitHostPort(c.MetricsListen)
	if err != nil {
		return ""
	}
	if boundPort > 0 {
		port = strconv.Itoa(boundPort)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = ""
		if len(c.AdvertisedListeners) > 0 {
			host = c.AdvertisedListeners[0].Host
		}
		if host == "" {
			host = "127.0.0.1"
		}
	}
	return net.JoinHostPort(host, port)
}
