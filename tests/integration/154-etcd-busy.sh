#!/usr/bin/env bash
# tests/run: lane
# The open of a shared store while etcd elects its leader (issue 24: the
# etcd-open retry on EAGAIN had no test): etcd answers "leader changed"
# (code 14) to reads while its members have no leader, and a mount then
# must not fail: it reads the rows again every 200 ms for up to 15 s. A
# relay in front of a real etcd (fixtures/busy-etcd.py) answers so on
# cue: the first reads busy, then the mount serves what etcd holds; every
# read busy, and the mount fails within its bound, leaving no mount.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/etcd.sh"
MP=""
RELAY_PID=""
trap '[ -n "$MP" ] && { fusermount3 -u "$MP" 2>/dev/null || fusermount3 -uz "$MP" 2>/dev/null; }
[ -n "$RELAY_PID" ] && kill "$RELAY_PID" 2>/dev/null
[ -n "${CPID:-}" ] && alive "$CPID" && { wait_until 10 eval "! alive $CPID" || kill -9 "$CPID"; }
etcd_cleanup; cleanup' EXIT

if ! command -v "$ETCD_BIN" >/dev/null; then
	not_ok "etcd is installed (scripts/install-deps)"
	exit 1
fi
check "a one-member etcd runs" etcd_start_cluster 1
EP=${ETCD_CLIENT[0]#http://}

# relay N NAME: a busy relay answering the first N reads (-1: all) busy;
# its port in RELAY, its count in $T/NAME.count.
relay() {
	RELAY=$(free_ports 1)
	python3 "$FIXTURES/busy-etcd.py" 127.0.0.1 "$RELAY" "${EP%:*}" "${EP#*:}" "$1" "$T/$2.count" >"$T/$2.out" 2>&1 &
	RELAY_PID=$!
	wait_until 10 grep -q ready "$T/$2.out"
}
stop_relay() {
	kill "$RELAY_PID" 2>/dev/null
	wait "$RELAY_PID" 2>/dev/null
	RELAY_PID=""
}

# ---- a cluster to read: one controller makes a function, then goes
MP=$T/m1
mkdir -p "$MP"
check "a controller mounts straight on etcd" \
	"$FNFS" mount --data "$T/d1" --workers 0 --store "etcd://$EP" --cluster busy --name c1 "$MP"
CPID=$(cat "$T/d1/fnfs.pid")
check "it makes a function" mkdir -p "$MP/tenants/acme/prod/fn"
write "$MP/tenants/acme/prod/fn/command" /bin/cat
check "its command is stored" wait_until 10 eval '[ "$(cat "$MP/tenants/acme/prod/fn/command")" = /bin/cat ]'
fusermount3 -u "$MP"
check "it goes" wait_until 15 eval '! alive "$CPID"'
MP=""

# ---- etcd busy for its first five reads: the mount waits them out
relay 5 some
check "the relay listens" test -n "$RELAY"
MP=$T/m2
mkdir -p "$MP"
t0=$(date +%s%3N)
check "a mount through an etcd busy for five reads succeeds" \
	eval '"$FNFS" mount --data "$T/d2" --workers 0 --store "etcd://127.0.0.1:$RELAY" --cluster busy --name c2 "$MP" 2>"$T/m2.err"'
t1=$(date +%s%3N)
CPID=$(cat "$T/d2/fnfs.pid" 2>/dev/null)
check_eq "etcd answered busy five times" "$(cat "$T/some.count" 2>/dev/null)" "5"
check "the mount said it reads again" grep -q "etcd: busy; the rows are read again in 200 ms" "$T/m2.err"
check "it took the pauses (5 x 200 ms: $((t1 - t0)) ms)" [ $((t1 - t0)) -ge 1000 ]
check_eq "it serves what etcd holds" "$(cat "$MP/tenants/acme/prod/fn/command" 2>/dev/null)" "/bin/cat"
check "writes through it work" write_checked "$MP/tenants/acme/prod/fn/timeout" 4000
fusermount3 -u "$MP"
check "it goes" wait_until 15 eval '! alive "$CPID"'
MP=""
stop_relay

# ---- etcd busy for ever: the mount gives up within its bound
relay -1 all
MP=$T/m3
mkdir -p "$MP"
t0=$(date +%s%3N)
"$FNFS" mount --data "$T/d3" --workers 0 --store "etcd://127.0.0.1:$RELAY" --cluster busy --name c3 "$MP" 2>"$T/m3.err"
rc=$?
t1=$(date +%s%3N)
check "a mount through an etcd busy for ever fails (rc $rc)" [ "$rc" -ne 0 ]
check "within 15 s and a margin ($((t1 - t0)) ms)" [ $((t1 - t0)) -ge 14000 -a $((t1 - t0)) -lt 40000 ]
check "it says why" grep -q "cannot open the store etcd://127.0.0.1:$RELAY: Resource temporarily unavailable" "$T/m3.err"
check "no mount is left" eval '! grep -q " $MP " /proc/mounts'
check "no daemon is left" eval '! pgrep -f -- "--data $T/d3" >/dev/null'
MP=""
stop_relay
done_testing
