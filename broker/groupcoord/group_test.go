package groupcoord

import (
	"testing"
	"time"

	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// KIP-394 + initial delay + sync + heartbeat: a v4 member without id gets MEMBER_ID_REQUIRED,
// its rejoin parks for group.initial.rebalance.delay.ms (Empty group), then gets generation 1 as
// leader with the member list; SyncGroup stores the assignment and the group is Stable.
func TestJoinSyncHeartbeat_SingleMemberWithInitialDelay(t *testing.T) {
	e := newEnv(t)
	j := e.join("g", "", nil, 4, "meta")
	r := e.mustJoined(j)
	assertCode(t, "first v4 join", r.err, errMemberIDRequired)
	if r.memberID == "" || r.memberID[:7] != "client-" {
		t.Fatalf("generated member id %q, want clientId-UUID", r.memberID)
	}
	id := r.memberID

	j = e.join("g", id, nil, 4, "meta")
	e.mustParked(j)
	if got := e.state("g"); got != statePreparingRebalance {
		t.Fatalf("state %s, want PreparingRebalance", got)
	}
	e.clock.Advance(testDelay - time.Millisecond)
	e.mustParked(j) // the initial delay is not over
	e.clock.Advance(time.Millisecond)
	r = e.mustJoined(j)
	assertCode(t, "join", r.err, errNone)
	if r.generation != 1 || r.leader != id || len(r.members) != 1 || string(r.members[0].ProtocolMetadata) != "meta" || *r.protocol != "range" {
		t.Fatalf("join result %+v", r)
	}
	if e.state("g") != stateCompletingRebalance {
		t.Fatalf("state %s, want CompletingRebalance", e.state("g"))
	}
	assertCode(t, "heartbeat while completing", e.c.Heartbeat("g", id, nil, 1), errRebalanceInProgress)

	s := e.sync("g", 1, id, nil, map[string][]byte{id: []byte("a1")})
	res, ok := s.get()
	if !ok || res.err != errNone || string(res.assignment) != "a1" {
		t.Fatalf("sync %+v %v", res, ok)
	}
	if e.state("g") != stateStable {
		t.Fatalf("state %s, want Stable", e.state("g"))
	}
	assertCode(t, "heartbeat", e.c.Heartbeat("g", id, nil, 1), errNone)
	assertCode(t, "heartbeat old generation", e.c.Heartbeat("g", id, nil, 0), errIllegalGeneration)
	assertCode(t, "heartbeat unknown member", e.c.Heartbeat("g", "nobody", nil, 1), errUnknownMemberID)

	// The group metadata record (key v2, value v3) holds the assignment.
	recs := e.reps.records(t, 0)
	last := recs[len(recs)-1]
	g, err := parseGroupValue("g", last.value)
	if err != nil || g.generation != 1 || string(g.members[id].assignment) != "a1" {
		t.Fatalf("stored group %+v %v", g, err)
	}
}

// The SyncGroup of the leader is answered only once the group metadata append completes
// (the ISR has it), and so are the followers parked in SyncGroup.
func TestSyncGroupWaitsForTheAppend(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.GroupInitialRebalanceDelay = 0 })
	a := e.join("g", "", nil, 3, "a") // v3: no MEMBER_ID_REQUIRED
	e.clock.Advance(0)                // the initial delay (0) ends
	ra := e.mustJoined(a)
	assertCode(t, "join", ra.err, errNone)
	e.reps.mu.Lock()
	e.reps.hold = true
	e.reps.mu.Unlock()
	s := e.sync("g", ra.generation, ra.memberID, nil, map[string][]byte{ra.memberID: []byte("x")})
	if _, ok := s.get(); ok {
		t.Fatalf("SyncGroup answered before the group metadata reached the ISR")
	}
	e.reps.release()
	if res, ok := s.get(); !ok || res.err != errNone || string(res.assignment) != "x" {
		t.Fatalf("sync after append %+v %v", res, ok)
	}
}

// InitialDelayedJoin: every new member during the delay extends it by the delay again, up to
// the rebalance timeout.
func TestInitialDelayExtendsWhileMembersJoin(t *testing.T) {
	e := newEnv(t)
	a := e.join("g", "", nil, 3, "a")
	e.clock.Advance(2 * time.Second)
	b := e.join("g", "", nil, 3, "b")
	e.clock.Advance(time.Second) // the first delay ends; a member was added: extended
	e.mustParked(a)
	e.mustParked(b)
	e.clock.Advance(testDelay)
	ra, rb := e.mustJoined(a), e.mustJoined(b)
	if ra.generation != 1 || rb.generation != 1 || ra.leader != rb.leader {
		t.Fatalf("results %+v %+v", ra, rb)
	}
	leaderMembers := len(ra.members) + len(rb.members)
	if leaderMembers != 2 {
		t.Fatalf("the leader got %d members, want 2", leaderMembers)
	}
}

// Rebalance timeout: a member that does not rejoin within it is removed and the rebalance
// completes with the others.
func TestRebalanceTimeoutRemovesMembersNotRejoined(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.GroupInitialRebalanceDelay = 0 })
	a := e.join("g", "", nil, 3, "a")
	b := e.join("g", "", nil, 3, "b")
	// With no initial delay the join completes when its timer (0) fires.
	e.clock.Advance(0)
	ra, rb := e.mustJoined(a), e.mustJoined(b)
	leader, follower := ra, rb
	if rb.leader == rb.memberID {
		leader, follower = rb, ra
	}
	e.sync("g", 1, follower.memberID, nil, nil)
	e.sync("g", 1, leader.memberID, nil, map[string][]byte{leader.memberID: []byte("l"), follower.memberID: []byte("f")})
	if e.state("g") != stateStable {
		t.Fatalf("state %s, want Stable", e.state("g"))
	}
	// The leader rejoins (forces a rebalance); the follower keeps heartbeating but never rejoins.
	lj := e.join("g", leader.memberID, nil, 3, "a2")
	e.mustParked(lj)
	// The follower heartbeats (its session stays alive) but is told to rejoin and never does.
	for elapsed := time.Duration(0); elapsed < testRebalance; elapsed += testSession / 2 {
		assertCode(t, "follower heartbeat in PreparingRebalance", e.c.Heartbeat("g", follower.memberID, nil, 1), errRebalanceInProgress)
		e.mustParked(lj)
		e.clock.Advance(min(testSession/2, testRebalance-elapsed-time.Millisecond))
	}
	e.mustParked(lj)
	e.clock.Advance(time.Millisecond)
	r := e.mustJoined(lj)
	if r.err != errNone || r.generation != 2 || len(r.members) != 1 {
		t.Fatalf("after the rebalance timeout: %+v", r)
	}
	assertCode(t, "removed follower heartbeat", e.c.Heartbeat("g", follower.memberID, nil, 2), errUnknownMemberID)
}

// Session timeout: a member that stops heartbeating is removed; the group ends Empty and that
// is persisted.
func TestSessionExpiryRemovesMember(t *testing.T) {
	e := newEnv(t)
	id, gen := e.stableSingle("g")
	e.clock.Advance(testSession / 2)
	assertCode(t, "heartbeat", e.c.Heartbeat("g", id, nil, gen), errNone)
	e.clock.Advance(testSession - time.Millisecond) // extended by the heartbeat
	if got := e.members("g"); len(got) != 1 {
		t.Fatalf("member expired early: %v", got)
	}
	e.clock.Advance(time.Millisecond)
	if got := e.members("g"); len(got) != 0 {
		t.Fatalf("members after session timeout: %v", got)
	}
	if e.state("g") != stateEmpty {
		t.Fatalf("state %s, want Empty", e.state("g"))
	}
	assertCode(t, "heartbeat after expiry", e.c.Heartbeat("g", id, nil, gen), errUnknownMemberID)
	recs := e.reps.records(t, 0)
	g, err := parseGroupValue("g", recs[len(recs)-1].value)
	if err != nil || g.generation != gen+1 || len(g.members) != 0 {
		t.Fatalf("stored empty group %+v %v", g, err)
	}
}

// KIP-345: a static member restarting with its group.instance.id (unknown member id) gets a new
// member id and its assignment without a rebalance; the old member id is fenced.
func TestStaticMemberRejoinKeepsAssignmentAndFencesOldID(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.GroupInitialRebalanceDelay = 0 })
	inst := str("instance-1")
	j := e.join("g", "", inst, 5, "m")
	e.clock.Advance(0)
	r := e.mustJoined(j)
	assertCode(t, "static join", r.err, errNone) // static members skip MEMBER_ID_REQUIRED
	old := r.memberID
	e.sync("g", r.generation, old, inst, map[string][]byte{old: []byte("mine")})
	if e.state("g") != stateStable {
		t.Fatalf("state %s", e.state("g"))
	}
	appends := e.reps.appends

	j2 := e.join("g", "", inst, 5, "m")
	r2 := e.mustJoined(j2)
	if r2.err != errNone || r2.memberID == old || r2.generation != r.generation || r2.leader != old {
		t.Fatalf("static rejoin %+v (old id %s)", r2, old)
	}
	if e.state("g") != stateStable || e.reps.appends != appends {
		t.Fatalf("static rejoin rebalanced: state %s, appends %d→%d", e.state("g"), appends, e.reps.appends)
	}
	s := e.sync("g", r2.generation, r2.memberID, inst, nil)
	if res, ok := s.get(); !ok || res.err != errNone || string(res.assignment) != "mine" {
		t.Fatalf("sync of the rejoined static member %+v", res)
	}
	assertCode(t, "old member id heartbeat", e.c.Heartbeat("g", old, inst, r.generation), errFencedInstanceID)
	assertCode(t, "new member id heartbeat", e.c.Heartbeat("g", r2.memberID, inst, r.generation), errNone)
	oj := e.join("g", old, inst, 5, "m")
	assertCode(t, "old member id join", e.mustJoined(oj).err, errFencedInstanceID)
	code, codes := e.c.LeaveGroup("g", []leavingMember{{memberID: old, instanceID: inst}})
	if code != errNone || codes[0] != errFencedInstanceID {
		t.Fatalf("leave with the old id: %d %v", code, codes)
	}
}

// Error codes per state and per request, as GroupCoordinator answers them.
func TestErrorCodes(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.GroupMaxSize = 1; c.GroupInitialRebalanceDelay = 0 })
	id, gen := e.stableSingle("g")
	bad := func(p joinParams) joinParams {
		if p.groupID == "" {
			p.groupID = "g"
		}
		p.clientID, p.rebalanceTimeout, p.protocolType = "c", testRebalance, "consumer"
		if p.sessionTimeout == 0 {
			p.sessionTimeout = testSession
		}
		if p.protocols == nil {
			p.protocols = []protocol{{name: "range", metadata: []byte("m")}}
		}
		return p
	}
	joins := []struct {
		name string
		p    joinParams
		want int16
	}{
		{"empty group id", joinParams{groupID: "", memberID: ""}, errInvalidGroupID},
		{"session timeout below min", joinParams{sessionTimeout: 500 * time.Millisecond}, errInvalidSessionTimeout},
		{"session timeout above max", joinParams{sessionTimeout: 2 * time.Minute}, errInvalidSessionTimeout},
		{"unknown group with member id", joinParams{groupID: "other", memberID: "x"}, errUnknownMemberID},
		{"unknown member", joinParams{memberID: "x"}, errUnknownMemberID},
		{"group.max.size", joinParams{}, errGroupMaxSizeReached},
		{"inconsistent protocol", joinParams{memberID: id, protocols: []protocol{{name: "roundrobin"}}}, errInconsistentGroupProtocol},
	}
	for _, tc := range joins {
		t.Run("join/"+tc.name, func(t *testing.T) {
			p := bad(tc.p)
			if tc.name == "empty group id" {
				p.groupID = ""
			}
			r := e.mustJoined(e.joinWith(p))
			assertCode(t, tc.name, r.err, tc.want)
		})
	}
	syncs := []struct {
		name      string
		gen       int32
		member    string
		want      int16
		wantAfter int16
	}{
		{"unknown member", gen, "x", errUnknownMemberID, 0},
		{"illegal generation", gen + 1, id, errIllegalGeneration, 0},
		{"stable: current assignment", gen, id, errNone, 0},
	}
	for _, tc := range syncs {
		res, ok := e.sync("g", tc.gen, tc.member, nil, nil).get()
		if !ok {
			t.Fatalf("sync %s not answered", tc.name)
		}
		assertCode(t, "sync "+tc.name, res.err, tc.want)
	}
	res, _ := e.sync("nogroup", 1, "x", nil, nil).get()
	assertCode(t, "sync unknown group", res.err, errUnknownMemberID)

	// Commit errors.
	offs := map[tp]offsetAndMetadata{{"t", 0}: {offset: 1, leaderEpoch: -1, expireTimestamp: -1}}
	commit := func(group, member string, gen int32) int16 {
		var got map[tp]int16
		e.c.CommitOffsets(group, member, nil, gen, offs, func(m map[tp]int16) { got = m })
		return got[tp{"t", 0}]
	}
	assertCode(t, "commit unknown member", commit("g", "x", gen), errUnknownMemberID)
	assertCode(t, "commit illegal generation", commit("g", id, gen+5), errIllegalGeneration)
	assertCode(t, "commit to a gone group with a generation", commit("gone", "m", 3), errIllegalGeneration)
	assertCode(t, "commit", commit("g", id, gen), errNone)

	// Delete: a group with members is NON_EMPTY_GROUP; an unknown one GROUP_ID_NOT_FOUND.
	codes := e.c.DeleteGroups([]string{"g", "unknown"})
	assertCode(t, "delete non-empty", codes["g"], errNonEmptyGroup)
	assertCode(t, "delete unknown", codes["unknown"], errGroupIDNotFound)

	// A partition this broker does not own: NOT_COORDINATOR; one loading:
	// COORDINATOR_LOAD_IN_PROGRESS (and Heartbeat answers it with no error).
	e.meta.partitions[OffsetsTopic] = 2
	other := "a" // partition 1 of 2
	for partitionFor(other, 2) != 1 {
		other += "a"
	}
	r := e.mustJoined(e.join(other, "", nil, 4, "m"))
	assertCode(t, "join not coordinator", r.err, errNotCoordinator)
	e.c.groupManager.mu.Lock()
	e.c.groupManager.loading[1] = true
	e.c.groupManager.mu.Unlock()
	r = e.mustJoined(e.join(other, "", nil, 4, "m"))
	assertCode(t, "join loading", r.err, errCoordinatorLoadInProgress)
	assertCode(t, "heartbeat loading", e.c.Heartbeat(other, "m", nil, 1), errNone)
	res, _ = e.sync(other, 1, "m", nil, nil).get()
	assertCode(t, "sync loading", res.err, errRebalanceInProgress)
}

// Leadership: a resignation unloads the partition's groups: a parked JoinGroup is answered
// NOT_COORDINATOR, later requests get NOT_COORDINATOR.
func TestResignationUnloadsGroups(t *testing.T) {
	e := newEnv(t)
	j := e.join("g", "", nil, 3, "m")
	e.mustParked(j)
	e.c.OnLeadershipChange(nil, []rm.TopicPartition{{Topic: OffsetsTopic, Partition: 0}})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if r, ok := j.get(); ok {
			assertCode(t, "parked join after resignation", r.err, errNotCoordinator)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("parked JoinGroup not answered after resignation")
		}
		time.Sleep(time.Millisecond)
	}
	assertCode(t, "heartbeat", e.c.Heartbeat("g", "x", nil, 0), errNotCoordinator)
}
