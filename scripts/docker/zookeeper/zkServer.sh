#!/bin/bash
# zkServer.sh of the locally built ZooKeeper image (scripts/docker/zookeeper/build-image.sh).
# It implements the part of the official `zookeeper:3.8` image's interface that
# docker-compose.yml relies on, so the compose file runs either image unchanged:
#
#   zkServer.sh start-foreground   write $ZOO_CONF_DIR/zoo.cfg from the ZOO_* variables (unless
#                                  the file exists) and run a standalone ZooKeeper in the foreground
#   zkServer.sh status             exit 0 when the server on the client port answers "srvr"
#                                  (the compose health check)
#
# Variables (same names and defaults as the official image): ZOO_CONF_DIR=/conf,
# ZOO_DATA_DIR=/data, ZOO_DATA_LOG_DIR=/datalog, ZOO_PORT=2181, ZOO_TICK_TIME=2000,
# ZOO_MAX_CLIENT_CNXNS=60, ZOO_4LW_COMMANDS_WHITELIST=srvr, ZOO_ADMINSERVER_ENABLED=true,
# ZOO_AUTOPURGE_PURGEINTERVAL=0, ZOO_AUTOPURGE_SNAPRETAINCOUNT=3; JVMFLAGS is passed to java.
set -euo pipefail

conf_dir=${ZOO_CONF_DIR:-/conf}
port=${ZOO_PORT:-2181}

write_config() {
	mkdir -p "$conf_dir" "${ZOO_DATA_DIR:-/data}" "${ZOO_DATA_LOG_DIR:-/datalog}"
	cat >"$conf_dir/zoo.cfg" <<-CFG
		# written by zkServer.sh at first start; delete it to regenerate from the ZOO_* variables
		tickTime=${ZOO_TICK_TIME:-2000}
		initLimit=${ZOO_INIT_LIMIT:-5}
		syncLimit=${ZOO_SYNC_LIMIT:-2}
		dataDir=${ZOO_DATA_DIR:-/data}
		dataLogDir=${ZOO_DATA_LOG_DIR:-/datalog}
		clientPort=$port
		maxClientCnxns=${ZOO_MAX_CLIENT_CNXNS:-60}
		standaloneEnabled=true
		admin.enableServer=${ZOO_ADMINSERVER_ENABLED:-true}
		4lw.commands.whitelist=${ZOO_4LW_COMMANDS_WHITELIST:-srvr}
		autopurge.purgeInterval=${ZOO_AUTOPURGE_PURGEINTERVAL:-0}
		autopurge.snapRetainCount=${ZOO_AUTOPURGE_SNAPRETAINCOUNT:-3}
	CFG
}

case "${1:-start-foreground}" in
start-foreground)
	[[ -f "$conf_dir/zoo.cfg" ]] || write_config
	# shellcheck disable=SC2086 # JVMFLAGS is a list of flags
	exec java ${JVMFLAGS:--Xmx256m -XX:+UseSerialGC} \
		-Dzookeeper.root.logger=INFO,CONSOLE \
		-Dlog4j.configuration=file:/etc/zookeeper/conf/log4j.properties \
		-cp /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar:/etc/zookeeper/conf \
		org.apache.zookeeper.server.quorum.QuorumPeerMain "$conf_dir/zoo.cfg"
	;;
status)
	{ exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null || { echo "ZooKeeper: nothing listens on port $port"; exit 1; }
	printf srvr >&3
	out=$(timeout 5 cat <&3 || true)
	if [[ "$out" == *"Mode: "* ]]; then
		echo "ZooKeeper: ${out##*Mode: }" | head -n1
		exit 0
	fi
	echo "ZooKeeper: no answer to srvr on port $port"
	exit 1
	;;
*)
	echo "usage: zkServer.sh start-foreground|status" >&2
	exit 2
	;;
esac
