#!/usr/bin/env bash
# Side by side with kfake (issue 13; docs/performance.md, "Side by side with kfake"): in one run,
# with one client (franz-go, 1 KiB records, no compression, 3 partitions), measures isrbroker
# (three brokers on a real ZooKeeper, started here on free loopback ports with data dirs of
# their own) and franz-go's kfake cluster (tests/kfakecmp, a nested module so that kfake stays
# out of go.mod) twice: as it comes ("kfake", segment files in memory) and with its segment
# files on disk ("kfake-disk", kfake.DataDir, through the page cache as isrbroker's), in
# rotating order round by round, and prints the table with the medians and the ratios
# isrbroker ÷ each kfake.
# Every target runs as users run a cluster (issue 32): in processes of its own, started once
# here for the whole run (kfake by `kfakecmp serve`, three brokers in one process), and the load
# generator (`kfakecmp run`, one process per round and target) reaches each over loopback alike.
# Each round creates its own topics and deletes them at its end, waiting until they are gone,
# so no round shares a cluster with the previous round's partitions. The phases:
#   produce RF=1 acks=1 | consume from the start | produce RF=3 acks=all min.insync.replicas=2 |
#   ack latency p50/p99 at a steady 20 MiB/s, RF=3 acks=all (producer linger 0: the broker's
#   latency, not franz-go's default 10 ms wait before sending)
#
#   scripts/kfake-compare.sh                      quick run: 2 rounds of 200,000 records per phase
#   scripts/kfake-compare.sh --records 1000000 --rounds 4      the 1 GB run of issue 13
#   options: --records N, --rounds N, --latency-seconds S (default 5), --latency-rate MIB (20),
#            --latency-linger DURATION (the latency phase's producer linger, default 0ms),
#            --latency-timeline DURATION (log the latency phase's p50/p99/max per window of that length, with each window's start in UTC),
#            --latency-settle MIB (after the throughput phases, wait until the kernel's dirty + writeback pages are at most MIB,
#            90 s at most, so that the latency phase measures the steady state and not their writeback; default 256, 0: no wait),
#            --no-kfake-disk (skip the kfake-disk target), --no-kfake (isrbroker only: no kfake targets),
#            --phases LIST (of rf1,consume,rf3,latency; default all four; consume needs rf1),
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
LAT_LINGER=0ms
LAT_TIMELINE=0s
LAT_SETTLE=256
KFAKE_DISK=1
KFAKE=1
PHASES=rf1,consume,rf3,latency
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
	--latency-linger)
		need "$@"
		[[ "$2" =~ ^(0|[0-9]+(\.[0-9]+)?(ns|us|ms|s))$ ]] || die "--latency-linger must be a duration such as 0, 5ms or 1s, got '$2'"
		LAT_LINGER=$2
		shift 2
		;;
	--latency-timeline)
		need "$@"
		[[ "$2" =~ ^[0-9]+(\.[0-9]+)?(ms|s)$ ]] || die "--latency-timeline must be a duration such as 500ms or 5s, got '$2'"
		LAT_TIMELINE=$2
		shift 2
		;;
	--latency-settle)
		need "$@"
		[[ "$2" =~ ^[0-9]+$ ]] || die "--latency-settle must be a number of MiB (0: no wait), got '$2'"
		LAT_SETTLE=$2
		shift 2
		;;
	--no-kfake-disk) KFAKE_DISK=0; shift ;;
	--no-kfake) KFAKE=0; KFAKE_DISK=0; shift ;;
	--phases)
		need "$@"
		[[ "$2" =~ ^(rf1|consume|rf3|latency)(,(rf1|consume|rf3|latency))*$ ]] || die "--phases must list rf1, consume, rf3 or latency, comma-separated, got '$2'"
		[[ ",$2," != *,consume,* || ",$2," == *,rf1,* ]] || die "--phases: consume reads what rf1 produced, so it needs rf1"
		PHASES=$2
		shift 2
		;;
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
# shellcheck source=scripts/lib/localcluster.sh
source "$ROOT/scripts/lib/localcluster.sh"

KFAKE_PIDS=()
# Teardown: the kfake servers, the brokers, ZooKeeper, then the temporary directory.
cleanup() {
	local status=$?
	trap - EXIT INT TERM
	if ((${#KFAKE_PIDS[@]} > 0)); then stop_pids "${KFAKE_PIDS[@]}"; fi
	stop_cluster
	if ((KEEP)); then log "kept $WORK"; else rm -rf "$WORK"; fi
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

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

start_zookeeper

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
	start_broker "$id" "$port" --override "metrics.listen=127.0.0.1:$mport" --override "isrbroker.pprof.enable=$pprof"
done

wait_until 90 all_registered || die "the brokers did not all register within 90 s (--keep keeps their logs)"
log "cluster up: bootstrap $BOOTSTRAP, ZooKeeper $ZK, state in $WORK"

RESULTS=$WORK/results.jsonl
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
STARTED=$(date -u '+%Y-%m-%d %H:%M UTC')
common=(--phases "$PHASES" --records "$RECORDS" --latency-seconds "$LAT_SECONDS" --latency-rate "$LAT_RATE" --latency-linger "$LAT_LINGER" --latency-timeline "$LAT_TIMELINE" --latency-settle "$LAT_SETTLE")
run_isrbroker() {
	local extra=()
	if [[ -n "$PROFILE" && $1 == 1 ]]; then
		extra=(--pprof "$PPROF" --profile-dir "$PROFILE" --profile-seconds "$PROFILE_SECONDS")
	fi
	"$CMP" run --target isrbroker --bootstrap "$BOOTSTRAP" --round "$1" "${common[@]}" "${extra[@]}" >>"$RESULTS"
}
# start_kfake TARGET: `kfakecmp serve` on three free loopback ports, in a process of its own
# (stopped by cleanup); sets KFAKE_ADDRS to its bootstrap addresses once it listens. Not run in
# $(...): the server's pid must reach KFAKE_PIDS of this shell.
start_kfake() {
	local target=$1 kp ready=$WORK/$1.ready extra=()
	read -r -a kp <<<"$("$CMP" freeports 3)"
	# kfake-disk's segment files go under $WORK, on the file system of isrbroker's data dirs.
	[[ $target == kfake-disk ]] && { mkdir -p "$WORK/kfake-disk-data"; extra=(--data-dir "$WORK/kfake-disk-data"); }
	"$CMP" serve --target "$target" --ports "${kp[0]},${kp[1]},${kp[2]}" "${extra[@]}" >"$ready" 2>"$WORK/$target.log" &
	KFAKE_PIDS+=($!)
	wait_until 30 grep -q '^ready ' "$ready" || { cat "$WORK/$target.log" >&2; die "$target did not start within 30 s"; }
	KFAKE_ADDRS=$(sed -n 's/^ready //p' "$ready")
}
TARGETS=(run_isrbroker)
if ((KFAKE)); then
	start_kfake kfake
	KFAKE_BOOTSTRAP=$KFAKE_ADDRS
	log "kfake up in its own process: bootstrap $KFAKE_BOOTSTRAP"
	run_kfake() { "$CMP" run --target kfake --bootstrap "$KFAKE_BOOTSTRAP" --round "$1" "${common[@]}" >>"$RESULTS"; }
	TARGETS+=(run_kfake)
fi
if ((KFAKE_DISK)); then
	start_kfake kfake-disk
	KFAKE_DISK_BOOTSTRAP=$KFAKE_ADDRS
	log "kfake-disk up in its own process: bootstrap $KFAKE_DISK_BOOTSTRAP"
	run_kfake_disk() { "$CMP" run --target kfake-disk --bootstrap "$KFAKE_DISK_BOOTSTRAP" --round "$1" "${common[@]}" >>"$RESULTS"; }
	TARGETS+=(run_kfake_disk)
fi
# Rotate which target goes first, so that none always runs on a fresher page cache.
for ((r = 1; r <= ROUNDS; r++)); do
	n=${#TARGETS[@]}
	for ((i = 0; i < n; i++)); do
		"${TARGETS[$(((r - 1 + i) % n))]}" "$r"
	done
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
