package zkcoord

import (
	"errors"
	"fmt"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/rcrowley/go-metrics"
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The controller (S9, kafka-zk-reference §2) is one goroutine that drains an event queue.
// ZooKeeper watches, session changes and broker responses only enqueue events; all
// controller state below is touched by that goroutine alone. Every controller write is a
// multi fenced by the zkVersion of /controller_epoch (K3, KAFKA-6082).

type evKind int

const (
	evElect evKind = iota
	evControllerChange
	evExpire
	evBrokerChange
	evTopicChange
	evPartitionModification
	evDeleteTopics
	evIsrChange
	evStaleEpoch
	evControlledShutdown
	evPreferredElection  // /admin/preferred_replica_election (preferred.go, K7)
	evAutoRebalance      // leader imbalance check timer (preferred.go); epoch: the controller's epoch when scheduled
	evReassignPartitions // /admin/reassign_partitions exists watch (reassign.go)
	evReassignIsrChange  // state znode of a reassigning partition changed (reassign.go)
	evShutdown
)

type event struct {
	kind  evKind
	key   string // watch key, for watch events
	token uint64 // watch registration, for watch events
	topic string
	epoch int32

	shutdown *shutdownReq // evControlledShutdown
}

// leaderIsr is the controller's cached copy of a partition state znode.
type leaderIsr struct {
	leader, leaderEpoch int32
	isr                 []int32
	controllerEpoch     int32
	zkVersion           int32
}

func (s leaderIsr) sameData(o leaderIsr) bool {
	return s.leader == o.leader && s.leaderEpoch == o.leaderEpoch && s.controllerEpoch == o.controllerEpoch && slices.Equal(s.isr, o.isr)
}

type controller struct {
	c      *Coordinator
	log    logrus.FieldLogger
	q      *queue[event]
	active atomic.Bool

	// Owned by the event goroutine.
	epoch          int32
	epochZkVersion int32
	armed          map[string]uint64
	nextToken      uint64
	live           map[int32]BrokerInfo
	assignments    map[string]map[int32][]int32
	states         map[TopicPartition]*leaderIsr
	senders        map[int32]*brokerSender
	// shuttingDown holds the brokers in controlled shutdown (K7): live, but never elected
	// leader; an entry is cleared when the broker's registration goes away or is replaced.
	shuttingDown map[int32]bool
	// reassigning holds the partitions being reassigned (reassign.go).
	reassigning map[TopicPartition]*reassignCtx
	// deleting holds the topics queued for deletion (/admin/delete_topics) whose znodes are not
	// yet removed because a replica's broker is offline (Kafka's TopicDeletionManager: deletion
	// is ineligible until every replica's broker is back). Their partitions are not elected and
	// get no LeaderAndIsr; UpdateMetadata names them with leader -2.
	deleting map[string]bool

	mActive   metrics.Gauge
	mOffline  metrics.Gauge
	mUnclean  metrics.Meter
	mElection metrics.Timer
}

func newController(c *Coordinator) *controller {
	ct := &controller{
		c:         c,
		log:       c.log.WithField("component", "controller"),
		q:         newQueue[event](),
		armed:     map[string]uint64{},
		mActive:   metrics.GetOrRegisterGauge("kafka.controller:type=KafkaController,name=ActiveControllerCount", c.reg),
		mOffline:  metrics.GetOrRegisterGauge("kafka.controller:type=KafkaController,name=OfflinePartitionsCount", c.reg),
		mUnclean:  metrics.GetOrRegisterMeter("kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec", c.reg),
		mElection: metrics.GetOrRegisterTimer("kafka.controller:type=ControllerStats,name=LeaderElectionRateAndTimeMs", c.reg),
	}
	ct.resetContext()
	return ct
}

func (ct *controller) resetContext() {
	ct.live = map[int32]BrokerInfo{}
	ct.assignments = map[string]map[int32][]int32{}
	ct.states = map[TopicPartition]*leaderIsr{}
	ct.shuttingDown = map[int32]bool{}
	ct.reassigning = map[TopicPartition]*reassignCtx{}
	ct.deleting = map[string]bool{}
	if ct.senders == nil {
		ct.senders = map[int32]*brokerSender{}
	}
}

func (ct *controller) enqueue(ev event) { ct.q.put(ev) }

// expire is called from the session goroutine: drop queued work and resign first
// (ControllerEventManager.clearAndPut(Expire)). It never waits for the event loop.
func (ct *controller) expire() { ct.q.clearAndPut(event{kind: evExpire}) }

func (ct *controller) run() {
	defer func() {
		ct.resign("shutdown")
	}()
	for {
		ev, ok := ct.q.get(ct.c.done)
		if !ok || ev.kind == evShutdown {
			return
		}
		ct.handle(ev)
		ct.updateOfflineGauge()
		ct.updatePreferredImbalanceGauge()
	}
}

func (ct *controller) handle(ev event) {
	defer func() {
		if r := recover(); r != nil {
			ct.log.WithField("panic", r).WithField("stack", string(debug.Stack())).Error("controller event handler panicked; resigning")
			ct.resign("panic")
			ct.retryElectLater()
		}
	}()
	if ev.token != 0 {
		if ct.armed[ev.key] != ev.token {
			return // a watch from an earlier registration
		}
		delete(ct.armed, ev.key)
	}
	var err error
	switch ev.kind {
	case evElect, evControllerChange:
		ct.elect()
		return
	case evExpire:
		ct.resign("session expired")
		ct.armed = map[string]uint64{} // the session's watches are gone
		return
	case evStaleEpoch:
		if ct.active.Load() && ev.epoch == ct.epoch {
			ct.log.WithField("controllerEpoch", ct.epoch).Warn("a broker answered STALE_CONTROLLER_EPOCH: a newer controller exists")
			ct.resign("fenced by a broker")
			ct.elect()
		}
		return
	case evControlledShutdown:
		ct.onControlledShutdown(ev.shutdown) // answers NOT_CONTROLLER itself when inactive
		return
	}
	if !ct.active.Load() {
		return
	}
	switch ev.kind {
	case evBrokerChange:
		err = ct.processBrokerChange()
	case evTopicChange:
		err = ct.processTopicChange()
	case evPartitionModification:
		err = ct.processPartitionModification(ev.topic)
	case evDeleteTopics:
		err = ct.processDeleteTopics()
	case evIsrChange:
		err = ct.processIsrChange()
	case evReassignPartitions:
		err = ct.processReassignPartitions()
	case evReassignIsrChange:
		err = ct.processReassignIsrChange()
	case evPreferredElection:
		err = ct.processPreferredElection()
	case evAutoRebalance:
		err = ct.processAutoRebalance(ev.epoch)
	}
	ct.handleErr(err)
}

func (ct *controller) handleErr(err error) {
	if err == nil {
		return
	}
	if errors.Is(err, ErrControllerMoved) {
		ct.log.WithField("controllerEpoch", ct.epoch).Warn("controller moved to another broker; resigning")
		ct.resign("controller moved")
		ct.elect()
		return
	}
	if errors.Is(err, zk.ErrClosing) || errors.Is(err, zk.ErrConnectionClosed) && ct.c.isClosed() {
		return
	}
	ct.log.WithError(err).Error("controller event failed; resigning and re-electing")
	ct.resign("error")
	ct.retryElectLater()
}

func (ct *controller) retryElectLater() {
	time.AfterFunc(time.Second, func() {
		if !ct.c.isClosed() {
			ct.enqueue(event{kind: evElect})
		}
	})
}

// ---- watches ----

func (ct *controller) arm(key string, ev event, wch <-chan zk.Event) {
	ct.nextToken++
	ev.token = ct.nextToken
	ev.key = key
	ct.armed[key] = ev.token
	done := ct.c.done
	go func() {
		select {
		case zev, ok := <-wch:
			// EventNotWatching means the session ended (expiry or Close): the session
			// goroutine's Expire/Elect events re-arm everything, so it is not forwarded.
			if ok && zev.Type != zk.EventNotWatching {
				ct.enqueue(ev)
			}
		case <-done:
		}
	}()
}

// watchChildren reads path's children and (re-)arms a children watch that enqueues kind.
func (ct *controller) watchChildren(path string, kind evKind) ([]string, error) {
	key := "children:" + path
	if _, ok := ct.armed[key]; ok {
		return ct.c.children(path)
	}
	var ch []string
	var wch <-chan zk.Event
	err := retry(ct.c, func() (err error) {
		ch, _, wch, err = ct.c.conn.ChildrenW(ct.c.p(path))
		return err
	})
	if err != nil {
		return nil, err
	}
	ct.arm(key, event{kind: kind}, wch)
	return ch, nil
}

// watchTopic reads a topic's assignment and (re-)arms a data watch (partition modification).
func (ct *controller) watchTopic(topic string) (map[int32][]int32, error) {
	key := "data:" + zkdata.TopicPath(topic)
	var data []byte
	var err error
	if _, ok := ct.armed[key]; ok {
		data, _, err = ct.c.get(zkdata.TopicPath(topic))
	} else {
		var wch <-chan zk.Event
		err = retry(ct.c, func() (err error) {
			data, _, wch, err = ct.c.conn.GetW(ct.c.p(zkdata.TopicPath(topic)))
			return err
		})
		if err == nil {
			ct.arm(key, event{kind: evPartitionModification, topic: topic}, wch)
		}
	}
	if err != nil {
		return nil, err
	}
	return zkdata.DecodeTopic(topic, data)
}

// ---- election ----

// elect is Kafka's KafkaController.elect: watch /controller; if nobody holds it, create it
// and increment /controller_epoch in one multi fenced by the epoch's zkVersion.
func (ct *controller) elect() {
	me := ct.c.cfg.BrokerID
	for attempt := 0; attempt < 3; attempt++ {
		if ct.c.isClosed() {
			return
		}
		var (
			exists bool
			st     *zk.Stat
			wch    <-chan zk.Event
		)
		key := "exists:" + zkdata.PathController
		err := retry(ct.c, func() (err error) {
			exists, st, wch, err = ct.c.conn.ExistsW(ct.c.p(zkdata.PathController))
			return err
		})
		if err != nil {
			ct.log.WithError(err).Warn("cannot watch /controller; retrying")
			ct.retryElectLater()
			return
		}
		ct.arm(key, event{kind: evControllerChange}, wch)
		if exists {
			data, st2, err := ct.c.get(zkdata.PathController)
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			if err != nil {
				ct.retryElectLater()
				return
			}
			st = st2
			id, derr := zkdata.DecodeController(data)
			if derr != nil {
				ct.log.WithError(derr).Warn("undecodable /controller znode")
			}
			if id == me && ct.active.Load() {
				return
			}
			if ct.active.Load() {
				ct.resign("another broker became controller")
			}
			if id == me && st.EphemeralOwner == ct.c.conn.SessionID() {
				// Our own znode but we are not acting as controller (we resigned after an
				// error): give the role up so that a fresh election runs.
				_ = retry(ct.c, func() error { return ct.c.conn.Delete(ct.c.p(zkdata.PathController), -1) })
				continue
			}
			return
		}
		if ct.active.Load() {
			// Our /controller is gone (session expiry not yet processed): stop first.
			ct.resign("controller znode gone")
		}
		epoch, ver, err := ct.readOrCreateControllerEpoch()
		if err != nil {
			ct.log.WithError(err).Warn("cannot read /controller_epoch; retrying election")
			ct.retryElectLater()
			return
		}
		newEpoch := epoch + 1
		var res []zk.MultiResponse
		err = retry(ct.c, func() (err error) {
			res, err = ct.c.conn.Multi(
				&zk.CreateRequest{Path: ct.c.p(zkdata.PathController), Data: zkdata.EncodeController(me), Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagEphemeral},
				&zk.SetDataRequest{Path: ct.c.p(zkdata.PathControllerEpoch), Data: zkdata.EncodeControllerEpoch(newEpoch), Version: ver})
			return err
		})
		var newVer int32
		switch {
		case err == nil && len(res) == 2 && res[1].Stat != nil:
			newVer = res[1].Stat.Version
		case errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrBadVersion):
			// We win only if /controller is ours and the epoch is the one we wrote (a
			// retried multi after a connection loss).
			id, _ := ct.c.ControllerID()
			e, v, _ := ct.c.ControllerEpoch()
			if id != me || e != newEpoch {
				ct.log.WithField("controller", id).Info("another broker won the controller election")
				continue // re-arms the watch and records the winner
			}
			newVer = v
		default:
			ct.log.WithError(err).Warn("controller election failed; retrying")
			ct.retryElectLater()
			return
		}
		ct.epoch = newEpoch
		ct.epochZkVersion = newVer
		ct.active.Store(true)
		ct.mActive.Update(1)
		ct.log = ct.c.log.WithField("component", "controller").WithField("controllerEpoch", newEpoch)
		ct.log.WithField("epochZkVersion", newVer).Info("elected controller")
		if err := ct.onControllerFailover(); err != nil {
			ct.handleErr(err)
		}
		return
	}
}

func (ct *controller) readOrCreateControllerEpoch() (int32, int32, error) {
	for {
		data, st, err := ct.c.get(zkdata.PathControllerEpoch)
		if errors.Is(err, zk.ErrNoNode) {
			_, err = ct.c.create(zkdata.PathControllerEpoch, zkdata.EncodeControllerEpoch(zkdata.InitialControllerEpoch), 0)
			if err != nil && !errors.Is(err, zk.ErrNodeExists) {
				return 0, 0, err
			}
			continue
		}
		if err != nil {
			return 0, 0, err
		}
		e, err := zkdata.DecodeControllerEpoch(data)
		return e, st.Version, err
	}
}

// resign stops acting as controller (onControllerResignation): request queues are stopped
// and the cached context dropped. It writes nothing to ZooKeeper.
func (ct *controller) resign(why string) {
	for id, s := range ct.senders {
		s.close()
		delete(ct.senders, id)
	}
	if !ct.active.Load() {
		return
	}
	ct.active.Store(false)
	ct.mActive.Update(0)
	ct.mOffline.Update(0)
	for k := range ct.armed {
		if k != "exists:"+zkdata.PathController {
			delete(ct.armed, k)
		}
	}
	ct.resetContext()
	ct.log.WithField("reason", why).Info("resigned as controller")
}

// fencedMulti runs ops in one multi behind check(/controller_epoch, epochZkVersion)
// (wrapRequestWithControllerEpochCheck). A failed check is ErrControllerMoved; otherwise the
// first failing op's error is returned. The results exclude the check.
func (ct *controller) fencedMulti(ops ...interface{}) ([]zk.MultiResponse, error) {
	all := make([]interface{}, 0, len(ops)+1)
	all = append(all, &zk.CheckVersionRequest{Path: ct.c.p(zkdata.PathControllerEpoch), Version: ct.epochZkVersion})
	all = append(all, ops...)
	var res []zk.MultiResponse
	err := retry(ct.c, func() (err error) {
		res, err = ct.c.conn.Multi(all...)
		return err
	})
	if err == nil {
		return res[1:], nil
	}
	if len(res) > 0 && res[0].Error != nil {
		return nil, fmt.Errorf("%w: epoch zkVersion %d: %v", ErrControllerMoved, ct.epochZkVersion, res[0].Error)
	}
	return res, err
}

// ---- failover ----

func (ct *controller) onControllerFailover() error {
	ids, err := ct.watchChildren(zkdata.PathBrokerIDs, evBrokerChange)
	if err != nil {
		return err
	}
	topics, err := ct.watchChildren(zkdata.PathBrokerTopics, evTopicChange)
	if err != nil {
		return err
	}
	queued, err := ct.watchChildren(zkdata.PathDeleteTopics, evDeleteTopics)
	if err != nil {
		return err
	}
	notes, err := ct.watchChildren(zkdata.PathIsrChange, evIsrChange)
	if err != nil {
		return err
	}
	// Pending notifications are covered by the full UpdateMetadata below.
	if err := ct.deleteChildren(zkdata.PathIsrChange, notes); err != nil {
		return err
	}
	brokers, err := ct.readBrokers(ids)
	if err != nil {
		return err
	}
	ct.live = brokers
	for _, t := range topics {
		a, err := ct.watchTopic(t)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			ct.log.WithError(err).WithField("topic", t).Error("skipping undecodable topic znode")
			continue
		}
		ct.assignments[t] = a
		for p := range a {
			if err := ct.loadState(TopicPartition{Topic: t, Partition: p}); err != nil {
				return err
			}
		}
	}
	if ct.c.cfg.DeleteTopicEnable {
		for _, t := range queued {
			if _, ok := ct.assignments[t]; ok {
				ct.deleting[t] = true // resumed by processDeleteTopics below
			}
		}
	}
	for _, id := range sortedIDs(ct.live) {
		ct.startSender(ct.live[id])
	}
	b := ct.newBatch()
	// UpdateMetadata to all live brokers before the state machines (Kafka's order).
	b.fullUpdateMetadata(ct.liveIDs())
	// Replica state machine startup: every live replica gets a LeaderAndIsr (not those of
	// topics queued for deletion).
	for _, tp := range ct.sortedStates() {
		if !ct.deleting[tp.Topic] {
			b.addLeaderAndIsr(ct.liveReplicas(tp), tp, false)
		}
	}
	b.send()
	// Partition state machine startup: elect new and offline partitions.
	b = ct.newBatch()
	if err := ct.onlinePartitionStateChange(b); err != nil {
		return err
	}
	b.send()
	ct.log.WithField("liveBrokers", ct.liveIDs()).WithField("topics", len(ct.assignments)).Info("controller failover complete")
	// Resume partition reassignments (reassign.go), then deletions.
	if err := ct.processReassignPartitions(); err != nil {
		return err
	}
	if err := ct.processDeleteTopics(); err != nil {
		return err
	}
	// Pending preferred elections, then the leader imbalance checks (K7).
	return ct.preferredOnFailover()
}

func (ct *controller) readBrokers(ids []string) (map[int32]BrokerInfo, error) {
	out := map[int32]BrokerInfo{}
	for _, s := range ids {
		id, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			continue
		}
		data, st, err := ct.c.get(zkdata.BrokerIDPath(int32(id)))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		bi, err := zkdata.DecodeBroker(int32(id), data)
		if err != nil {
			ct.log.WithError(err).Warn("ignoring undecodable broker znode")
			continue
		}
		bi.Epoch = st.Czxid
		out[bi.ID] = bi
	}
	return out, nil
}

// loadState reads a partition's state znode into the cache (absent: a new partition).
func (ct *controller) loadState(tp TopicPartition) error {
	data, st, err := ct.c.get(zkdata.PartitionStatePath(tp.Topic, tp.Partition))
	if errors.Is(err, zk.ErrNoNode) {
		delete(ct.states, tp)
		return nil
	}
	if err != nil {
		return err
	}
	ps, err := zkdata.DecodeState(data)
	if err != nil {
		ct.log.WithError(err).WithField("topic", tp.Topic).WithField("partition", tp.Partition).Error("undecodable partition state")
		delete(ct.states, tp)
		return nil
	}
	ct.states[tp] = &leaderIsr{leader: ps.Leader, leaderEpoch: ps.LeaderEpoch, isr: ps.ISR, controllerEpoch: ps.ControllerEpoch, zkVersion: st.Version}
	return nil
}

func (ct *controller) startSender(b BrokerInfo) {
	if old, ok := ct.senders[b.ID]; ok {
		old.close()
		delete(ct.senders, b.ID)
	}
	s, err := newBrokerSender(ct, b)
	if err != nil {
		ct.log.WithError(err).Error("cannot reach broker")
		return
	}
	ct.senders[b.ID] = s
}

func (ct *controller) stopSender(id int32) {
	if s, ok := ct.senders[id]; ok {
		s.close()
		delete(ct.senders, id)
	}
}

// ---- broker changes ----

// processBrokerChange compares /brokers/ids with the known live brokers: new, dead, and
// bounced (same id, larger czxid: a failure followed by a startup).
func (ct *controller) processBrokerChange() error {
	start := time.Now()
	defer ct.mElection.UpdateSince(start)
	ids, err := ct.watchChildren(zkdata.PathBrokerIDs, evBrokerChange)
	if err != nil {
		return err
	}
	cur, err := ct.readBrokers(ids)
	if err != nil {
		return err
	}
	var newIDs, deadIDs, bouncedIDs []int32
	for id, b := range cur {
		old, ok := ct.live[id]
		switch {
		case !ok:
			newIDs = append(newIDs, id)
		case b.Epoch > old.Epoch:
			bouncedIDs = append(bouncedIDs, id)
		}
	}
	for id := range ct.live {
		if _, ok := cur[id]; !ok {
			deadIDs = append(deadIDs, id)
		}
	}
	sortInt32(newIDs)
	sortInt32(deadIDs)
	sortInt32(bouncedIDs)
	if len(newIDs)+len(deadIDs)+len(bouncedIDs) == 0 {
		return nil
	}
	ct.log.WithField("new", newIDs).WithField("dead", deadIDs).WithField("bounced", bouncedIDs).Info("broker change")
	for _, id := range append(append([]int32{}, deadIDs...), bouncedIDs...) {
		delete(ct.live, id)
		delete(ct.shuttingDown, id) // K7: a controlled shutdown ends with the registration
		ct.stopSender(id)
	}
	b := ct.newBatch()
	if len(newIDs) > 0 {
		for _, id := range newIDs {
			ct.live[id] = cur[id]
			ct.startSender(cur[id])
		}
		if err := ct.onBrokerStartup(newIDs, b); err != nil {
			return err
		}
	}
	if len(bouncedIDs) > 0 {
		if err := ct.onBrokerFailure(b); err != nil {
			return err
		}
		for _, id := range bouncedIDs {
			ct.live[id] = cur[id]
			ct.startSender(cur[id])
		}
		if err := ct.onBrokerStartup(bouncedIDs, b); err != nil {
			return err
		}
	}
	if len(deadIDs) > 0 {
		if err := ct.onBrokerFailure(b); err != nil {
			return err
		}
	}
	b.send()
	if ct.deletionWaitsFor(append(newIDs, bouncedIDs...)) {
		// A broker holding a replica of a topic queued for deletion is back: retry the deletion.
		return ct.processDeleteTopics()
	}
	return nil
}

// deletionWaitsFor reports whether a topic queued for deletion has a replica on one of ids.
func (ct *controller) deletionWaitsFor(ids []int32) bool {
	for t := range ct.deleting {
		for _, replicas := range ct.assignments[t] {
			if slices.ContainsFunc(replicas, func(r int32) bool { return slices.Contains(ids, r) }) {
				return true
			}
		}
	}
	return false
}

// onBrokerStartup: UpdateMetadata to the existing brokers, a full one to the new brokers,
// LeaderAndIsr for the new brokers' replicas, then elect New/Offline partitions.
func (ct *controller) onBrokerStartup(newIDs []int32, b *batch) error {
	isNew := map[int32]bool{}
	for _, id := range newIDs {
		isNew[id] = true
	}
	var existing []int32
	for _, id := range ct.liveIDs() {
		if !isNew[id] {
			existing = append(existing, id)
		}
	}
	b.updateMetadata(existing, nil)
	b.fullUpdateMetadata(newIDs)
	for _, tp := range ct.sortedStates() {
		if ct.deleting[tp.Topic] {
			continue // StopReplica(delete) follows in processDeleteTopics
		}
		var targets []int32
		for _, r := range ct.replicas(tp) {
			if isNew[r] {
				targets = append(targets, r)
			}
		}
		if len(targets) > 0 {
			b.addLeaderAndIsr(targets, tp, false)
		}
	}
	return ct.onlinePartitionStateChange(b)
}

// onBrokerFailure handles partitions whose leader or ISR members are no longer live
// (onReplicasBecomeOffline): offline partitions get an offline election, other ISRs shrink.
// Every change bumps the leader epoch.
func (ct *controller) onBrokerFailure(b *batch) error {
	b.updateMetadata(ct.liveIDs(), nil)
	var affected []TopicPartition
	for _, tp := range ct.sortedStates() {
		st := ct.states[tp]
		if ct.deleting[tp.Topic] {
			continue // no elections for topics queued for deletion
		}
		if !ct.isLive(st.leader) || slices.ContainsFunc(st.isr, func(r int32) bool { return !ct.isLive(r) }) {
			affected = append(affected, tp)
		}
	}
	return ct.updateStates(affected, b)
}

// onlinePartitionStateChange moves New partitions (no state znode) and Offline partitions
// (leader not live) online where possible (triggerOnlinePartitionStateChange).
func (ct *controller) onlinePartitionStateChange(b *batch) error {
	var fresh, offline []TopicPartition
	for _, t := range sortedTopics(ct.assignments) {
		if ct.deleting[t] {
			continue // no elections for topics queued for deletion
		}
		for _, p := range sortedPartitions(ct.assignments[t]) {
			tp := TopicPartition{Topic: t, Partition: p}
			st, ok := ct.states[tp]
			switch {
			case !ok:
				fresh = append(fresh, tp)
			case !ct.isLive(st.leader) || slices.ContainsFunc(st.isr, func(r int32) bool { return !ct.isLive(r) }):
				offline = append(offline, tp)
			}
		}
	}
	if err := ct.createPartitions(fresh, b); err != nil {
		return err
	}
	return ct.updateStates(offline, b)
}

// ---- partition state changes ----

// createPartitions moves New partitions online: leader = first live replica in assignment
// order, ISR = all live replicas, leader epoch 0; the state znode is created in a fenced
// multi and the live replicas get LeaderAndIsr with isNew=true.
func (ct *controller) createPartitions(tps []TopicPartition, b *batch) error {
	parentOK := map[string]bool{}
	for _, tp := range tps {
		live := ct.liveReplicas(tp)
		// Brokers in controlled shutdown (K7) are neither leader nor in the first ISR.
		eligible := slices.DeleteFunc(slices.Clone(live), func(r int32) bool { return ct.shuttingDown[r] })
		if len(eligible) == 0 {
			ct.log.WithField("topic", tp.Topic).WithField("partition", tp.Partition).
				WithField("replicas", ct.replicas(tp)).Warn("no replica of the new partition is alive; it stays offline")
			continue
		}
		st := leaderIsr{leader: eligible[0], leaderEpoch: zkdata.InitialLeaderEpoch, isr: eligible, controllerEpoch: ct.epoch}
		var ops []interface{}
		if !parentOK[tp.Topic] {
			ok, _, err := ct.c.exists(zkdata.TopicPartitionsPath(tp.Topic))
			if err != nil {
				return err
			}
			if !ok {
				ops = append(ops, &zk.CreateRequest{Path: ct.c.p(zkdata.TopicPartitionsPath(tp.Topic)), Acl: zk.WorldACL(zk.PermAll)})
			}
		}
		ok, _, err := ct.c.exists(zkdata.TopicPartitionPath(tp.Topic, tp.Partition))
		if err != nil {
			return err
		}
		if !ok {
			ops = append(ops, &zk.CreateRequest{Path: ct.c.p(zkdata.TopicPartitionPath(tp.Topic, tp.Partition)), Acl: zk.WorldACL(zk.PermAll)})
		}
		ops = append(ops, &zk.CreateRequest{Path: ct.c.p(zkdata.PartitionStatePath(tp.Topic, tp.Partition)),
			Data: zkdata.EncodeState(st.leader, st.leaderEpoch, st.isr, st.controllerEpoch), Acl: zk.WorldACL(zk.PermAll)})
		_, err = ct.fencedMulti(ops...)
		if errors.Is(err, ErrControllerMoved) {
			return err
		}
		if errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrNoNode) {
			// Written by an earlier controller (or the topic is going away): use ZK's state.
			if err := ct.loadState(tp); err != nil {
				return err
			}
			if _, ok := ct.states[tp]; ok {
				b.addLeaderAndIsr(live, tp, false)
			}
			continue
		}
		if err != nil {
			return err
		}
		parentOK[tp.Topic] = true
		st.zkVersion = 0
		ct.states[tp] = &st
		ct.log.WithField("topic", tp.Topic).WithField("partition", tp.Partition).WithField("leader", st.leader).
			WithField("isr", st.isr).WithField("leaderEpoch", st.leaderEpoch).Info("new partition online")
		b.addLeaderAndIsr(live, tp, true)
	}
	return nil
}

// nextState computes a partition's state for the current live set. Offline election
// (PartitionLeaderElectionAlgorithms.offlinePartitionLeaderElection): the first replica in
// assignment order that is live and in the ISR, ISR = ISR ∩ live; failing that, with
// unclean election enabled (K6), the first live replica with ISR = [it]. Without a leader
// the leader is -1 and the ISR keeps its last member (the ISR is never empty). A live
// leader keeps leading and dead replicas leave the ISR. Any change bumps the leader epoch.
func (ct *controller) nextState(tp TopicPartition, cur leaderIsr) (next leaderIsr, changed, unclean bool) {
	liveISR := make([]int32, 0, len(cur.isr))
	for _, r := range cur.isr {
		if ct.isLive(r) {
			liveISR = append(liveISR, r)
		}
	}
	next = leaderIsr{leader: cur.leader, leaderEpoch: cur.leaderEpoch, isr: cur.isr, controllerEpoch: ct.epoch}
	if ct.isLive(cur.leader) {
		if !slices.Contains(liveISR, cur.leader) {
			liveISR = append([]int32{cur.leader}, liveISR...)
		}
		next.isr = liveISR
	} else {
		next.leader = zkdata.NoLeader
		for _, r := range ct.replicas(tp) {
			if ct.electable(r) && slices.Contains(cur.isr, r) {
				next.leader = r
				next.isr = liveISR
				break
			}
		}
		if next.leader == zkdata.NoLeader && ct.uncleanAllowed(tp.Topic) {
			for _, r := range ct.replicas(tp) {
				if ct.electable(r) {
					next.leader, next.isr, unclean = r, []int32{r}, true
					break
				}
			}
		}
		if next.leader == zkdata.NoLeader {
			if len(liveISR) > 0 {
				next.isr = liveISR
			} else if len(cur.isr) > 1 {
				// Keep one member: the old leader when it was in the ISR, else the last.
				keep := cur.isr[len(cur.isr)-1]
				if slices.Contains(cur.isr, cur.leader) {
					keep = cur.leader
				}
				next.isr = []int32{keep}
			}
		}
	}
	if next.leader == cur.leader && slices.Equal(next.isr, cur.isr) {
		return cur, false, false
	}
	next.leaderEpoch = cur.leaderEpoch + 1
	return next, true, unclean
}

// updateStates applies nextState to each partition with a fenced compare-and-set on the
// cached zkVersion; on BADVERSION (the leader changed its ISR meanwhile) the state is re-read
// and recomputed (Kafka's partitionsToRetry loop).
func (ct *controller) updateStates(tps []TopicPartition, b *batch) error {
	return ct.updateStatesWith(tps, b, ct.nextState, ct.liveReplicas)
}

// updateStatesWith is updateStates with the election (compute) and the LeaderAndIsr
// recipients chosen by the caller (controlled shutdown, K7).
func (ct *controller) updateStatesWith(tps []TopicPartition, b *batch,
	compute func(TopicPartition, leaderIsr) (next leaderIsr, changed, unclean bool),
	recipients func(TopicPartition) []int32) error {
	for _, tp := range tps {
		for attempt := 0; attempt < 20; attempt++ {
			cur := ct.states[tp]
			if cur == nil {
				break
			}
			if cur.controllerEpoch > ct.epoch {
				ct.log.WithField("topic", tp.Topic).WithField("partition", tp.Partition).
					WithField("stateControllerEpoch", cur.controllerEpoch).Warn("partition state written by a newer controller; aborting")
				return ErrControllerMoved
			}
			next, changed, unclean := compute(tp, *cur)
			if !changed {
				break
			}
			res, err := ct.fencedMulti(&zk.SetDataRequest{Path: ct.c.p(zkdata.PartitionStatePath(tp.Topic, tp.Partition)),
				Data: zkdata.EncodeState(next.leader, next.leaderEpoch, next.isr, next.controllerEpoch), Version: cur.zkVersion})
			if errors.Is(err, zk.ErrBadVersion) {
				if err := ct.loadState(tp); err != nil {
					return err
				}
				if s := ct.states[tp]; s != nil && s.sameData(next) {
					err = nil // our earlier, retried write
					res = []zk.MultiResponse{{Stat: &zk.Stat{Version: s.zkVersion}}}
				} else {
					continue
				}
			}
			if errors.Is(err, zk.ErrNoNode) {
				delete(ct.states, tp)
				break
			}
			if err != nil {
				return err
			}
			if len(res) > 0 && res[0].Stat != nil {
				next.zkVersion = res[0].Stat.Version
			}
			ct.states[tp] = &next
			l := ct.log.WithField("topic", tp.Topic).WithField("partition", tp.Partition).WithField("leader", next.leader).
				WithField("isr", next.isr).WithField("leaderEpoch", next.leaderEpoch)
			if unclean {
				ct.mUnclean.Mark(1)
				l.Warn("unclean leader election: a replica outside the ISR became leader; data loss is possible")
			} else if next.leader == zkdata.NoLeader {
				l.Warn("partition offline: no live in-sync replica")
			} else {
				l.Info("partition state changed")
			}
			b.addLeaderAndIsr(recipients(tp), tp, false)
			break
		}
	}
	return nil
}

func (ct *controller) uncleanAllowed(topic string) bool {
	cfg, err := ct.c.TopicConfig(topic)
	if err == nil {
		if v, ok := cfg["unclean.leader.election.enable"]; ok {
			if bv, err := strconv.ParseBool(strings.TrimSpace(v)); err == nil {
				return bv
			}
		}
	}
	return ct.c.cfg.UncleanLeaderElection
}

// ---- topics ----

func (ct *controller) processTopicChange() error {
	topics, err := ct.watchChildren(zkdata.PathBrokerTopics, evTopicChange)
	if err != nil {
		return err
	}
	cur := map[string]bool{}
	for _, t := range topics {
		cur[t] = true
	}
	for t := range ct.assignments {
		if !cur[t] {
			ct.forgetTopic(t)
		}
	}
	b := ct.newBatch()
	var fresh []TopicPartition
	sort.Strings(topics)
	for _, t := range topics {
		if _, ok := ct.assignments[t]; ok {
			continue
		}
		a, err := ct.watchTopic(t)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			ct.log.WithError(err).WithField("topic", t).Error("ignoring undecodable topic znode")
			continue
		}
		ct.assignments[t] = a
		ct.log.WithField("topic", t).WithField("assignment", a).Info("new topic")
		for _, p := range sortedPartitions(a) {
			tp := TopicPartition{Topic: t, Partition: p}
			if err := ct.loadState(tp); err != nil {
				return err
			}
			if _, ok := ct.states[tp]; !ok {
				fresh = append(fresh, tp)
			}
		}
	}
	if err := ct.createPartitions(fresh, b); err != nil {
		return err
	}
	b.send()
	return nil
}

// processPartitionModification handles partitions added to an existing topic.
func (ct *controller) processPartitionModification(topic string) error {
	if _, ok := ct.assignments[topic]; !ok {
		return nil
	}
	a, err := ct.watchTopic(topic)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		ct.log.WithError(err).WithField("topic", topic).Error("ignoring undecodable topic znode")
		return nil
	}
	var fresh []TopicPartition
	for _, p := range sortedPartitions(a) {
		if _, ok := ct.assignments[topic][p]; !ok {
			fresh = append(fresh, TopicPartition{Topic: topic, Partition: p})
		}
	}
	ct.assignments[topic] = a
	if len(fresh) == 0 {
		return nil
	}
	ct.log.WithField("topic", topic).WithField("added", len(fresh)).Info("partitions added")
	b := ct.newBatch()
	if err := ct.createPartitions(fresh, b); err != nil {
		return err
	}
	b.send()
	return nil
}

func (ct *controller) forgetTopic(t string) {
	for p := range ct.assignments[t] {
		delete(ct.states, TopicPartition{Topic: t, Partition: p})
	}
	delete(ct.assignments, t)
	delete(ct.deleting, t)
	delete(ct.armed, "data:"+zkdata.TopicPath(t))
	ct.forgetReassignments(t)
}

// processDeleteTopics handles /admin/delete_topics/<t> (Kafka's TopicDeletionManager):
// UpdateMetadata with leader -2 (LeaderDuringDelete) to every live broker and
// StopReplica(delete=true) to the live replicas; once every replica's broker was live for
// that, the topic's znodes are removed. While a replica's broker is offline the deletion is
// ineligible: the topic stays queued (its znodes kept, so the name cannot be reused and the
// stale log cannot come back as a replica of a new topic), and it is retried when that broker
// registers again (processBrokerChange) or a new controller takes over. With
// delete.topic.enable=false the request znode is just removed.
func (ct *controller) processDeleteTopics() error {
	children, err := ct.watchChildren(zkdata.PathDeleteTopics, evDeleteTopics)
	if err != nil || len(children) == 0 {
		return err
	}
	sort.Strings(children)
	if !ct.c.cfg.DeleteTopicEnable {
		ct.log.WithField("topics", children).Warn("ignoring topic deletion requests: delete.topic.enable is false")
		return ct.deleteChildren(zkdata.PathDeleteTopics, children)
	}
	for _, t := range children {
		a, ok := ct.assignments[t]
		if !ok {
			if err := ct.deletePaths([]string{zkdata.DeleteTopicPath(t)}); err != nil {
				return err
			}
			continue
		}
		ct.deleting[t] = true
		b := ct.newBatch()
		var tps []TopicPartition
		offline := map[int32]bool{}
		for _, p := range sortedPartitions(a) {
			tp := TopicPartition{Topic: t, Partition: p}
			tps = append(tps, tp)
			b.stopReplica(ct.liveReplicas(tp), tp, true)
			for _, r := range ct.replicas(tp) {
				if !ct.isLive(r) {
					offline[r] = true
				}
			}
		}
		b.updateMetadata(ct.liveIDs(), tps)
		b.send()
		if len(offline) > 0 {
			ct.log.WithField("topic", t).WithField("offlineReplicas", sortedKeys(offline)).
				Info("topic deletion waits for the brokers of offline replicas (ineligible for deletion)")
			continue
		}
		paths, err := ct.subtree(zkdata.TopicPath(t))
		if err != nil {
			return err
		}
		if ok, _, _ := ct.c.exists(zkdata.TopicConfigPath(t)); ok {
			paths = append(paths, zkdata.TopicConfigPath(t))
		}
		paths = append(paths, zkdata.DeleteTopicPath(t))
		if err := ct.deletePaths(paths); err != nil {
			return err
		}
		ct.forgetTopic(t)
		ct.log.WithField("topic", t).Info("deleted topic")
	}
	return nil
}

// subtree lists path and its descendants, children before parents.
func (ct *controller) subtree(path string) ([]string, error) {
	ch, err := ct.c.children(path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range ch {
		sub, err := ct.subtree(path + "/" + c)
		if err != nil {
			return nil, err
		}
		out = append(out, sub...)
	}
	return append(out, path), nil
}

// deletePaths deletes paths (in order) with fenced multis of at most 500 ops; nodes that
// are already gone are skipped.
func (ct *controller) deletePaths(paths []string) error {
	for len(paths) > 0 {
		n := min(len(paths), 500)
		chunk := paths[:n]
		ops := make([]interface{}, 0, n)
		for _, p := range chunk {
			ops = append(ops, &zk.DeleteRequest{Path: ct.c.p(p), Version: -1})
		}
		_, err := ct.fencedMulti(ops...)
		if errors.Is(err, zk.ErrNoNode) {
			// Some are gone already: one at a time.
			for _, p := range chunk {
				if _, err := ct.fencedMulti(&zk.DeleteRequest{Path: ct.c.p(p), Version: -1}); err != nil && !errors.Is(err, zk.ErrNoNode) {
					return err
				}
			}
		} else if err != nil {
			return err
		}
		paths = paths[n:]
	}
	return nil
}

func (ct *controller) deleteChildren(parent string, children []string) error {
	paths := make([]string, 0, len(children))
	for _, c := range children {
		paths = append(paths, parent+"/"+c)
	}
	return ct.deletePaths(paths)
}

// processIsrChange handles /isr_change_notification (K5): re-read the named partitions'
// states, send UpdateMetadata for them to every live broker, delete the notifications.
func (ct *controller) processIsrChange() error {
	children, err := ct.watchChildren(zkdata.PathIsrChange, evIsrChange)
	if err != nil || len(children) == 0 {
		return err
	}
	sort.Strings(children)
	seen := map[TopicPartition]bool{}
	var tps []TopicPartition
	for _, c := range children {
		if !strings.HasPrefix(c, zkdata.IsrChangePrefix) {
			continue
		}
		data, _, err := ct.c.get(zkdata.PathIsrChange + "/" + c)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return err
		}
		list, err := zkdata.DecodeIsrChange(data)
		if err != nil {
			ct.log.WithError(err).WithField("znode", c).Warn("ignoring undecodable ISR change notification")
			continue
		}
		for _, tp := range list {
			if _, ok := ct.assignments[tp.Topic][tp.Partition]; ok && !seen[tp] {
				seen[tp] = true
				tps = append(tps, tp)
			}
		}
	}
	for _, tp := range tps {
		if err := ct.loadState(tp); err != nil {
			return err
		}
	}
	if len(tps) > 0 {
		b := ct.newBatch()
		b.updateMetadata(ct.liveIDs(), tps)
		b.send()
	}
	return ct.deleteChildren(zkdata.PathIsrChange, children)
}

// ---- helpers ----

func (ct *controller) isLive(id int32) bool {
	_, ok := ct.live[id]
	return ok
}

func (ct *controller) liveIDs() []int32 { return sortedIDs(ct.live) }

func (ct *controller) replicas(tp TopicPartition) []int32 {
	return ct.assignments[tp.Topic][tp.Partition]
}

func (ct *controller) liveReplicas(tp TopicPartition) []int32 {
	var out []int32
	for _, r := range ct.replicas(tp) {
		if ct.isLive(r) {
			out = append(out, r)
		}
	}
	return out
}

func (ct *controller) sortedStates() []TopicPartition {
	out := make([]TopicPartition, 0, len(ct.states))
	for tp := range ct.states {
		out = append(out, tp)
	}
	sortTPs(out)
	return out
}

func (ct *controller) updateOfflineGauge() {
	if !ct.active.Load() {
		ct.mOffline.Update(0)
		return
	}
	var n int64
	for t, a := range ct.assignments {
		for p := range a {
			st, ok := ct.states[TopicPartition{Topic: t, Partition: p}]
			if !ok || !ct.isLive(st.leader) {
				n++
			}
		}
	}
	ct.mOffline.Update(n)
}

// onResponse runs on a sender goroutine: it only inspects the answer and enqueues events.
func (ct *controller) onResponse(brokerID int32, req kmsg.Request, resp kmsg.Response) {
	var code int16
	var epoch int32
	l := ct.c.log.WithField("component", "controller").WithField("targetBroker", brokerID)
	switch r := resp.(type) {
	case *kmsg.LeaderAndISRResponse:
		code = r.ErrorCode
		epoch = req.(*kmsg.LeaderAndISRRequest).ControllerEpoch
		for _, p := range r.Partitions {
			if p.ErrorCode != 0 {
				l.WithField("topic", p.Topic).WithField("partition", p.Partition).
					WithField("error", kerr.ErrorForCode(p.ErrorCode)).Warn("LeaderAndIsr partition error")
			}
		}
	case *kmsg.UpdateMetadataResponse:
		code = r.ErrorCode
		epoch = req.(*kmsg.UpdateMetadataRequest).ControllerEpoch
	case *kmsg.StopReplicaResponse:
		code = r.ErrorCode
		epoch = req.(*kmsg.StopReplicaRequest).ControllerEpoch
	}
	if code == 0 {
		return
	}
	l.WithField("apiKey", req.Key()).WithField("error", kerr.ErrorForCode(code)).Warn("broker rejected controller request")
	if code == kerr.StaleControllerEpoch.Code {
		ct.enqueue(event{kind: evStaleEpoch, epoch: epoch})
	}
}

func sortedIDs(m map[int32]BrokerInfo) []int32 {
	out := make([]int32, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	sortInt32(out)
	return out
}

func sortedTopics(m map[string]map[int32][]int32) []string {
	out := make([]string, 0, len(m))
	for t := range m {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

func sortInt32(s []int32) { sort.Slice(s, func(i, j int) bool { return s[i] < s[j] }) }

func sortTPs(s []TopicPartition) {
	sort.Slice(s, func(i, j int) bool {
		if s[i].Topic != s[j].Topic {
			return s[i].Topic < s[j].Topic
		}
		return s[i].Partition < s[j].Partition
	})
}
