#!/usr/bin/env bash
# The event journal: line format, absolute offsets, tail -n and tail -f.
# tests/run: smoke
. "$(dirname "$0")/lib.sh"
start_fnfs || exit 1

check "the journal starts with the local worker's registration" wait_until 10 grep -q ' worker.registered local-1 ' "$MNT/events"
mkdir -p "$MNT/tenants/acme/prod/fn"
size1=$(stat -c %s "$MNT/events")
check "the file's size grows with the journal" test "$size1" -gt 0
check_eq "its size is what cat reads" "$(cat "$MNT/events" | wc -c)" "$size1"
check_eq "three creation events" "$(grep -c '\.created ' "$MNT/events")" "3"
re='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z [a-z]+\.[a-z]+ [^ ]+( [a-z_]+=[^ ]+)*$'
check "every line is TIME KIND OBJECT key=value..." eval "! grep -vE '$re' '$MNT/events'"
check "function.created with its revision" grep -q ' function.created acme/prod/fn revision=1$' "$MNT/events"

# tail -f started now sees a change made after it started.
tail -n 0 -f "$MNT/events" >"$T/follow" 2>&1 &
tailpid=$!
BGPIDS+=("$tailpid")
# tail has taken its starting point once it holds the journal open.
tail_ready() {
	local fd
	for fd in /proc/"$tailpid"/fd/*; do
		[ "$(readlink "$fd")" = "$MNT/events" ] && return 0
	done
	return 1
}
check "tail -f opened the journal" wait_until 10 tail_ready
echo 512 >"$MNT/tenants/acme/prod/fn/memory"
check "tail -f sees the update" wait_until 10 grep -q 'function.updated acme/prod/fn revision=2 changed=memory' "$T/follow"
rmdir "$MNT/tenants/acme/prod/fn"
check "tail -f sees the deletion" wait_until 10 grep -q 'function.deleted acme/prod/fn' "$T/follow"
check_eq "tail -f saw only what came after it started" "$(grep -c 'created' "$T/follow")" "0"
kill "$tailpid"

check_eq "tail -n 1 gives the last event" "$(tail -n 1 "$MNT/events" | cut -d' ' -f2-)" "function.deleted acme/prod/fn"
# Reading from an offset gives the bytes at that absolute offset.
check_eq "reads at an offset" "$(tail -c +$((size1 + 1)) "$MNT/events" | head -n1 | cut -d' ' -f2,3)" "function.updated acme/prod/fn"

# A rejected write is an event with its reason.
mkdir "$MNT/tenants/acme/prod/g"
echo -1 >"$MNT/tenants/acme/prod/g/parallelism" 2>/dev/null
check "a rejected write is journalled" grep -q 'function.rejected acme/prod/g file=parallelism errno=EINVAL reason="parallelism must be an integer from 0 to 1000, not \\"-1\\""' "$MNT/events"
done_testing
