#!/usr/bin/env bash
# Issue 23, item 7: a tenant cannot erase the others' event history. alice
# floods refused mkdirs (40,000 in a few seconds); bob's tenants/bobco/events
# and the root's events keep their earlier lines (bob's function, root's
# worker.registered), and the flood is a few lines with count=N.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/users.sh"

start_fnfs || exit 1
check "tenants for alice and bob" tenants_for_users
check "bob makes a function" as "$B" mkdir "$MNT/tenants/bobco/prod/keep"
check "root's journal has the worker" wait_until 10 grep -q "worker.registered" "$MNT/events"
check "bob's journal has his function" grep -q "function.created bobco/prod/keep" "$MNT/tenants/bobco/events"
bob_before=$(cat "$MNT/tenants/bobco/events")
root_before=$(grep -v "acme" "$MNT/events")

# The flood: 40,000 mkdirs of names fnfs refuses (EINVAL), as alice,
# bounded in count and time.
as "$A" timeout 120 python3 - "$MNT/tenants/acme" <<'EOP' >"$T/flood.out" 2>&1
import errno, os, sys
d = sys.argv[1]
refused = 0
for i in range(40000):
    try:
        os.mkdir(os.path.join(d, "bad name %d" % i))
    except OSError as e:
        refused += e.errno == errno.EINVAL
print(refused)
EOP
check_eq "alice's 40,000 mkdirs were refused" "$(cat "$T/flood.out")" "40000"
# The summary of the last second comes at the next tick.
check "the flood is summarised with count=" wait_until 10 eval 'grep -q "namespace.rejected acme .*count=" "$MNT/events"'
total=$(grep "namespace.rejected acme" "$MNT/events" | awk '{ c += 1; for (i = 1; i <= NF; i++) if ($i ~ /^count=/) { c += substr($i, 7) - 1 } } END { print c + 0 }')
lines=$(grep -c "namespace.rejected acme" "$MNT/events")
check_eq "its lines stand for every refusal" "$total" "40000"
check "in a few lines (got $lines)" test "$lines" -lt 400
check "alice's own journal has the summary" grep -q "namespace.rejected acme .*count=" "$MNT/tenants/acme/events"
check_eq "bob's journal kept every line" "$(head -c ${#bob_before} "$MNT/tenants/bobco/events")" "$bob_before"
check_eq "root's journal kept its earlier lines" "$(grep -v acme "$MNT/events" | head -n "$(printf '%s\n' "$root_before" | wc -l)")" "$root_before"
check "root's worker line is there" grep -q "worker.registered" "$MNT/events"
done_testing
