#!/usr/bin/env bash
# Run on the host before `docker compose ... -f docker-compose.secure.yml up`: makes the TLS
# material and passwords of the secure compose cluster in .compose-secure/ (ignored by git),
# with openssl and keytool (a JDK), once; later runs keep what exists.
#
#   scripts/docker/secure-setup.sh [DIR]     (default .compose-secure in the repository root)
#
#   DIR/ca.pem, ca.key                 the CA
#   DIR/broker-N.keystore.jks          broker N's key pair signed by the CA (JKS; SANs brokerN,
#                                      localhost, 127.0.0.1 and ISRBROKER_ADVERTISED_HOST)
#   DIR/truststore.jks                 the CA (JKS)
#   DIR/secure.env                     the passwords and the brokers' JAAS entries: both the
#                                      brokers' env_file and `docker compose --env-file`
#   DIR/kcat-admin.conf, kcat-alice.conf, admin.properties, alice.properties
#                                      client settings for the host (published ports, ca.pem)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DIR=${1:-$ROOT/.compose-secure}
HOST=${ISRBROKER_ADVERTISED_HOST:-127.0.0.1}
MECH=SCRAM-SHA-512

log() { echo "secure-setup: $*"; }
die() { echo "secure-setup: $*" >&2; exit 1; }
command -v openssl >/dev/null || die "openssl not found"
command -v keytool >/dev/null || die "keytool (a JDK) not found"

mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
if [[ ! -f "$DIR/secure.env" ]]; then
	store=$(openssl rand -hex 12) admin=$(openssl rand -hex 12) alice=$(openssl rand -hex 12)
	jaas="org.apache.kafka.common.security.scram.ScramLoginModule required username=\"admin\" password=\"$admin\";"
	cat >"$DIR/secure.env" <<-EOF
		# written by scripts/docker/secure-setup.sh: the brokers' env_file (KAFKA_* settings) and
		# docker compose --env-file (ISRBROKER_* for the SCRAM user services)
		ISRBROKER_STORE_PASSWORD=$store
		ISRBROKER_ADMIN_PASSWORD=$admin
		ISRBROKER_ALICE_PASSWORD=$alice
		KAFKA_SSL_KEYSTORE_PASSWORD=$store
		KAFKA_SSL_KEY_PASSWORD=$store
		KAFKA_SSL_TRUSTSTORE_PASSWORD=$store
		KAFKA_LISTENER_NAME_INTERNAL_SCRAM___SHA___512_SASL_JAAS_CONFIG=$jaas
		KAFKA_LISTENER_NAME_EXTERNAL_SCRAM___SHA___512_SASL_JAAS_CONFIG=$jaas
	EOF
	log "passwords in $DIR/secure.env"
fi
store=$(sed -n 's/^ISRBROKER_STORE_PASSWORD=//p' "$DIR/secure.env")
admin=$(sed -n 's/^ISRBROKER_ADMIN_PASSWORD=//p' "$DIR/secure.env")
alice=$(sed -n 's/^ISRBROKER_ALICE_PASSWORD=//p' "$DIR/secure.env")

if [[ ! -f "$DIR/ca.pem" ]]; then
	log "CA: $DIR/ca.pem (openssl)"
	openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 365 -subj "/CN=isrbroker-compose-ca" \
		-keyout "$DIR/ca.key" -out "$DIR/ca.pem" 2>/dev/null || die "openssl could not make the CA"
fi
if [[ ! -f "$DIR/truststore.jks" ]]; then
	keytool -importcert -noprompt -alias ca -file "$DIR/ca.pem" -keystore "$DIR/truststore.jks" \
		-storetype JKS -storepass "$store" >/dev/null 2>&1 || die "keytool could not write the trust store"
fi
san_of() {
	local s="DNS:broker$1,DNS:localhost,IP:127.0.0.1"
	if [[ "$HOST" =~ ^[0-9.]+$ ]]; then
		[[ "$HOST" == 127.0.0.1 ]] || s+=",IP:$HOST"
	else
		s+=",DNS:$HOST"
	fi
	echo "$s"
}
for id in 1 2 3; do
	ks=$DIR/broker-$id.keystore.jks
	[[ -f "$ks" ]] && continue
	log "broker $id's keystore: $ks (keytool, JKS, SANs $(san_of "$id"))"
	rm -f "$ks.tmp"
	keytool -genkeypair -alias broker -keyalg RSA -keysize 2048 -validity 365 -dname "CN=broker$id" \
		-ext "SAN=$(san_of "$id")" -keystore "$ks.tmp" -storetype JKS -storepass "$store" -keypass "$store" \
		>/dev/null 2>&1 || die "keytool -genkeypair failed"
	keytool -certreq -alias broker -keystore "$ks.tmp" -storepass "$store" -file "$DIR/broker-$id.csr" >/dev/null 2>&1 ||
		die "keytool -certreq failed"
	printf 'subjectAltName=%s\n' "$(san_of "$id")" >"$DIR/san-$id.ext"
	openssl x509 -req -sha256 -days 365 -in "$DIR/broker-$id.csr" -CA "$DIR/ca.pem" -CAkey "$DIR/ca.key" \
		-CAcreateserial -extfile "$DIR/san-$id.ext" -out "$DIR/broker-$id.pem" 2>/dev/null || die "openssl could not sign"
	keytool -importcert -noprompt -alias ca -file "$DIR/ca.pem" -keystore "$ks.tmp" -storepass "$store" >/dev/null 2>&1 ||
		die "keytool could not import the CA"
	keytool -importcert -noprompt -alias broker -file "$DIR/broker-$id.pem" -keystore "$ks.tmp" -storepass "$store" \
		>/dev/null 2>&1 || die "keytool could not import the certificate"
	mv "$ks.tmp" "$ks"
done
# The brokers run as uid 1000 and read the stores through a read-only bind mount.
chmod 0644 "$DIR"/*.jks

for user in admin alice; do
	pw=$admin
	[[ "$user" == alice ]] && pw=$alice
	cat >"$DIR/kcat-$user.conf" <<-EOF
		security.protocol=SASL_SSL
		sasl.mechanisms=$MECH
		sasl.username=$user
		sasl.password=$pw
		ssl.ca.location=$DIR/ca.pem
	EOF
	cat >"$DIR/$user.properties" <<-EOF
		security.protocol=SASL_SSL
		sasl.mechanism=$MECH
		sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="$user" password="$pw";
		ssl.truststore.type=JKS
		ssl.truststore.location=$DIR/truststore.jks
		ssl.truststore.password=$store
	EOF
done
log "ready: docker compose --env-file $DIR/secure.env -f docker-compose.yml -f docker-compose.secure.yml up -d"
log "clients on the host: kcat -F $DIR/kcat-alice.conf -b $HOST:9092 -L"
