#!/usr/bin/env bash
# A local isrbroker cluster: one ZooKeeper on 127.0.0.1:2181 and three brokers configured by
# scripts/server-{1,2,3}.properties, all run from the repository root.
#
#   scripts/cluster.sh up      install deps if missing, build, start ZooKeeper and 3 brokers, run the demo
#   scripts/cluster.sh demo    produce 10 records with kcat to topic "demo", consume them back, then
#                              with the consumer group "demo-group" (kcat -G), and describe the group
#   scripts/cluster.sh status  show what is running and the cluster's metadata
#   scripts/cluster.sh down    stop (SIGTERM) the brokers and the ZooKeeper this script started
#   scripts/cluster.sh clean   down, then delete .cluster/ and data/ (all topics are lost)
#
# State lives in .cluster/ (binary, ZooKeeper config and data, pid files, logs) and the brokers'
# logs in data/broker-N (log.dirs in the properties files); both are ignored by git. Only processes
# recorded in .cluster/*.pid are ever signalled.
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

log() { echo "cluster: $*"; }
die() { echo "cluster: $*" >&2; exit 1; }

# listener of broker N, from its properties file ("127.0.0.1:9092").
listener() { sed -n 's|^listeners=PLAINTEXT://||p' "scripts/server-$1.properties" | head -n1; }
bootstrap() {
	local addrs=() id
	for id in "${IDS[@]}"; do addrs+=("$(listener "$id")"); done
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

# wait_until SECONDS DESCRIPTION COMMAND...: poll COMMAND every 0.2 s until it succeeds; fails
# after SECONDS (the caller reports DESCRIPTION's failure).
wait_until() {
	local deadline=$((SECONDS + $1))
	shift 2
	until "$@"; do
		((SECONDS < deadline)) || return 1
		sleep 0.2
	done
}

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
	wait_until 60 "ZooKeeper" zk_ok || { tail -n 20 "$STATE/zookeeper.log" >&2; die "ZooKeeper did not answer ruok within 60 s"; }
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

cmd_up() {
	bash scripts/install-deps.sh
	mkdir -p "$STATE"
	log "building $BIN"
	go build -o "$BIN" .
	start_zookeeper
	for id in "${IDS[@]}"; do start_broker "$id"; done
	wait_until 90 "registration" all_registered || die "brokers did not all register in ZooKeeper within 90 s (logs in $STATE/)"
	log "all ${#IDS[@]} brokers registered in ZooKeeper (/brokers/ids)"
	wait_until 60 "metadata" metadata_has_all_brokers || die "the brokers' metadata does not list all ${#IDS[@]} brokers after 60 s"
	log "cluster is up: bootstrap $(bootstrap)"
	cmd_demo
	log "stop it with: scripts/cluster.sh down"
}

cmd_demo() {
	local bs run
	bs=$(bootstrap)
	run=$(date +%H:%M:%S)
	log "producing 10 records to topic '$DEMO_TOPIC' with kcat -P (the topic is auto-created with num.partitions)"
	local input
	input=$(for i in $(seq 1 10); do echo "key-$i:hello $i (run $run)"; done)
	timeout 60 kcat -P -b "$bs" -t "$DEMO_TOPIC" -K: <<<"$input" || die "kcat -P failed"
	echo "== kcat -L -t $DEMO_TOPIC"
	timeout 60 kcat -L -b "$bs" -t "$DEMO_TOPIC" || die "kcat -L failed"
	echo "== kcat -C -e -o beginning -t $DEMO_TOPIC (every record in the topic)"
	local out
	out=$(timeout 60 kcat -C -b "$bs" -t "$DEMO_TOPIC" -e -o beginning -q -f 'partition %p offset %o  %k = %s\n') || die "kcat -C failed"
	echo "$out"
	local missing=0 line
	while IFS= read -r line; do
		grep -qF -- "${line%%:*} = ${line#*:}" <<<"$out" || missing=$((missing + 1))
	done <<<"$input"
	((missing == 0)) || die "$missing of the 10 records produced in this run were not consumed back"
	log "demo ok: the 10 records of run $run were produced and consumed back"

	# Consumer group: the broker's group coordinator (JoinGroup/SyncGroup/OffsetCommit, offsets
	# kept in __consumer_offsets). A new group starts at the earliest offset; a group that ran
	# before resumes from its committed offsets, so it reads exactly this run's 10 records.
	echo "== kcat -G $DEMO_GROUP $DEMO_TOPIC -e (a consumer group: reads what the group has not committed yet)"
	out=$(timeout 60 kcat -b "$bs" -G "$DEMO_GROUP" "$DEMO_TOPIC" -X auto.offset.reset=earliest -e -q -f 'partition %p offset %o  %k = %s\n') || die "kcat -G failed"
	echo "$out"
	missing=0
	while IFS= read -r line; do
		grep -qF -- "${line%%:*} = ${line#*:}" <<<"$out" || missing=$((missing + 1))
	done <<<"$input"
	((missing == 0)) || die "$missing of the 10 records produced in this run were not consumed by group $DEMO_GROUP"
	echo "== $BIN consumer-groups --describe --group $DEMO_GROUP (committed offsets, lag 0)"
	"$BIN" consumer-groups --bootstrap-server "$bs" --describe --group "$DEMO_GROUP" 2>&1 || die "consumer-groups --describe failed"
	log "demo ok: group '$DEMO_GROUP' consumed this run's records and committed its offsets"
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
	log "stopping $name (pid $pid)"
	kill -TERM "$pid" 2>/dev/null || true
	if ! wait_until 30 "$name exit" eval "! kill -0 $pid 2>/dev/null"; then
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
	stop_one "$STATE/zookeeper.pid" QuorumPeerMain "ZooKeeper"
	log "down"
}

cmd_clean() {
	cmd_down
	log "removing $STATE/ and data/"
	rm -rf "$STATE" data
}

case "${1:-}" in
up) cmd_up ;;
demo) cmd_demo ;;
status) cmd_status ;;
down) cmd_down ;;
clean) cmd_clean ;;
*)
	echo "usage: scripts/cluster.sh up|demo|status|down|clean" >&2
	exit 2
	;;
esac
