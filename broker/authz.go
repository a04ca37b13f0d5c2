package broker

import (
	"encoding/binary"
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/fetchsession"
	"github.com/isrbroker/isrbroker/broker/security/acl"
	"github.com/isrbroker/isrbroker/logstore/record"
	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// Authorization (issue 30; docs/acls.md): with an authorizer configured (Deps.ACLs, Kafka's
// authorizer.class.name), every request is checked as KafkaApis checks it, on the resource it
// checks, with its error code; without one everything is allowed and the ACL APIs answer
// SECURITY_DISABLED, as Kafka 2.4.

// AnonymousPrincipal is the principal of an unauthenticated connection (Kafka's
// KafkaPrincipal.ANONYMOUS).
const AnonymousPrincipal = "User:ANONYMOUS"

// ACLs is the authorizer and its store: the cache the decisions read and the ZooKeeper writes
// of CreateAcls and DeleteAcls.
type ACLs interface {
	// Authorizer is the ACL cache and decision; never nil.
	Authorizer() *acl.Authorizer
	// UpdateACLs replaces the ACLs of one resource pattern by change(current), in ZooKeeper
	// first, then in the cache, and returns the entries now stored.
	UpdateACLs(r acl.Resource, change func(current []acl.Entry) []acl.Entry) ([]acl.Entry, error)
}

// peerHost is the connection's client address as Kafka's ACL hosts are written.
func peerHost(a net.Addr) string {
	if a == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return acl.NormalizeHost(a.String())
	}
	return acl.NormalizeHost(host)
}

// authz is the server's authorization (Deps.ACLs; nil: everything allowed): the checks the
// handlers make.
type authz struct{ acls ACLs }

// principal is who sent r.
func (r *request) principal() string { return *r.c.principal.Load() }

// authorized reports whether r's principal may perform op on the literal resource typ:name.
// No authorizer: always.
func (a authz) authorized(r *request, op acl.Operation, typ acl.ResourceType, name string) bool {
	if a.acls == nil {
		return true
	}
	return a.acls.Authorizer().Authorize(r.principal(), r.c.clientHost, op, typ, name)
}

// authorizedCluster is authorized on the cluster resource.
func (a authz) authorizedCluster(r *request, op acl.Operation) bool {
	return a.authorized(r, op, acl.ResourceCluster, acl.ClusterName)
}

// authorizedOps is KIP-430's bitfield for typ:name (every supported operation without an
// authorizer).
func (a authz) authorizedOps(r *request, typ acl.ResourceType, name string) int32 {
	var cache *acl.Authorizer
	if a.acls != nil {
		cache = a.acls.Authorizer()
	}
	return acl.AuthorizedOperations(cache, r.principal(), r.c.clientHost, typ, name)
}

// producerKinds reports whether any v2 batch in records is idempotent (a producer id >= 0)
// or transactional (attributes bit 4), reading only the batch headers (docs/acls.md: Produce
// needs IDEMPOTENT_WRITE on the cluster for the first, WRITE on the transactional id for the
// second).
func producerKinds(records []byte) (idempotent, transactional bool) {
	const attributesOffset, producerIDOffset = 21, 43
	for len(records) >= record.BatchHeaderSize {
		size, whole, err := record.NextBatch(records)
		if err != nil || !whole || size < record.BatchHeaderSize {
			return
		}
		if int64(binary.BigEndian.Uint64(records[producerIDOffset:])) >= 0 {
			idempotent = true
		}
		if binary.BigEndian.Uint16(records[attributesOffset:])&0x10 != 0 {
			transactional = true
		}
		records = records[size:]
	}
	return
}

// fetchDenied returns the partitions of a fetch (its session's included) that its sender may
// not read (nil: none): every partition for a follower without CLUSTER_ACTION on the cluster,
// the partitions of topics a consumer may not READ.
func fetchDenied(a authz, r *request, replicaID int32, parts []fetchsession.PartitionFetch) map[rm.TopicPartition]bool {
	if a.acls == nil {
		return nil
	}
	follower := replicaID >= 0 && a.authorizedCluster(r, acl.OpClusterAction)
	read := a.topicCheck(r, acl.OpRead)
	var denied map[rm.TopicPartition]bool
	for _, p := range parts {
		if follower || (replicaID < 0 && read(p.Topic)) {
			continue
		}
		if denied == nil {
			denied = map[rm.TopicPartition]bool{}
		}
		denied[p.TopicPartition] = true
	}
	return denied
}

// withDenied adds TOPIC_AUTHORIZATION_FAILED results for the denied partitions.
func withDenied(results []rm.FetchPartitionResult, denied map[rm.TopicPartition]bool) []rm.FetchPartitionResult {
	for p := range denied {
		results = append(results, rm.FetchPartitionResult{TopicPartition: p, ErrorCode: kerr.TopicAuthorizationFailed.Code,
			HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1})
	}
	return results
}

// topicCheck returns a per-request memo of authorized(op, Topic, name).
func (a authz) topicCheck(r *request, op acl.Operation) func(topic string) bool {
	if a.acls == nil {
		return func(string) bool { return true }
	}
	memo := map[string]bool{}
	return func(topic string) bool {
		ok, seen := memo[topic]
		if !seen {
			ok = a.authorized(r, op, acl.ResourceTopic, topic)
			memo[topic] = ok
		}
		return ok
	}
}

// deniedCluster reports (and logs, rate-limited) that r's principal lacks op on the cluster.
func (a authz) deniedCluster(r *request, op acl.Operation) bool {
	if a.authorizedCluster(r, op) {
		return false
	}
	requestWarnings.Warn(r.log().WithField("principal", r.principal()), "", "request refused: no "+op.String()+" on the cluster")
	return true
}

// configAuth checks a config API's resource (docs/acls.md): a broker or broker-logger resource
// needs op on the cluster (CLUSTER_AUTHORIZATION_FAILED), a topic op on the topic
// (TOPIC_AUTHORIZATION_FAILED). Other types are left to the handler's own checks.
func (a authz) configAuth(r *request, typ kmsg.ConfigResourceType, name string, op acl.Operation) error {
	switch typ {
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger:
		if a.deniedCluster(r, op) {
			return &resourceError{code: kerr.ClusterAuthorizationFailed.Code, msg: "Cluster authorization failed."}
		}
	case kmsg.ConfigResourceTypeTopic:
		if !a.authorized(r, op, acl.ResourceTopic, name) {
			return &resourceError{code: kerr.TopicAuthorizationFailed.Code, msg: "Topic authorization failed."}
		}
	}
	return nil
}
