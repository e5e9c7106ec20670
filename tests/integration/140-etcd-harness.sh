#!/usr/bin/env bash
# The etcd harness (etcd.sh) the etcd store's tests stand on: a 3-member
# cluster on free loopback ports in the test's directory is healthy; a
# put through one member's v3 JSON gateway is read back through another;
# with one member killed the cluster still takes writes; with a majority
# killed a write fails within its bound and nothing is lost; restarted,
# the members catch up and writes work again; everything is ended by pid.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/etcd.sh"
trap 'etcd_cleanup; cleanup' EXIT

if ! command -v "$ETCD_BIN" >/dev/null; then
	not_ok "etcd is installed (scripts/install-deps)"
	exit 1
fi

check "3 members healthy within 20 s" etcd_start_cluster 3
check "three distinct pids" eval '[ "$(printf "%s\n" "${ETCD_PID[@]}" | sort -u | wc -l)" = 3 ]'
check "no member on the system etcd's port" eval '! grep -q ":2379\\b" <<<"$ETCD_ENDPOINTS"'
check "the members' data is in the test's directory" test -d "$ETCD_DIR/m0/member"

check "put through member 0" etcd_put 0 /fnfs/t/a one
check_eq "read back through member 2" "$(etcd_get 2 /fnfs/t/a)" one
check_eq "read back through member 1" "$(etcd_get 1 /fnfs/t/a)" one

# ---- one member killed: the two others are a majority.
etcd_kill 1
check "member 1 is gone" eval '! etcd_healthy 1'
check "still writable with one member killed" wait_until 10 etcd_put 0 /fnfs/t/b two
check_eq "readable through the other survivor" "$(etcd_get 2 /fnfs/t/b)" two

# ---- a majority killed: no quorum, a write fails within its bound.
etcd_kill 2
start=$(date +%s%N)
check "a write fails with a majority killed" eval '! etcd_put 0 /fnfs/t/c three 3'
ms=$((($(date +%s%N) - start) / 1000000))
# (the bound is 3 s; room for a loaded machine to start curl)
check "it fails within its bound (${ms} ms < 10000)" test "$ms" -lt 10000
check "the survivor says it is not healthy" wait_until 10 eval '! etcd_healthy 0'
check "the survivor still runs" kill -0 "${ETCD_PID[0]}"

# ---- restored: both come back on their data, a quorum again.
etcd_restart 1
etcd_restart 2
check "all 3 healthy again within 20 s" etcd_wait_healthy 20
check "writable again" wait_until 10 etcd_put 1 /fnfs/t/d four
check_eq "the write before the losses is kept" "$(etcd_get 2 /fnfs/t/a)" one
check_eq "the write with one member down is on a restarted member" "$(etcd_get 1 /fnfs/t/b)" two
check_eq "the new write is read through member 0" "$(etcd_get 0 /fnfs/t/d)" four

# ---- a graceful stop, and the end by pid.
etcd_stop 0
check "member 0 stopped by SIGTERM" eval '[ -z "${ETCD_PID[0]}" ]'
check "writable with member 0 stopped" wait_until 10 etcd_put 2 /fnfs/t/e five
# shellcheck disable=SC2034 # read in the eval below
pids="${ETCD_PID[*]}"
etcd_cleanup
check "every member ended" eval '(for p in $pids; do ! kill -0 "$p" 2>/dev/null || exit 1; done)'
done_testing
