#!/usr/bin/env bash
# A local isrbroker cluster: one ZooKeeper on 127.0.0.1:2181 and three brokers configured by
# scripts/server-{1,2,3}.properties, all run from the repository root.
#
#   scripts/cluster.sh up      install deps if missing, build and install `isrbroker` on PATH, start
#                              ZooKeeper and 3 brokers, run the demo; leaves the 3 brokers running
#   scripts/cluster.sh demo    topic "demo" (3 partitions, replication factor 3, min.insync.replicas=2):
#                              produce 10 records with kcat (acks=all), consume them back, then with
#                              the consumer group "demo-group" (kcat -G) and describe the group; then a
#                              failover: kill -9 demo-0's leader, wait for a new leader with a higher
#                              leader epoch and the ISR shrunk to 2, produce and consume again (nothing
#                              lost), restart the broker and wait until the ISR has all 3 replicas again
#   scripts/cluster.sh status  show what is running and the cluster's metadata
#   scripts/cluster.sh down    stop (SIGTERM) the brokers and the ZooKeeper this script started
#   scripts/cluster.sh clean   down, then delete .cluster/ and data/ (all topics are lost)
#   scripts/cluster.sh up --secure    a second, separate cluster (state in .cluster-secure/,
#                              ZooKeeper 127.0.0.1:12181, brokers 19092-19094): SASL_SSL with
#                              SCRAM-SHA-512 for clients and between the brokers, the ACL
#                              authorizer; the demo shows alice refused, then allowed by ACLs
#                              (scripts/lib/securecluster.sh, docs/security.md)
#   scripts/cluster.sh down|status|clean --secure    the same for the secure cluster; plain
#                              `down` stops the secure cluster too
#
# State lives in .cluster/ (binary, ZooKeeper config and data, pid files, logs) and the brokers'
# logs in data/broker-N (log.dirs in the properties files); both are ignored by git (the secure
# cluster's all in .cluster-secure/). Only processes recorded in .cluster/*.pid and
# .cluster-secure/*.pid are ever signalled.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

STATE=.cluster
BIN=$STATE/isrbroker
ZK_JAR=/usr/share/java/zookeeper.jar
ZK_PORT=2181
IDS=(1 2 3)
DEMO_TOPIC=demo
DEMO_GROUP=demo-group
DEMO_PARTITIONS=3
DEMO_RF=3
DEMO_MIN_ISR=2

log() { echo "cluster: $*"; }
die() { echo "cluster: $*" >&2; exit 1; }

# listener of broker N, from its properties file ("127.0.0.1:9092").
listener() { sed -n 's|^listeners=PLAINTEXT://||p' "scripts/server-$1.properties" | head -n1; }
# metrics_addr N: broker N's metrics listener (the replication page), "127.0.0.1:9101".
metrics_addr() { sed -n 's|^metrics.listen=||p' "scripts/server-$1.properties" | head -n1; }
# DOWN_ID: a broker the demo has killed; left out of the bootstrap list meanwhile.
DOWN_ID=
bootstrap() {
	local addrs=() id
	for id in "${IDS[@]}"; do [[ "$id" == "$DOWN_ID" ]] || addrs+=("$(listener "$id")"); done
	(IFS=,; echo "${addrs[*]}")
}

# alive PIDFILE PATTERN: the recorded process still runs and its command line matches PATTERN
# (guards against a recycled pid).
alive() {
	[[ -f "$1" ]] || return 1
	local pid
	pid=$(cat "$1")
	[[ "$pid" =~ ^[0-9]+$ ]] || return 1
	kill -0 "$pid" 2>/dev/null || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$2"
}

port_open() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }

# zk4 CMD: a ZooKeeper four-letter command ("ruok", "dump").
zk4() {
	# shellcheck disable=SC2016 # $1 expands in the inner shell
	timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/'"$ZK_PORT"' && printf %s "$1" >&3 && cat <&3' _ "$1" 2>/dev/null || true
}

# wait_until SECONDS COMMAND... (scripts/lib/wait.sh)
# shellcheck source=scripts/lib/wait.sh
source "$ROOT/scripts/lib/wait.sh"

start_zookeeper() {
	if alive "$STATE/zookeeper.pid" QuorumPeerMain; then
		log "ZooKeeper already running (pid $(cat "$STATE/zookeeper.pid"))"
		return
	fi
	if port_open "$ZK_PORT"; then
		die "port $ZK_PORT is in use by a process this script did not start; stop it first"
	fi
	mkdir -p "$STATE/zookeeper"
	cat >"$STATE/zoo.cfg" <<-EOF
		# written by scripts/cluster.sh
		tickTime=1000
		dataDir=$ROOT/$STATE/zookeeper
		clientPort=$ZK_PORT
		clientPortAddress=127.0.0.1
		maxClientCnxns=0
		admin.enableServer=false
		4lw.commands.whitelist=ruok,dump,srvr,stat
	EOF
	log "starting ZooKeeper on 127.0.0.1:$ZK_PORT (log $STATE/zookeeper.log)"
	setsid java -Xmx256m -XX:+UseSerialGC -Dzookeeper.admin.enableServer=false \
		-cp "$ZK_JAR" org.apache.zookeeper.server.quorum.QuorumPeerMain "$STATE/zoo.cfg" \
		>>"$STATE/zookeeper.log" 2>&1 </dev/null &
	echo $! >"$STATE/zookeeper.pid"
	zk_ok() { [[ "$(zk4 ruok)" == imok ]]; }
	wait_until 60 zk_ok || { tail -n 20 "$STATE/zookeeper.log" >&2; die "ZooKeeper did not answer ruok within 60 s"; }
	log "ZooKeeper is up"
}

start_broker() {
	local id=$1 pidfile=$STATE/broker-$1.pid
	if alive "$pidfile" isrbroker; then
		log "broker $id already running (pid $(cat "$pidfile"))"
		return
	fi
	log "starting broker $id on $(listener "$id") (config scripts/server-$id.properties, log $STATE/broker-$id.log)"
	setsid "$BIN" broker --config "scripts/server-$id.properties" >>"$STATE/broker-$id.log" 2>&1 </dev/null &
	echo $! >"$pidfile"
	disown # no job notice from bash when the demo kills it
}

all_registered() {
	local dump id
	dump=$(zk4 dump)
	for id in "${IDS[@]}"; do
		alive "$STATE/broker-$id.pid" isrbroker || {
			echo >&2
			tail -n 20 "$STATE/broker-$id.log" >&2
			die "broker $id exited; its log is $STATE/broker-$id.log"
		}
		grep -q "/brokers/ids/$id\$" <<<"$dump" || return 1
	done
}

metadata_has_all_brokers() { kcat -L -b "$(bootstrap)" -m 5 2>/dev/null | grep -q " ${#IDS[@]} brokers:"; }

# in_path DIR: DIR is one of $PATH's entries.
in_path() { case ":$PATH:" in *":$1:"*) return 0 ;; esac; return 1; }

# install_bin: make the README's operator commands (`isrbroker topics ...`) run as written. The
# binary just built goes where `go install` puts binaries ($(go env GOBIN), else the first
# $(go env GOPATH)/bin); when that directory is not on PATH, a link to it goes into the first
# writable PATH directory of /usr/local/bin and ~/.local/bin; failing that, the export line to
# run is printed. The brokers keep running $BIN, so a later install never touches them.
install_bin() {
	local gobin dir target=""
	gobin=$(go env GOBIN)
	[[ -n "$gobin" ]] || gobin="$(go env GOPATH | cut -d: -f1)/bin"
	mkdir -p "$gobin"
	install -m 0755 "$BIN" "$gobin/isrbroker.tmp.$$"
	mv -f "$gobin/isrbroker.tmp.$$" "$gobin/isrbroker"
	if in_path "$gobin"; then
		target=$gobin/isrbroker
	else
		for dir in /usr/local/bin "$HOME/.local/bin"; do
			in_path "$dir" || continue
			[[ "$dir" != "$HOME/.local/bin" ]] || mkdir -p "$dir" 2>/dev/null || true
			[[ -d "$dir" && -w "$dir" ]] || continue
			if [[ -e "$dir/isrbroker" && ! -L "$dir/isrbroker" ]]; then
				log "$dir/isrbroker exists and is not a link; left as it is"
				continue
			fi
			ln -sfn "$gobin/isrbroker" "$dir/isrbroker"
			target=$dir/isrbroker
			break
		done
	fi
	hash -r
	if [[ -z "$target" ]]; then
		log "installed $gobin/isrbroker, but no directory on PATH could take it; run:"
		echo "    export PATH=\"$gobin:\$PATH\""
		return
	fi
	if [[ "$target" == "$gobin/isrbroker" ]]; then
		log "installed isrbroker: $target (on PATH)"
	else
		log "installed isrbroker: $gobin/isrbroker, linked from $target (on PATH)"
	fi
	local found
	found=$(command -v isrbroker || true)
	if [[ "$found" != "$target" ]]; then
		log "warning: \`isrbroker\` on PATH is $found, which comes before $target; remove it or put $(dirname "$target") first in PATH"
	fi
}

cmd_up() {
	local t0=$SECONDS
	bash scripts/install-deps.sh cluster
	mkdir -p "$STATE"
	log "building $BIN"
	go build -o "$BIN" .
	install_bin
	start_zookeeper
	for id in "${IDS[@]}"; do start_broker "$id"; done
	wait_until 90 all_registered || die "brokers did not all register in ZooKeeper within 90 s (logs in $STATE/)"
	log "all ${#IDS[@]} brokers registered in ZooKeeper (/brokers/ids)"
	wait_until 60 metadata_has_all_brokers || die "the brokers' metadata does not list all ${#IDS[@]} brokers after 60 s"
	log "cluster is up after $((SECONDS - t0)) s: bootstrap $(bootstrap), ZooKeeper 127.0.0.1:$ZK_PORT"
	cmd_demo
	log "the cluster keeps running: try the README's operator commands, e.g."
	echo "    isrbroker topics --zookeeper 127.0.0.1:$ZK_PORT --describe --topic $DEMO_TOPIC"
	echo "    isrbroker cluster --zookeeper 127.0.0.1:$ZK_PORT"
	log "the replication page: http://$(metrics_addr "${IDS[0]}")/replication"
	log "up and demo took $((SECONDS - t0)) s; stop the cluster with: scripts/cluster.sh down"
}

# raise_demo_rf PARTITIONS: give a demo topic left by an older version of this script (replication
# factor 1) 3 replicas per partition the way Kafka changes a replication factor: a reassignment
# whose new replicas the controller adds, waits for in the ISR and then completes; then the topic
# config min.insync.replicas=2.
raise_demo_rf() {
	local n=$1 plan=$STATE/demo-replication-factor.json p i parts=() reps
	for ((p = 0; p < n; p++)); do
		reps=()
		for ((i = 0; i < DEMO_RF; i++)); do reps+=("${IDS[$(((p + i) % ${#IDS[@]}))]}"); done
		parts+=("{\"topic\":\"$DEMO_TOPIC\",\"partition\":$p,\"replicas\":[$(IFS=,; echo "${reps[*]}")]}")
	done
	echo "{\"version\":1,\"partitions\":[$(IFS=,; echo "${parts[*]}")]}" >"$plan"
	log "raising the replication factor of topic $DEMO_TOPIC to $DEMO_RF: isrbroker reassign-partitions --execute --reassignment-json-file $plan"
	"$BIN" reassign-partitions --zookeeper "127.0.0.1:$ZK_PORT" --execute --reassignment-json-file "$plan" >/dev/null ||
		die "reassign-partitions --execute of $plan failed"
	reassigned() { "$BIN" reassign-partitions --zookeeper "127.0.0.1:$ZK_PORT" --verify --reassignment-json-file "$plan" >/dev/null 2>&1; }
	wait_until 120 reassigned || die "the reassignment of topic $DEMO_TOPIC did not complete within 120 s (isrbroker reassign-partitions --verify shows where it is)"
	"$BIN" configs --bootstrap-server "$(bootstrap)" --entity-type topics --entity-name "$DEMO_TOPIC" --alter \
		--add-config "min.insync.replicas=$DEMO_MIN_ISR" >/dev/null || die "could not set min.insync.replicas=$DEMO_MIN_ISR on topic $DEMO_TOPIC"
	log "topic $DEMO_TOPIC now has $DEMO_RF replicas per partition and min.insync.replicas=$DEMO_MIN_ISR"
}

# ensure_demo_topic: create topic demo with replication factor 3 and min.insync.replicas=2
# (acks=all then needs 2 in-sync replicas, K2), unless it exists; an older demo topic with
# replication factor 1 is given 3 replicas (raise_demo_rf).
ensure_demo_topic() {
	"$BIN" topics --zookeeper "127.0.0.1:$ZK_PORT" --create --if-not-exists --topic "$DEMO_TOPIC" \
		--partitions "$DEMO_PARTITIONS" --replication-factor "$DEMO_RF" --config "min.insync.replicas=$DEMO_MIN_ISR" ||
		die "could not create topic $DEMO_TOPIC"
	local desc rf
	desc=$("$BIN" topics --zookeeper "127.0.0.1:$ZK_PORT" --describe --topic "$DEMO_TOPIC") || die "could not describe topic $DEMO_TOPIC"
	rf=$(sed -n 's/.*ReplicationFactor: *\([0-9]*\).*/\1/p' <<<"$desc" | head -n1)
	if [[ "$rf" != "$DEMO_RF" ]]; then
		local n
		n=$(sed -n 's/.*PartitionCount: *\([0-9]*\).*/\1/p' <<<"$desc" | head -n1)
		[[ "$n" =~ ^[0-9]+$ && "$rf" =~ ^[0-9]+$ && "$rf" -lt "$DEMO_RF" ]] ||
			die "topic $DEMO_TOPIC exists with replication factor ${rf:-?}; scripts/cluster.sh clean deletes it (and every topic), then run scripts/cluster.sh up"
		log "topic $DEMO_TOPIC exists with replication factor $rf (left by an older version of this script)"
		raise_demo_rf "$n"
		desc=$("$BIN" topics --zookeeper "127.0.0.1:$ZK_PORT" --describe --topic "$DEMO_TOPIC") || die "could not describe topic $DEMO_TOPIC"
	fi
	echo "== isrbroker topics --describe --topic $DEMO_TOPIC (replication factor $DEMO_RF, min.insync.replicas=$DEMO_MIN_ISR)"
	echo "$desc"
}

# check_consumed INPUT OUTPUT WHAT: every "key:value" line of INPUT appears in OUTPUT as "key = value".
check_consumed() {
	local missing=0 line
	while IFS= read -r line; do
		grep -qF -- "${line%%:*} = ${line#*:}" <<<"$2" || missing=$((missing + 1))
	done <<<"$1"
	((missing == 0)) || die "$missing of the $(wc -l <<<"$1") records $3 were not consumed back"
}

# produce INPUT: kcat -P with acks=all (request.required.acks=-1): each record is acknowledged
# once every in-sync replica has it (S4), refused while the ISR is below min.insync.replicas (K2).
produce() {
	timeout 60 kcat -P -b "$(bootstrap)" -t "$DEMO_TOPIC" -K: -X acks=all <<<"$1" || die "kcat -P (acks=all) failed"
}

consume_all() {
	timeout 60 kcat -C -b "$(bootstrap)" -t "$DEMO_TOPIC" -e -o beginning -q -f 'partition %p offset %o  %k = %s\n' || die "kcat -C failed"
}

consume_group() {
	timeout 60 kcat -b "$(bootstrap)" -G "$DEMO_GROUP" "$DEMO_TOPIC" -X auto.offset.reset=earliest -e -q -f 'partition %p offset %o  %k = %s\n' || die "kcat -G failed"
}

cmd_demo() {
	local bs run id
	for id in "${IDS[@]}"; do
		alive "$STATE/broker-$id.pid" isrbroker || die "broker $id is not running; start the cluster with: scripts/cluster.sh up"
	done
	bs=$(bootstrap)
	run=$(date +%H:%M:%S)
	ensure_demo_topic
	log "producing 10 records to topic '$DEMO_TOPIC' with kcat -P, acks=all"
	local input
	input=$(for i in $(seq 1 10); do echo "key-$i:hello $i (run $run)"; done)
	produce "$input"
	echo "== kcat -L -t $DEMO_TOPIC"
	timeout 60 kcat -L -b "$bs" -t "$DEMO_TOPIC" || die "kcat -L failed"
	echo "== kcat -C -e -o beginning -t $DEMO_TOPIC (every record in the topic)"
	local out
	out=$(consume_all)
	echo "$out"
	check_consumed "$input" "$out" "produced in this run"
	log "demo ok: the 10 records of run $run were produced and consumed back"

	# Consumer group: the broker's group coordinator (JoinGroup/SyncGroup/OffsetCommit, offsets
	# kept in __consumer_offsets, replication factor 3). A new group starts at the earliest
	# offset; a group that ran before resumes from its committed offsets, so it reads exactly this
	# run's 10 records.
	echo "== kcat -G $DEMO_GROUP $DEMO_TOPIC -e (a consumer group: reads what the group has not committed yet)"
	out=$(consume_group)
	echo "$out"
	check_consumed "$input" "$out" "produced in this run (group $DEMO_GROUP)"
	echo "== isrbroker consumer-groups --describe --group $DEMO_GROUP (committed offsets, lag 0)"
	"$BIN" consumer-groups --bootstrap-server "$bs" --describe --group "$DEMO_GROUP" 2>&1 || die "consumer-groups --describe failed"
	log "demo ok: group '$DEMO_GROUP' consumed this run's records and committed its offsets"

	demo_failover "$run" "$input"
}

# page_json [SKIP]: the replication page's cluster.json (docs/replication-page.md) from the first
# running broker other than SKIP.
page_json() {
	local id
	for id in "${IDS[@]}"; do
		[[ "$id" != "${1:-}" ]] || continue
		alive "$STATE/broker-$id.pid" isrbroker || continue
		curl -fsS --max-time 3 "http://$(metrics_addr "$id")/replication/cluster.json" 2>/dev/null && return 0
	done
	return 1
}

# demo0 [SKIP]: "LEADER EPOCH ISR CONTROLLER" of partition demo-0 as its leader reports it
# (ISR comma-separated; leader -1 and ISR "-" while the leader does not answer).
demo0() {
	page_json "${1:-}" | jq -er --arg t "$DEMO_TOPIC" '
		(.controller.id // -1) as $c
		| [.partitions[] | select(.topic == $t and .partition == 0)][0]
		| if . == null then empty
		  elif .leaderReachable then "\(.leader) \(.leaderEpoch) \(.isr | join(",")) \($c)"
		  else "-1 \(.leaderEpoch) - \($c)" end'
}

# describe_state "LEADER EPOCH ISR CONTROLLER": a readable line.
describe_state() {
	local l e i c
	read -r l e i c <<<"$1"
	if [[ "$l" == -1 ]]; then
		echo "demo-0: no leader answers (the followers still know leader epoch $e); controller: broker $c"
		return
	fi
	echo "demo-0: leader $l, leader epoch $e, ISR [$i] ($(tr ',' '\n' <<<"$i" | grep -c .) of $DEMO_RF replicas); controller: broker $c"
}

# poll_state SECONDS SKIP PREDICATE: poll demo0 (from brokers other than SKIP) every 0.2 s,
# printing each new state, until PREDICATE "STATE" succeeds; the final state is in $STATE_NOW.
STATE_NOW=
poll_state() {
	local deadline=$((SECONDS + $1)) skip=$2 pred=$3 last="" now
	while ((SECONDS < deadline)); do
		now=$(demo0 "$skip" || true)
		if [[ -n "$now" && "$now" != "$last" ]]; then
			echo "   $((SECONDS - T_KILL)) s: $(describe_state "$now")"
			last=$now
		fi
		if [[ -n "$now" ]] && "$pred" "$now"; then
			STATE_NOW=$now
			return 0
		fi
		sleep 0.2
	done
	STATE_NOW=$last
	return 1
}

OLD_LEADER= OLD_EPOCH=
new_leader_elected() {
	local l e i c
	read -r l e i c <<<"$1"
	[[ "$l" -ge 0 && "$l" != "$OLD_LEADER" && "$e" -gt "$OLD_EPOCH" && "$(tr ',' '\n' <<<"$i" | grep -c .)" -eq $((DEMO_RF - 1)) ]]
}
isr_full() {
	local l e i c
	read -r l e i c <<<"$1"
	[[ "$l" -ge 0 && "$(tr ',' '\n' <<<"$i" | grep -c .)" -eq "$DEMO_RF" ]]
}

# demo_failover RUN INPUT: kill -9 the leader of demo-0 and show Kafka's failover: once the dead
# broker's ZooKeeper session expires it is no longer in sync (S5) and the controller elects a new
# leader from the ISR with leader epoch + 1 and writes the smaller ISR (S9, S3); acks=all still
# works with 2 in-sync replicas (min.insync.replicas=2, K2) and no acknowledged record is lost
# (S3); the restarted broker truncates by leader epoch (K1), catches up and the leader adds it to
# the ISR again (S6).
demo_failover() {
	local run=$1 input=$2 before l e i c pid
	T_KILL=$SECONDS
	poll_state 60 "" isr_full >/dev/null || die "demo-0 has no leader with a full ISR (last seen: ${STATE_NOW:-nothing}); see $STATE/broker-*.log"
	before=$STATE_NOW
	read -r l e i c <<<"$before"
	OLD_LEADER=$l OLD_EPOCH=$e
	echo
	echo "== failover: kill -9 the leader of $DEMO_TOPIC-0"
	echo "   before: $(describe_state "$before")"
	pid=$(cat "$STATE/broker-$l.pid")
	log "kill -9 broker $l (pid $pid), the leader of $DEMO_TOPIC-0$([[ "$c" == "$l" ]] && echo ", and the controller")"
	kill -KILL "$pid"
	DOWN_ID=$OLD_LEADER
	T_KILL=$SECONDS
	log "waiting for a new leader: the controller acts once broker $l's ZooKeeper session expires (zookeeper.session.timeout.ms)"
	poll_state 90 "$l" new_leader_elected ||
		die "no new leader of $DEMO_TOPIC-0 with a higher leader epoch and an ISR of $((DEMO_RF - 1)) within 90 s (last seen: ${STATE_NOW:-nothing})"
	local after=$STATE_NOW
	echo "   after:  $(describe_state "$after")"
	read -r l e i c <<<"$after"
	log "failover done in $((SECONDS - T_KILL)) s: broker $l leads $DEMO_TOPIC-0 in leader epoch $e (was broker $OLD_LEADER in epoch $OLD_EPOCH); the ISR shrank to [$i]"
	echo "== isrbroker topics --describe --topic $DEMO_TOPIC --under-replicated-partitions (broker $OLD_LEADER is down)"
	"$BIN" topics --zookeeper "127.0.0.1:$ZK_PORT" --describe --topic "$DEMO_TOPIC" --under-replicated-partitions || true

	log "producing 10 more records with acks=all while broker $OLD_LEADER is down (ISR of $((DEMO_RF - 1)) >= min.insync.replicas=$DEMO_MIN_ISR)"
	local input2 out
	input2=$(for j in $(seq 11 20); do echo "key-$j:hello $j (run $run, after failover)"; done)
	produce "$input2"
	out=$(consume_all)
	check_consumed "$input" "$out" "acknowledged before the failover"
	check_consumed "$input2" "$out" "acknowledged after the failover"
	echo "== kcat -C -e: this run's records (before and after the failover)"
	grep -F "(run $run" <<<"$out"
	log "nothing lost: all 20 acknowledged records of run $run are consumed back"
	out=$(consume_group)
	check_consumed "$input2" "$out" "produced after the failover (group $DEMO_GROUP)"
	log "group '$DEMO_GROUP' resumed from its committed offsets: it read the 10 new records"

	echo
	echo "== restart broker $OLD_LEADER: it truncates to the leader's log by leader epoch, catches up and rejoins the ISR"
	start_broker "$OLD_LEADER"
	DOWN_ID=
	T_KILL=$SECONDS
	poll_state 120 "" isr_full ||
		die "broker $OLD_LEADER did not rejoin the ISR of $DEMO_TOPIC-0 within 120 s (last seen: ${STATE_NOW:-nothing}); see $STATE/broker-$OLD_LEADER.log"
	echo "   after:  $(describe_state "$STATE_NOW")"
	log "broker $OLD_LEADER is back in the ISR of $DEMO_TOPIC-0 after $((SECONDS - T_KILL)) s"
	wait_until 90 all_registered || die "broker $OLD_LEADER did not register again"
	echo "== isrbroker topics --describe --topic $DEMO_TOPIC"
	"$BIN" topics --zookeeper "127.0.0.1:$ZK_PORT" --describe --topic "$DEMO_TOPIC" || true
	log "demo ok: failover of $DEMO_TOPIC-0 from broker $OLD_LEADER to broker $l, nothing lost, ISR full again"
}

cmd_status() {
	if alive "$STATE/zookeeper.pid" QuorumPeerMain; then
		log "ZooKeeper running (pid $(cat "$STATE/zookeeper.pid")) on 127.0.0.1:$ZK_PORT"
	else
		log "ZooKeeper not running (started by this script)"
	fi
	local id dump
	dump=$(zk4 dump)
	for id in "${IDS[@]}"; do
		local reg="not registered"
		grep -q "/brokers/ids/$id\$" <<<"$dump" && reg="registered"
		if alive "$STATE/broker-$id.pid" isrbroker; then
			log "broker $id running (pid $(cat "$STATE/broker-$id.pid")) on $(listener "$id"), $reg"
		else
			log "broker $id not running, $reg"
		fi
	done
	local any=0
	for id in "${IDS[@]}"; do alive "$STATE/broker-$id.pid" isrbroker && any=1; done
	if ((any)); then
		echo "== kcat -L"
		timeout 30 kcat -L -b "$(bootstrap)" -m 5 || true
	fi
}

# stop PIDFILE PATTERN NAME: SIGTERM, wait up to 30 s, then SIGKILL; only our recorded process.
stop_one() {
	local pidfile=$1 pattern=$2 name=$3
	if ! alive "$pidfile" "$pattern"; then
		rm -f "$pidfile"
		return
	fi
	local pid
	pid=$(cat "$pidfile")
	log "waiting for $name (pid $pid) to exit"
	kill -TERM "$pid" 2>/dev/null || true
	if ! wait_until 30 eval "! kill -0 $pid 2>/dev/null"; then
		log "$name (pid $pid) did not stop within 30 s; sending SIGKILL"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$pidfile"
}

cmd_down() {
	local id
	for id in "${IDS[@]}"; do
		if alive "$STATE/broker-$id.pid" isrbroker; then
			log "stopping broker $id (pid $(cat "$STATE/broker-$id.pid"))"
			kill -TERM "$(cat "$STATE/broker-$id.pid")" 2>/dev/null || true
		fi
	done
	for id in "${IDS[@]}"; do stop_one "$STATE/broker-$id.pid" isrbroker "broker $id"; done
	if alive "$STATE/zookeeper.pid" QuorumPeerMain; then log "stopping ZooKeeper (pid $(cat "$STATE/zookeeper.pid"))"; fi
	stop_one "$STATE/zookeeper.pid" QuorumPeerMain "ZooKeeper"
	log "down"
}

cmd_clean() {
	cmd_down
	log "removing $STATE/ and data/"
	rm -rf "$STATE" data
}

# shellcheck source=scripts/lib/securecluster.sh
source "$ROOT/scripts/lib/securecluster.sh"

# secure_running: a secure cluster this script started has a process left.
secure_running() {
	local f
	for f in "$ROOT/.cluster-secure"/*.pid; do
		[[ -f "$f" ]] && return 0
	done
	return 1
}

case "${1:-} ${2:-}" in
"up ") cmd_up ;;
"up --secure") secure_globals && cmd_up_secure ;;
"demo ") cmd_demo ;;
"status ") cmd_status ;;
"status --secure") secure_globals && cmd_status_secure ;;
"down ")
	cmd_down
	if secure_running; then (cmd_down_secure); fi
	;;
"down --secure") cmd_down_secure ;;
"clean ") cmd_clean ;;
"clean --secure") cmd_clean_secure ;;
*)
	echo "usage: scripts/cluster.sh up|demo|status|down|clean, or up|status|down|clean --secure" >&2
	exit 2
	;;
esac
