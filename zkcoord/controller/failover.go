package controller

import (
	"errors"

	"github.com/go-zookeeper/zk"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// elect is Kafka's KafkaController.elect: watch /controller; if nobody holds it, create it
// and increment /controller_epoch in one multi fenced by the epoch's zkVersion.
func (ct *Controller) elect() {
	me := ct.cfg.BrokerID
	for attempt := 0; attempt < 3; attempt++ {
		if ct.closed() {
			return
		}
		exists, st, wch, err := ct.conn.ExistsW(pathController)
		if err != nil {
			ct.log.WithError(err).Warn("cannot watch /controller; retrying")
			ct.retryElectLater()
			return
		}
		ct.zk.arm("exists:"+pathController, event{kind: evControllerChange}, wch)
		if exists {
			data, st2, err := ct.conn.Get(pathController)
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
			if id == me && st.EphemeralOwner == ct.conn.SessionID() {
				// Our own znode but we are not acting as controller (we resigned after an
				// error): give the role up so that a fresh election runs.
				_ = ct.conn.Delete(pathController, -1)
				continue
			}
			return
		}
		if ct.active.Load() {
			// Our /controller is gone (session expiry not yet processed): stop first.
			ct.resign("controller znode gone")
		}
		epoch, ver, err := ct.zk.readOrCreateControllerEpoch()
		if err != nil {
			ct.log.WithError(err).Warn("cannot read /controller_epoch; retrying election")
			ct.retryElectLater()
			return
		}
		newEpoch := epoch + 1
		res, err := ct.conn.Multi(
			&zk.CreateRequest{Path: pathController, Data: zkdata.EncodeController(me), Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagEphemeral},
			&zk.SetDataRequest{Path: pathControllerEpoch, Data: zkdata.EncodeControllerEpoch(newEpoch), Version: ver})
		var newVer int32
		switch {
		case err == nil && len(res) == 2 && res[1].Stat != nil:
			newVer = res[1].Stat.Version
		case errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrBadVersion):
			// We win only if /controller is ours and the epoch is the one we wrote (a
			// retried multi after a connection loss).
			id := ct.zk.controllerID()
			e, v, _ := ct.zk.readOrCreateControllerEpoch()
			if id != me || e != newEpoch {
				ct.log.WithField("controllerId", id).Info("another broker won the controller election")
				continue // re-arms the watch and records the winner
			}
			newVer = v
		default:
			ct.log.WithError(err).Warn("controller election failed; retrying")
			ct.retryElectLater()
			return
		}
		ct.ctx.epoch = newEpoch
		ct.ctx.epochZkVersion = newVer
		ct.active.Store(true)
		ct.mActive.Update(1)
		ct.log = ct.cfg.Log.WithField("component", "controller").WithField("controllerEpoch", newEpoch)
		ct.log.WithField("epochZkVersion", newVer).Info("elected controller")
		ct.reportRole(true)
		if err := ct.onControllerFailover(); err != nil {
			ct.handleErr(err)
		}
		return
	}
}

// onControllerFailover is Kafka's onControllerFailover: register the watches, read the
// cluster, send UpdateMetadata to every live broker, start the replica and partition state
// machines, then resume reassignments, deletions and preferred elections.
func (ct *Controller) onControllerFailover() error {
	ids, err := ct.zk.watchChildren(zkdata.PathBrokerIDs, evBrokerChange)
	if err != nil {
		return err
	}
	topics, err := ct.zk.watchChildren(zkdata.PathBrokerTopics, evTopicChange)
	if err != nil {
		return err
	}
	queued, err := ct.zk.watchChildren(zkdata.PathDeleteTopics, evDeleteTopics)
	if err != nil {
		return err
	}
	notes, err := ct.zk.watchChildren(zkdata.PathIsrChange, evIsrChange)
	if err != nil {
		return err
	}
	// Pending notifications are covered by the full UpdateMetadata below.
	if err := ct.zk.deleteChildren(zkdata.PathIsrChange, notes); err != nil {
		return err
	}
	// Log dir events too: the LeaderAndIsr of every live replica below finds the offline
	// replicas (logdir.go).
	if err := ct.logDirs.watchLogDirEvents(); err != nil {
		return err
	}
	brokers, err := ct.zk.readBrokers(ids)
	if err != nil {
		return err
	}
	ct.ctx.live = brokers
	var tps []TopicPartition
	for _, t := range topics {
		a, err := ct.zk.watchTopic(t)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			ct.log.WithError(err).WithField("topic", t).Error("skipping undecodable topic znode")
			continue
		}
		ct.ctx.assignments[t] = a
		for p := range a {
			tps = append(tps, TopicPartition{Topic: t, Partition: p})
		}
	}
	// Every partition state in pipelined reads (Kafka 1.1+: getTopicPartitionStatesRaw).
	if err := ct.zk.loadStates(tps); err != nil {
		return err
	}
	if ct.cfg.DeleteTopicEnable {
		ct.deletion.init(queued) // resumed by deletion.process below
	}
	for _, id := range ct.ctx.liveIDs() {
		ct.chans.startSender(ct.ctx.live[id])
	}
	b := ct.newBatch()
	// UpdateMetadata to all live brokers before the state machines (Kafka's order).
	b.fullUpdateMetadata(ct.ctx.liveIDs())
	// Replica state machine startup: every live replica goes online and gets a LeaderAndIsr
	// (not those of topics queued for deletion).
	ct.rsm.startup(b)
	b.send()
	// Partition state machine startup: elect new and offline partitions.
	ct.psm.startup()
	b = ct.newBatch()
	if err := ct.psm.triggerOnlineStateChange(b); err != nil {
		return err
	}
	b.send()
	ct.log.WithField("liveBrokers", ct.ctx.liveIDs()).WithField("topics", len(ct.ctx.assignments)).Info("controller failover complete")
	// Resume partition reassignments, then deletions.
	if err := ct.reassign.onFailover(); err != nil {
		return err
	}
	if err := ct.deletion.process(); err != nil {
		return err
	}
	// Pending preferred elections, then the leader imbalance checks (K7).
	return ct.preferred.onFailover()
}
