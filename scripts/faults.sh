#!/usr/bin/env bash
# The fault matrix of docs/reliability.md (issue 5): runs the fault scenarios in tests/faults
# (`go test -run 'TestFault' -v ./tests/faults`), collects each scenario's one-line result
#   scenario=<name> acked=N lost=N duplicates=N divergent=N new_leader=<dur> unavailable=<dur> [more key=value]
# and writes them as a table into docs/reliability.md between the markers
#   <!-- faults.sh:begin --> and <!-- faults.sh:end -->
# (the file is created, or the block appended, when absent), with the run's parameters, date
# and commit. The short tier (rows 1, 5, 12, 14) also runs in the ordinary test run; the rest of
# the matrix (TestFault<NN>_*) runs only with ISRBROKER_FAULTS_FULL=1, which this script sets.
# Row 14's second half follows: every fuzz target of the repository for FUZZ_TIME each.
#
# Every broker runs on its own loopback address 127.0.0.(10+id); iptables-based scenarios need
# root and iptables (skipped otherwise, a failure when CI is set). Rules are tagged
# isrbroker-faults-<pid> and removed by the tests' cleanup.
#
# Environment:
#   FAULTS_RUN       go test -run pattern (default TestFault)
#   FAULTS_DOC       file to update (default docs/reliability.md; "-" = print only)
#   FAULTS_TIMEOUT   go test -timeout (default 40m)
#   FUZZ_TIME        -fuzztime per fuzz target (default 60s; 0 skips fuzzing)
#   FAULTS_SEEDS     also run row 13 (the random nemesis) on seeds 1..N (default 0; the
#                    matrix asks for 10: about 6 min each)
#   ISRBROKER_FAULTS_DIR  where the producers' acknowledgement logs go (default: a temp dir,
#                    kept and printed at the end)
# Exit status: go test's.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

# ZooKeeper (and iptables) as the README test command installs them; with CI set, a scenario
# that cannot run for want of ZooKeeper, root or iptables fails instead of being skipped.
bash scripts/install-deps.sh
export CI=${CI:-true}

RUN=${FAULTS_RUN:-TestFault}
DOC=${FAULTS_DOC:-docs/reliability.md}
TIMEOUT=${FAULTS_TIMEOUT:-40m}
export ISRBROKER_FAULTS_DIR=${ISRBROKER_FAULTS_DIR:-$(mktemp -d -t isrbroker-faults.XXXXXX)}
# Every row of the matrix, not just the short tier (tests/faults/tiers_test.go: fullMatrix).
export ISRBROKER_FAULTS_FULL=1
LOG="$ISRBROKER_FAULTS_DIR/go-test.log"

# The commit is taken before the run: go test compiles the tree as it is now.
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ -n "$(git status --porcelain 2>/dev/null)" ]]; then
	commit="$commit (with uncommitted changes)"
fi
echo "faults: go test -count=1 -timeout $TIMEOUT -run '$RUN' -v ./tests/faults (logs in $ISRBROKER_FAULTS_DIR)"
start=$SECONDS
go test -count=1 -timeout "$TIMEOUT" -run "$RUN" -v ./tests/faults 2>&1 | tee "$LOG"
status=${PIPESTATUS[0]}
# Row 13 again on fixed seeds 1..FAULTS_SEEDS (each replayable with ISRBROKER_FAULTS_SEED), when
# the run includes it: the random nemesis on more schedules than the one of the main run.
SEEDS=${FAULTS_SEEDS:-0}
if ((SEEDS > 0)) && [[ "TestFault13_RandomMix" =~ $RUN ]]; then
	for seed in $(seq 1 "$SEEDS"); do
		echo "faults: TestFault13_RandomMix on seed $seed of $SEEDS"
		ISRBROKER_FAULTS_SEED=$seed go test -count=1 -timeout "$TIMEOUT" -run '^TestFault13_RandomMix$' -v ./tests/faults 2>&1 |
			sed "s/^--- \(PASS\|FAIL\|SKIP\): TestFault13_RandomMix/--- \1: TestFault13_RandomMix_seed$seed/; s/^=== RUN   TestFault13_RandomMix\$/=== RUN   TestFault13_RandomMix_seed$seed/" | tee -a "$LOG"
		sstatus=${PIPESTATUS[0]}
		((sstatus == 0)) || status=$sstatus
	done
fi
took=$((SECONDS - start))
PARAMS=$(sed -n 's/^faults-parameters: //p' "$LOG" | head -1)

# Row 14, second half: `go test -fuzz` on every fuzz target (bad input must never crash).
FUZZ_TIME=${FUZZ_TIME:-60s}
FUZZ_ROWS=""
fuzz_start=$SECONDS
if [[ "$FUZZ_TIME" != "0" ]]; then
	while IFS=: read -r file fn; do
		pkg="./$(dirname "${file#./}")"
		name=${fn#func }
		name=${name%%(*}
		flog="$ISRBROKER_FAULTS_DIR/fuzz-$name.log"
		echo "faults: go test -run '^\$' -fuzz '^$name\$' -fuzztime $FUZZ_TIME $pkg"
		go test -run '^$' -fuzz "^$name\$" -fuzztime "$FUZZ_TIME" "$pkg" >"$flog" 2>&1
		fstatus=$?
		execs=$(grep -o 'execs: [0-9]*' "$flog" | tail -1 | awk '{print $2}')
		verdict=PASS
		if [[ $fstatus -ne 0 ]]; then
			verdict=FAIL
			status=1
			tail -20 "$flog"
		fi
		FUZZ_ROWS+="| $pkg | $name | $FUZZ_TIME | ${execs:-?} | $verdict |"$'\n'
	done < <(grep -rn --include='*_test.go' -o '^func Fuzz[A-Za-z0-9_]*(' . | sed 's/:[0-9]*:/:/' | sort)
fi
fuzz_took=$((SECONDS - ${fuzz_start:-$SECONDS}))

# One table row per result line; the test's PASS/FAIL comes from go test's own summary lines.
TABLE=$(awk '
	/^=== RUN   TestFault/ { test = $3 }
	/^scenario=/ {
		delete f; extra = ""
		for (i = 1; i <= NF; i++) {
			split($i, kv, "=")
			k = kv[1]; v = substr($i, length(k) + 2)
			if (k ~ /^(scenario|acked|lost|duplicates|divergent|new_leader|unavailable)$/) f[k] = v
			else extra = extra (extra == "" ? "" : " ") $i
		}
		n++
		rows[n] = sprintf("| %s | %s | %s | %s | %s | %s | %s | %s |", f["scenario"], f["acked"], f["lost"], f["duplicates"], f["divergent"], f["new_leader"], f["unavailable"], extra == "" ? "" : "`" extra "`")
		owner[n] = test
	}
	/^--- (PASS|FAIL|SKIP): TestFault/ { r = $2; sub(/:$/, "", r); result[$3] = r }
	END {
		print "| scenario | acked | lost | duplicates | divergent | new leader | longest unavailability | other | test |"
		print "|---|---|---|---|---|---|---|---|---|"
		for (i = 1; i <= n; i++) {
			r = result[owner[i]]; if (r == "") r = "?"
			print rows[i] " " owner[i] " " r " |"
		}
		for (t in result) if (result[t] == "SKIP") print "| (skipped) | | | | | | | | " t " SKIP |"
	}' "$LOG")

BLOCK=$(
	cat <<EOF
<!-- faults.sh:begin -->
Run by \`scripts/faults.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'), commit $commit, $(go version | awk '{print $3}'),
$(nproc) CPUs, Linux $(uname -r); \`go test -run '$RUN' ./tests/faults\` took ${took} s, fuzzing ${fuzz_took} s;
exit status $status (fault scenarios and fuzzing together).

Parameters, as the tests printed them: \`${PARAMS:-not printed}\`. ZooKeeper standalone (tickTime 1000); 3 brokers,
broker N on 127.0.0.(10+N) with outgoing connections bound to it; \`unclean.leader.election.enable=false\`,
\`auto.leader.rebalance.enable=false\`. Workload: franz-go producer, acks=all, idempotent when the brokers offer InitProducerId
(\`idempotent=false\` in the last column otherwise), \`producer_rate\` records/s round-robin over the partitions, unique values,
every acknowledgement logged; an assign-mode consumer reading from the start during the run; after healing a fresh
client reads every partition from the start. Scenario 05 adds an acks=1 producer whose loss is counted apart
(\`acks1_*\`). \`new leader\`: fault → first state znode with another leader; \`longest unavailability\`: longest gap
between two acknowledgements on one partition; \`readable\`: healing → everything read by a fresh client.

$TABLE

Row 14, fuzzing (\`go test -fuzz\`, $FUZZ_TIME per target; a failure's input lands in the package's testdata/fuzz):

| package | target | time | execs | result |
|---|---|---|---|---|
${FUZZ_ROWS:-| (fuzzing skipped: FUZZ_TIME=0) | | | | |
}
<!-- faults.sh:end -->
EOF
)

echo
echo "$BLOCK"
echo "faults: acknowledgement logs and go test output kept in $ISRBROKER_FAULTS_DIR"

if [[ "$DOC" != "-" ]]; then
	if [[ ! -f "$DOC" ]]; then
		cat >"$DOC" <<'EOF'
# Reliability: fault-injection results

The fault matrix ("The fault matrix" below) run against isrbroker by `scripts/faults.sh`: real ZooKeeper,
three real broker processes, faults by signal (SIGKILL, SIGSTOP/SIGCONT, SIGTERM), damaged files and iptables rules,
checked by an independent checker (tests/faults): L lost acknowledged writes, D duplicates, O two values at one
offset, M consumer offsets only rising, R replicas' batches identical below the HW, E leader and controller epochs
only rising, U everything readable within 60 s of healing. The short tier (rows 1, 5, 12, 14) also runs in the
ordinary `go test ./tests/...`.

## Latest run (scripts/faults.sh)

EOF
	fi
	if grep -q '<!-- faults.sh:begin -->' "$DOC"; then
		awk -v block="$BLOCK" '
			/<!-- faults.sh:begin -->/ { print block; skip = 1; next }
			/<!-- faults.sh:end -->/ { skip = 0; next }
			!skip { print }' "$DOC" >"$DOC.tmp" && mv "$DOC.tmp" "$DOC"
	else
		printf '%s\n' "$BLOCK" >>"$DOC"
	fi
	echo "faults: wrote the table to $DOC"
fi
exit "$status"
