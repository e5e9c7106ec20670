#!/usr/bin/env bash
# Workers over TCP with mutual TLS, on loopback: fnfs ca init and issue
# (file modes), --listen, a worker over tls:// that runs an instance and
# answers hot calls, its status lines; every refusal (no certificate,
# another CA, another id, expired, revoked, plain TCP without --insecure)
# with a worker.refused event and its reason; revoke persisted across a
# kill -9 of the controller; --insecure; TLS session resumption after a
# restart of the controller.
. "$(dirname "$0")/lib.sh"

free_port() {
	free_ports 1
}
PORT=$(free_port)
W=$MNT/workers
CA=$DATA/ca/ca.pem
CERTS=$T/certs
mkdir -p "$CERTS"

# tls_worker ID CERT-NAME [ARGS...]: `fnfs worker` over tls:// with
# CERTS/CERT-NAME.{pem,key}, in the background; its pid in WPID[ID].
tls_worker() {
	local id=$1 cert=$2
	shift 2
	"$FNFS" worker --connect "tls://127.0.0.1:$PORT" --id "$id" --memory 512 \
		--ca "$CA" --cert "$CERTS/$cert.pem" --key "$CERTS/$cert.key" \
		--data "$T/w-$id" "$@" 2>>"$T/$id.log" &
	WPID[$id]=$!
	BGPIDS+=("$!")
}

# refused_run ID CERT-NAME [ARGS...]: the same in the foreground, bounded;
# prints its exit code.
refused_run() {
	local id=$1 cert=$2
	shift 2
	timeout 20 "$FNFS" worker --connect "tls://127.0.0.1:$PORT" --id "$id" --memory 512 \
		--ca "$CA" --cert "$CERTS/$cert.pem" --key "$CERTS/$cert.key" \
		--data "$T/w-$id" "$@" >>"$T/refused.log" 2>&1
	echo $?
}

# past: the clock is past the second t0.
t0=0
past() { [ "$(date +%s)" -gt "$t0" ]; }

# refused_event PATTERN: a worker.refused event matches PATTERN (grep -E).
refused_event() {
	grep 'worker\.refused' "$MNT/events" | grep -qE "$1"
}

# ---- the CA and certificates
"$FNFS" mount --data "$T/noca" --listen "127.0.0.1:$PORT" "$T/mnt2" 2>"$T/noca.err"
check_eq "--listen without a CA exits 2" "$?" "2"
check "and says to run fnfs ca init" grep -q "fnfs ca init --data $T/noca" "$T/noca.err"
"$FNFS" mount --data "$T/noca" --insecure "$T/mnt2" 2>/dev/null
check_eq "--insecure without --listen exits 2" "$?" "2"

check "fnfs ca init" eval '"$FNFS" ca init --data "$DATA" >"$T/init.out"'
check "it says where the CA is" grep -q "the cluster CA is in $DATA/ca" "$T/init.out"
check_eq "modes of the CA's files" "$(stat -c '%a %n' "$DATA/ca" "$DATA/ca/ca.key" "$DATA/ca/ca.pem" "$DATA/ca/controller.key" "$DATA/ca/ticket.key" | sed "s|$DATA/||" | tr '\n' ,)" \
	"700 ca,600 ca/ca.key,644 ca/ca.pem,600 ca/controller.key,600 ca/ticket.key,"
"$FNFS" ca init --data "$DATA" 2>"$T/again.err"
check_eq "a second ca init in the same directory fails" "$?" "1"
check "saying there is a CA already" grep -q "exists already" "$T/again.err"
"$FNFS" ca issue --data "$DATA" w1 --out "$CERTS" >"$T/issue.out"
check_eq "fnfs ca issue prints where" "$(head -2 "$T/issue.out" | tr '\n' ,)" "$CERTS/w1.pem,$CERTS/w1.key,"
check_eq "the key is 0600, the certificate 0644" "$(stat -c '%a' "$CERTS/w1.key" "$CERTS/w1.pem" | tr '\n' ,)" "600,644,"
check "the worker id is the certificate's CN" eval 'openssl x509 -in "$CERTS/w1.pem" -noout -subject | grep -q "CN *= *w1"'
check "it is signed by the CA" eval 'openssl verify -CAfile "$CA" "$CERTS/w1.pem" >/dev/null'
"$FNFS" ca issue --data "$DATA" w1 --out "$CERTS" 2>/dev/null
check_eq "an existing certificate is never overwritten" "$?" "1"
"$FNFS" ca issue --data "$DATA" 'bad id' --out "$CERTS" 2>/dev/null
check_eq "a bad id is a usage error" "$?" "2"
"$FNFS" ca issue --data "$DATA" w2 --out "$CERTS" >/dev/null
"$FNFS" ca issue --data "$DATA" w3 --out "$CERTS" --days 0 >/dev/null
check "--days 0 issues an expired certificate" eval '! openssl x509 -in "$CERTS/w3.pem" -noout -checkend 0 >/dev/null'
# Another cluster's CA, and a certificate for w1 from it.
"$FNFS" ca init --data "$T/other" >/dev/null
"$FNFS" ca issue --data "$T/other" w1 --out "$T/other" >/dev/null
cp "$T/other/w1.pem" "$CERTS/other-w1.pem"
cp "$T/other/w1.key" "$CERTS/other-w1.key"

# ---- a worker over TLS
start_fnfs --workers 0 --listen "127.0.0.1:$PORT" 2>>"$T/mount.log" || exit 1
check "the controller logs where it listens" grep -q "listening for workers on 127.0.0.1:$PORT (TLS 1.3)" "$T/mount.log"
tls_worker w1 w1
check "a worker over tls:// registers" wait_until 10 state_is "$W/w1/state" healthy
check_eq "status: transport tls" "$(stat_of "$W/w1/status" transport)" "tls"
check "status: its address" eval '[[ "$(stat_of "$W/w1/status" address)" =~ ^127\.0\.0\.1:[0-9]+$ ]]'
check_eq "status: the pid it reports" "$(stat_of "$W/w1/status" pid) $(cat "$W/w1/pid")" "${WPID[w1]} ${WPID[w1]}"
check_eq "status: a new TLS session" "$(stat_of "$W/w1/status" tls_resumed)" "no"
check_eq "status: the serial of its certificate" "$(stat_of "$W/w1/status" cert_serial)" \
	"$(openssl x509 -in "$CERTS/w1.pem" -noout -serial | sed 's/^serial=//')"

F=$MNT/tenants/acme/prod/up
mkdir -p "$F"
write "$F/mode" hot
write "$F/command" 'while read -r l; do echo "seen $l" >&2; echo "$l" | tr a-z A-Z; done'
check "an instance runs on the TLS worker" wait_until 10 running_all "$F" 1
check_eq "placed on w1" "$(where "$F/instances/0")" "w1"
check_eq "a hot call over TLS" "$(echo 'hello tls' | "$FNFS" invoke acme/prod/up --mount "$MNT")" "HELLO TLS"
check "its log comes over TLS from the worker" wait_until 30 grep -q "seen hello tls" "$F/instances/0/log"
J=$MNT/tenants/acme/prod/json
mkdir -p "$J"
cat >"$J/config" <<JSON
{"command": "python3 -u $FIXTURES/upper.py", "mode": "hot", "format": "json", "timeout": 5000}
JSON
check "a json function runs on it" wait_until 10 running_all "$J" 1
big=$(head -c 300000 /dev/zero | tr '\0' 'a')
check_eq "a 300 KB call and its answer cross TLS whole" "$(printf '%s' "$big" | "$FNFS" invoke acme/prod/json --mount "$MNT" | wc -c)" "300000"
out=$(for i in $(seq 20); do echo "c$i" | "$FNFS" invoke acme/prod/up --mount "$MNT"; done | tr '\n' ' ')
check_eq "20 calls in a row" "$out" "$(for i in $(seq 20); do printf 'C%s ' "$i"; done)"

# A "controller" that accepts and never answers: the worker gives the
# attempt up within its connect timeout (5 s) and tries again.
SILENT=$(free_port)
python3 -c 'import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", '"$SILENT"')); s.listen(8); c = []
end = time.time() + 30
while time.time() < end:
    s.settimeout(1)
    try: c.append(s.accept()[0])
    except OSError: pass' &
BGPIDS+=("$!")
silentpid=$!
wait_until 30 eval 'ss -ltn | grep -q "127.0.0.1:$SILENT "'
"$FNFS" worker --connect "tls://127.0.0.1:$SILENT" --id w9 --memory 512 --ca "$CA" \
	--cert "$CERTS/w2.pem" --key "$CERTS/w2.key" --data "$T/w-w9" 2>"$T/w9.log" &
BGPIDS+=("$!")
w9=$!
check "a handshake with no answer is given up within the connect timeout, and tried again" \
	wait_until 14 eval '[ "$(grep -c "no answer from tls://127.0.0.1:$SILENT within 5000 ms; trying again" "$T/w9.log")" -ge 2 ]'
kill "$w9" "$silentpid" 2>/dev/null

# ---- refusals, each journalled with its reason
python3 - "$PORT" >"$T/nocert.out" 2>&1 <<'PY'
import socket, ssl, struct, sys
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
ctx.minimum_version = ssl.TLSVersion.TLSv1_3
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10))
data = b""
while True:
    try:
        b = s.recv(65536)
    except (ssl.SSLError, OSError):
        break
    if not b:
        break
    data += b
n = struct.unpack(">I", data[:4])[0] if len(data) >= 4 else 0
print(data[4:4 + n].decode())
PY
check "no certificate: the peer is told why over TLS" grep -q '"type":"refused".*no client certificate' "$T/nocert.out"
check "no certificate: worker.refused" wait_until 30 refused_event 'transport=tls address=127\.0\.0\.1:[0-9]+ reason="no client certificate"'

check_eq "a certificate of another CA: the worker exits 1" "$(refused_run w1 other-w1)" "1"
check "another CA: worker.refused" refused_event 'cn=w1 .*reason="the certificate of w1 is not from the cluster CA'
check "the worker says why" grep -q "refused w1: the certificate of w1 is not from the cluster CA" "$T/refused.log"
check_eq "a certificate for another id: the worker exits 1" "$(refused_run w1 w2)" "1"
check "another id: worker.refused" refused_event '^[^ ]+ worker\.refused w1 .*cn=w2 .*reason="the certificate is for w2: it may not register as w1"'
check_eq "an expired certificate: the worker exits 1" "$(refused_run w3 w3)" "1"
check "expired: worker.refused" refused_event 'cn=w3 .*reason="the certificate of w3 has expired"'
check_eq "w1 is still connected, on its first connection" "$(stat_of "$W/w1/status" state) $(cat "$W/w1/pid")" "healthy ${WPID[w1]}"

timeout 20 "$FNFS" worker --connect "tcp://127.0.0.1:$PORT" --insecure --id plain --memory 512 --data "$T/w-plain" >"$T/plain.log" 2>&1
check_eq "plain TCP without --insecure on the controller: the worker exits 1" "$?" "1"
check "plain TCP: worker.refused" refused_event 'transport=tcp address=127\.0\.0\.1:[0-9]+ reason="plain TCP is refused'
check "the worker says why" grep -q "plain TCP is refused" "$T/plain.log"
"$FNFS" worker --connect "tcp://127.0.0.1:$PORT" --id plain --memory 512 --data "$T/w-plain" 2>/dev/null
check_eq "tcp:// without --insecure on the worker is a usage error" "$?" "2"
"$FNFS" worker --connect "tls://127.0.0.1:$PORT" --id w1 --memory 512 --data "$T/w-x" 2>/dev/null
check_eq "tls:// without --ca, --cert and --key is a usage error" "$?" "2"
"$FNFS" worker --connect "tls://localhost:$PORT" --id w1 --memory 512 --ca "$CA" --cert "$CERTS/w1.pem" --key "$CERTS/w1.key" --data "$T/w-x" 2>/dev/null
check_eq "a host name instead of an address is a usage error" "$?" "2"

# The worker checks the controller: a --ca of another cluster, or a
# server whose certificate is a worker's, is no controller of its own.
"$FNFS" worker --connect "tls://127.0.0.1:$PORT" --id w1 --memory 512 --ca "$T/other/ca/ca.pem" \
	--cert "$CERTS/w1.pem" --key "$CERTS/w1.key" --data "$T/w-x" 2>"$T/wrongca.log" &
BGPIDS+=("$!")
wrongca=$!
check "a worker whose --ca did not sign the controller's certificate refuses it" \
	wait_until 10 grep -q "TLS with tls://127.0.0.1:$PORT: TLS handshake: .*certificate verify failed" "$T/wrongca.log"
check "the controller journals the failed handshake" wait_until 30 refused_event 'transport=tls .*reason="TLS handshake failed: .*unknown ca'
kill "$wrongca"
IMP=$(free_port)
python3 -c 'import socket, ssl, sys, time
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[1], sys.argv[2])
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[3]))); s.listen(8)
end = time.time() + 30
while time.time() < end:
    s.settimeout(1)
    try:
        c = s.accept()[0]
        ctx.wrap_socket(c, server_side=True)
    except OSError:
        pass' "$CERTS/w2.pem" "$CERTS/w2.key" "$IMP" &
BGPIDS+=("$!")
imp=$!
wait_until 30 eval 'ss -ltn | grep -q "127.0.0.1:$IMP "'
"$FNFS" worker --connect "tls://127.0.0.1:$IMP" --id w1 --memory 512 --ca "$CA" \
	--cert "$CERTS/w1.pem" --key "$CERTS/w1.key" --data "$T/w-x" 2>"$T/imp.log" &
BGPIDS+=("$!")
impw=$!
check "a server with a worker's certificate of the same CA is no controller" \
	wait_until 10 grep -q "TLS with tls://127.0.0.1:$IMP: .*certificate verify failed" "$T/imp.log"
kill "$impw" "$imp"

# ---- the TLS session resumes after a restart of the controller
crash_fnfs
start_fnfs --workers 0 --listen "127.0.0.1:$PORT" 2>>"$T/mount.log" || exit 1
check "w1 comes back" wait_until 15 state_is "$W/w1/state" healthy
check_eq "its TLS session was resumed" "$(stat_of "$W/w1/status" tls_resumed)" "yes"
check "the worker logs it" grep -q "worker w1: TLS session with tls://127.0.0.1:$PORT resumed" "$T/w1.log"
check_eq "the same worker process" "$(cat "$W/w1/pid")" "${WPID[w1]}"
check_eq "the hot instance still answers" "$(echo again | "$FNFS" invoke acme/prod/up --mount "$MNT")" "AGAIN"

# ---- revoke
tls_worker w2 w2
check "a second TLS worker registers" wait_until 10 state_is "$W/w2/state" healthy
check_fails_with "state refuses a bad word" "Invalid argument" write "$W/w1/state" revoked
s1=$(stat_of "$W/w1/status" cert_serial)
echo revoke >"$W/w1/state"
check "revoke: w1 is revoked" wait_until 30 state_is "$W/w1/state" revoked
check "worker.revoked is journalled with the serial" grep -q "worker\.revoked w1 serial=$s1 " "$MNT/events"
check "its instances move elsewhere" wait_until 15 eval 'running_all "$F" 1 && [ "$(where "$F/instances/0")" = w2 ]'
check "the revoked worker is refused when it comes back, and exits" wait_until 15 eval '! alive "${WPID[w1]}"'
check "revoked: worker.refused, on a resumed TLS session" refused_event 'worker\.refused w1 .*resumed=yes reason="the certificate of w1 \(serial [0-9A-F]+\) is revoked"'

crash_fnfs
start_fnfs --workers 0 --listen "127.0.0.1:$PORT" --insecure --heartbeat-timeout 10000 2>>"$T/mount.log" || exit 1
check "--insecure warns loudly" grep -q "WARNING: --insecure: plain TCP workers on 127.0.0.1:$PORT are neither authenticated nor encrypted" "$T/mount.log"
check "and logs it" grep -q "plain TCP, unauthenticated and unencrypted" "$T/mount.log"
check "w2 comes back" wait_until 15 state_is "$W/w2/state" healthy
check_eq "after kill -9 and a restart, w1 is still revoked" "$(cat "$W/w1/state")" "revoked"
check_eq "and its certificate is refused" "$(refused_run w1 w1)" "1"
check "revoked after the restart: worker.refused" refused_event 'worker\.refused w1 .*is revoked"'

# ---- plain TCP with --insecure
"$FNFS" worker --connect "tcp://127.0.0.1:$PORT" --insecure --id plain --memory 512 --data "$T/w-plain" 2>>"$T/plain.log" &
BGPIDS+=("$!")
plainpid=$!
check "with --insecure, a plain TCP worker registers" wait_until 10 state_is "$W/plain/state" healthy
check_eq "status: transport tcp, its pid" "$(stat_of "$W/plain/status" transport) $(cat "$W/plain/pid")" "tcp $plainpid"
check_eq "no TLS lines" "$(grep -c tls_resumed "$W/plain/status")" "0"
timeout 20 "$FNFS" worker --connect "tcp://127.0.0.1:$PORT" --insecure --id status --memory 512 --data "$T/w-status" >/dev/null 2>&1
check_eq "a reserved id is refused (exit 1)" "$?" "1"
check "reserved id: worker.refused" refused_event 'worker\.refused workers transport=tcp address=127\.0\.0\.1:[0-9]+ reason="that id is a file of workers/"'

# ---- revoke without a certificate seen, and resume
"$FNFS" ca issue --data "$DATA" plain --out "$CERTS" >/dev/null
t0=$(date +%s)
wait_until 3 past
echo revoke >"$W/plain/state"
check "a plain TCP worker can be revoked too" wait_until 30 state_is "$W/plain/state" revoked
check "it is refused without a certificate when it comes back, and exits" wait_until 15 eval '! alive "$plainpid"'
check "revoked id: worker.refused" refused_event 'worker\.refused plain .*reason="worker plain is revoked'
check_eq "a certificate of its id issued before the revoke is refused" "$(refused_run plain plain)" "1"
check "revoked by time: worker.refused" refused_event 'worker\.refused plain transport=tls .*is revoked"'
echo resume >"$W/plain/state"
check_eq "resume lifts the refusal without a certificate" "$(cat "$W/plain/state")" "offline"
"$FNFS" worker --connect "tcp://127.0.0.1:$PORT" --insecure --id plain --memory 512 --data "$T/w-plain" 2>>"$T/plain.log" &
BGPIDS+=("$!")
check "the plain worker is back" wait_until 10 state_is "$W/plain/state" healthy
check_eq "but not the certificate revoked before" "$(refused_run plain plain)" "1"
echo 1 >"$W/pool_size"
check "a local worker starts" wait_until 10 state_is "$W/local-1/state" healthy
check_fails_with "a local worker cannot be revoked" "Invalid argument" write "$W/local-1/state" revoke
check "the refusal is journalled" grep -q 'worker\.rejected local-1 op=revoke errno=EINVAL' "$MNT/events"
echo 0 >"$W/pool_size"

# ---- one certificate, two processes
# A second process with w2's certificate while w2 speaks is refused, and
# tries again later (over TCP its id may be busy with its own old
# connection); it never takes the id from the live one.
"$FNFS" worker --connect "tls://127.0.0.1:$PORT" --id w2 --memory 512 --ca "$CA" \
	--cert "$CERTS/w2.pem" --key "$CERTS/w2.key" --data "$T/w-dup" 2>"$T/dup.log" &
BGPIDS+=("$!")
dup=$!
check "a second process with w2's certificate is refused while w2 speaks" \
	wait_until 15 grep -q "refused for now: a worker with id w2 is already registered; trying again" "$T/dup.log"
check "and keeps trying: it does not exit" alive "$dup"
check "duplicate: worker.refused" refused_event 'worker\.refused w2 .*reason="a worker with id w2 is already registered"'
check_eq "w2 keeps its connection" "$(cat "$W/w2/pid") $(cat "$W/w2/state")" "${WPID[w2]} healthy"
kill "$dup"
# A worker whose old connection went silent (a partition the controller
# has not noticed yet) comes back on a new one, which replaces it.
old=${WPID[w2]}
kill -STOP "$old"
silent() { [ "$(stat_of "$W/w2/status" heartbeat_age_ms)" -gt 2600 ]; }
check "w2 goes silent, still online" wait_until 30 eval 'silent && ! state_is "$W/w2/state" offline'
tls_worker w2 w2
check "a new connection with its certificate replaces the silent one" wait_until 10 eval '[ "$(cat "$W/w2/pid")" = "${WPID[w2]}" ] && state_is "$W/w2/state" healthy'
check "the replacement is journalled" grep -q 'worker\.offline w2 reason="replaced by a new connection from 127\.0\.0\.1:[0-9]* (silent for [0-9]* ms)"' "$MNT/events"
kill -9 "$old"
{ wait "$old"; } 2>/dev/null

# ---- a new certificate lets w1 back in
# At least a second after the revoke: certificates have 1 s resolution.
t0=$(date +%s)
wait_until 3 past
rm -f "$CERTS/w1.pem" "$CERTS/w1.key"
"$FNFS" ca issue --data "$DATA" w1 --out "$CERTS" >/dev/null
tls_worker w1 w1
check "a new certificate of w1 is admitted" wait_until 10 state_is "$W/w1/state" healthy
check "with a new serial" eval '[ -n "$(stat_of "$W/w1/status" cert_serial)" ] && [ "$(stat_of "$W/w1/status" cert_serial)" != "$s1" ]'

# ---- an unmount is not held up by a peer that never registers
python3 -c 'import socket, sys, time
s = socket.create_connection(("127.0.0.1", '"$PORT"'))
s.sendall(b"\0")
open(sys.argv[1], "w").close()
time.sleep(60)' "$T/idle.ready" &
BGPIDS+=("$!")
idle=$!
wait_until 30 test -e "$T/idle.ready"
# A turn of the controller's loop after the connection came: it is
# accepted and read.
cat "$W/status" >/dev/null
fusermount3 -u "$MNT"
check "the controller exits at unmount with an idle connection open" wait_until 9 eval '! alive "$PID"'
kill "$idle" 2>/dev/null

done_testing
