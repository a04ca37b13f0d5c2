# shellcheck shell=bash
# Shared by scripts/bench.sh and scripts/kfake-compare.sh: a throwaway ZooKeeper and brokers on
# loopback ports under a temporary directory, started by the sourcing script and stopped by it.
#
# The sourcing script defines log and die, and sets WORK (its temporary directory), ZK_JAR,
# ZK_PORT, ZK (127.0.0.1:$ZK_PORT), BIN (the isrbroker binary) and IDS (the broker ids);
# PIDS collects what is started: ZooKeeper first, then the brokers.

PIDS=()

# stop_pids PID...: SIGTERM, wait up to 30 s each (a broker's controlled shutdown needs
# ZooKeeper, so brokers are stopped before it), then SIGKILL what is left.
stop_pids() {
	local pid
	for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "$@"; do
		for _ in $(seq 1 150); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.2
		done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
}

# stop_cluster: the brokers, then ZooKeeper (PIDS[0]).
stop_cluster() {
	if ((${#PIDS[@]} > 1)); then stop_pids "${PIDS[@]:1}"; fi
	if ((${#PIDS[@]} > 0)); then stop_pids "${PIDS[0]}"; fi
}

# wait_until SECONDS COMMAND... (scripts/lib/wait.sh)
# shellcheck source=scripts/lib/wait.sh
source "$(dirname "${BASH_SOURCE[0]}")/wait.sh"

# zk4 WORD: ZooKeeper's four-letter command WORD (ruok, dump) on ZK_PORT.
zk4() {
	# shellcheck disable=SC2016 # $1 expands in the inner shell
	timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/'"$ZK_PORT"' && printf %s "$1" >&3 && cat <&3' _ "$1" 2>/dev/null || true
}

# start_zookeeper: a standalone ZooKeeper on 127.0.0.1:$ZK_PORT with its data under $WORK; returns
# once it answers ruok.
start_zookeeper() {
	mkdir -p "$WORK/zookeeper"
	cat >"$WORK/zoo.cfg" <<-EOF_ZOO
		tickTime=1000
		dataDir=$WORK/zookeeper
		clientPort=$ZK_PORT
		clientPortAddress=127.0.0.1
		maxClientCnxns=0
		admin.enableServer=false
		4lw.commands.whitelist=ruok,dump
	EOF_ZOO
	log "starting ZooKeeper on $ZK"
	java -Xmx256m -XX:+UseSerialGC -Dzookeeper.admin.enableServer=false \
		-cp "$ZK_JAR" org.apache.zookeeper.server.quorum.QuorumPeerMain "$WORK/zoo.cfg" \
		>"$WORK/zookeeper.log" 2>&1 </dev/null &
	PIDS+=($!)
	zk_ok() { [[ "$(zk4 ruok)" == imok ]]; }
	wait_until 60 zk_ok || {
		tail -n 20 "$WORK/zookeeper.log" >&2
		die "ZooKeeper did not answer ruok within 60 s"
	}
}

# start_broker ID PORT [--override k=v]...: broker ID from scripts/server-ID.properties on
# 127.0.0.1:PORT with its log dir under $WORK and its output in $WORK/broker-ID.log.
start_broker() {
	local id=$1 port=$2
	shift 2
	"$BIN" broker --config "scripts/server-$id.properties" \
		--override "listeners=PLAINTEXT://127.0.0.1:$port" \
		--override "advertised.listeners=PLAINTEXT://127.0.0.1:$port" \
		--override "log.dirs=$WORK/broker-$id" \
		--override "zookeeper.connect=$ZK" \
		"$@" >"$WORK/broker-$id.log" 2>&1 </dev/null &
	PIDS+=($!)
}

# all_registered: every broker of IDS has its /brokers/ids znode; dies when a broker has exited.
all_registered() {
	local dump id pid
	dump=$(zk4 dump)
	for pid in "${PIDS[@]}"; do
		kill -0 "$pid" 2>/dev/null || {
			tail -n 20 "$WORK"/broker-*.log >&2
			die "a broker exited during start-up"
		}
	done
	for id in "${IDS[@]}"; do
		grep -q "/brokers/ids/$id\$" <<<"$dump" || return 1
	done
}
