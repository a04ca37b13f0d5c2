#!/usr/bin/env bash
# Builds the ZooKeeper image isrbroker-zookeeper:3.8-local without any container registry:
# debootstrap a minimal Debian bookworm root filesystem with Debian's ZooKeeper 3.8 jars
# (libzookeeper-java) and a headless Java runtime, add zkServer.sh (this directory), and
# `docker import` it. docker-compose.yml runs it instead of the official zookeeper:3.8 image
# when ZOOKEEPER_IMAGE=isrbroker-zookeeper:3.8-local is set.
#
#   scripts/docker/zookeeper/build-image.sh [--force]
#
# Two steps, each cached: the Debian root filesystem is imported once as
# isrbroker-zookeeper-base:3.8-local (label isrbroker.rootfs: a hash of the package list and
# log4j settings below), then a `docker build` FROM it adds zkServer.sh (a second or two). When
# the image exists and was built from the current recipe (this script and zkServer.sh,
# recorded in the image label isrbroker.recipe) nothing is done; --force rebuilds both.
# The Debian mirror is the one apt uses on this machine (/etc/apt/sources.list and
# sources.list.d); DEBIAN_MIRROR=URL overrides it. Needs root (or sudo) for debootstrap,
# which is installed with apt-get when missing. The first build takes a few minutes.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
IMAGE=${ZOOKEEPER_LOCAL_IMAGE:-isrbroker-zookeeper:3.8-local}
BASE=${IMAGE%%:*}-base:${IMAGE#*:}
SUITE=bookworm
PACKAGES=libzookeeper-java,default-jre-headless,libslf4j-java,liblog4j1.2-java
# log4j of the image: log to the console (docker logs).
LOG4J='log4j.rootLogger=${zookeeper.root.logger}
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.Threshold=INFO
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} - %-5p [%t:%C{1}@%L] - %m%n'

log() { echo "zookeeper-image: $*"; }
die() { echo "zookeeper-image: $*" >&2; exit 1; }

force=0
case "${1:-}" in
--force) force=1 ;;
"") ;;
*) die "usage: build-image.sh [--force]" ;;
esac

command -v docker >/dev/null 2>&1 || die "docker not found"
recipe=$(cat "$HERE/build-image.sh" "$HERE/zkServer.sh" | sha256sum | cut -c1-16)
rootfs_recipe=$(printf '%s\n%s\n%s\n' "$SUITE" "$PACKAGES" "$LOG4J" | sha256sum | cut -c1-16)
if ((!force)) && have=$(docker image inspect -f '{{index .Config.Labels "isrbroker.recipe"}}' "$IMAGE" 2>/dev/null); then
	if [[ "$have" == "$recipe" ]]; then
		log "$IMAGE is up to date (recipe $recipe): not rebuilding"
		exit 0
	fi
	log "$IMAGE was built from another recipe ($have, now $recipe): rebuilding"
fi

# debian_mirror prints the first URI apt uses for a Debian suite (not -security/-updates),
# from one-line (.list) or deb822 (.sources) entries.
debian_mirror() {
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[[ -f "$f" ]] || continue
		awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i !~ /^\[/ && $i !~ /=/ && $i !~ /\]$/) { uri = $i; suite = $(i + 1); break }
			if (uri ~ /debian/ && suite !~ /-(security|updates|backports)$/ && suite !~ /\//) { print uri; exit } }' "$f"
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		[[ -f "$f" ]] || continue
		awk 'function flush(   n, s, i, plain) {
				n = split(suites, s, " ")
				for (i = 1; i <= n; i++) if (s[i] !~ /-(security|updates|backports)$/) plain = 1
				if (plain && uris ~ /debian/ && !done) { split(uris, u, " "); print u[1]; done = 1 }
				uris = ""; suites = ""
			}
			/^[ \t]*$/ { flush(); next }
			/^URIs:/ { sub(/^URIs:[ \t]*/, ""); uris = $0 }
			/^Suites:/ { sub(/^Suites:[ \t]*/, ""); suites = $0 }
			END { flush() }' "$f"
	done
}

# build_base debootstraps the root filesystem and imports it as $BASE (needs root or sudo).
build_base() {
	local sudo=()
	if [[ "$(id -u)" -ne 0 ]]; then
		command -v sudo >/dev/null 2>&1 || die "debootstrap needs root (or sudo)"
		sudo=(sudo)
	fi
	if ! command -v debootstrap >/dev/null 2>&1; then
		log "installing debootstrap"
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null ||
			{ "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null &&
				"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null; } ||
			die "could not install debootstrap"
	fi
	local mirror=${DEBIAN_MIRROR:-$(debian_mirror | head -n1)}
	[[ -n "$mirror" ]] || die "no Debian mirror in /etc/apt/sources.list*: set DEBIAN_MIRROR=URL of a Debian archive"
	log "building $BASE from Debian $SUITE (mirror $mirror); this takes a few minutes the first time"

	local work
	work=$(mktemp -d -t isrbroker-zk-rootfs.XXXXXX)
	# shellcheck disable=SC2064 # expand now: the trap runs after this function returned
	trap "${sudo[*]} rm -rf --one-file-system '$work'" EXIT
	local rootfs=$work/rootfs start=$SECONDS
	if ! "${sudo[@]}" debootstrap --variant=minbase --include="$PACKAGES" \
		"$SUITE" "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1; then
		tail -n 30 "$work/debootstrap.log" >&2
		die "debootstrap failed (log above)"
	fi
	log "debootstrap done in $((SECONDS - start)) s"

	# The zookeeper user (uid 1000, as in the official image) owns the data and config dirs.
	"${sudo[@]}" chroot "$rootfs" sh -c '
		set -e
		getent group zookeeper >/dev/null || groupadd --gid 1000 zookeeper
		id zookeeper >/dev/null 2>&1 || useradd --uid 1000 --gid zookeeper --no-create-home --home-dir /data --shell /usr/sbin/nologin zookeeper
		mkdir -p /conf /data /datalog /etc/zookeeper/conf
		chown zookeeper:zookeeper /conf /data /datalog
		apt-get clean
		rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /usr/share/doc/* /usr/share/man/* /usr/share/locale/*
	'
	printf '# written by scripts/docker/zookeeper/build-image.sh\n%s\n' "$LOG4J" |
		"${sudo[@]}" tee "$rootfs/etc/zookeeper/conf/log4j.properties" >/dev/null
	"${sudo[@]}" tar --numeric-owner -C "$rootfs" -c . | docker import \
		-c "LABEL isrbroker.rootfs=$rootfs_recipe" - "$BASE" >/dev/null
	log "imported $BASE in $((SECONDS - start)) s"
}

if ((force)) || [[ "$(docker image inspect -f '{{index .Config.Labels "isrbroker.rootfs"}}' "$BASE" 2>/dev/null)" != "$rootfs_recipe" ]]; then
	build_base
else
	log "$BASE is up to date (rootfs $rootfs_recipe)"
fi

# The image itself: the base plus zkServer.sh (a quick docker build, no registry: FROM a local image).
ctx=$(mktemp -d -t isrbroker-zk-image.XXXXXX)
trap 'rm -rf "$ctx"' EXIT
install -m 0755 "$HERE/zkServer.sh" "$ctx/zkServer.sh"
cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM $BASE
COPY zkServer.sh /usr/local/bin/zkServer.sh
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ENV ZOO_CONF_DIR=/conf ZOO_DATA_DIR=/data ZOO_DATA_LOG_DIR=/datalog
USER zookeeper
WORKDIR /data
VOLUME ["/data", "/datalog"]
# client port; 2888 and 3888: an ensemble's quorum and leader election ports
EXPOSE 2181 2888 3888
LABEL isrbroker.recipe=$recipe
CMD ["zkServer.sh", "start-foreground"]
DOCKERFILE
docker build -q -t "$IMAGE" "$ctx" >/dev/null || die "docker build of $IMAGE failed"
log "built $IMAGE ($(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{ printf "%d MB", $1 / 1e6 }'))"
