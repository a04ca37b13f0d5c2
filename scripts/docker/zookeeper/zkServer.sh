#!/bin/bash
# zkServer.sh of the locally built ZooKeeper image (scripts/docker/zookeeper/build-image.sh).
# It implements the part of the official `zookeeper:3.8` image's interface that
# docker-compose.yml relies on, so the compose file runs either image unchanged:
#
#   zkServer.sh start-foreground   write $ZOO_CONF_DIR/zoo.cfg from the ZOO_* variables (unless
#                                  the file exists) and $ZOO_DATA_DIR/myid from ZOO_MY_ID (unless
#                                  it exists), then run ZooKeeper in the foreground: standalone,
#                                  or a member of the ensemble ZOO_SERVERS lists
#   zkServer.sh status             exit 0 when the server on the client port answers "srvr"
#                                  (the compose health check)
#
# Variables (same names and defaults as the official image): ZOO_CONF_DIR=/conf,
# ZOO_DATA_DIR=/data, ZOO_DATA_LOG_DIR=/datalog, ZOO_PORT=2181, ZOO_TICK_TIME=2000,
# ZOO_MAX_CLIENT_CNXNS=60, ZOO_4LW_COMMANDS_WHITELIST=srvr, ZOO_ADMINSERVER_ENABLED=true,
# ZOO_AUTOPURGE_PURGEINTERVAL=0, ZOO_AUTOPURGE_SNAPRETAINCOUNT=3; JVMFLAGS is passed to java.
# An ensemble (docker-compose.ensemble.yml), as in the official image: ZOO_MY_ID is this
# server's id (1-255, default 1) and ZOO_SERVERS the space-separated zoo.cfg server lines,
#   ZOO_SERVERS="server.1=zookeeper1:2888:3888;2181 server.2=zookeeper2:2888:3888;2181 ..."
# The quorum ports listen on all interfaces (quorumListenOnAllIPs), so a member's own line may
# name its container.
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
		standaloneEnabled=${ZOO_STANDALONE_ENABLED:-true}
		admin.enableServer=${ZOO_ADMINSERVER_ENABLED:-true}
		4lw.commands.whitelist=${ZOO_4LW_COMMANDS_WHITELIST:-srvr}
		autopurge.purgeInterval=${ZOO_AUTOPURGE_PURGEINTERVAL:-0}
		autopurge.snapRetainCount=${ZOO_AUTOPURGE_SNAPRETAINCOUNT:-3}
	CFG
	if [[ -n "${ZOO_SERVERS:-}" ]]; then
		echo "quorumListenOnAllIPs=true" >>"$conf_dir/zoo.cfg"
		local server
		for server in $ZOO_SERVERS; do
			[[ "$server" =~ ^server\.[0-9]+= ]] || { echo "zkServer.sh: ZOO_SERVERS entry \"$server\" is not server.N=host:port:port[;clientPort]" >&2; exit 2; }
			echo "$server" >>"$conf_dir/zoo.cfg"
		done
	fi
}

write_myid() {
	local id=${ZOO_MY_ID:-1}
	[[ "$id" =~ ^[0-9]+$ ]] && ((id >= 1 && id <= 255)) || { echo "zkServer.sh: ZOO_MY_ID=\"$id\" is not a server id 1-255" >&2; exit 2; }
	echo "$id" >"${ZOO_DATA_DIR:-/data}/myid"
}

case "${1:-start-foreground}" in
start-foreground)
	[[ -f "$conf_dir/zoo.cfg" ]] || write_config
	[[ -f "${ZOO_DATA_DIR:-/data}/myid" ]] || write_myid
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
