# shellcheck shell=bash
# scripts/cluster.sh up --secure: a local cluster of ZooKeeper and 3 brokers with SASL_SSL
# (SCRAM-SHA-512) for clients and between the brokers, and Kafka's ACL authorizer
# (docs/security.md, "Running a secure cluster"). Sourced by scripts/cluster.sh, whose helpers it
# uses (log, die, alive, zk4, start_zookeeper, stop_one, wait_until) with their globals set by
# secure_globals: its own state dir and ports, so a plain cluster is not disturbed.
#
# Generated once and reused by later runs, all under $STATE:
#   passwords.env            the keystore, admin and alice passwords
#   tls/ca.pem, ca.key       the CA (openssl)
#   tls/broker-N.keystore.jks  broker N's key and CA-signed certificate (keytool, JKS; SANs
#                            127.0.0.1 and localhost), tls/truststore.jks the CA
#   server-N.properties      broker N's configuration
#   admin.properties, alice.properties  client properties (Kafka's --command-config format)
#   kcat-admin.conf, kcat-alice.conf    the same for kcat -F

SECURE_BASE_PORT=19092 # brokers 19092-19094 (SASL_SSL)
SECURE_METRICS_BASE=19101
SECURE_ZK_PORT=12181
SECURE_MECH=SCRAM-SHA-512
SECURE_GROUP=demo-group

secure_globals() {
	STATE=.cluster-secure
	BIN=$STATE/isrbroker
	ZK_PORT=$SECURE_ZK_PORT
}

secure_port() { echo $((SECURE_BASE_PORT + $1 - 1)); }
secure_bootstrap() {
	local addrs=() id
	for id in "${IDS[@]}"; do addrs+=("127.0.0.1:$(secure_port "$id")"); done
	(IFS=,; echo "${addrs[*]}")
}

# secure_passwords: $STATE/passwords.env, made once (random), then sourced.
secure_passwords() {
	local f=$STATE/passwords.env
	if [[ ! -f "$f" ]]; then
		rnd() { openssl rand -hex 12; }
		umask 077
		cat >"$f" <<-EOF
			# written by scripts/cluster.sh up --secure
			STORE_PASSWORD=$(rnd)
			ADMIN_PASSWORD=$(rnd)
			ALICE_PASSWORD=$(rnd)
		EOF
		umask 022
	fi
	# shellcheck disable=SC1090
	source "$f"
}

# secure_tls: the CA and, per broker, a JKS keystore with a key pair whose certificate the CA
# signed (SANs IP:127.0.0.1, DNS:localhost: clients and brokers check the host name), and the JKS
# trust store holding the CA.
secure_tls() {
	local dir=$STATE/tls id ks
	mkdir -p "$dir"
	if [[ ! -f "$dir/ca.pem" ]]; then
		log "making a CA with openssl: $dir/ca.pem"
		openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 365 -subj "/CN=isrbroker-demo-ca" \
			-keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null || die "openssl could not make the CA"
	fi
	if [[ ! -f "$dir/truststore.jks" ]]; then
		keytool -importcert -noprompt -alias ca -file "$dir/ca.pem" -keystore "$dir/truststore.jks" \
			-storetype JKS -storepass "$STORE_PASSWORD" >/dev/null 2>&1 || die "keytool could not write $dir/truststore.jks"
	fi
	printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$dir/san.ext"
	for id in "${IDS[@]}"; do
		ks=$dir/broker-$id.keystore.jks
		[[ -f "$ks" ]] && continue
		log "making broker $id's keystore with keytool (JKS, signed by the CA): $ks"
		keytool -genkeypair -alias broker -keyalg RSA -keysize 2048 -validity 365 -dname "CN=broker-$id" \
			-ext "SAN=IP:127.0.0.1,DNS:localhost" -keystore "$ks.tmp" -storetype JKS \
			-storepass "$STORE_PASSWORD" -keypass "$STORE_PASSWORD" >/dev/null 2>&1 || die "keytool -genkeypair failed"
		keytool -certreq -alias broker -keystore "$ks.tmp" -storepass "$STORE_PASSWORD" \
			-file "$dir/broker-$id.csr" >/dev/null 2>&1 || die "keytool -certreq failed"
		openssl x509 -req -sha256 -days 365 -in "$dir/broker-$id.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
			-CAcreateserial -extfile "$dir/san.ext" -out "$dir/broker-$id.pem" 2>/dev/null || die "openssl could not sign broker $id's certificate"
		keytool -importcert -noprompt -alias ca -file "$dir/ca.pem" -keystore "$ks.tmp" \
			-storepass "$STORE_PASSWORD" >/dev/null 2>&1 || die "keytool could not import the CA into $ks"
		keytool -importcert -noprompt -alias broker -file "$dir/broker-$id.pem" -keystore "$ks.tmp" \
			-storepass "$STORE_PASSWORD" >/dev/null 2>&1 || die "keytool could not import broker $id's certificate"
		mv "$ks.tmp" "$ks"
	done
}

# secure_configs: each broker's properties and the client files.
secure_configs() {
	local id p jaas
	jaas="org.apache.kafka.common.security.scram.ScramLoginModule required username=\"admin\" password=\"$ADMIN_PASSWORD\";"
	for id in "${IDS[@]}"; do
		p=$(secure_port "$id")
		cat >"$STATE/server-$id.properties" <<-EOF
			# written by scripts/cluster.sh up --secure (docs/security.md, "Running a secure cluster")
			broker.id=$id
			listeners=SASL_SSL://127.0.0.1:$p
			inter.broker.listener.name=SASL_SSL
			sasl.enabled.mechanisms=$SECURE_MECH
			sasl.mechanism.inter.broker.protocol=$SECURE_MECH
			# the broker's own credentials on the inter-broker listener (docs/sasl.md §7)
			listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=$jaas
			ssl.keystore.type=JKS
			ssl.keystore.location=$STATE/tls/broker-$id.keystore.jks
			ssl.keystore.password=$STORE_PASSWORD
			ssl.key.password=$STORE_PASSWORD
			ssl.truststore.type=JKS
			ssl.truststore.location=$STATE/tls/truststore.jks
			ssl.truststore.password=$STORE_PASSWORD
			authorizer.class.name=kafka.security.authorizer.AclAuthorizer
			super.users=User:admin
			allow.everyone.if.no.acl.found=false
			log.dirs=$STATE/data/broker-$id
			num.partitions=3
			default.replication.factor=3
			offsets.topic.replication.factor=3
			zookeeper.connect=127.0.0.1:$ZK_PORT
			zookeeper.session.timeout.ms=6000
			metrics.listen=127.0.0.1:$((SECURE_METRICS_BASE + id - 1))
		EOF
	done
	local user pw
	for user in admin alice; do
		pw=$ADMIN_PASSWORD
		[[ "$user" == alice ]] && pw=$ALICE_PASSWORD
		cat >"$STATE/$user.properties" <<-EOF
			# $user's client configuration (Kafka's --command-config / --consumer.config format)
			security.protocol=SASL_SSL
			sasl.mechanism=$SECURE_MECH
			sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="$user" password="$pw";
			ssl.truststore.type=JKS
			ssl.truststore.location=$ROOT/$STATE/tls/truststore.jks
			ssl.truststore.password=$STORE_PASSWORD
		EOF
		cat >"$STATE/kcat-$user.conf" <<-EOF
			# kcat -F $STATE/kcat-$user.conf: $user over SASL_SSL
			security.protocol=SASL_SSL
			sasl.mechanisms=$SECURE_MECH
			sasl.username=$user
			sasl.password=$pw
			ssl.ca.location=$ROOT/$STATE/tls/ca.pem
		EOF
	done
}

# secure_zk_paths: the persistent paths a broker creates at its first start (Kafka's
# ZkData.PersistentZkPaths), made before any broker runs: the SCRAM users must exist before the
# brokers start, and isrbroker's admin commands refuse a ZooKeeper without /brokers/ids ("holds no
# isrbroker cluster") and, unlike Kafka's kafka-configs, do not create a missing /config/users.
secure_zk_paths() {
	local paths=(/brokers /brokers/ids /brokers/topics /config /config/changes /config/users /config/topics /config/brokers)
	ZK_CLI_OUT=
	zk_paths_made() {
		local p
		# ZooKeeper's CLI reads the commands from stdin, possibly before its session is up
		# (ConnectionLoss): a run that misses a path is repeated. Its exit status is the last
		# command's, so the output decides.
		ZK_CLI_OUT=$({ printf 'create %s\n' "${paths[@]}"; echo quit; } | timeout 60 java -Xmx128m -XX:+UseSerialGC \
			-cp "$ZK_JAR" org.apache.zookeeper.ZooKeeperMain -server "127.0.0.1:$ZK_PORT" 2>&1) || true
		for p in "${paths[@]}"; do
			grep -q -E "^(Created|Node already exists:) $p\$" <<<"$ZK_CLI_OUT" || return 1
		done
	}
	wait_until 60 zk_paths_made || die "could not create ${paths[*]} in ZooKeeper: $ZK_CLI_OUT"
}

# secure_scram_user NAME PASSWORD: the user's SCRAM-SHA-512 credential in /config/users (through
# ZooKeeper: the brokers need admin's before they can talk to each other).
secure_scram_user() {
	"$BIN" configs --zookeeper "127.0.0.1:$ZK_PORT" --alter --entity-type users --entity-name "$1" \
		--add-config "$SECURE_MECH=[password=$2]" >/dev/null || die "could not create the SCRAM user $1"
	log "SCRAM user $1 ($SECURE_MECH) is in ZooKeeper"
}

secure_start_broker() {
	local id=$1 pidfile=$STATE/broker-$1.pid
	if alive "$pidfile" isrbroker; then
		log "broker $id already running (pid $(cat "$pidfile"))"
		return
	fi
	log "starting broker $id on SASL_SSL://127.0.0.1:$(secure_port "$id") (config $STATE/server-$id.properties, log $STATE/broker-$id.log)"
	setsid "$BIN" broker --config "$STATE/server-$id.properties" >>"$STATE/broker-$id.log" 2>&1 </dev/null &
	echo $! >"$pidfile"
	disown
}

kcat_as() { local user=$1; shift; timeout 60 kcat -F "$STATE/kcat-$user.conf" -b "$(secure_bootstrap)" "$@"; }
secure_metadata_ok() { kcat_as admin -L -m 5 2>/dev/null | grep -q " ${#IDS[@]} brokers:"; }

cmd_up_secure() {
	local t0=$SECONDS id p
	bash scripts/install-deps.sh cluster
	command -v keytool >/dev/null || die "keytool (a JDK) is needed for the JKS keystores"
	command -v openssl >/dev/null || die "openssl is needed for the CA"
	for id in "${IDS[@]}"; do
		p=$(secure_port "$id")
		if ! alive "$STATE/broker-$id.pid" isrbroker && port_open "$p"; then
			die "port $p is in use by a process this script did not start; stop it first"
		fi
	done
	mkdir -p "$STATE"
	log "building $BIN"
	go build -o "$BIN" .
	secure_passwords
	secure_tls
	secure_configs
	start_zookeeper
	secure_zk_paths
	secure_scram_user admin "$ADMIN_PASSWORD"
	secure_scram_user alice "$ALICE_PASSWORD"
	for id in "${IDS[@]}"; do secure_start_broker "$id"; done
	wait_until 90 all_registered || die "brokers did not all register in ZooKeeper within 90 s (logs in $STATE/)"
	log "all ${#IDS[@]} brokers registered in ZooKeeper"
	wait_until 60 secure_metadata_ok || die "admin's metadata over SASL_SSL does not list all ${#IDS[@]} brokers after 60 s (logs in $STATE/)"
	log "secure cluster is up after $((SECONDS - t0)) s: SASL_SSL bootstrap $(secure_bootstrap), ZooKeeper 127.0.0.1:$ZK_PORT"
	secure_demo
	secure_print_state
	log "up and demo took $((SECONDS - t0)) s; stop the cluster with: scripts/cluster.sh down --secure"
}

# secure_demo: alice is refused on topic demo until the ACLs --producer and --consumer allow her;
# then she produces and consumes (also in group demo-group).
secure_demo() {
	local zk="127.0.0.1:$ZK_PORT" out run input
	"$BIN" topics --zookeeper "$zk" --create --if-not-exists --topic "$DEMO_TOPIC" \
		--partitions "$DEMO_PARTITIONS" --replication-factor "$DEMO_RF" --config "min.insync.replicas=$DEMO_MIN_ISR" >/dev/null ||
		die "could not create topic $DEMO_TOPIC"
	"$BIN" acls --authorizer-properties "zookeeper.connect=$zk" --remove --topic "$DEMO_TOPIC" --force >/dev/null ||
		die "could not remove the ACLs of topic $DEMO_TOPIC left by an earlier run"
	"$BIN" acls --authorizer-properties "zookeeper.connect=$zk" --remove --group "$SECURE_GROUP" --force >/dev/null ||
		die "could not remove the ACLs of group $SECURE_GROUP left by an earlier run"
	run=$(date +%H:%M:%S)
	input=$(for i in $(seq 1 5); do echo "key-$i:secure hello $i (run $run)"; done)

	echo "== as alice, no ACL yet (allow.everyone.if.no.acl.found=false): kcat -P -t $DEMO_TOPIC"
	wait_refused() {
		out=$(kcat_as alice -P -t "$DEMO_TOPIC" -K: -X acks=all -X message.timeout.ms=5000 <<<"$input" 2>&1) && return 1
		grep -qi "authoriz" <<<"$out"
	}
	wait_until 60 wait_refused || die "alice was not refused on topic $DEMO_TOPIC; kcat said: $out"
	grep -i "authoriz" <<<"$out" | head -n 3
	log "refused as expected: alice may not write to $DEMO_TOPIC"
	echo "== kcat -C as alice"
	out=$(kcat_as alice -C -t "$DEMO_TOPIC" -e -o beginning -q 2>&1) && die "alice could consume $DEMO_TOPIC without an ACL"
	grep -i "authoriz" <<<"$out" | head -n 3 || die "kcat -C as alice failed otherwise: $out"
	log "refused as expected: alice may not read $DEMO_TOPIC"

	echo "== isrbroker acls --authorizer-properties zookeeper.connect=$zk --add --allow-principal User:alice --producer --consumer --topic $DEMO_TOPIC --group $SECURE_GROUP"
	"$BIN" acls --authorizer-properties "zookeeper.connect=$zk" --add --allow-principal User:alice \
		--producer --consumer --topic "$DEMO_TOPIC" --group "$SECURE_GROUP" || die "isrbroker acls --add failed"

	# Each broker's ACL cache follows the change notification: poll until alice may produce.
	produced() { kcat_as alice -P -t "$DEMO_TOPIC" -K: -X acks=all -X message.timeout.ms=10000 <<<"$input" >/dev/null 2>&1; }
	wait_until 60 produced || die "alice still cannot produce to $DEMO_TOPIC 60 s after the ACLs were added"
	log "alice produced 5 records to $DEMO_TOPIC (acks=all) over SASL_SSL"
	echo "== kcat -C as alice -t $DEMO_TOPIC -e"
	out=$(kcat_as alice -C -t "$DEMO_TOPIC" -e -o beginning -q -f 'partition %p offset %o  %k = %s\n') || die "kcat -C as alice failed"
	grep -F "(run $run)" <<<"$out"
	check_consumed "$input" "$out" "produced by alice"
	echo "== kcat -G $SECURE_GROUP as alice"
	out=$(kcat_as alice -G "$SECURE_GROUP" "$DEMO_TOPIC" -X auto.offset.reset=earliest -e -q -f 'partition %p offset %o  %k = %s\n') ||
		die "kcat -G $SECURE_GROUP as alice failed"
	check_consumed "$input" "$out" "produced by alice (group $SECURE_GROUP)"
	log "secure demo ok: alice was refused without ACLs, then produced and consumed (also in group $SECURE_GROUP)"
}

secure_print_state() {
	log "state in $STATE/ (reused by the next up --secure); the passwords, $STATE/passwords.env:"
	grep -v "^#" "$STATE/passwords.env" | sed "s/^/    /"
	echo "    CA $STATE/tls/ca.pem; keystores $STATE/tls/broker-N.keystore.jks, trust store $STATE/tls/truststore.jks (JKS, password \$STORE_PASSWORD)"
	echo "    admin (super user): $STATE/admin.properties (--command-config), $STATE/kcat-admin.conf (kcat -F)"
	echo "    alice:              $STATE/alice.properties, $STATE/kcat-alice.conf"
	echo "  try:"
	echo "    kcat -F $STATE/kcat-alice.conf -b $(secure_bootstrap) -C -t $DEMO_TOPIC -e"
	echo "    isrbroker acls --authorizer-properties zookeeper.connect=127.0.0.1:$ZK_PORT --list"
}

cmd_down_secure() {
	secure_globals
	cmd_down
}

cmd_clean_secure() {
	secure_globals
	cmd_down
	log "removing $STATE/ (keystores, passwords, data)"
	rm -rf "$STATE"
}

cmd_status_secure() {
	local id
	if alive "$STATE/zookeeper.pid" QuorumPeerMain; then
		log "ZooKeeper running (pid $(cat "$STATE/zookeeper.pid")) on 127.0.0.1:$ZK_PORT"
	else
		log "ZooKeeper not running (started by this script)"
	fi
	for id in "${IDS[@]}"; do
		if alive "$STATE/broker-$id.pid" isrbroker; then
			log "broker $id running (pid $(cat "$STATE/broker-$id.pid")) on SASL_SSL://127.0.0.1:$(secure_port "$id")"
		else
			log "broker $id not running"
		fi
	done
	if [[ -f "$STATE/kcat-admin.conf" ]]; then
		echo "== kcat -F $STATE/kcat-admin.conf -L"
		kcat_as admin -L -m 5 || true
	fi
}
