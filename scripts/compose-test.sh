#!/usr/bin/env bash
# End-to-end test of docker-compose.yml on a machine without a container registry:
#   1. builds every image locally: the broker (FROM scratch, static binary compiled here) and
#      ZooKeeper 3.8 from Debian packages (debootstrap + docker import, cached between runs);
#   2. brings the stack up under its own project name and free host ports, waits until
#      ZooKeeper and brokers 1-3 are healthy and topic "demo" (RF=3, min.insync.replicas=2)
#      was created by the one-shot service;
#   3. produces records with kcat (acks=all) through the published ports, finds the leader
#      of demo-0 in ZooKeeper, `docker stop`s that broker's container, waits for a new leader,
#      produces more, and consumes every partition back: no acknowledged record may be missing;
#   4. `docker start`s the stopped broker and waits until every demo partition's ISR holds
#      all three replicas again, consumes once more, then tears everything down (down -v).
#
#   scripts/compose-test.sh
#
# With no usable Docker engine it prints "compose-test: no Docker engine: skipped" and exits 0.
# Uses `docker compose` when that plugin exists, else `docker-compose`. ZOOKEEPER_IMAGE
# (e.g. zookeeper:3.8 where a registry is reachable) skips building the local ZooKeeper image.
# Needs Go and kcat on the host (scripts/install-deps.sh installs kcat when missing).
# Exit status: 0 on success or skip, 1 on any failed step (the containers' logs are printed).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

log() { echo "compose-test: [$((SECONDS - t0))s] $*"; }
t0=$SECONDS

if ! command -v docker >/dev/null 2>&1 || ! docker info >/dev/null 2>&1; then
	echo "compose-test: no Docker engine: skipped"
	exit 0
fi
if docker compose version >/dev/null 2>&1; then
	compose_cmd=(docker compose)
elif command -v docker-compose >/dev/null 2>&1 && docker-compose version >/dev/null 2>&1; then
	compose_cmd=(docker-compose)
else
	echo "compose-test: Docker engine present but neither \`docker compose\` nor docker-compose is installed: skipped"
	exit 0
fi
command -v kcat >/dev/null 2>&1 || bash scripts/install-deps.sh
command -v go >/dev/null 2>&1 || { echo "compose-test: go not found on PATH" >&2; exit 1; }

work=$(mktemp -d -t isrbroker-compose-test.XXXXXX)
project=isrbroker-compose-test-$$
compose() { "${compose_cmd[@]}" -f "$ROOT/docker-compose.yml" -p "$project" "$@"; }
stack_up=0

fail() {
	echo "compose-test: FAIL: $*" >&2
	if ((stack_up)); then
		compose ps >&2 || true
		local s
		for s in zookeeper broker1 broker2 broker3 create-demo-topic; do
			echo "---- last log lines of $s" >&2
			compose logs --no-color --tail=25 "$s" >&2 || true
		done
	fi
	exit 1
}
cleanup() {
	if ((stack_up)); then
		log "tearing down (down -v)"
		compose down -v --remove-orphans >"$work/down.log" 2>&1 || cat "$work/down.log" >&2
	fi
	rm -rf "$work"
}
trap cleanup EXIT

# wait_until SECONDS COMMAND...: poll COMMAND every 0.5 s until it succeeds; 1 after SECONDS.
wait_until() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		((SECONDS < deadline)) || return 1
		sleep 0.5
	done
}

# Four free consecutive host ports (ZooKeeper + 3 brokers), below the ephemeral range.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
base=0
for _ in $(seq 1 50); do
	b=$((20000 + RANDOM % 10000))
	if port_free "$b" && port_free $((b + 1)) && port_free $((b + 2)) && port_free $((b + 3)); then
		base=$b
		break
	fi
done
((base > 0)) || fail "no four free consecutive ports found"
export ZOOKEEPER_PORT=$base ISRBROKER_BROKER1_PORT=$((base + 1)) ISRBROKER_BROKER2_PORT=$((base + 2)) ISRBROKER_BROKER3_PORT=$((base + 3))
export ISRBROKER_ADVERTISED_HOST=127.0.0.1
export ISRBROKER_IMAGE=${ISRBROKER_IMAGE:-isrbroker:local}
ZK=127.0.0.1:$ZOOKEEPER_PORT
BOOTSTRAP=127.0.0.1:$ISRBROKER_BROKER1_PORT,127.0.0.1:$ISRBROKER_BROKER2_PORT,127.0.0.1:$ISRBROKER_BROKER3_PORT
log "using ${compose_cmd[*]}; project $project; ZooKeeper on $ZK, brokers on $BOOTSTRAP"

# 1. Images.
build_args=()
if [[ -n "${ZOOKEEPER_IMAGE:-}" ]]; then
	log "ZOOKEEPER_IMAGE=$ZOOKEEPER_IMAGE: building the broker image only"
else
	export ZOOKEEPER_IMAGE=isrbroker-zookeeper:3.8-local
	build_args=(--zookeeper)
fi
if ! bash scripts/docker/build-images.sh "${build_args[@]}" >"$work/build.log" 2>&1; then
	cat "$work/build.log" >&2
	fail "building the images"
fi
# (the legacy builder's deprecation notice is noise here)
grep -v -i -E 'deprecated|buildx|^\s*$' "$work/build.log" || true
# The host-side admin tool (topics --describe against the published ZooKeeper port).
CGO_ENABLED=0 go build -o "$work/isrbroker" . || fail "go build"
topics() { "$work/isrbroker" topics --zookeeper "$ZK" "$@"; }
log "images ready: $ISRBROKER_IMAGE, $ZOOKEEPER_IMAGE"

# 2. Up and healthy.
stack_up=1
compose up -d >"$work/up.log" 2>&1 || { cat "$work/up.log" >&2; fail "compose up"; }
health() { docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}}' "$(compose ps -q "$1")" 2>/dev/null; }
all_healthy() {
	local s
	for s in zookeeper broker1 broker2 broker3; do [[ "$(health "$s")" == healthy ]] || return 1; done
}
wait_until 180 all_healthy || fail "ZooKeeper and brokers 1-3 not all healthy within 180 s"
log "ZooKeeper and brokers 1-3 are healthy"
topic_created() {
	local cid
	cid=$(compose ps -q create-demo-topic) && [[ -n "$cid" ]] || return 1
	[[ "$(docker inspect -f '{{.State.Status}} {{.State.ExitCode}}' "$cid")" == "exited 0" ]]
}
wait_until 120 topic_created || fail "the create-demo-topic service did not exit 0 within 120 s"
desc=$(topics --describe --topic demo) || fail "topics --describe"
grep -q "PartitionCount: 3.*ReplicationFactor: 3.*min.insync.replicas=2" <<<"$desc" || fail "topic demo is not 3 partitions, RF 3, min.insync.replicas=2: $desc"
log "topic demo created by the one-shot service:"
echo "$desc"
# A client inside the compose network reaches the brokers through listener INTERNAL.
inside=$(compose run --rm -T --no-deps create-demo-topic topics --bootstrap-server=broker1:19092,broker2:19092,broker3:19092 --list 2>&1) ||
	fail "topics --bootstrap-server inside the compose network: $inside"
grep -qx demo <<<"$inside" || fail "a client inside the compose network does not see topic demo: $inside"
log "a client inside the compose network (INTERNAL listener, broker1:19092) lists topic demo"

# Partition fields from `topics --describe`: "Partition: 0	Leader: 1	Replicas: 1,2,3	Isr: 1,2,3".
leader_of() { topics --describe --topic demo | awk -v p="$1" '$3 == "Partition:" && $4 == p { print $6 }'; }
run_id=$$-$RANDOM
produce() { # produce PHASE COUNT: COUNT records acknowledged by the ISR (acks=all), or fail.
	local phase=$1 n=$2
	seq 1 "$n" | sed "s/^/k$phase-&:$run_id-$phase-/" >"$work/produced-$phase"
	timeout 120 kcat -P -b "$BOOTSTRAP" -t demo -K: -X acks=all -X message.timeout.ms=60000 \
		<"$work/produced-$phase" 2>"$work/kcat-p-$phase.err" ||
		{ cat "$work/kcat-p-$phase.err" >&2; fail "kcat -P (phase $phase) did not get every record acknowledged"; }
	cut -d: -f2 "$work/produced-$phase" >>"$work/acked"
	log "phase $phase: $n records produced and acknowledged (acks=all)"
}
consume_check() { # consume_check WHAT: every acknowledged record is consumable.
	timeout 120 kcat -C -b "$BOOTSTRAP" -t demo -o beginning -e -q -f '%s\n' >"$work/consumed" 2>"$work/kcat-c.err" ||
		{ cat "$work/kcat-c.err" >&2; fail "kcat -C failed ($1)"; }
	local missing
	missing=$(comm -23 <(sort -u "$work/acked") <(grep "^$run_id-" "$work/consumed" | sort -u) | wc -l)
	((missing == 0)) || fail "$missing of $(wc -l <"$work/acked") acknowledged records are missing ($1)"
	log "all $(wc -l <"$work/acked") acknowledged records consumed back ($1)"
}

# 3. Produce, stop the leader of demo-0, see a new leader, nothing acknowledged lost.
produce a 2000
consume_check "all brokers up"
old=$(leader_of 0)
[[ "$old" =~ ^[1-3]$ ]] || fail "no leader for demo-0 (got '$old')"
cid=$(compose ps -q "broker$old")
log "demo-0 is led by broker $old: docker stop of its container ${cid:0:12}"
docker stop -t 60 "$cid" >/dev/null || fail "docker stop broker$old"
new_leader() { local l; l=$(leader_of 0); [[ "$l" =~ ^[1-3]$ && "$l" != "$old" ]]; }
wait_until 60 new_leader || fail "demo-0 has no new leader 60 s after stopping broker $old"
log "demo-0 has a new leader: broker $(leader_of 0)"
topics --describe --topic demo
produce b 1000
consume_check "broker $old stopped"

# 4. Restart it; the ISR of every partition becomes whole again.
docker start "$cid" >/dev/null || fail "docker start broker$old"
log "broker $old started again"
isr_whole() {
	topics --describe --topic demo | awk '$3 == "Partition:" { n++; if (split($10, r, ",") != 3) bad = 1 } END { exit !(n == 3 && !bad) }'
}
wait_until 120 isr_whole || { topics --describe --topic demo >&2 || true; fail "the ISR of topic demo is not whole 120 s after restarting broker $old"; }
old_healthy() { [[ "$(health "broker$old")" == healthy ]]; }
wait_until 60 old_healthy || fail "broker $old not healthy again within 60 s"
log "every demo partition has ISR 3 again, broker $old is healthy:"
topics --describe --topic demo
consume_check "after broker $old rejoined"
log "PASS in $((SECONDS - t0)) s"
