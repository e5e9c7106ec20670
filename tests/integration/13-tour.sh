#!/usr/bin/env bash
# The README's tour, run as it says: with the demo (scripts/demo, what
# `make run` starts) going, from the directory that holds the mount and
# ./fnfs, every command of its console blocks, checking that each prints
# what the README shows (see fixtures/tour.py for how outputs compare).
# tests/run: smoke
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)

# A fresh Debian has no make: the README says how to get it before it
# says `make run`.
line_of() { grep -n -m1 -- "$1" "$top/README.md" | cut -d: -f1; }
check "the README installs make before its first make command" \
	test "$(line_of 'apt-get install -y make git')" -lt "$(line_of '^make run')"

# $T stands for the repository: mnt and fnfs side by side.
ln -s "$FNFS" "$T/fnfs"
FNFS_DEMO_MNT=$MNT FNFS_DEMO_DATA=$DATA setsid "$top/scripts/demo" </dev/null >"$T/demo.out" 2>&1 &
demo=$!
BGPIDS+=("$demo")
check "the demo comes up" wait_until 30 eval 'grep -q "In another terminal" "$T/demo.out"'
PID=$(cat "$DATA/fnfs.pid" 2>/dev/null)

python3 "$FIXTURES/tour.py" "$top/README.md" "A short tour" "$T" >"$T/tour.out" 2>&1
check_eq "the tour runs to its end" "$?" "0"
steps=0
while IFS= read -r line; do
	case $line in
	PASS$'\t'*)
		ok "tour: ${line#*$'\t'}"
		steps=$((steps + 1))
		;;
	FAIL$'\t'*)
		not_ok "tour: ${line#*$'\t'}"
		steps=$((steps + 1))
		;;
	*) echo "   $line" ;;
	esac
done <"$T/tour.out"
check "the tour has its commands" test "$steps" -ge 25

kill -INT -- "-$demo"
wait "$demo"
check_eq "Ctrl-C ends the demo with status 0" "$?" "0"
check "and unmounts" eval '! mounted'
done_testing
