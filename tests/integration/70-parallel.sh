#!/usr/bin/env bash
# 100 writers at once, to 100 functions: none is lost, in memory or on disk.
. "$(dirname "$0")/lib.sh"
start_fnfs || exit 1
NS=$MNT/tenants/acme/prod
mkdir -p "$NS"
(cd "$NS" && seq -f 'fn%03g' 1 100 | xargs mkdir)
check_eq "100 functions" "$(ls "$NS" | wc -l)" "100"

pids=()
for i in $(seq 1 100); do
	f=$(printf 'fn%03d' "$i")
	(echo $((1000 + i)) >"$NS/$f/memory" && printf 'I=%s\n' "$i" >"$NS/$f/env") &
	pids+=("$!")
done
failed=0
for p in "${pids[@]}"; do
	wait "$p" || failed=$((failed + 1))
done
check_eq "no writer failed" "$failed" "0"

bad=0
for i in $(seq 1 100); do
	f=$(printf 'fn%03d' "$i")
	[ "$(cat "$NS/$f/memory")" = $((1000 + i)) ] || bad=$((bad + 1))
	[ "$(cat "$NS/$f/env")" = "I=$i" ] || bad=$((bad + 1))
	[ "$(cat "$NS/$f/revision")" = 3 ] || bad=$((bad + 1))
done
check_eq "every write is there" "$bad" "0"
check_eq "200 update events" "$(grep -c 'function.updated' "$MNT/events")" "200"

crash_fnfs
start_fnfs
bad=0
for i in $(seq 1 100); do
	f=$(printf 'fn%03d' "$i")
	[ "$(cat "$NS/$f/memory")" = $((1000 + i)) ] || bad=$((bad + 1))
done
check_eq "every write survives kill -9" "$bad" "0"

# Concurrent readers and writers of one file: reads always see a whole value.
f=$NS/fn001/memory
for i in $(seq 1 20); do echo $((2000 + i)) >"$f" & done
torn=0
for i in $(seq 1 50); do
	v=$(cat "$f")
	case "$v" in 1001 | 20[0-2][0-9]) ;; *) torn=$((torn + 1)) ;; esac
done
wait
check_eq "no torn read" "$torn" "0"
done_testing
