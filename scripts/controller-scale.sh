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
#
# Before each count it syncs and waits CTRLSCALE_SETTLE seconds (default 35; 0: no wait): on an
# ext4 without a journal (this machine's) allocating an inode skips the inodes deleted in the
# last 5 s, or 35 s while their inode-table block is dirty, at a buffer-cache lookup each, so
# creating thousands of logs right after the previous count's cluster deleted its thousands
# of files measures that deletion, not the broker (docs/performance.md, "Controller at scale").
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

SETTLE=${CTRLSCALE_SETTLE:-35}
case $SETTLE in
'' | *[!0-9]*) echo "controller-scale.sh: CTRLSCALE_SETTLE=$SETTLE is not a number of seconds" >&2; exit 2 ;;
esac

printf '%-11s %10s %12s %9s %10s %12s %15s\n' partitions create-s shutdown-s leaders rejoin-s failover-s rss-KiB/replica
for n in "${counts[@]}"; do
	if ((SETTLE > 0)); then
		sync
		sleep "$SETTLE" # a cool-down before a measurement, not synchronisation (see the top)
	fi
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
