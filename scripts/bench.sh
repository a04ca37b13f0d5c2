#!/usr/bin/env bash
# The perf matrix (issue 4 item 5): starts its own local cluster (one ZooKeeper, three brokers),
# runs `isrbroker perf produce` and `isrbroker perf consume` over a fixed matrix, prints the
# table and writes it into docs/performance.md between the markers
#   <!-- bench.sh:begin --> and <!-- bench.sh:end -->
# (added under "## Matrix (scripts/bench.sh)" at the end of the file when absent). Run it
# from anywhere; it tears everything down on exit, also on failure or Ctrl-C.
#
# Matrix (6 partitions per topic, records with no key and random upper-case values, Kafka 2.4
# producer defaults otherwise: linger.ms=0, compression none, idempotence off):
#   100 B and 1 KB records × { RF=1 acks=1, RF=3 acks=1, RF=3 acks=all with min.insync.replicas=2 },
#   then, per size, one consumer reading the RF=3 acks=all topic from the start.
#
# It does not touch a cluster started by scripts/cluster.sh: the brokers run from
# scripts/server-{1,2,3}.properties with --override for the listener, log dir, ZooKeeper and
# metrics settings, on their own ports, and all state (binary, ZooKeeper data, broker logs and
# data) lives in a fresh temporary directory that is deleted at the end. The default ports lie
# below Linux's ephemeral range (32768-60999), where test harnesses pick free ports.
#
# Environment:
#   BENCH_ZK_PORT        ZooKeeper client port (default 22181)
#   BENCH_PORT_BASE      broker N listens on BENCH_PORT_BASE+N-1 (default 29192)
#   BENCH_RECORDS_100B   records per 100 B run (default 20000000)
#   BENCH_RECORDS_1KB    records per 1 KB run (default 3000000)
#   BENCH_DOC            file to update (default docs/performance.md; "-" = print only)
#   BENCH_KEEP=1         keep the temporary directory (logs) after the run
#   BENCH_BIN            use this isrbroker binary instead of building one
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

ZK_JAR=/usr/share/java/zookeeper.jar
ZK_PORT=${BENCH_ZK_PORT:-22181}
PORT_BASE=${BENCH_PORT_BASE:-29192}
RECORDS_100B=${BENCH_RECORDS_100B:-20000000}
RECORDS_1KB=${BENCH_RECORDS_1KB:-3000000}
DOC=${BENCH_DOC:-docs/performance.md}
IDS=(1 2 3)
PARTITIONS=6

log() { echo "bench: $*" >&2; }
die() {
	echo "bench: $*" >&2
	exit 1
}

command -v java >/dev/null || die "java is not installed (scripts/install-deps.sh installs it)"
[[ -f "$ZK_JAR" ]] || die "ZooKeeper jar $ZK_JAR is missing (scripts/install-deps.sh installs it)"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/isrbroker-bench.XXXXXX")
# shellcheck source=scripts/lib/localcluster.sh
source "$ROOT/scripts/lib/localcluster.sh"

# Teardown: the brokers, ZooKeeper, then the temporary directory.
cleanup() {
	local status=$?
	trap - EXIT INT TERM
	stop_cluster
	if [[ "${BENCH_KEEP:-}" == 1 ]]; then
		log "kept $WORK"
	else
		rm -rf "$WORK"
	fi
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_open() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }

for p in "$ZK_PORT" $((PORT_BASE)) $((PORT_BASE + 1)) $((PORT_BASE + 2)); do
	if port_open "$p"; then
		die "port $p is in use; set BENCH_ZK_PORT / BENCH_PORT_BASE to free ports"
	fi
done

if [[ -n "${BENCH_BIN:-}" ]]; then
	BIN=$BENCH_BIN
else
	BIN=$WORK/isrbroker
	log "building $BIN"
	go build -o "$BIN" .
fi

BOOTSTRAP=127.0.0.1:$PORT_BASE,127.0.0.1:$((PORT_BASE + 1)),127.0.0.1:$((PORT_BASE + 2))
ZK=127.0.0.1:$ZK_PORT

start_broker_at() {
	local id=$1 port=$((PORT_BASE + $1 - 1))
	log "starting broker $id on 127.0.0.1:$port"
	start_broker "$id" "$port" --override "metrics.listen="
}

# create TOPIC RF [CONFIG...]
create() {
	local topic=$1 rf=$2 args=()
	shift 2
	for c in "$@"; do args+=(--config "$c"); done
	"$BIN" topics --zookeeper "$ZK" --create --topic "$topic" --partitions "$PARTITIONS" \
		--replication-factor "$rf" "${args[@]}" >&2
}

# The perf tool's output goes to the terminal (stderr: progress lines) and to one file per run,
# whose last line is parsed.
RUN=0
PRODUCE_RE='^([0-9]+) records sent, ([0-9.]+) records/sec \(([0-9.]+) MB/sec\), ([0-9.]+) ms avg latency, ([0-9.]+) ms max latency, ([0-9]+) ms 50th, ([0-9]+) ms 95th, ([0-9]+) ms 99th, ([0-9]+) ms 99\.9th\.$'

ROWS=()

# produce LABEL SIZE TOPIC ACKS RECORDS
produce() {
	local label=$1 size=$2 topic=$3 acks=$4 n=$5 out final
	RUN=$((RUN + 1))
	out=$WORK/run-$RUN.out
	log "produce: $label, $n records of $size B to $topic"
	"$BIN" perf produce --topic "$topic" --num-records "$n" --record-size "$size" --throughput -1 \
		--producer-props "bootstrap.servers=$BOOTSTRAP" "acks=$acks" | tee "$out" >&2
	final=$(tail -n 1 "$out")
	[[ "$final" =~ $PRODUCE_RE ]] || die "cannot parse the producer's final line: $final"
	[[ "${BASH_REMATCH[1]}" == "$n" ]] || die "$label: ${BASH_REMATCH[1]} of $n records acknowledged"
	ROWS+=("| $label | $size B | $n | $(printf '%.0f' "${BASH_REMATCH[2]}") | ${BASH_REMATCH[3]} | ${BASH_REMATCH[4]} | ${BASH_REMATCH[6]} | ${BASH_REMATCH[8]} | ${BASH_REMATCH[9]} | ${BASH_REMATCH[5]} |")
}

# consume LABEL SIZE TOPIC RECORDS
consume() {
	local label=$1 size=$2 topic=$3 n=$4 out line f
	RUN=$((RUN + 1))
	out=$WORK/run-$RUN.out
	log "consume: $label, $n records of $size B from $topic"
	"$BIN" perf consume --bootstrap-server "$BOOTSTRAP" --topic "$topic" --messages "$n" --timeout 30000 | tee "$out" >&2
	line=$(tail -n 1 "$out")
	IFS=',' read -r -a f <<<"${line// /}"
	((${#f[@]} == 10)) || die "cannot parse the consumer's data line: $line"
	[[ "${f[4]}" == "$n" ]] || die "$label: consumed ${f[4]} of $n records"
	ROWS+=("| $label | $size B | $n | $(printf '%.0f' "${f[5]}") | $(printf '%.2f' "${f[3]}") | – | – | – | – | – |")
}

delete_topics() {
	local t
	for t in "$@"; do "$BIN" topics --zookeeper "$ZK" --delete --topic "$t" >/dev/null; done
}

start_zookeeper
for id in "${IDS[@]}"; do start_broker_at "$id"; done
wait_until 90 all_registered || die "the brokers did not all register within 90 s (logs in $WORK; BENCH_KEEP=1 keeps them)"
log "cluster up: bootstrap $BOOTSTRAP, ZooKeeper $ZK, state in $WORK"

STARTED=$(date -u '+%Y-%m-%d %H:%M UTC')
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
for size in 100 1024; do
	if ((size == 100)); then n=$RECORDS_100B; else n=$RECORDS_1KB; fi
	create "bench-$size-rf1" 1
	create "bench-$size-rf3-acks1" 3 min.insync.replicas=2
	create "bench-$size-rf3-acksall" 3 min.insync.replicas=2
	produce "produce RF=1 acks=1" "$size" "bench-$size-rf1" 1 "$n"
	produce "produce RF=3 acks=1" "$size" "bench-$size-rf3-acks1" 1 "$n"
	produce "produce RF=3 acks=all min.insync.replicas=2" "$size" "bench-$size-rf3-acksall" all "$n"
	consume "consume (RF=3 topic, 1 consumer)" "$size" "bench-$size-rf3-acksall" "$n"
	# Free the disk before the next size (the brokers delete the logs asynchronously).
	delete_topics "bench-$size-rf1" "bench-$size-rf3-acks1" "bench-$size-rf3-acksall"
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]]; then COMMIT="$COMMIT (with uncommitted changes)"; fi
CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)
MEM_GB=$(awk '/^MemTotal:/ { printf "%.0f", $2 / 1024 / 1024 }' /proc/meminfo)

TABLE=$WORK/table.md
{
	echo "Run on $STARTED at commit $COMMIT by \`scripts/bench.sh\`: $(nproc) CPUs ($CPU), ${MEM_GB} GB RAM,"
	echo "$(uname -sr); load average $LOAD_BEFORE before, $LOAD_AFTER after. One ZooKeeper, three"
	echo "brokers and the load generator (\`isrbroker perf\`, franz-go) share the machine; 6 partitions per"
	echo "topic; \`--throughput -1\` (unthrottled), so latency is mostly queueing in the client; Kafka 2.4"
	echo "producer defaults otherwise (linger.ms=0, no compression, no idempotence). MB is 2^20 bytes."
	echo "Latencies are \`perf produce\`'s (send to acknowledgement, ms; percentiles whole ms)."
	echo
	echo "| Run | Record | Records | records/s | MB/s | avg ms | p50 | p99 | p99.9 | max ms |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	printf '%s\n' "${ROWS[@]}"
} >"$TABLE"

echo
cat "$TABLE"

if [[ "$DOC" != "-" ]]; then
	[[ -f "$DOC" ]] || die "$DOC does not exist"
	begins=$(grep -c '^<!-- bench.sh:begin -->$' "$DOC" || true)
	ends=$(grep -c '^<!-- bench.sh:end -->$' "$DOC" || true)
	if ((begins == 0 && ends == 0)); then
		printf '\n## Matrix (scripts/bench.sh)\n\n<!-- bench.sh:begin -->\n<!-- bench.sh:end -->\n' >>"$DOC"
	elif ((begins != 1 || ends != 1)); then
		die "$DOC must hold exactly one <!-- bench.sh:begin --> and one <!-- bench.sh:end --> line"
	fi
	awk -v table="$TABLE" '
		/^<!-- bench.sh:begin -->$/ { print; while ((getline line < table) > 0) print line; skip = 1; next }
		/^<!-- bench.sh:end -->$/ { skip = 0 }
		!skip { print }
	' "$DOC" >"$WORK/doc.md"
	cat "$WORK/doc.md" >"$DOC"
	log "updated $DOC"
fi
