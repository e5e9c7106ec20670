#!/usr/bin/env bash
# A refused write to invoke spoils its transaction: it takes none of its
# bytes, later writes and the read fail with the same errno, the close
# dispatches nothing, and the journal names the errno the caller got.
. "$(dirname "$0")/lib.sh"
start_fnfs || exit 1
check "the local worker registers" wait_until 10 state_is "$MNT/workers/local-1/state" healthy
T0=$MNT/tenants/a/b

received() { stat_of "$T0/$1/stats" received_total; }
inv() { "$FNFS" invoke "a/b/$1" --mount "$MNT"; }

# ---- over 1 MiB: EFBIG, nothing dispatched
E=$T0/e
mkdir -p "$E"
write "$E/mode" cold
write "$E/command" 'wc -c'
check "a cold function is ready" wait_until 10 state_is "$E/state" running
check_eq "a request of exactly 1 MiB is taken whole" "$(head -c 1048576 /dev/zero | tr '\0' a | inv e | tr -d ' ')" "1048576"
n=$(received e)
out=$(head -c 1048577 /dev/zero | tr '\0' a | inv e 2>&1)
rc=$?
check_eq "one byte more: fnfs invoke exits 5 (a request it cannot take)" "$rc" "5"
check "with File too large" grep -q "File too large" <<<"$out"
check_eq "a call after it works" "$(printf abc | inv e | tr -d ' ')" "3"
check_eq "and is the only one received: the refused request was not dispatched at close" "$(received e)" "$((n + 1))"
check "the journal names EFBIG" wait_until 30 grep -q ' function.rejected a/b/e file=invoke errno=EFBIG count=[0-9]* reason="a request holds at most 1048576 bytes"' "$MNT/events"
check "error says why" grep -q "at most 1048576 bytes" "$E/error"

# On one open: 1 MiB written, one more byte refused, then the read fails
# with the same errno, later writes too, and close starts nothing.
n=$(received e)
got=$(
	exec 3<>"$E/invoke"
	head -c 1048576 /dev/zero >&3 && echo "1MiB ok"
	printf x >&3 2>/dev/null || echo "byte: $?"
	printf y 2>&1 >&3 | grep -o "File too large"
	cat <&3 2>&1 | grep -o "File too large"
	exec 3<&-
)
check_eq "EFBIG spoils the transaction: later writes and the read fail with it" "$(tr '\n' ' ' <<<"$got")" "1MiB ok byte: 1 File too large File too large "
check_eq "a call after it is the only one received" "$(printf abcd | inv e | tr -d ' ')" "4"
check_eq "nothing of the spoiled one was dispatched" "$(received e)" "$((n + 1))"

# ---- line: a newline inside the request
L=$T0/line
mkdir -p "$L"
write "$L/mode" hot
write "$L/command" 'while read -r l; do echo "$l" | tr a-z A-Z; done'
check "a hot line function runs" wait_until 10 running_all "$L" 1
n=$(received line)
got=$(
	exec 3<>"$L/invoke"
	printf 'a\nb' 2>&1 >&3 | grep -o "Invalid argument"
	cat <&3 2>&1 | grep -o "Invalid argument\|A"
	# The read ended the spoiled transaction: the open serves a new call.
	printf c >&3 && cat <&3
	exec 3<&-
)
check_eq "a newline inside: the write and the read fail with EINVAL; then a new call works" "$(tr '\n' ' ' <<<"$got")" "Invalid argument Invalid argument C "
check_eq "only the new call was received" "$(received line)" "$((n + 1))"
n=$(received line)
check_fails_with "an async request that was refused" "Invalid argument" bash -c "printf 'x\ny' > '$L/invoke'"
check_eq "is not dispatched at close" "$(printf z | inv line)" "Z"
check_eq "only the call after it was received" "$(received line)" "$((n + 1))"
check "the journal names EINVAL" wait_until 30 grep -q ' function.rejected a/b/line file=invoke errno=EINVAL ' "$MNT/events"

# ---- a daemon: EOPNOTSUPP, named so
D=$T0/daemon
mkdir -p "$D"
write "$D/command" 'sleep 1000'
check_fails_with "invoke of a daemon is EOPNOTSUPP" "Operation not supported" bash -c "printf x | '$FNFS' invoke a/b/daemon --mount '$MNT'"
check "the journal names EOPNOTSUPP" wait_until 30 grep -q ' function.rejected a/b/daemon file=invoke errno=EOPNOTSUPP ' "$MNT/events"

done_testing
