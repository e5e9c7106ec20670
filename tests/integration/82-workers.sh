#!/usr/bin/env bash
# The worker pool: pool_size grows and shrinks (idle workers first), a
# killed local worker is replaced, workers started by hand register, and
# bad ones are refused.
. "$(dirname "$0")/lib.sh"
start_fnfs --worker-memory 1024 || exit 1
W=$MNT/workers
check "one local worker by default" wait_until 10 state_is "$W/local-1/state" healthy
check_eq "pool_size reads 1" "$(cat "$W/pool_size")" "1"
check_eq "worker files" "$(cat "$W/local-1/memory") $(cat "$W/local-1/free") $(stat_of "$W/local-1/status" local)" "1024 1024 yes"
check_eq "modes in workers/" "$(stat -c '%A %n' "$W/pool_size" "$W/local-1/state" "$W/local-1/status" | sed "s|$W/||" | tr '\n' ',')" \
	"-rw-r--r-- pool_size,-rw-r--r-- local-1/state,-r--r--r-- local-1/status,"

F=$MNT/tenants/acme/prod/sleeper
mkdir -p "$F"
echo 'sleep 1000' >"$F/command"
echo 2 >"$F/parallelism"
check "two instances run" wait_until 10 running_all "$F" 2

# Grow.
echo 3 >"$W/pool_size"
check "pool_size 3 starts two more workers" wait_until 10 eval 'state_is "$W/local-2/state" healthy && state_is "$W/local-3/state" healthy'
check "pool.resized is journalled" grep -q 'pool.resized workers from=1 to=3' "$MNT/events"
check_eq "pool_size reads 3" "$(cat "$W/pool_size")" "3"
check_fails_with "pool_size refuses a non-number" "Invalid argument" write "$W/pool_size" lots
check_fails_with "pool_size refuses too many" "Invalid argument" write "$W/pool_size" 257

# Shrink: the idle workers go first; the busy one stays.
busy=$(readlink "$F/instances/0/worker" | sed 's|.*/||')
echo 1 >"$W/pool_size"
check "pool_size 1 keeps one worker" wait_until 10 eval '[ "$(ls -d "$W"/local-* | wc -l)" = 1 ]'
check_eq "the busy worker stayed" "$(ls -d "$W"/local-* | sed 's|.*/||')" "$busy"
check "worker.removed is journalled" grep -q 'worker.removed local-' "$MNT/events"
check "the instances still run" running_all "$F" 2

# A killed local worker is replaced; its instances run again.
wpid=$(cat "$W/$busy/pid")
old_instances=$(cat "$F"/instances/*/pid | tr '\n' ' ')
kill -9 "$wpid"
check "a killed worker is replaced" wait_until 15 eval '[ -n "$(cat "$W"/local-*/pid 2>/dev/null)" ] && [ "$(cat "$W"/local-*/pid)" != "$wpid" ] && state_is "$(ls -d "$W"/local-* | head -1)/state" healthy'
check "its instances run again" wait_until 15 running_all "$F" 2
olds_gone() {
	local p
	for p in $old_instances; do alive "$p" && return 1; done
	return 0
}
check "the killed worker's instances died with it: nothing runs twice" olds_gone

# A worker that goes silent (SIGSTOP) past the heartbeat timeout is
# offline; when it comes back, what it still runs and nobody else took is
# taken back as it is: same pids, no restart.
lw=$(ls -d "$W"/local-* | head -1)
lwpid=$(cat "$lw/pid")
pids_before=$(cat "$F"/instances/*/pid | tr '\n' ' ')
kill -STOP "$lwpid"
check "a silent worker goes offline" wait_until 10 state_is "$lw/state" offline
check_eq "its instances wait: there is no other worker" "$(cat "$F/state")" "pending"
kill -CONT "$lwpid"
check "it comes back" wait_until 15 eval 'state_is "$lw/state" healthy && running_all "$F" 2'
check_eq "with the same instance pids" "$(cat "$F"/instances/*/pid | tr '\n' ' ')" "$pids_before"

# A worker started by hand.
"$FNFS" worker --connect "$DATA/ctl.sock" --id gpu-1 --memory 512 --tags gpu,ssd --namespaces acme/prod 2>"$T/w1.log" &
BGPIDS+=("$!")
w1=$!
check "a hand-started worker registers" wait_until 10 state_is "$W/gpu-1/state" healthy
check_eq "with its memory, tags and namespaces" "$(cat "$W/gpu-1/memory")|$(cat "$W/gpu-1/tags")|$(cat "$W/gpu-1/namespaces")|$(cat "$W/gpu-1/pid")" "512|gpu ssd|acme/prod|$w1"
check_eq "it is not local" "$(stat_of "$W/gpu-1/status" local)" "no"
"$FNFS" worker --connect "$DATA/ctl.sock" --id gpu-1 --memory 512 >"$T/dup.out" 2>&1
check_eq "a duplicate id exits 1" "$?" "1"
check "with a clear refusal" grep -q 'refused gpu-1: a worker with id gpu-1 is already registered' "$T/dup.out"
"$FNFS" worker --connect "$DATA/ctl.sock" --id 'bad id' --memory 512 >/dev/null 2>&1
check_eq "a bad id is a usage error" "$?" "2"
"$FNFS" worker --connect "$DATA/ctl.sock" --id ok --memory lots >/dev/null 2>&1
check_eq "a bad memory is a usage error" "$?" "2"
"$FNFS" worker --id ok --memory 5 >/dev/null 2>&1
check_eq "a missing --connect is a usage error" "$?" "2"
"$FNFS" worker --connect "$DATA/ctl.sock" --id ok --memory 5 --tags 'a,-b' >/dev/null 2>&1
check_eq "a bad tag is a usage error" "$?" "2"

# Garbage on the controller's socket does not hurt it.
python3 - "$DATA/ctl.sock" <<'PY'
import socket, sys
for junk in [b"\xff" * 64, b"\x00\x00\x00\x05hello", b"\x00\x00\x00\x02{}", b"\x00\x00\x00\x10" + b"{" * 16]:
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    s.sendall(junk)
    s.close()
PY
check "the controller survives garbage from a worker" wait_until 30 state_is "$W/gpu-1/state" healthy
check "and still serves" running_all "$F" 2

# Unmount: the hand-started worker stays, its instances stop.
kill "$w1"
check "a hand-started worker ends on SIGTERM" wait_until 10 eval '! kill -0 $w1 2>/dev/null'
check "a worker that leaves cleanly is removed" wait_until 10 eval '[ ! -e "$W/gpu-1" ] && grep -q "worker.removed gpu-1" "$MNT/events"'
done_testing
