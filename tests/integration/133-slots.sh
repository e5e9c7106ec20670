#!/usr/bin/env bash
# Concurrency per instance (issue 13, part 4): a hot json function with
# concurrency 4 on max_instances 2 serves several calls per instance at
# once, answers matched by id; dispatch counts free slots, so never more
# than 8 calls are in flight, as the function itself measures; status and
# stats show busy slots; a lower concurrency takes effect without a
# restart, and a raised one too.
#
# The function speaks json here; 135-slots-http runs the same checks
# against a Python http.server function (fixtures/inflight_http.py, on
# $PORT as any Knative service), which counts its calls in flight the same
# way (the INFLIGHT_DIR state file).
. "$(dirname "$0")/lib.sh"
SLOTS_FORMAT=${SLOTS_FORMAT:-json}
case $SLOTS_FORMAT in
http) SLOTS_PROG=inflight_http.py ;;
*) SLOTS_PROG=inflight.py ;;
esac
start_fnfs || exit 1
check "the local worker registers" wait_until 10 state_is "$MNT/workers/local-1/state" healthy
S=$MNT/tenants/acme/prod/slots
R=$T/rec
mkdir -p "$R" "$S"
chmod 777 "$R"
echo "0 0" >"$R/state"
chmod 666 "$R/state"

# inflight: calls in flight now, as the function counts them.
inflight() { awk '{ print $1 }' "$R/state"; }
# most: the most calls in flight at once so far.
most() { awk '{ print $2 }' "$R/state"; }
reset_most() { echo "$(inflight) $(inflight)" >"$R/state"; }
slots_busy() { [ "$(stat_of "$1" busy_slots)" = "$2" ]; }
conc() {
	seq "$1" | xargs -P "$2" -I{} sh -c 'r=$(printf "%s c{}x" "$3" | "$1" invoke acme/prod/slots --mount "$2") && [ "$r" = "$(printf "%s C{}X" "$3" | tr a-z A-Z)" ] && echo ok' _ "$FNFS" "$MNT" "$3"
}

cat >"$S/config" <<JSON
{"command": "python3 -u $FIXTURES/$SLOTS_PROG", "mode": "hot", "format": "$SLOTS_FORMAT",
 "parallelism": 1, "max_instances": 2, "concurrency": 4, "timeout": 30000,
 "env": {"INFLIGHT_DIR": "$R"}, "mounts": ["$R rw"]}
JSON
check "a $SLOTS_FORMAT function with concurrency 4 runs" wait_until 20 running_all "$S" 1
check_eq "a call" "$(printf hi | "$FNFS" invoke acme/prod/slots --mount "$MNT")" "HI"
check_eq "its instance has 4 slots" "$(stat_of "$S/instances/0/status" slots)" 4

# Four slow calls share the one instance: no scale-out for them.
pids=()
for i in 1 2 3 4; do
	printf 'hold four s%s' "$i" | "$FNFS" invoke acme/prod/slots --mount "$MNT" >"$T/slow.$i" 2>&1 &
	pids+=("$!")
	BGPIDS+=("$!")
done
check "four calls run at once on instance 0" wait_until 10 eval 'slots_busy "$S/instances/0/status" 4 && [ "$(inflight)" = 4 ]'
check_eq "instance status: busy_slots 4 of slots 4" "$(stat_of "$S/instances/0/status" busy_slots)/$(stat_of "$S/instances/0/status" slots)" "4/4"
check_eq "instance stats: busy 1, busy_slots 4" "$(stat_of "$S/instances/0/stats" busy) $(stat_of "$S/instances/0/stats" busy_slots)" "1 4"
check_eq "function stats: busy_slots 4 of 4" "$(stat_of "$S/stats" busy_slots) $(stat_of "$S/stats" slots)" "4 4"
check "function status: busy_slots and instance_0 busy 4/4" eval 'slots_busy "$S/status" 4 && grep -q "^instance_0 running local-1 [0-9]* busy 4/4$" "$S/status"'
check_eq "one instance serves them (no launch for calls that have a slot)" "$(ls "$S/instances" | wc -l)" 1
touch "$R/four"
ok_slow=0
for i in 1 2 3 4; do
	wait "${pids[$((i - 1))]}" && [ "$(cat "$T/slow.$i")" = "HOLD FOUR S$i" ] && ok_slow=$((ok_slow + 1))
done
check_eq "the four answers each went to its own call" "$ok_slow" 4
check "no slot is busy after them" wait_until 30 slots_busy "$S/stats" 0

# Answers out of order: a slow call and a quick one on the same process.
# (the slow one waits for the gate $R/overtaken, opened after the quick
# one is answered)
printf 'hold overtaken slow' | "$FNFS" invoke acme/prod/slots --mount "$MNT" >"$T/first" 2>&1 &
p1=$!
BGPIDS+=("$p1")
wait_until 30 slots_busy "$S/stats" 1
check_eq "a quick call overtakes a slow one" "$(printf quick | "$FNFS" invoke acme/prod/slots --mount "$MNT")" "QUICK"
check "the slow one is still in flight" alive "$p1"
touch "$R/overtaken"
wait "$p1"
check_eq "and the slow one gets its own answer" "$(cat "$T/first")" "HOLD OVERTAKEN SLOW"

# Ten slow calls at once: the four slots of instance 0 fill, a second
# instance is launched for the waiting ones (max_instances 2), its four
# slots fill, and the last two wait in the queue.
reset_most
pids=()
for i in $(seq 10); do
	printf 'hold ten b%s' "$i" | "$FNFS" invoke acme/prod/slots --mount "$MNT" >"$T/burst.$i" 2>&1 &
	pids+=("$!")
	BGPIDS+=("$!")
done
check "ten calls: 8 in flight on two instances, as the function counts" wait_until 20 eval 'slots_busy "$S/stats" 8 && [ "$(inflight)" = 8 ]'
check_eq "two instances of four busy slots each" "$(stat_of "$S/instances/0/status" busy_slots) $(stat_of "$S/instances/1/status" busy_slots)" "4 4"
check_eq "the other two wait in the queue" "$(stat_of "$S/stats" queue_depth)" 2
touch "$R/ten"
ok_burst=0
for i in $(seq 10); do
	wait "${pids[$((i - 1))]}" && [ "$(cat "$T/burst.$i")" = "HOLD TEN B$i" ] && ok_burst=$((ok_burst + 1))
done
check_eq "all ten answered right" "$ok_burst" 10
check_eq "never more than 8 at once" "$(most)" 8

# 200 concurrent calls: all correct, never more than 2 x 4 in flight.
reset_most
conc 200 32 "sleep 0.1" >"$T/conc.out" 2>&1
check_eq "200 concurrent calls all get the right answer" "$(grep -c '^ok$' "$T/conc.out")" 200
check "never more than 8 in flight, as the function measured" eval '[ "$(most)" -le 8 ]'
echo "# most calls in flight at once: $(most)"
check "never more than max_instances" eval '[ "$(ls "$S/instances" | wc -l)" -le 2 ]'
check "stats add up" eval '[ "$(stat_of "$S/stats" received_total)" = $(($(stat_of "$S/stats" processed_total) + $(stat_of "$S/stats" user_errors_total) + $(stat_of "$S/stats" system_errors_total))) ]'
check_eq "no call failed" "$(stat_of "$S/stats" system_errors_total)" 0
check_eq "metrics show busy slots" "$(grep -c '^fnfs_function_busy_slots{tenant="acme",namespace="prod",function="slots"} 0$' "$MNT/metrics")" 1

# Concurrency 1 on the running instances (no restart): one call each.
pid0=$(pid_of "$S/instances/0")
write "$S/concurrency" 1
reset_most
conc 24 12 "sleep 0.1" >"$T/one.out" 2>&1
check_eq "concurrency 1: 24 calls all answered" "$(grep -c '^ok$' "$T/one.out")" 24
check "concurrency 1: at most one per instance in flight" eval '[ "$(most)" -le 2 ]'
check_eq "without a restart" "$(pid_of "$S/instances/0")" "$pid0"
write "$S/concurrency" 4
reset_most
conc 40 16 "sleep 0.2" >"$T/four.out" 2>&1
check_eq "concurrency 4 again: 40 calls all answered" "$(grep -c '^ok$' "$T/four.out")" 40
check "and several at once per instance again, still without a restart" eval '[ "$(most)" -gt 2 ] && [ "$(most)" -le 8 ] && [ "$(pid_of "$S/instances/0")" = "$pid0" ]'
check_eq "its status says so" "$(stat_of "$S/instances/0/status" slots)" 4

# A line function serves one call at a time whatever its concurrency.
L=$MNT/tenants/acme/prod/line
mkdir -p "$L"
write "$L/mode" hot
write "$L/concurrency" 4
write "$L/command" 'while read -r l; do echo "$l" | tr a-z A-Z; done'
check "a hot line function runs" wait_until 10 running_all "$L" 1
check_eq "a line instance has 1 slot" "$(stat_of "$L/instances/0/status" slots)" 1
check_eq "and answers" "$(printf abc | "$FNFS" invoke acme/prod/line --mount "$MNT")" "ABC"
done_testing
