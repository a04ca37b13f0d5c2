package controller

import "slices"

// Leader elections as pure functions (Kafka's PartitionLeaderElectionAlgorithms, with the
// ISR rules isrbroker applies in the same compare-and-set). Each takes the partition's
// assignment and current leaderIsr and returns the next one, whether it changed, and (offline
// election only) whether it was unclean. A changed result always has the leader epoch bumped;
// the caller stamps its controller epoch. None reads ZooKeeper or the clock.

// leaderIsr is the controller's copy of a partition state znode.
type leaderIsr struct {
	leader, leaderEpoch int32
	isr                 []int32
	controllerEpoch     int32
	zkVersion           int32
}

func (s leaderIsr) sameData(o leaderIsr) bool {
	return s.leader == o.leader && s.leaderEpoch == o.leaderEpoch && s.controllerEpoch == o.controllerEpoch && slices.Equal(s.isr, o.isr)
}

// liveness is what elections know about brokers: registered (live) and, of those, not in
// controlled shutdown (electable; Kafka's liveBrokerIds excludes shutting-down brokers).
type liveness interface {
	isLive(id int32) bool
	electable(id int32) bool
}

// electionFunc computes a partition's next state (an election strategy).
type electionFunc func(tp TopicPartition, cur leaderIsr) (next leaderIsr, changed, unclean bool)

// offlineElection is the OfflinePartition election with the controller's ISR cleanup
// (offlinePartitionLeaderElection): a live leader keeps leading and dead replicas leave the
// ISR; otherwise the first replica in assignment order that is electable and in the ISR
// leads, ISR = ISR ∩ live; failing that, when uncleanAllowed() says so (K6), the first
// electable replica leads with ISR = [it] (unclean). Without a leader the leader is -1 and the
// ISR keeps its live members, or one member when none is live (the old leader when it was in
// the ISR, else the last): the ISR is never emptied. uncleanAllowed is only called when an
// unclean election is the only way to a leader.
func offlineElection(assignment []int32, cur leaderIsr, l liveness, uncleanAllowed func() bool) (next leaderIsr, changed, unclean bool) {
	liveISR := make([]int32, 0, len(cur.isr))
	for _, r := range cur.isr {
		if l.isLive(r) {
			liveISR = append(liveISR, r)
		}
	}
	next = leaderIsr{leader: cur.leader, leaderEpoch: cur.leaderEpoch, isr: cur.isr, controllerEpoch: cur.controllerEpoch}
	if l.isLive(cur.leader) {
		if !slices.Contains(liveISR, cur.leader) {
			liveISR = append([]int32{cur.leader}, liveISR...)
		}
		next.isr = liveISR
	} else {
		next.leader = noLeader
		for _, r := range assignment {
			if l.electable(r) && slices.Contains(cur.isr, r) {
				next.leader = r
				next.isr = liveISR
				break
			}
		}
		if next.leader == noLeader && uncleanAllowed() {
			for _, r := range assignment {
				if l.electable(r) {
					next.leader, next.isr, unclean = r, []int32{r}, true
					break
				}
			}
		}
		if next.leader == noLeader {
			if len(liveISR) > 0 {
				next.isr = liveISR
			} else if len(cur.isr) > 1 {
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

// controlledShutdownElection (controlledShutdownPartitionLeaderElection, K7): the first
// replica in assignment order that is live, in the ISR and not shutting down leads; the
// shutting-down brokers leave the ISR. Unchanged when the leader is not shutting down (moved
// meanwhile) or no candidate exists (the partition is reported as remaining).
func controlledShutdownElection(assignment []int32, cur leaderIsr, l liveness, shuttingDown func(int32) bool) (leaderIsr, bool) {
	if !shuttingDown(cur.leader) {
		return cur, false
	}
	leader := int32(noLeader)
	for _, r := range assignment {
		if l.isLive(r) && !shuttingDown(r) && slices.Contains(cur.isr, r) {
			leader = r
			break
		}
	}
	if leader == noLeader {
		return cur, false
	}
	isr := slices.DeleteFunc(slices.Clone(cur.isr), shuttingDown)
	return leaderIsr{leader: leader, leaderEpoch: cur.leaderEpoch + 1, isr: isr, controllerEpoch: cur.controllerEpoch}, true
}

// preferredElection (preferredReplicaPartitionLeaderElection, K7): the assignment head
// leads when it is electable and in the ISR; ISR kept. Unchanged otherwise, or when it
// already leads.
func preferredElection(assignment []int32, cur leaderIsr, l liveness) (leaderIsr, bool) {
	if len(assignment) == 0 {
		return cur, false
	}
	pref := assignment[0]
	if cur.leader == pref || !l.electable(pref) || !slices.Contains(cur.isr, pref) {
		return cur, false
	}
	return leaderIsr{leader: pref, leaderEpoch: cur.leaderEpoch + 1, isr: slices.Clone(cur.isr), controllerEpoch: cur.controllerEpoch}, true
}

// reassignElection (reassignPartitionLeaderElection, reassignment step 7): a live leader in
// the target replicas (RAR) keeps leading with the leader epoch bumped; otherwise the first
// RAR replica that is electable and in the ISR leads, ISR unchanged. No candidate: unchanged.
func reassignElection(target []int32, cur leaderIsr, l liveness) (leaderIsr, bool) {
	if slices.Contains(target, cur.leader) && l.isLive(cur.leader) {
		return bumpLeaderEpoch(cur), true
	}
	for _, r := range target {
		if l.electable(r) && slices.Contains(cur.isr, r) {
			return leaderIsr{leader: r, leaderEpoch: cur.leaderEpoch + 1, isr: cur.isr, controllerEpoch: cur.controllerEpoch}, true
		}
	}
	return cur, false
}

// bumpLeaderEpoch keeps leader and ISR and increments the leader epoch
// (updateLeaderEpochAndSendRequest).
func bumpLeaderEpoch(cur leaderIsr) leaderIsr {
	return leaderIsr{leader: cur.leader, leaderEpoch: cur.leaderEpoch + 1, isr: cur.isr, controllerEpoch: cur.controllerEpoch}
}

// removeFromIsr is the ISR removal of the OfflineReplica transition for replicas: they
// leave the ISR with the leader epoch bumped (leader -1 if one of them led). Unchanged when
// none is in the ISR or the ISR would become empty (the last member is kept).
func removeFromIsr(replicas []int32, cur leaderIsr) (leaderIsr, bool) {
	isr := slices.DeleteFunc(slices.Clone(cur.isr), func(r int32) bool { return slices.Contains(replicas, r) })
	if len(isr) == 0 || len(isr) == len(cur.isr) {
		return cur, false
	}
	leader := cur.leader
	if slices.Contains(replicas, leader) {
		leader = noLeader
	}
	return leaderIsr{leader: leader, leaderEpoch: cur.leaderEpoch + 1, isr: isr, controllerEpoch: cur.controllerEpoch}, true
}
