#!/usr/bin/env bash
# End-to-end test of docker-compose.yml (and docker-compose.ensemble.yml) on a machine without
# a container registry. Both modes first build every image locally: the broker (FROM scratch,
# static binary compiled here) and ZooKeeper 3.8 from Debian packages (debootstrap + docker
# import, cached between runs). Each mode brings its stack up under its own project name on
# free host ports and waits until ZooKeeper and brokers 1-3 are healthy and topic "demo"
# (RF=3, min.insync.replicas=2) was created by the one-shot service.
#
# single (docker-compose.yml):
#   1. a compose override file sets KAFKA_LOG_RETENTION_MS (and KAFKA_HEAP_OPTS, which the broker
#      skips) on every broker: `configs --describe --all` through the published port must
#      report log.retention.ms from the environment (STATIC_BROKER_CONFIG);
#   2. /metrics and /replication (with cluster.json listing all three brokers) answer on the
#      published metrics ports; `docker compose exec broker1 isrbroker topics --describe` works;
#   3. produces with kcat (acks=all), `docker stop`s the container of demo-0's leader, waits for
#      a new leader, produces more and consumes every partition: no acknowledged record missing;
#      `docker start`s it, waits until every ISR has three replicas, consumes once more.
# ensemble (docker-compose.yml + docker-compose.ensemble.yml, three ZooKeeper members):
#   produces batches with acks=all without pause while it stops the ZooKeeper member that leads
#   the quorum, keeps producing for a while, then checks every acknowledged record is consumed,
#   all brokers stayed healthy with no ZooKeeper session expired and every ISR whole; restarts
#   broker1 while the member is still down (its name then does not resolve); starts the member
#   again and waits until it serves again.
#
# secure (docker-compose.yml + docker-compose.secure.yml, keystores from
#   scripts/docker/secure-setup.sh in the test's temporary directory): SASL_SSL/SCRAM-SHA-512 on
#   both listeners and the ACL authorizer; kcat as alice is refused on topic demo, then
#   `isrbroker acls --add --producer --consumer` (through the published ZooKeeper port) lets her
#   produce (acks=all) and consume in group demo-group.
#
#   scripts/compose-test.sh [single|ensemble|secure|all]     (default all)
#
# With no usable Docker engine it prints "compose-test: no Docker engine: skipped" and exits 0.
# Uses `docker compose` when that plugin exists, else `docker-compose`. ZOOKEEPER_IMAGE
# (e.g. zookeeper:3.8 where a registry is reachable) skips building the local ZooKeeper image.
# Needs Go and kcat on the host (scripts/install-deps.sh installs kcat when missing).
# Exit status: 0 on success or skip, 1 on any failed step (the containers' logs are printed).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

log() { echo "compose-test: [$((SECONDS - t0))s] ${mode_name:-}${mode_name:+: }$*"; }
t0=$SECONDS

modes=()
case "${1:-all}" in
single | ensemble | secure) modes=("$1") ;;
all) modes=(single ensemble secure) ;;
*)
	echo "usage: scripts/compose-test.sh [single|ensemble|secure|all]" >&2
	exit 2
	;;
esac

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
command -v curl >/dev/null 2>&1 || { echo "compose-test: curl not found on PATH" >&2; exit 1; }

work=$(mktemp -d -t isrbroker-compose-test.XXXXXX)
project=""
files=()
services=()
compose() { "${compose_cmd[@]}" "${files[@]}" -p "$project" "$@"; }

fail() {
	echo "compose-test: FAIL: ${mode_name:-}${mode_name:+: }$*" >&2
	if [[ -n "$project" ]]; then
		compose ps >&2 || true
		local s
		for s in "${services[@]}" create-demo-topic; do
			echo "---- last log lines of $s" >&2
			compose logs --no-color --tail=25 "$s" >&2 || true
		done
	fi
	exit 1
}
down() {
	if [[ -n "$project" ]]; then
		log "tearing down (down -v)"
		compose down -v --remove-orphans >"$work/down.log" 2>&1 || cat "$work/down.log" >&2
		project=""
	fi
}
cleanup() {
	[[ -z "${producer_pid:-}" ]] || kill "$producer_pid" 2>/dev/null || true
	down
	rm -rf "$work"
}
trap cleanup EXIT

# wait_until SECONDS COMMAND... (scripts/lib/wait.sh), every 0.5 s: the commands are docker calls.
WAIT_INTERVAL=0.5
# shellcheck source=scripts/lib/wait.sh
source "$ROOT/scripts/lib/wait.sh"

# Seven free consecutive host ports (ZooKeeper, 3 brokers, 3 metrics), below the ephemeral range.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pick_ports() {
	local b i ok
	for _ in $(seq 1 50); do
		b=$((20000 + RANDOM % 10000))
		ok=1
		for i in 0 1 2 3 4 5 6; do port_free $((b + i)) || { ok=0; break; }; done
		if ((ok)); then
			export ISRBROKER_BIND_ADDRESS=127.0.0.1 ISRBROKER_ADVERTISED_HOST=127.0.0.1
			export ZOOKEEPER_PORT=$b ISRBROKER_BROKER1_PORT=$((b + 1)) ISRBROKER_BROKER2_PORT=$((b + 2)) ISRBROKER_BROKER3_PORT=$((b + 3))
			export ISRBROKER_BROKER1_METRICS_PORT=$((b + 4)) ISRBROKER_BROKER2_METRICS_PORT=$((b + 5)) ISRBROKER_BROKER3_METRICS_PORT=$((b + 6))
			BOOTSTRAP=127.0.0.1:$ISRBROKER_BROKER1_PORT,127.0.0.1:$ISRBROKER_BROKER2_PORT,127.0.0.1:$ISRBROKER_BROKER3_PORT
			return 0
		fi
	done
	fail "no seven free consecutive ports found"
}
metrics_port() { local v=ISRBROKER_BROKER$1_METRICS_PORT; echo "${!v}"; }

# 0. Images, once for every mode.
export ISRBROKER_IMAGE=${ISRBROKER_IMAGE:-isrbroker:local}
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
# The host-side admin tool, through the published broker ports.
CGO_ENABLED=0 go build -o "$work/isrbroker" . || fail "go build"
topics() { "$work/isrbroker" topics --bootstrap-server "$BOOTSTRAP" "$@"; }
log "images ready: $ISRBROKER_IMAGE, $ZOOKEEPER_IMAGE"

health() { docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}}' "$(compose ps -q "$1")" 2>/dev/null; }
all_healthy() {
	local s
	for s in "${services[@]}"; do [[ "$(health "$s")" == healthy ]] || return 1; done
}
# up: start the stack of $files and wait for health and the demo topic.
up() {
	compose up -d >"$work/up.log" 2>&1 || { cat "$work/up.log" >&2; fail "compose up"; }
	wait_until 240 all_healthy || fail "${services[*]} not all healthy within 240 s"
	log "${services[*]} are healthy"
	topic_created() {
		local cid
		cid=$(compose ps -q create-demo-topic) && [[ -n "$cid" ]] || return 1
		[[ "$(docker inspect -f '{{.State.Status}} {{.State.ExitCode}}' "$cid")" == "exited 0" ]]
	}
	wait_until 120 topic_created || fail "the create-demo-topic service did not exit 0 within 120 s"
	local desc
	desc=$(topics --describe --topic demo) || fail "topics --describe"
	grep -q "PartitionCount: 3.*ReplicationFactor: 3.*min.insync.replicas=2" <<<"$desc" ||
		fail "topic demo is not 3 partitions, RF 3, min.insync.replicas=2: $desc"
	log "topic demo created by the one-shot service"
}

# Partition fields from `topics --describe`: "Partition: 0	Leader: 1	Replicas: 1,2,3	Isr: 1,2,3".
leader_of() { topics --describe --topic demo | awk -v p="$1" '$3 == "Partition:" && $4 == p { print $6 }'; }
isr_whole() {
	topics --describe --topic demo 2>/dev/null | awk '$3 == "Partition:" { n++; if (split($10, r, ",") != 3) bad = 1 } END { exit !(n == 3 && !bad) }'
}
run_id=$$-$RANDOM
produce() { # produce PHASE COUNT: COUNT records acknowledged by the ISR (acks=all), or fail.
	local phase=$1 n=$2
	seq 1 "$n" | sed "s/^/k$phase-&:$run_id-$phase-/" >"$work/produced-$phase"
	timeout 120 kcat -P -b "$BOOTSTRAP" -t demo -K: -X acks=all -X message.timeout.ms=60000 \
		<"$work/produced-$phase" 2>"$work/kcat-p-$phase.err" ||
		{ cat "$work/kcat-p-$phase.err" >&2; return 1; }
	cut -d: -f2 "$work/produced-$phase" >>"$work/acked"
}
consume_check() { # consume_check WHAT: every acknowledged record is consumable.
	timeout 120 kcat -C -b "$BOOTSTRAP" -t demo -o beginning -e -q -f '%s\n' >"$work/consumed" 2>"$work/kcat-c.err" ||
		{ cat "$work/kcat-c.err" >&2; fail "kcat -C failed ($1)"; }
	local missing
	missing=$(comm -23 <(sort -u "$work/acked") <(grep "^$run_id-" "$work/consumed" | sort -u) | wc -l)
	((missing == 0)) || fail "$missing of $(wc -l <"$work/acked") acknowledged records are missing ($1)"
	log "all $(wc -l <"$work/acked") acknowledged records consumed back ($1)"
}
# metric ID NAME: the value of an unlabelled sample NAME on broker ID's /metrics.
metric() {
	curl -fsS "http://127.0.0.1:$(metrics_port "$1")/metrics" | awk -v n="$2" '$1 == n { print $2 }'
}

single() {
	mode_name=single
	project=isrbroker-compose-test-$$-single
	services=(zookeeper broker1 broker2 broker3)
	pick_ports
	# What a user's docker-compose.override.yml would hold: KAFKA_* settings per broker.
	local retention=3600000 i
	{
		echo "services:"
		for i in 1 2 3; do
			printf '  broker%d:\n    environment:\n      KAFKA_LOG_RETENTION_MS: "%s"\n      KAFKA_HEAP_OPTS: "-Xmx1G"\n' "$i" "$retention"
		done
	} >"$work/env-override.yml"
	files=(-f "$ROOT/docker-compose.yml" -f "$work/env-override.yml")
	log "project $project; brokers on $BOOTSTRAP, metrics on 127.0.0.1:$ISRBROKER_BROKER1_METRICS_PORT-$ISRBROKER_BROKER3_METRICS_PORT"
	rm -f "$work/acked"
	up

	# 1. The environment override reached every broker (DescribeConfigs through the published port).
	for i in 1 2 3; do
		local cfgs
		cfgs=$("$work/isrbroker" configs --bootstrap-server "$BOOTSTRAP" --entity-type brokers --entity-name "$i" --describe --all) ||
			fail "configs --describe --all of broker $i"
		grep -q "^  log.retention.ms=$retention sensitive=false synonyms={STATIC_BROKER_CONFIG:log.retention.ms=$retention" <<<"$cfgs" ||
			fail "broker $i does not report log.retention.ms=$retention from KAFKA_LOG_RETENTION_MS: $(grep retention <<<"$cfgs")"
	done
	log "KAFKA_LOG_RETENTION_MS=$retention is log.retention.ms on brokers 1-3 (configs --describe --all)"
	# (into a file first: grep -q ending a pipe early would fail it under pipefail)
	compose logs --no-color broker1 >"$work/broker1.log" 2>&1 || true
	grep -q 'environment variables of Kafka.*KAFKA_HEAP_OPTS' "$work/broker1.log" ||
		fail "broker1 did not log KAFKA_HEAP_OPTS as skipped"

	# 2. Metrics and the replication page from the host, and an operator command inside broker1.
	for i in 1 2 3; do
		local m
		m=$(metric "$i" kafka_controller_kafkacontroller_activecontrollercount) || fail "GET /metrics of broker $i"
		[[ -n "$m" ]] || fail "broker $i's /metrics lacks kafka_controller_kafkacontroller_activecontrollercount"
	done
	local page
	page=$(curl -fsS "http://127.0.0.1:$ISRBROKER_BROKER1_METRICS_PORT/replication") || fail "GET /replication from the host"
	grep -qi '<html' <<<"$page" || fail "GET /replication from the host is no HTML page"
	all_reachable() {
		[[ $(curl -fsS "http://127.0.0.1:$ISRBROKER_BROKER1_METRICS_PORT/replication/cluster.json" | grep -o '"registered":true,"reachable":true' | wc -l) -eq 3 ]]
	}
	wait_until 30 all_reachable || fail "cluster.json of broker 1 does not show brokers 1-3 reachable"
	log "/metrics of brokers 1-3, /replication and cluster.json (3 brokers reachable) answer on the published ports"
	local inside
	inside=$(compose exec -T broker1 isrbroker topics --bootstrap-server broker1:19092 --describe 2>&1) ||
		fail "docker compose exec broker1 isrbroker topics ...: $inside"
	grep -q "Topic: demo.*PartitionCount: 3" <<<"$inside" || fail "exec in broker1 does not describe topic demo: $inside"
	log "\`compose exec broker1 isrbroker topics --bootstrap-server broker1:19092 --describe\` describes demo"

	# 3. Produce, stop the leader of demo-0, see a new leader, nothing acknowledged lost.
	produce a 2000 || fail "kcat -P (phase a) did not get every record acknowledged"
	log "2000 records produced and acknowledged (acks=all)"
	consume_check "all brokers up"
	local old cid
	old=$(leader_of 0)
	[[ "$old" =~ ^[1-3]$ ]] || fail "no leader for demo-0 (got '$old')"
	cid=$(compose ps -q "broker$old")
	log "demo-0 is led by broker $old: docker stop of its container ${cid:0:12}"
	docker stop -t 60 "$cid" >/dev/null || fail "docker stop broker$old"
	new_leader() { local l; l=$(leader_of 0); [[ "$l" =~ ^[1-3]$ && "$l" != "$old" ]]; }
	wait_until 60 new_leader || fail "demo-0 has no new leader 60 s after stopping broker $old"
	log "demo-0 has a new leader: broker $(leader_of 0)"
	produce b 1000 || fail "kcat -P (phase b) did not get every record acknowledged"
	log "1000 more records produced and acknowledged with broker $old stopped"
	consume_check "broker $old stopped"

	# 4. Restart it; the ISR of every partition becomes whole again.
	docker start "$cid" >/dev/null || fail "docker start broker$old"
	log "broker $old started again"
	wait_until 120 isr_whole || { topics --describe --topic demo >&2 || true; fail "the ISR of topic demo is not whole 120 s after restarting broker $old"; }
	old_healthy() { [[ "$(health "broker$old")" == healthy ]]; }
	wait_until 60 old_healthy || fail "broker $old not healthy again within 60 s"
	log "every demo partition has ISR 3 again, broker $old is healthy"
	consume_check "after broker $old rejoined"
	down
}

ensemble() {
	mode_name=ensemble
	project=isrbroker-compose-test-$$-ensemble
	services=(zookeeper zookeeper2 zookeeper3 broker1 broker2 broker3)
	files=(-f "$ROOT/docker-compose.yml" -f "$ROOT/docker-compose.ensemble.yml")
	pick_ports
	log "project $project (three ZooKeeper members); brokers on $BOOTSTRAP"
	rm -f "$work/acked"
	up

	# The member leading the quorum: stopping it also makes the other two elect a new leader.
	local zk victim=""
	for zk in zookeeper zookeeper2 zookeeper3; do
		if [[ "$(compose exec -T "$zk" zkServer.sh status 2>/dev/null || true)" == *leader* ]]; then victim=$zk; fi
	done
	[[ -n "$victim" ]] || fail "no ZooKeeper member reports Mode: leader"

	# Produce batches back to back (acks=all) in the background until told to stop.
	local i
	rm -f "$work/stop-producing" "$work/producer.failed"
	(
		i=0
		while [[ ! -e "$work/stop-producing" ]]; do
			i=$((i + 1))
			produce "e$i" 200 || { echo "batch e$i" >"$work/producer.failed"; exit 1; }
		done
	) &
	producer_pid=$!
	some_acked() { [[ -s "$work/acked" && $(wc -l <"$work/acked") -ge 1000 ]]; }
	wait_until 60 some_acked || fail "the producer got no 1000 records acknowledged within 60 s"
	local expires_before=() b
	for b in 1 2 3; do expires_before[b]=$(metric "$b" kafka_server_sessionexpirelistener_zookeeperexpires_total); done
	local vcid
	vcid=$(compose ps -q "$victim")
	log "$(wc -l <"$work/acked") records acknowledged so far; docker stop of $victim (the quorum leader) while producing"
	docker stop -t 10 "$vcid" >/dev/null || fail "docker stop $victim"
	# Keep producing for twice the session timeout (6 s, scripts/docker/server.properties): a
	# broker whose session were lost would have expired by then.
	local until_t=$((SECONDS + 15))
	time_passed() { ((SECONDS >= until_t)); }
	wait_until 30 time_passed || true
	touch "$work/stop-producing"
	wait "$producer_pid" || fail "a batch was not acknowledged while $victim was stopped: $(cat "$work/producer.failed" 2>/dev/null)"
	producer_pid=""
	log "producer stopped: $(wc -l <"$work/acked") records acknowledged in all, none refused"
	consume_check "$victim stopped"
	local brokers=(broker1 broker2 broker3)
	brokers_healthy() { local s; for s in "${brokers[@]}"; do [[ "$(health "$s")" == healthy ]] || return 1; done; }
	brokers_healthy || fail "a broker is not healthy with $victim stopped"
	isr_whole || { topics --describe --topic demo >&2 || true; fail "an ISR of topic demo shrank with $victim stopped"; }
	local disconnects=0
	for b in 1 2 3; do
		local e d
		e=$(metric "$b" kafka_server_sessionexpirelistener_zookeeperexpires_total)
		[[ "$e" == "${expires_before[b]}" ]] || fail "broker $b's ZooKeeper session expired (expires ${expires_before[b]} -> $e)"
		d=$(metric "$b" kafka_server_sessionexpirelistener_zookeeperdisconnects_total)
		disconnects=$((disconnects + ${d%.*}))
	done
	log "brokers 1-3 healthy, every ISR whole, no ZooKeeper session expired ($disconnects disconnects in all, sessions moved to the other members)"

	# A broker starting while a member is down: the stopped member's name does not resolve in
	# the compose network, and the broker's ZooKeeper client must skip it rather than fail.
	docker restart -t 60 "$(compose ps -q broker1)" >/dev/null || fail "docker restart broker1"
	broker1_back() { [[ "$(health broker1)" == healthy ]] && isr_whole; }
	wait_until 120 broker1_back || fail "broker1 restarted with $victim stopped is not healthy with every ISR whole within 120 s"
	log "broker1 restarted with $victim stopped: registered again, every ISR whole"

	docker start "$vcid" >/dev/null || fail "docker start $victim"
	victim_healthy() { [[ "$(health "$victim")" == healthy ]]; }
	wait_until 120 victim_healthy || fail "$victim not serving again within 120 s of docker start"
	log "$victim started again and serves as $(compose exec -T "$victim" zkServer.sh status 2>/dev/null | grep -o -E 'leader|follower' | head -n1)"
	produce f 500 || fail "kcat -P after $victim rejoined"
	consume_check "after $victim rejoined"
	down
}

secure() {
	mode_name=secure
	project=isrbroker-compose-test-$$-secure
	services=(zookeeper broker1 broker2 broker3)
	pick_ports
	local dir=$work/secure out
	export ISRBROKER_SECURE_DIR=$dir
	bash scripts/docker/secure-setup.sh "$dir" >"$work/secure-setup.log" 2>&1 ||
		{ cat "$work/secure-setup.log" >&2; fail "scripts/docker/secure-setup.sh"; }
	files=(--env-file "$dir/secure.env" -f docker-compose.yml -f docker-compose.secure.yml)
	compose up -d >"$work/up.log" 2>&1 || { cat "$work/up.log" >&2; fail "compose up"; }
	wait_until 240 all_healthy || fail "${services[*]} not all healthy within 240 s"
	log "${services[*]} are healthy (SASL_SSL between the brokers)"
	topic_created() {
		local cid
		cid=$(compose ps -q create-demo-topic) && [[ -n "$cid" ]] || return 1
		[[ "$(docker inspect -f '{{.State.Status}} {{.State.ExitCode}}' "$cid")" == "exited 0" ]]
	}
	wait_until 120 topic_created || fail "the create-demo-topic service did not exit 0 within 120 s"
	local zk=127.0.0.1:$ZOOKEEPER_PORT
	kcat_as() { local u=$1; shift; timeout 60 kcat -F "$dir/kcat-$u.conf" -b "$BOOTSTRAP" "$@"; }
	admin_sees_all() { kcat_as admin -L -t demo 2>/dev/null | grep -q " 3 brokers:"; }
	wait_until 60 admin_sees_all || fail "admin's metadata over SASL_SSL does not list 3 brokers"
	seq 1 10 | sed "s/^/k-&:$run_id-s-/" >"$work/produced-s"
	refused() {
		out=$(kcat_as alice -P -t demo -K: -X acks=all -X message.timeout.ms=5000 <"$work/produced-s" 2>&1) && return 1
		grep -qi "authorization failed" <<<"$out"
	}
	wait_until 60 refused || fail "alice was not refused on topic demo without ACLs: $out"
	log "alice refused on topic demo without ACLs ($(grep -i -m1 "authorization failed" <<<"$out"))"
	"$work/isrbroker" acls --authorizer-properties "zookeeper.connect=$zk" --add --allow-principal User:alice \
		--producer --consumer --topic demo --group demo-group >"$work/acls.log" 2>&1 || { cat "$work/acls.log" >&2; fail "isrbroker acls --add"; }
	allowed() { kcat_as alice -P -t demo -K: -X acks=all -X message.timeout.ms=10000 <"$work/produced-s" >/dev/null 2>&1; }
	wait_until 60 allowed || fail "alice cannot produce to demo 60 s after the ACLs were added"
	cut -d: -f2 "$work/produced-s" >"$work/acked"
	out=$(kcat_as alice -G demo-group demo -X auto.offset.reset=earliest -e -q -f '%s\n' 2>"$work/kcat-c.err") ||
		{ cat "$work/kcat-c.err" >&2; fail "kcat -G demo-group as alice"; }
	local missing
	missing=$(comm -23 <(sort -u "$work/acked") <(grep "^$run_id-" <<<"$out" | sort -u) | wc -l)
	((missing == 0)) || fail "$missing of the records alice produced were not consumed back by her group"
	log "after isrbroker acls --producer --consumer alice produced $(wc -l <"$work/acked") records and consumed them in group demo-group"
	down
	unset ISRBROKER_SECURE_DIR
}

for m in "${modes[@]}"; do
	"$m"
done
mode_name=""
log "PASS (${modes[*]}) in $((SECONDS - t0)) s"
