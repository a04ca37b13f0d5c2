#!/usr/bin/env bash
# Builds the images docker-compose.yml runs, without any container registry:
#   isrbroker:local                    the broker (scripts/docker/Dockerfile, FROM scratch): the
#                                      static binary is compiled here with the host's Go
#   isrbroker-zookeeper:3.8-local      with --zookeeper only: ZooKeeper 3.8 from Debian packages
#                                      (scripts/docker/zookeeper/build-image.sh; cached)
#
#   scripts/docker/build-images.sh [--zookeeper]
#
# ISRBROKER_IMAGE overrides the broker image's name (docker-compose.yml reads the same variable).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
IMAGE=${ISRBROKER_IMAGE:-isrbroker:local}

log() { echo "build-images: $*"; }
die() { echo "build-images: $*" >&2; exit 1; }

zookeeper=0
for a in "$@"; do
	case "$a" in
	--zookeeper) zookeeper=1 ;;
	*) die "usage: build-images.sh [--zookeeper]" ;;
	esac
done
command -v go >/dev/null 2>&1 || die "go not found on PATH: install Go (version in go.mod) first"
command -v docker >/dev/null 2>&1 || die "docker not found on PATH"

ctx=$(mktemp -d -t isrbroker-image.XXXXXX)
trap 'rm -rf "$ctx"' EXIT
version=$(cd "$ROOT" && git describe --tags --always --dirty 2>/dev/null || echo dev)
log "compiling a static isrbroker ($version) for linux/$(go env GOARCH)"
(cd "$ROOT" && CGO_ENABLED=0 GOOS=linux go build -trimpath \
	-ldflags "-s -w -X main.Version=$version" -o "$ctx/isrbroker" .)
cp "$ROOT/scripts/docker/server.properties" "$ctx/server.properties"
mkdir "$ctx/data"
log "docker build -t $IMAGE"
docker build -q -f "$ROOT/scripts/docker/Dockerfile" -t "$IMAGE" "$ctx" >/dev/null
log "built $IMAGE ($(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{ printf "%.1f MB", $1 / 1e6 }'))"

if ((zookeeper)); then
	bash "$ROOT/scripts/docker/zookeeper/build-image.sh"
fi
