#!/usr/bin/env bash
# A new revision of code/ is downloaded by every worker that runs the
# function as soon as it is made (code.prefetch), not when the rolling
# deploy reaches that worker's instance: while the first instance is
# being replaced (slow to be ready), the second one's worker already has
# the new tree unpacked, and the second instance still runs the old
# revision. Then both run the new one, and the trees nobody uses go.
. "$(dirname "$0")/lib.sh"
start_fnfs || exit 1
check "the local worker registers" wait_until 10 state_is "$MNT/workers/local-1/state" healthy
check "a second worker registers" start_worker w2 4096
F=$MNT/tenants/acme/prod/slow
mkdir -p "$F"
C=$F/code
A=$T/app
mkdir -p "$A"
# Version two is ready only once the test opens the gate $T/go (at most
# 60 s), after it has seen the prefetch: the rolling deploy waits for the
# first replacement before it touches the second instance, for as long as
# the test looks (not a fixed 3 s a loaded machine may spend first).
cat >"$A/run.sh" <<SH
#!/bin/sh
if [ "\$(cat version)" = two ]; then
	n=0
	while [ ! -e $T/go ] && [ \$n -lt 1200 ]; do sleep 0.05; n=\$((n + 1)); done
fi
echo ready >&"\$FN_NOTIFY_FD"
exec sleep 1000
SH
chmod 755 "$A/run.sh"
echo one >"$A/version"
head -c 2000000 /dev/urandom >"$A/blob.bin"

rev() { cat "$F/revision"; }
inst_rev() { awk '$1 == "revision" { print $2 }' "$1/status"; }
# code_hash N: the code hash of revision N, from the journal.
code_hash() { grep "function.updated acme/prod/slow revision=$1 changed=code" "$MNT/events" | sed 's/.* code=\([0-9a-f]*\).*/\1/' | tail -1; }

echo spread >"$MNT/workers/strategy"
check "cp of the app into code/" cp -r "$A"/. "$C"/
check "a revision is made" wait_until 30 eval '[ -n "$(code_hash "$(rev)")" ]'
write "$F/ready" notify
write "$F/ready_timeout" 90
write "$F/command" ./run.sh
write "$F/parallelism" 2
check "both instances run" wait_until 20 running_all "$F" 2
w0=$(where "$F/instances/0")
w1=$(where "$F/instances/1")
check "they run on different workers" test -n "$w0" -a -n "$w1" -a "$w0" != "$w1"
# shellcheck disable=SC2034 # read in the evals below
r1=$(inst_rev "$F/instances/1")

echo two >"$A/version"
check "cp of a change" cp -r "$A"/. "$C"/
check "a new revision is made" wait_until 30 eval '[ "$(rev)" -gt "$r1" ] && [ -n "$(code_hash "$(rev)")" ]'
r2=$(rev)
h2=$(code_hash "$r2")
# shellcheck disable=SC2034 # read in the evals below
tree1=$DATA/cache/$w1/code/trees/$h2/t
check "instance 1's worker has the new tree before its instance is replaced" \
	wait_until 30 eval '[ -f "$tree1/version" ] && [ "$(inst_rev "$F/instances/1")" = "$r1" ]'
check_eq "the prefetched tree holds the new code" "$(cat "$tree1/version" 2>/dev/null)" "two"
touch "$T/go"
check "then both run the new revision" wait_until 60 eval 'running_all "$F" 2 && [ "$(inst_rev "$F/instances/0")" = "$r2" ] && [ "$(inst_rev "$F/instances/1")" = "$r2" ]'
check "the workers' old trees go" wait_until 10 eval '[ "$(ls "$DATA/cache/$w0/code/trees" "$DATA/cache/$w1/code/trees" | grep -c "^[0-9a-f]\{64\}$")" = 2 ]'
check_eq "what remains is the new tree on each" "$(ls "$DATA/cache/$w0/code/trees" "$DATA/cache/$w1/code/trees" | grep "^[0-9a-f]\{64\}$" | sort -u)" "$h2"
done_testing
