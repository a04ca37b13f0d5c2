#!/usr/bin/env bash
# Side by side with kfake (issue 13; docs/performance.md, "Side by side with kfake"): in one run,
# with one client (franz-go, 1 KiB records, no compression, 3 partitions), measures isrbroker
# (three brokers on a real ZooKeeper, started here on free loopback ports with data dirs of
# their own) and franz-go's in-memory kfake cluster (tests/kfakecmp, a nested module so that
# kfake stays out of go.mod), in alternating rounds, and prints the table with the medians and
# the ratios isrbroker ÷ kfake:
#   produce RF=1 acks=1 | consume from the start | produce RF=3 acks=all min.insync.replicas=2 |
#   ack latency p50/p99 at a steady 20 MiB/s, RF=3 acks=all
#
#   scripts/kfake-compare.sh                      quick run: 2 rounds of 200,000 records per phase
#   scripts/kfake-compare.sh --records 1000000 --rounds 4      the 1 GB run of issue 13
#   options: --records N, --rounds N, --latency-seconds S (default 5), --latency-rate MIB (20),
#            --profile DIR (CPU, mutex, block and allocation profiles of the three brokers during the first
#            isrbroker round's RF=3 acks=all phase, isrbroker.pprof.enable), --profile-seconds S,
#            --keep (keep the temporary directory with the broker logs), --bin FILE (use this
#            isrbroker binary instead of building one)
#
# Everything it starts is stopped on exit, also on failure or Ctrl-C; a cluster of
# scripts/cluster.sh or scripts/bench.sh is left alone (other ports, other directories).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

RECORDS=200000
ROUNDS=2
LAT_SECONDS=5
LAT_RATE=20
PROFILE=""
PROFILE_SECONDS=10
KEEP=0
BIN=""
ZK_JAR=/usr/share/java/zookeeper.jar
IDS=(1 2 3)

log() { echo "kfake-compare: $*" >&2; }
die() {
	echo "kfake-compare: $*" >&2
	exit 1
}
usage() {
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//' >&2
	exit 2
}
need() { [[ $# -ge 2 && -n "$2" ]] || die "$1 needs a value"; }
posint() { [[ "$2" =~ ^[1-9][0-9]*$ ]] || die "$1 must be a positive integer, got '$2'"; }

while (($# > 0)); do
	case $1 in
	--records) need "$@"; posint "$1" "$2"; RECORDS=$2; shift 2 ;;
	--rounds) need "$@"; posint "$1" "$2"; ROUNDS=$2; shift 2 ;;
	--latency-seconds) need "$@"; posint "$1" "$2"; LAT_SECONDS=$2; shift 2 ;;
	--latency-rate) need "$@"; posint "$1" "$2"; LAT_RATE=$2; shift 2 ;;
	--profile) need "$@"; PROFILE=$2; shift 2 ;;
	--profile-seconds) need "$@"; posint "$1" "$2"; PROFILE_SECONDS=$2; shift 2 ;;
	--keep) KEEP=1; shift ;;
	--bin) need "$@"; BIN=$2; shift 2 ;;
	-h | --help) usage ;;
	*) die "unknown option '$1' (--help lists them)" ;;
	esac
done

command -v java >/dev/null || die "java is not installed (scripts/install-deps.sh installs it)"
[[ -f "$ZK_JAR" ]] || die "ZooKeeper jar $ZK_JAR is missing (scripts/install-deps.sh installs it)"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/isrbroker-kfakecmp.XXXXXX")
PIDS=()

# Teardown: SIGTERM the brokers and wait up to 30 s each, SIGKILL what is left, then ZooKeeper
# (PIDS[0]); then the temporary directory.
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
cleanup() {
	local status=$?
	trap - EXIT INT TERM
	if ((${#PIDS[@]} > 1)); then stop_pids "${PIDS[@]:1}"; fi
	if ((${#PIDS[@]} > 0)); then stop_pids "${PIDS[0]}"; fi
	if ((KEEP)); then log "kept $WORK"; else rm -rf "$WORK"; fi
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_until SECONDS COMMAND...: poll COMMAND every 0.2 s until it succeeds or SECONDS pass.
wait_until() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		((SECONDS < deadline)) || return 1
		sleep 0.2
	done
}

if [[ -z "$BIN" ]]; then
	BIN=$WORK/isrbroker
	log "building isrbroker"
	go build -o "$BIN" .
fi
CMP=$WORK/kfakecmp
log "building tests/kfakecmp (fetches kfake through the Go module proxy on first use)"
(cd tests/kfakecmp && go build -o "$CMP" .)

# Free loopback ports: ZooKeeper, then per broker a Kafka listener and a metrics listener.
read -r -a PORTS <<<"$("$CMP" freeports 7)"
ZK_PORT=${PORTS[0]}
ZK=127.0.0.1:$ZK_PORT

zk4() {
	# shellcheck disable=SC2016 # $1 expands in the inner shell
	timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/'"$ZK_PORT"' && printf %s "$1" >&3 && cat <&3' _ "$1" 2>/dev/null || true
}

mkdir -p "$WORK/zookeeper"
cat >"$WORK/zoo.cfg" <<-EOF2
	tickTime=1000
	dataDir=$WORK/zookeeper
	clientPort=$ZK_PORT
	clientPortAddress=127.0.0.1
	maxClientCnxns=0
	admin.enableServer=false
	4lw.commands.whitelist=ruok,dump
EOF2
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

BOOTSTRAP=""
PPROF=""
for id in "${IDS[@]}"; do
	port=${PORTS[$id]}
	mport=${PORTS[$((id + 3))]}
	BOOTSTRAP+="${BOOTSTRAP:+,}127.0.0.1:$port"
	PPROF+="${PPROF:+,}127.0.0.1:$mport"
	log "starting broker $id on 127.0.0.1:$port (metrics 127.0.0.1:$mport)"
	pprof=false
	[[ -n "$PROFILE" ]] && pprof=true
	"$BIN" broker --config "scripts/server-$id.properties" \
		--override "listeners=PLAINTEXT://127.0.0.1:$port" \
		--override "advertised.listeners=PLAINTEXT://127.0.0.1:$port" \
		--override "log.dirs=$WORK/broker-$id" \
		--override "zookeeper.connect=$ZK" \
		--override "metrics.listen=127.0.0.1:$mport" \
		--override "isrbroker.pprof.enable=$pprof" \
		>"$WORK/broker-$id.log" 2>&1 </dev/null &
	PIDS+=($!)
done

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
wait_until 90 all_registered || die "the brokers did not all register within 90 s (--keep keeps their logs)"
log "cluster up: bootstrap $BOOTSTRAP, ZooKeeper $ZK, state in $WORK"

RESULTS=$WORK/results.jsonl
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
STARTED=$(date -u '+%Y-%m-%d %H:%M UTC')
common=(--records "$RECORDS" --latency-seconds "$LAT_SECONDS" --latency-rate "$LAT_RATE")
run_isrbroker() {
	local extra=()
	if [[ -n "$PROFILE" && $1 == 1 ]]; then
		extra=(--pprof "$PPROF" --profile-dir "$PROFILE" --profile-seconds "$PROFILE_SECONDS")
	fi
	"$CMP" run --target isrbroker --bootstrap "$BOOTSTRAP" --round "$1" "${common[@]}" "${extra[@]}" >>"$RESULTS"
}
run_kfake() { "$CMP" run --target kfake --round "$1" "${common[@]}" >>"$RESULTS"; }
# Alternate which target goes first, so that neither always runs on a fresher page cache.
for ((r = 1; r <= ROUNDS; r++)); do
	if ((r % 2 == 1)); then
		run_isrbroker "$r"
		run_kfake "$r"
	else
		run_kfake "$r"
		run_isrbroker "$r"
	fi
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]]; then COMMIT="$COMMIT (with uncommitted changes)"; fi
echo
echo "Run on $STARTED at commit $COMMIT by \`scripts/kfake-compare.sh --records $RECORDS --rounds $ROUNDS\`:"
echo "$(nproc) CPUs, load average $LOAD_BEFORE before, $LOAD_AFTER after. MiB = 2^20 bytes."
"$CMP" table "$RESULTS"
if [[ -n "$PROFILE" ]]; then
	echo
	echo "Profiles of the brokers during isrbroker's round-1 RF=3 acks=all phase: $PROFILE"
	echo "(go tool pprof -top $PROFILE/broker-1.cpu.pb.gz)"
fi
