#!/usr/bin/env bash
# Runs every test of the module: unit tests, and the integration tests (tests/) that start a real
# ZooKeeper and real broker processes. Installs what it needs first (scripts/install-deps.sh).
#
#   scripts/test.sh                 everything (what CI runs through .ci/run)
#   scripts/test.sh -run TestKcat   extra arguments are passed to `go test`
#
# Exit status: that of `go vet` if it fails, else that of `go test`.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

bash scripts/install-deps.sh

echo "test: go vet ./..."
go vet ./...

out=$(mktemp "${TMPDIR:-/tmp}/isrbroker-test.XXXXXX")
trap 'rm -f "$out"' EXIT

echo "test: go test -race -count=1 -timeout 15m -v ./... $*"
start=$SECONDS
set +e
go test -race -count=1 -timeout 15m -v ./... "$@" 2>&1 | tee "$out"
status=${PIPESTATUS[0]}
set -e

passed=$(grep -cE '^\s*--- PASS: ' "$out" || true)
failed=$(grep -cE '^\s*--- FAIL: ' "$out" || true)
skipped=$(grep -cE '^\s*--- SKIP: ' "$out" || true)
echo
echo "================ summary ($((SECONDS - start)) s) ================"
grep -E '^(ok|FAIL|---)\s' "$out" | grep -vE '^--- (PASS|SKIP)' || true
if ((failed > 0)); then
	echo "failed tests:"
	grep -E '^\s*--- FAIL: ' "$out" | sed 's/^/  /'
fi
if grep -qE '^(panic: |fatal error: )' "$out"; then
	echo "a test binary panicked or crashed: see the output above"
fi
echo "tests: $passed passed, $failed failed, $skipped skipped"
if ((status != 0)); then
	echo "test: go test exited with status $status"
fi
exit "$status"
