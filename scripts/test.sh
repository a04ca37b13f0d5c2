#!/usr/bin/env bash
# Runs every test: the main module's unit tests and the integration tests (tests/integration)
# that start a real ZooKeeper and real broker processes, then the client-compatibility tests of
# the nested module tests/clients (sarama, kafka-go), the nested module tests/kfakecmp, and last, when a Docker engine works,
# scripts/compose-test.sh (docker-compose.yml end to end). Installs what it needs first
# (scripts/install-deps.sh).
#
#   scripts/test.sh                 everything (what CI runs through .ci/run)
#   scripts/test.sh -run TestKcat   extra arguments are passed to both `go test` runs (and skip
#                                   the compose test, as does ISRBROKER_COMPOSE_TEST=0)
#
# Exit status: non-zero when `go vet`, any `go test` run or the compose test fails.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

bash scripts/install-deps.sh

out=$(mktemp -t isrbroker-test.XXXXXX)
trap 'rm -f "$out"' EXIT
start=$SECONDS
status=0

# run_tests DIR: go vet and go test -race in the module at DIR, output appended to $out.
run_tests() {
	local dir=$1 rc
	echo "test: [$dir] go vet ./..."
	if ! (cd "$dir" && go vet ./...); then
		echo "test: [$dir] go vet failed"
		status=1
		return
	fi
	echo "test: [$dir] go test -race -count=1 -timeout 30m -v ./... ${ARGS[*]}"
	set +e
	(cd "$dir" && go test -race -count=1 -timeout 30m -v ./... "${ARGS[@]}") 2>&1 | tee -a "$out"
	rc=${PIPESTATUS[0]}
	set -e
	if ((rc != 0)); then
		echo "test: [$dir] go test exited with status $rc"
		status=$rc
	fi
}

ARGS=("$@")
run_tests .
# tests/clients replaces the main module with ../.., so a dependency added to the main go.mod
# must reach its go.mod/go.sum too: tidy first (a no-op when nothing changed).
echo "test: [tests/clients] go mod tidy"
(cd tests/clients && go mod tidy) || status=1
run_tests tests/clients
# tests/kfakecmp: the load side of scripts/kfake-compare.sh, a module of its own so that kfake
# stays out of go.mod; go vet and its unit tests keep it building.
run_tests tests/kfakecmp

# docker-compose.yml end to end (scripts/compose-test.sh, both modes: single node and the
# ZooKeeper ensemble): only in a full run (no extra arguments), only when a Docker engine
# answers, not with ISRBROKER_COMPOSE_TEST=0. The first run builds the images (the Debian
# root filesystem of the ZooKeeper image: a few minutes, up to about 12 on a loaded machine);
# later runs take about 3-5 min.
compose_result="skipped"
if ((${#ARGS[@]} == 0)) && [[ "${ISRBROKER_COMPOSE_TEST:-1}" != 0 ]]; then
	if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
		echo "test: scripts/compose-test.sh"
		if timeout 1800 bash scripts/compose-test.sh; then
			compose_result="passed"
		else
			compose_result="FAILED"
			status=1
		fi
	else
		echo "test: compose-test: no Docker engine: skipped"
		compose_result="skipped (no Docker engine)"
	fi
fi

passed=$(grep -cE '^\s*--- PASS: ' "$out" || true)
failed=$(grep -cE '^\s*--- FAIL: ' "$out" || true)
skipped=$(grep -cE '^\s*--- SKIP: ' "$out" || true)
echo
echo "================ summary ($((SECONDS - start)) s) ================"
grep -E '^(ok|FAIL)\s' "$out" || true
if ((failed > 0)); then
	echo "failed tests:"
	grep -E '^\s*--- FAIL: ' "$out" | sed 's/^/  /'
fi
if grep -qE '^(panic: |fatal error: )' "$out"; then
	echo "a test binary panicked or crashed: see the output above"
fi
echo "tests: $passed passed, $failed failed, $skipped skipped"
echo "compose-test: $compose_result"
exit "$status"
