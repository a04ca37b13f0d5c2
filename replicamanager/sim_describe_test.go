package replicamanager

import "fmt"

// describe prints the replica's state for the scenario scripts: role, leader epoch, LEO, HW,
// the leader's ISR and zkVersion, and the leader epoch cache.
func (p *Partition) describe() string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	leo := p.log.LogEndOffset()
	epochs := fmtEpochs(p.log.LeaderEpochCache().EpochEntries())
	switch {
	case p.leaderID < 0:
		return fmt.Sprintf("no leader known epoch=%d leo=%d hw=%d epochs=%s", p.leaderEpoch, leo, p.hw.get(), epochs)
	case p.isLeaderLocked():
		pending := ""
		if p.leader != nil && p.leader.Pending() != nil {
			pending = " pending=" + fmtIDs(p.leader.Pending())
			if p.isrOutcomeUnknown {
				pending += "(outcome unknown)"
			}
		}
		return fmt.Sprintf("leader epoch=%d leo=%d hw=%d isr=%s%s zkVersion=%d epochs=%s", p.leaderEpoch, leo, p.hw.get(), fmtIDs(p.isrLocked()), pending, p.zkVersion, epochs)
	default:
		return fmt.Sprintf("follower of %d epoch=%d leo=%d hw=%d epochs=%s", p.leaderID, p.leaderEpoch, leo, p.hw.get(), epochs)
	}
}
