# shellcheck shell=bash
# Shared by the scripts that wait for a cluster (cluster.sh, compose-test.sh, and through
# lib/localcluster.sh bench.sh and kfake-compare.sh): one polling loop, no sleep as
# synchronisation.

# wait_until SECONDS COMMAND...: poll COMMAND every WAIT_INTERVAL seconds (default 0.2) until it
# succeeds; returns 1 once SECONDS have passed without success.
wait_until() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		((SECONDS < deadline)) || return 1
		sleep "${WAIT_INTERVAL:-0.2}"
	done
}
