#!/usr/bin/env bash
# Runs the operator commands of the README's "Operator tools" block exactly as written against the
# cluster of `scripts/cluster.sh up` (ZooKeeper 127.0.0.1:2181, brokers from 127.0.0.1:9092), with
# the `isrbroker` that `up` put on PATH: TestReadmeCommands (tests/integration) in its external
# mode. The commands create topic "orders" and group "billing" and delete both at the end, so
# neither may exist before. Each command must exit 0; the perf tools run 2000 records instead of
# the README's 1000000.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

die() { echo "readme-commands: $*" >&2; exit 1; }

command -v isrbroker >/dev/null 2>&1 || die "isrbroker is not on PATH: run scripts/cluster.sh up first (it installs it)"
isrbroker cluster --zookeeper 127.0.0.1:2181 >/dev/null 2>&1 || die "no cluster at 127.0.0.1:2181: run scripts/cluster.sh up first"
if isrbroker topics --zookeeper 127.0.0.1:2181 --list | grep -qx orders; then
	die "topic orders exists (the README's commands create it); delete it first: isrbroker topics --bootstrap-server 127.0.0.1:9092 --delete --topic orders"
fi
if isrbroker consumer-groups --bootstrap-server 127.0.0.1:9092 --list | grep -qx billing; then
	die "group billing exists (the README's commands create it); delete it first: isrbroker consumer-groups --bootstrap-server 127.0.0.1:9092 --delete --group billing"
fi
echo "readme-commands: running the README's operator commands with $(command -v isrbroker)"
ISRBROKER_README_EXTERNAL=1 exec go test -count=1 -run '^TestReadmeCommands$' -v ./tests/integration
