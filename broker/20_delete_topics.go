package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
)

// DeleteTopics: v0-5 (v4+ flexible).
//
// Behavior:
//   - Per topic: a name listed twice → INVALID_REQUEST; an invalid name →
//     INVALID_TOPIC_EXCEPTION; the coordinator marks it for deletion
//     (/admin/delete_topics/<t>) and answers UNKNOWN_TOPIC_OR_PARTITION or
//     TOPIC_DELETION_DISABLED.
//   - The answer waits until the metadata cache no longer has the topic (the controller
//     sent UpdateMetadata with leader -2), or timeout_ms → REQUEST_TIMED_OUT.
//
// Deviations: none known (v6 topic ids are not served).

func init() { regKey(kmsg.DeleteTopics, 0, 5, handleDeleteTopics) }

func handleDeleteTopics(s *Server, r *request, kreq kmsg.Request) {
	req := kreq.(*kmsg.DeleteTopicsRequest)
	if !s.goHandler(r.log(), func() { deleteTopics(s, r, req) }) {
		resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
		for _, n := range req.TopicNames {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = &n, kerr.RequestTimedOut.Code
			resp.Topics = append(resp.Topics, rt)
		}
		r.respond(resp)
	}
}

func deleteTopics(s *Server, r *request, req *kmsg.DeleteTopicsRequest) {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	deadline := time.Now().Add(time.Duration(max(req.TimeoutMillis, 0)) * time.Millisecond)
	wctx, wcancel := context.WithTimeout(s.ctx, adminWriteTimeout)
	defer wcancel()
	count := map[string]int{}
	for _, n := range req.TopicNames {
		count[n]++
	}
	pending := map[string]bool{}
	for _, n := range req.TopicNames {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		name := n
		rt.Topic = &name
		setErr := func(code int16, msg string) {
			rt.ErrorCode = code
			if req.Version >= 5 && msg != "" {
				rt.ErrorMessage = &msg
			}
		}
		switch {
		case count[n] > 1:
			setErr(kerr.InvalidRequest.Code, "topic listed more than once in the request")
		case !s.authz.authorized(r, acl.OpDelete, acl.ResourceTopic, n): // docs/acls.md
			setErr(kerr.TopicAuthorizationFailed.Code, "")
		case !validTopicName(n):
			setErr(kerr.InvalidTopicException.Code, "invalid topic name")
		default:
			if err := s.deps.Admin.DeleteTopic(wctx, n); err != nil {
				code, msg := adminErrorCode(err)
				setErr(code, msg)
				r.log().WithField("topic", n).WithError(err).Info("delete topic failed")
				break
			}
			pending[n] = true
			r.log().WithField("topic", n).Info("topic marked for deletion")
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(pending) > 0 {
		gone := func(snap *MetadataSnapshot) bool {
			for t := range pending {
				if snap.Topics[t] != nil {
					return false
				}
			}
			return true
		}
		ctx, cancel := context.WithDeadline(s.ctx, deadline)
		defer cancel()
		_ = s.cache.WaitFor(ctx, gone)
		snap := s.cache.Snapshot()
		for i := range resp.Topics {
			if t := *resp.Topics[i].Topic; pending[t] && snap.Topics[t] != nil {
				resp.Topics[i].ErrorCode = kerr.RequestTimedOut.Code
			}
		}
	}
	r.respond(resp)
}
