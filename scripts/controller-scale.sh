#!/usr/bin/env bash
# The controller-at-scale benchmark (docs/performance.md, "Controller at scale"): for each
# partition count it starts a real ZooKeeper and three brokers (tests/cluster, free ports, a
# 6 s ZooKeeper session), creates one topic with that many partitions and RF=3, and times topic
# creation (until every ISR is full and every broker's metadata agrees), a controlled shutdown
# (SIGTERM until the broker has exited and leadership has moved), and a controller failover
# after kill -9 (until a new controller has written every affected partition state). It prints
# one table line per count with the resident memory per replica.
#
# Usage: scripts/controller-scale.sh [COUNT...]     (default: 300 1000 3000 10000)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(300 1000 3000 10000)
for n in "${counts[@]}"; do
	case $n in
	'' | *[!0-9]*) echo "controller-scale.sh: $n is not a partition count" >&2; exit 2 ;;
	esac
done

printf '%-11s %10s %12s %9s %10s %12s %15s\n' partitions create-s shutdown-s leaders rejoin-s failover-s rss-KiB/replica
for n in "${counts[@]}"; do
	out=$(CTRLSCALE_PARTITIONS=$n go test -run XXX -bench 'ControllerScale$' -benchtime 1x -timeout 60m ./tests/bench 2>&1) || {
		echo "$out" >&2
		exit 1
	}
	line=$(grep -o 'CTRLSCALE .*' <<<"$out" | tail -1 || true)
	[ -n "$line" ] || { echo "$out" >&2; exit 1; }
	val() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<"$line"; }
	printf '%-11s %10s %12s %9s %10s %12s %15s\n' "$n" "$(val create)" "$(val shutdown)" "$(val shutdownLeaders)" \
		"$(val rejoin)" "$(val failover)" "$(val rssPerReplica)"
done
