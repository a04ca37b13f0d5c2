package broker

import (
	"strings"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/clientquota"
	"github.com/isrbroker/isrbroker/broker/fetchsession"
)

// Client quotas (docs/quotas.md; Kafka 2.4's QuotaManagers and KafkaApis' throttling):
// producer_byte_rate over Produce request sizes, consumer_byte_rate over consumer Fetch
// response sizes, request_percentage over handler time. A violation answers at once with
// throttle_time_ms and mutes the connection for that time (KIP-219): its reader reads no
// further request until the time has passed (conn.awaitThrottle).

// QuotaConfigSource delivers the client quota entities and their changes (zkcoord's
// ConfigListener.OnQuotaConfig): user and client desanitized or <default>, "" for a level the
// entity lacks, cfg the entity's complete config.
type QuotaConfigSource interface {
	OnQuotaConfig(f func(user, client string, cfg map[string]string))
}

func newClientQuotas(cfg Config, deps Deps, log logrus.FieldLogger) *clientquota.Quotas {
	st := cfg.ClientQuotas
	if st.NumWindows <= 0 {
		st.NumWindows = 11
	}
	if st.WindowSize <= 0 {
		st.WindowSize = time.Second
	}
	q := clientquota.New(st, cfg.Registry, nil)
	if deps.Quotas != nil {
		deps.Quotas.OnQuotaConfig(func(user, client string, c map[string]string) {
			if err := q.Apply(clientquota.Entity{User: user, ClientID: client}, c); err != nil {
				log.WithError(err).Warn("ignoring a client quota that does not parse")
			}
		})
	}
	return q
}

// quotaUser is the user of r's quota entities: the principal's name without its type
// (Kafka's session.sanitizedUser, before sanitizing): alice for User:alice, ANONYMOUS.
func (r *request) quotaUser() string {
	p := r.principal()
	if _, name, ok := strings.Cut(p, ":"); ok {
		return name
	}
	return p
}

// handlerPercent is the request's handler time so far as a percentage of one second
// (Kafka's nanosToPercentage of requestThreadTimeNanos): from the handler's start to its
// return, or to now while it runs.
func (r *request) handlerPercent() float64 {
	t := &r.slot.timing
	end := time.Duration(atomic.LoadInt64(&t.localDone))
	if end == 0 {
		end = time.Since(t.start)
	}
	return float64(max(end-t.dequeued, 0)) * 100 / float64(time.Second)
}

// quotaExempt: the inter-broker control requests (Kafka exempts CLUSTER_ACTION requests).
func quotaExempt(key int16) bool {
	switch kmsg.Key(key) {
	case kmsg.LeaderAndISR, kmsg.StopReplica, kmsg.UpdateMetadata, kmsg.ControlledShutdown:
		return true
	}
	return false
}

// recordBandwidth records value bytes on m (Produce or Fetch) and, unless skipRequest, the
// handler time on the request quota; the larger throttle time wins and is applied (throttle-
// time metric, mute). It returns that time; r's request quota is then done.
func (r *request) recordBandwidth(m *clientquota.Manager, value float64, skipRequest bool) time.Duration {
	r.quotaDone = true
	s := r.c.s
	rqOn := !skipRequest && s.clientQuotas.Request.Enabled()
	if !rqOn && !m.Enabled() {
		return 0
	}
	user, client := r.quotaUser(), r.clientID()
	bw := m.Record(user, client, value)
	var rq time.Duration
	if rqOn {
		rq = s.clientQuotas.Request.Record(user, client, r.handlerPercent())
	}
	switch {
	case bw <= 0 && rq <= 0:
		return 0
	case bw > rq:
		m.RecordThrottle(user, client, bw)
		r.c.throttle(bw)
		return bw
	default:
		s.clientQuotas.Request.RecordThrottle(user, client, rq)
		r.c.throttle(rq)
		return rq
	}
}

// applyRequestQuota records a response's handler time on the request quota (Kafka's
// sendResponseMaybeThrottle) and sets its throttle_time_ms on violation. Produce and Fetch
// record their own (recordBandwidth).
func (r *request) applyRequestQuota(resp kmsg.Response) {
	if r.quotaDone || resp == nil || quotaExempt(r.hdr.Key) {
		return
	}
	r.quotaDone = true
	q := r.c.s.clientQuotas.Request
	if !q.Enabled() {
		return
	}
	user, client := r.quotaUser(), r.clientID()
	d := q.Record(user, client, r.handlerPercent())
	if d <= 0 {
		return
	}
	q.RecordThrottle(user, client, d)
	if st, ok := resp.(kmsg.SetThrottleResponse); ok {
		st.SetThrottle(throttleMillis(d))
	}
	r.c.throttle(d)
}

func throttleMillis(d time.Duration) int32 { return int32(min(d.Milliseconds(), 1<<31-1)) }

// throttle mutes the connection for d from now (KIP-219's channel throttling): the reader
// reads its next request only after the later of this and any earlier mute.
func (c *conn) throttle(d time.Duration) {
	until := time.Now().Add(d).UnixNano()
	for {
		cur := c.mutedUntil.Load()
		if cur >= until || c.mutedUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// awaitThrottle waits out the connection's mute; false when the connection closed meanwhile.
func (c *conn) awaitThrottle() bool {
	until := c.mutedUntil.Load()
	if until == 0 {
		return true
	}
	d := time.Until(time.Unix(0, until))
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.done:
		return false
	}
}

// throttledFetch records a consumer fetch's response size on the fetch quota and its handler
// time on the request quota; on a violation it takes the size back out (the answer carries no
// records: Kafka's unrecordQuotaSensor and getThrottledResponse), answers resp with no
// partitions and the throttle time, and reports true.
func (r *request) throttledFetch(resp *kmsg.FetchResponse, fctx *fetchsession.Context, size int) bool {
	s := r.c.s
	d := r.recordBandwidth(s.clientQuotas.Fetch, float64(size), false)
	if d <= 0 {
		return false
	}
	s.clientQuotas.Fetch.Unrecord(r.quotaUser(), r.clientID(), float64(size))
	resp.SessionID, resp.ErrorCode = fctx.ThrottledRespond()
	resp.Topics = nil
	resp.ThrottleMillis = throttleMillis(d)
	r.respond(resp)
	return true
}
