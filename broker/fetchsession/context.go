package fetchsession

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Kind is the kind of a fetch context (Kafka's FetchContext implementations).
type Kind uint8

const (
	// Sessionless is a full fetch without a session (epoch -1, Fetch v4-6, or a session
	// emptied by forgotten_topics_data): every partition is answered, session_id 0.
	Sessionless Kind = iota
	// Full is a full fetch creating a session (epoch 0): every partition is answered with the
	// new session's id, or 0 when none could be created.
	Full
	// Incremental is a fetch of an existing session: only partitions with changes are answered.
	Incremental
	// SessionError is a fetch naming an unknown session or the wrong epoch: a top-level error
	// and no partitions.
	SessionError
)

var kindNames = [...]string{"sessionless", "full", "incremental", "session error"}

func (k Kind) String() string { return kindNames[k] }

// Context is one Fetch request resolved against the cache (Kafka's FetchManager.newContext):
// the partitions to read, then Respond with what the reads returned.
type Context struct {
	kind     Kind
	err      int16
	cache    *Cache
	follower bool
	reqEpoch int32
	sess     *session
	fetch    []PartitionFetch
}

// NewContext resolves a Fetch request: its session_id and session_epoch, its partitions (fetch,
// in request order), its forgotten_topics_data (forget, used by incremental fetches only) and
// whether a follower sent it (replica_id >= 0: its sessions are privileged). A full fetch
// closes the session it names.
func (c *Cache) NewContext(now time.Time, sessionID, epoch int32, fetch []PartitionFetch, forget []TopicPartition, follower bool) *Context {
	if epoch == InitialEpoch || epoch == FinalEpoch {
		if sessionID != InvalidSessionID {
			if s := c.get(sessionID); s != nil {
				c.remove(s)
			}
		}
		kind := Full
		if epoch == FinalEpoch {
			kind = Sessionless
		}
		return &Context{kind: kind, cache: c, follower: follower, reqEpoch: epoch, fetch: dedup(fetch)}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[sessionID]
	if s == nil {
		return &Context{kind: SessionError, err: kerr.FetchSessionIDNotFound.Code}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.epoch != epoch {
		return &Context{kind: SessionError, err: kerr.InvalidFetchSessionEpoch.Code}
	}
	s.update(fetch, forget)
	if len(s.parts) == 0 {
		// Nothing left to fetch: the session is closed and this fetch answered sessionless.
		c.removeLocked(s)
		return &Context{kind: Sessionless, cache: c, follower: follower, reqEpoch: FinalEpoch, fetch: dedup(fetch)}
	}
	c.touchLocked(s, now)
	s.epoch = NextEpoch(s.epoch)
	return &Context{kind: Incremental, cache: c, follower: follower, reqEpoch: epoch, sess: s, fetch: s.partitions()}
}

// dedup keeps the first position and the last request of a partition listed twice (the
// request's partitions are a map in Kafka).
func dedup(fetch []PartitionFetch) []PartitionFetch {
	at := make(map[TopicPartition]int, len(fetch))
	out := make([]PartitionFetch, 0, len(fetch))
	for _, f := range fetch {
		if i, ok := at[f.TopicPartition]; ok {
			out[i] = f
			continue
		}
		at[f.TopicPartition] = len(out)
		out = append(out, f)
	}
	return out
}

// Kind is the context's kind.
func (x *Context) Kind() Kind { return x.kind }

// Error is the top-level error of a SessionError context (FETCH_SESSION_ID_NOT_FOUND,
// INVALID_FETCH_SESSION_EPOCH), else 0.
func (x *Context) Error() int16 { return x.err }

// Partitions are the partitions to read, in order: the request's for a full or sessionless
// fetch, the whole session's (its cached requests updated by this one) for an incremental one.
// The slice is the context's: callers must not change it.
func (x *Context) Partitions() []PartitionFetch { return x.fetch }

// Respond records the reads (results[i] is Partitions()[i]) and returns the answer's
// session_id, its top-level error and which partitions it carries. A full context creates the
// session here, with the results as the cached answers; an incremental one keeps only the
// partitions with changes, records their answers and moves them to the back of the session's
// order (so partitions left out of a size-limited answer come first next time), unless another
// request of the session came in meanwhile (INVALID_FETCH_SESSION_EPOCH, Kafka's duplicate
// request check).
func (x *Context) Respond(now time.Time, results []PartitionResult) (sessionID int32, errCode int16, keep []bool) {
	switch x.kind {
	case SessionError:
		return InvalidSessionID, x.err, nil
	case Sessionless:
		return InvalidSessionID, 0, allTrue(len(results))
	case Full:
		parts := make([]*cachedPartition, len(results))
		for i, r := range results {
			parts[i] = &cachedPartition{tp: x.fetch[i].TopicPartition, req: x.fetch[i].PartitionRequest,
				highWatermark: r.HighWatermark, lastStableOffset: r.LastStableOffset, localLogStartOffset: r.LogStartOffset}
		}
		return x.cache.maybeCreate(now, x.follower, parts), 0, allTrue(len(results))
	}
	s := x.sess
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.epoch != NextEpoch(x.reqEpoch) {
		return s.id, kerr.InvalidFetchSessionEpoch.Code, nil
	}
	keep = make([]bool, len(results))
	for i, r := range results {
		e := s.parts[x.fetch[i].TopicPartition]
		if e == nil {
			keep[i] = true // not cached any more: cannot happen at the right epoch; answer it
			continue
		}
		if keep[i] = e.Value.(*cachedPartition).mustRespond(r, true); keep[i] {
			s.order.MoveToBack(e)
		}
	}
	return s.id, 0, keep
}

func allTrue(n int) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = true
	}
	return out
}

// ThrottledRespond is Respond for a fetch a client quota throttles (Kafka's
// getThrottledResponse): no partitions and no session created or changed; an incremental
// fetch keeps its session (the next epoch), unless another request of it came meanwhile.
func (x *Context) ThrottledRespond() (sessionID int32, errCode int16) {
	switch x.kind {
	case SessionError:
		return InvalidSessionID, x.err
	case Incremental:
		s := x.sess
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.epoch != NextEpoch(x.reqEpoch) {
			return s.id, kerr.InvalidFetchSessionEpoch.Code
		}
		return s.id, 0
	}
	return InvalidSessionID, 0
}
