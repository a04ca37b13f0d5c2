#!/usr/bin/env bash
# Installs what the local cluster and the tests need, only when it is missing.
#   scripts/install-deps.sh cluster   what scripts/cluster.sh and its demo need:
#   - ZooKeeper 3.8 (Debian package `zookeeper`: /usr/share/java/zookeeper.jar)
#   - a Java runtime (`default-jre-headless`) if `java` is not on PATH
#   - kcat (the librdkafka command-line client)
#   - curl and jq: scripts/cluster.sh's failover demo reads the replication page's cluster.json
#   scripts/install-deps.sh [tests]   the above, plus what only the tests use:
#   - chromium (Debian's package): the headless browser of the replication page test
#   - promtool (Debian's `prometheus` package: the alert rules' tests, docs/metrics.md)
# Go itself is not installed here: the module needs Go 1.26 (see go.mod).
# Idempotent: a second run installs nothing. Uses sudo only when not root.
set -euo pipefail

ZK_JAR=/usr/share/java/zookeeper.jar
FOR=${1:-tests}
case "$FOR" in
cluster | tests) ;;
*)
	echo "install-deps: unknown target '$FOR' (cluster or tests)" >&2
	exit 2
	;;
esac

log() { echo "install-deps: $*"; }

missing=()
if [[ ! -f "$ZK_JAR" ]]; then
	missing+=(zookeeper)
else
	log "ZooKeeper present ($ZK_JAR)"
fi
if ! command -v java >/dev/null 2>&1; then
	missing+=(default-jre-headless)
else
	log "Java present ($(command -v java))"
fi
if ! command -v kcat >/dev/null 2>&1; then
	missing+=(kcat)
else
	log "kcat present ($(command -v kcat))"
fi
for tool in curl jq; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		missing+=("$tool")
	else
		log "$tool present ($(command -v "$tool"))"
	fi
done

if [[ "$FOR" == tests ]]; then
	if ! command -v chromium >/dev/null 2>&1; then
		missing+=(chromium)
	else
		log "chromium present ($(command -v chromium))"
	fi
	if ! command -v promtool >/dev/null 2>&1; then
		missing+=(prometheus)
	else
		log "promtool present ($(command -v promtool))"
	fi
fi

if ((${#missing[@]} > 0)); then
	sudo=()
	if [[ "$(id -u)" -ne 0 ]]; then
		if ! command -v sudo >/dev/null 2>&1; then
			log "need root (or sudo) to install: ${missing[*]}" >&2
			exit 1
		fi
		sudo=(sudo)
	fi
	if ! command -v apt-get >/dev/null 2>&1; then
		log "apt-get not found; install these by hand: ${missing[*]}" >&2
		exit 1
	fi
	log "installing: ${missing[*]}"
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Checks after installing: each tool must now be usable.
[[ -f "$ZK_JAR" ]] || { log "ZooKeeper jar $ZK_JAR still missing" >&2; exit 1; }
command -v java >/dev/null 2>&1 || { log "java still missing" >&2; exit 1; }
command -v kcat >/dev/null 2>&1 || { log "kcat still missing" >&2; exit 1; }
command -v curl >/dev/null 2>&1 || { log "curl still missing" >&2; exit 1; }
command -v jq >/dev/null 2>&1 || { log "jq still missing" >&2; exit 1; }
if [[ "$FOR" == tests ]]; then
	command -v chromium >/dev/null 2>&1 || { log "chromium still missing" >&2; exit 1; }
	command -v promtool >/dev/null 2>&1 || { log "promtool still missing" >&2; exit 1; }
fi
if ! command -v go >/dev/null 2>&1; then
	log "go not found on PATH: install Go (version in go.mod) first" >&2
	exit 1
fi
log "ready: $(go version | cut -d' ' -f3), $(java -version 2>&1 | head -n1), $(kcat -V 2>&1 | grep -m1 -o "Version [^ ]*" | sed "s/Version/kcat/")"
