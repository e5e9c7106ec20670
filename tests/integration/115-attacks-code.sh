#!/usr/bin/env bash
# Issue 23, item 8, as two real users: a worker is sent only the code of
# the instances placed on it. alice runs a worker limited to her
# namespace (--namespaces acme/prod, over mutual TLS); bob's function runs
# on another worker. Each function's code/ holds a secret file. alice,
# who holds her worker's certificate and key, finds the hash of bob's
# code in /proc, stops her worker and connects as it with
# fixtures/code-spy.py, which speaks the worker protocol itself:
# - the code of the instances placed on it comes whole (the positive
#   control), and so does an object bob's code shares with hers (the same
#   bytes are her own);
# - code.want and code.get of bob's revision, of bob's objects through
#   her own revision, of a made-up hash, of her function moved off the
#   worker (old and new revisions) and of her own superseded revision
#   are refused with EACCES, the same answer for all (no oracle of what
#   exists), and not one byte of bob's code arrives;
# - a connection that asks before it registers is closed unanswered; a
#   registered worker with no instance gets nothing; after a revoke the
#   open connection closes and the certificate is refused.
# Not shown here, and documented (operations.md, "Security"): a worker's
# --namespaces is its own word at registration, so whoever holds its key
# may register it for other namespaces and be placed their instances.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/users.sh"

# Under tests/run, from this test's own range (lib.sh: free_ports).
free_port() {
	free_ports 1
}
PORT=$(free_port)
CA=$T/certs/ca.pem
CERTS=$T/certs
mkdir -p "$CERTS"
"$FNFS" ca init --data "$DATA" >/dev/null || exit 1
for id in wa wb wx; do
	"$FNFS" ca issue --data "$DATA" --out "$CERTS" "$id" >/dev/null || exit 1
done
cp "$DATA/ca/ca.pem" "$CA"
# alice runs her own worker: its key is hers.
chown "$A:" "$CERTS/wa.key" "$CERTS/wx.key"
chmod 755 "$CERTS"

start_fnfs --workers 0 --listen "127.0.0.1:$PORT" 2>>"$T/mount.log" || exit 1
check "tenants for alice and bob" tenants_for_users
W=$MNT/workers

# tls_worker ID NAMESPACES: `fnfs worker` over TLS limited to NAMESPACES.
tls_worker() {
	"$FNFS" worker --connect "tls://127.0.0.1:$PORT" --id "$1" --memory 1024 \
		--namespaces "$2" --ca "$CA" --cert "$CERTS/$1.pem" --key "$CERTS/$1.key" \
		--data "$T/w-$1" 2>>"$T/$1.log" &
	WPID[$1]=$!
	BGPIDS+=("$!")
}
tls_worker wa acme/prod
tls_worker wb bobco/prod
check "alice's worker registers, limited to acme/prod" wait_until 10 state_is "$W/wa/state" healthy
check "bob's worker registers, limited to bobco/prod" wait_until 10 state_is "$W/wb/state" healthy

# app USER DIR SECRET: a hot function whose program and files are only
# in its code/: run.sh, lib/common.txt (the same bytes for everyone) and
# secret.txt.
app() {
	local u=$1 f=$2 src
	src=$T/src-$u-${f##*/}
	mkdir -p "$src/lib"
	printf '#!/bin/sh\nwhile read -r l; do echo "$(cat secret.txt) $l"; done\n' >"$src/run.sh"
	chmod 755 "$src/run.sh"
	echo "Permission is hereby granted, free of charge, to any person" >"$src/lib/common.txt"
	echo "$3" >"$src/secret.txt"
	chown -R "$u:" "$src"
	as "$u" mkdir -p "$f" || return 1
	as "$u" cp -r "$src/." "$f/code/" || return 1
	as "$u" sh -c "echo hot > '$f/mode' && echo ./run.sh > '$f/command'"
}
AS=alice-secret-$RANDOM$RANDOM
OS=alice-old-$RANDOM$RANDOM
BS=bob-secret-$RANDOM$RANDOM
AF=$MNT/tenants/acme/prod/app
OF=$MNT/tenants/acme/prod/old
BF=$MNT/tenants/bobco/prod/app
check "alice's function app, its code with a secret" app "$A" "$AF" "$AS"
check "alice's function old, its code with another" app "$A" "$OF" "$OS"
check "bob's function app, its code with his secret" app "$B" "$BF" "$BS"
check "alice's app runs on her worker" wait_until 20 eval 'running_all "$AF" 1 && [ "$(where "$AF/instances/0")" = wa ]'
check "alice's old runs on her worker" wait_until 20 eval 'running_all "$OF" 1 && [ "$(where "$OF/instances/0")" = wa ]'
check "bob's app runs on his worker" wait_until 20 eval 'running_all "$BF" 1 && [ "$(where "$BF/instances/0")" = wb ]'
check_eq "bob's function answers from his code" \
	"$(echo hi | as "$B" "$FNFS" invoke bobco/prod/app --mount "$MNT")" "$BS hi"

# code_hash TENANT/NS/FN: the hash of its current code, from root's
# journal (the truth the attacker's findings are checked against).
code_hash() {
	grep " function.updated $1 revision=$(cat "$MNT/tenants/$1/revision") changed=code" "$MNT/events" |
		sed 's/.* code=\([0-9a-f]*\).*/\1/' | tail -1
}
HA=$(code_hash acme/prod/app)
HO=$(code_hash acme/prod/old)
HB=$(code_hash bobco/prod/app)
check "each revision's hash is in root's journal" eval '[ ${#HA} = 64 ] && [ ${#HO} = 64 ] && [ ${#HB} = 64 ]'

# ---- the attacker's knowledge: alice finds bob's code hash as a local
# user (the mount table of his instance names its tree), and computes the
# hash of an object from content she knows.
found=$(as "$A" sh -c 'for p in $(pgrep -u "$1"); do cat "/proc/$p/mountinfo"; done 2>/dev/null' sh "$B" |
	grep -o 'code/trees/[0-9a-f]\{64\}' | sort -u | sed 's|.*/||')
check_eq "alice reads the hash of bob's code in /proc/PID/mountinfo" "$found" "$HB"
COMMON=$(sha256sum <"$T/src-$A-app/lib/common.txt" | cut -c1-64)
BSEC=$(sha256sum <"$T/src-$B-app/secret.txt" | cut -c1-64)
ASEC=$(sha256sum <"$T/src-$A-app/secret.txt" | cut -c1-64)
NONE=$(printf 'no such code' | sha256sum | cut -c1-64)

# ---- alice stops her worker and connects as it
kill -TERM "${WPID[wa]}"
check "alice's worker stops" wait_until 15 eval '! alive "${WPID[wa]}"'
check "alice's instances wait for a worker" wait_until 10 eval '[ -z "$(where "$AF/instances/0")" ]'
# Its id is free once its connection is gone (until then, busy).
check "and it is removed from the pool" wait_until 10 eval '[ ! -e "$W/wa" ]'
SPY_OUT=$T/alice/spy.out
SPY_RAW=$T/alice/spy.raw
mkfifo "$T/spy.in"
as "$A" touch "$SPY_OUT" "$SPY_RAW"
# code-spy.py as alice, as her worker wa, reading commands from the fifo
# (held open on fd 7) and logging to SPY_OUT.
as "$A" /usr/bin/python3 -u "$FIXTURES/code-spy.py" "$CA" "$CERTS/wa.pem" "$CERTS/wa.key" "$PORT" \
	wa acme/prod "$SPY_RAW" <"$T/spy.in" >>"$SPY_OUT" 2>>"$T/spy.err" &
BGPIDS+=("$!")
exec 7>"$T/spy.in"
check "alice's client registers as her worker" wait_until 10 grep -qx registered "$SPY_OUT"
check "it is given alice's instances (their starts name her code)" \
	wait_until 20 eval 'grep -q "^start acme/prod/app/0 [0-9]* $HA\$" "$SPY_OUT" && grep -q "^start acme/prod/old/0 [0-9]* $HO\$" "$SPY_OUT"'
check "the controller places them there" wait_until 10 eval '[ "$(where "$AF/instances/0")" = wa ] && [ "$(where "$OF/instances/0")" = wa ]'

# ask COMMAND...: sends a command to the spy and waits for its answer
# (one line per object for get); prints the answer lines.
ask() {
	# shellcheck disable=SC2034 # kind is read in the eval below
	local n k kind=$1
	n=$(wc -l <"$SPY_OUT")
	echo "$*" >&7
	# shellcheck disable=SC2034 # read in the eval below
	k=1
	# shellcheck disable=SC2034
	[ "$1" = get ] && k=$(($# - 2))
	wait_until 30 eval '[ "$(tail -n +$((n + 1)) "$SPY_OUT" | grep -c "^$kind ")" -ge $k ]'
	tail -n +$((n + 1)) "$SPY_OUT" | grep "^$1 "
}
DENIED="err 13 not the code of an instance on this worker bytes=0"

# ---- the code of the instances placed on it
a=$(ask want "$HA")
check "code.want of alice's revision: the manifest, whole" eval '[[ "$a" =~ ^want\ $HA:\ ok\ [0-9]+\ sha=ok$ ]]'
objs=$(grep "^manifest $HA " "$SPY_OUT" | cut -d' ' -f3-)
check "the manifest names her secret and the shared object" eval 'grep -qw "$ASEC" <<<"$objs" && grep -qw "$COMMON" <<<"$objs"'
# shellcheck disable=SC2086 # one word per object
a=$(ask get "$HA" $objs)
check_eq "code.get of its objects: each whole" "$(grep -c ': ok [0-9]* sha=ok$' <<<"$a")" "$(wc -w <<<"$objs")"
check "her secret came (the client reads what it is sent)" grep -q "$AS" "$SPY_RAW"
check_eq "an object bob's code shares with hers, through her revision: served (the same bytes are hers)" \
	"$(ask get "$HA" "$COMMON" | sed 's/ok [0-9]*/ok N/')" "get $HA $COMMON: ok N sha=ok"

# ---- what is not placed on it
check_eq "code.want of bob's revision: EACCES, no byte" "$(ask want "$HB")" "want $HB: $DENIED"
check_eq "code.get of bob's secret through his revision: EACCES" "$(ask get "$HB" "$BSEC")" "get $HB $BSEC: $DENIED"
check_eq "code.get of the shared object through his revision: EACCES" "$(ask get "$HB" "$COMMON")" "get $HB $COMMON: $DENIED"
check_eq "code.get of bob's secret through her own revision: EACCES" "$(ask get "$HA" "$BSEC")" "get $HA $BSEC: $DENIED"
check_eq "a hash that names no code gets the same answer (no oracle)" "$(ask want "$NONE")" "want $NONE: $DENIED"
check_eq "and so does an object that exists nowhere" "$(ask get "$HA" "$NONE")" "get $HA $NONE: $DENIED"

# alice's own code, once it is not what runs there
echo v2 >"$T/src-$A-app/lib/v2.txt"
chown "$A:" "$T/src-$A-app/lib/v2.txt"
as "$A" cp "$T/src-$A-app/lib/v2.txt" "$AF/code/lib/"
check "alice changes app's code: a new revision" wait_until 10 eval '[ -n "$(code_hash acme/prod/app)" ] && [ "$(code_hash acme/prod/app)" != "$HA" ]'
HA2=$(code_hash acme/prod/app)
check "her worker is told to run it" wait_until 20 grep -q "^start acme/prod/app/[0-9]* [0-9]* $HA2\$" "$SPY_OUT"
check "code.want of the new revision: served" eval '[[ "$(ask want "$HA2")" =~ ^want\ $HA2:\ ok\ [0-9]+\ sha=ok$ ]]'
check_eq "code.want of the revision it replaced: EACCES" "$(ask want "$HA")" "want $HA: $DENIED"
check_eq "code.get through the replaced revision: EACCES" "$(ask get "$HA" "$ASEC")" "get $HA $ASEC: $DENIED"

as "$A" sh -c "echo elsewhere > '$OF/tags'"
check "alice's old moves off the worker (a tag no worker has)" wait_until 15 eval 'grep -qx "stop acme/prod/old/0" "$SPY_OUT" && [ -z "$(where "$OF/instances/0")" ]'
check_eq "code.want of old's revision, once it ran there: EACCES" "$(ask want "$HO")" "want $HO: $DENIED"
OS2=alice-old2-$RANDOM$RANDOM
echo "$OS2" >"$T/src-$A-old/secret.txt"
as "$A" cp "$T/src-$A-old/secret.txt" "$OF/code/secret.txt"
check "old's code changes after it moved" wait_until 10 eval '[ -n "$(code_hash acme/prod/old)" ] && [ "$(code_hash acme/prod/old)" != "$HO" ]'
HO2=$(code_hash acme/prod/old)
OSEC2=$(sha256sum <"$T/src-$A-old/secret.txt" | cut -c1-64)
check_eq "code.want of its new revision: EACCES" "$(ask want "$HO2")" "want $HO2: $DENIED"
check_eq "code.get of its new secret: EACCES" "$(ask get "$HO2" "$OSEC2")" "get $HO2 $OSEC2: $DENIED"
check_eq "no byte of bob's code reached alice's client" "$(grep -c "$BS" "$SPY_RAW")" 0
check_eq "nor of old's code since it moved" "$(grep -c "$OS2" "$SPY_RAW")" 0
check_eq "bob's function still answers from his code" \
	"$(echo hi | as "$B" "$FNFS" invoke bobco/prod/app --mount "$MNT")" "$BS hi"

# ---- a connection that has not registered, a worker with no instance
out=$(echo "want $HA" | as "$A" timeout 30 /usr/bin/python3 -u "$FIXTURES/code-spy.py" "$CA" "$CERTS/wa.pem" "$CERTS/wa.key" \
	"$PORT" wa acme/prod "$T/alice/unreg.raw" --no-register 2>&1)
check_eq "code.want before registering: the connection is closed, nothing sent" "$out" "closed"
check "not one byte of code" eval '[ ! -s "$T/alice/unreg.raw" ]'
out=$(printf 'want %s\nget %s %s\nquit\n' "$HA2" "$HA2" "$COMMON" |
	as "$A" timeout 60 /usr/bin/python3 -u "$FIXTURES/code-spy.py" "$CA" "$CERTS/wx.pem" "$CERTS/wx.key" \
		"$PORT" wx acme/nothing "$T/alice/wx.raw" 2>&1)
check_eq "a registered worker with no instance gets nothing" "$out" \
	"$(printf 'registered\nwant %s: %s\nget %s %s: %s' "$HA2" "$DENIED" "$HA2" "$COMMON" "$DENIED")"
check "not one byte of code" eval '[ ! -s "$T/alice/wx.raw" ]'

# ---- a revoked worker
echo revoke >"$W/wa/state"
check "revoke closes the client's connection" wait_until 10 grep -qx closed "$SPY_OUT"
exec 7>&-
out=$(echo "want $HA2" | as "$A" timeout 30 /usr/bin/python3 -u "$FIXTURES/code-spy.py" "$CA" "$CERTS/wa.pem" "$CERTS/wa.key" \
	"$PORT" wa acme/prod "$T/alice/revoked.raw" 2>&1)
check "its certificate is then refused" grep -q "^refused .*revoked" <<<"$out"
check "and gets no code" eval '! grep -q "^want" <<<"$out" && [ ! -s "$T/alice/revoked.raw" ]'
check "no sanitizer report in the logs of the controller and the workers" eval '! grep -q "ERROR: AddressSanitizer\|runtime error" "$T/mount.log" "$T/wa.log" "$T/wb.log"'
done_testing
