#!/usr/bin/env bash
# Placement (spec 8): tags (strict and loose), untagged workers first,
# dedicated namespaces, memory taken per placement, strategies, and pending
# instances with their reason, placed as soon as a worker fits.
. "$(dirname "$0")/lib.sh"
start_fnfs --workers 0 || exit 1
T1=$MNT/tenants/acme/prod

# Strict tags with no worker: pending, with the reason everywhere.
mkdir -p "$T1/gpu"
echo gpu >"$T1/gpu/tags"
echo 512 >"$T1/gpu/memory"
echo 'sleep 1000' >"$T1/gpu/command"
check "strict: pending without a gpu worker" wait_until 30 state_is "$T1/gpu/instances/0/state" pending
check "the reason is in status" grep -q '^reason no worker with tag gpu and 512 MB free$' "$T1/gpu/instances/0/status"
check "and in error" grep -q 'instance 0 is pending: no worker with tag gpu and 512 MB free' "$T1/gpu/error"
check "and in events" grep -q 'instance.pending acme/prod/gpu/0 reason="no worker with tag gpu and 512 MB free"' "$MNT/events"
check_eq "the function is pending" "$(cat "$T1/gpu/state")" "pending"

check "an untagged worker registers" start_worker plain 1024
check_eq "strict: an untagged worker does not take it" "$(cat "$T1/gpu/instances/0/state")" "pending"
check "a gpu worker registers" start_worker gpu-1 2048 --tags gpu,ssd
check "the pending instance is placed as soon as it fits" wait_until 10 state_is "$T1/gpu/instances/0/state" running
check_eq "on the gpu worker" "$(where "$T1/gpu/instances/0")" "gpu-1"

# No tags: untagged workers first, even with less free memory.
mkdir "$T1/web"
echo 'sleep 1000' >"$T1/web/command"
check "an untagged function runs" wait_until 10 running_all "$T1/web" 1
check_eq "on the untagged worker" "$(where "$T1/web/instances/0")" "plain"
# ... and on tagged ones only when no untagged one fits.
mkdir "$T1/big"
echo 900 >"$T1/big/memory"
echo 'sleep 1000' >"$T1/big/command"
check "a 900 MB instance runs" wait_until 10 running_all "$T1/big" 1
check_eq "it no longer fits the untagged worker: tagged one" "$(where "$T1/big/instances/0")" "gpu-1"
check_eq "memory is taken per placement" "$(cat "$MNT/workers/gpu-1/free") $(cat "$MNT/workers/plain/free")" "$((2048 - 512 - 900)) $((1024 - 128))"

# Loose: no ssd-and-fast worker, so it falls back: untagged first.
mkdir "$T1/loose"
echo "ssd fast" >"$T1/loose/tags"
echo loose >"$T1/loose/tags_policy"
echo 'sleep 1000' >"$T1/loose/command"
check "loose: it runs without a matching worker" wait_until 10 running_all "$T1/loose" 1
check_eq "loose: on the untagged worker first" "$(where "$T1/loose/instances/0")" "plain"
mkdir "$T1/strict2"
echo "ssd fast" >"$T1/strict2/tags"
echo 'sleep 1000' >"$T1/strict2/command"
check "strict with two tags: pending" wait_until 30 grep -q '^reason no worker with tags ssd,fast and 128 MB free$' "$T1/strict2/instances/0/status"

# Dedicated namespaces: a worker for acme/dev takes only acme/dev.
check "a dedicated worker registers" start_worker ded 4096 --namespaces acme/dev
mkdir -p "$MNT/tenants/acme/dev/job" "$MNT/tenants/other/dev/job"
echo 3000 >"$MNT/tenants/acme/dev/job/memory"
echo 'sleep 1000' >"$MNT/tenants/acme/dev/job/command"
echo 1000 >"$MNT/tenants/other/dev/job/memory"
echo 'sleep 1000' >"$MNT/tenants/other/dev/job/command"
check "acme/dev runs on its dedicated worker" wait_until 10 eval '[ "$(where "$MNT/tenants/acme/dev/job/instances/0")" = ded ]'
check "other/dev may not use it" wait_until 30 grep -q "^reason no worker with 1000 MB free that serves other/dev$" "$MNT/tenants/other/dev/job/instances/0/status"

# Memory runs out part-way through a batch.
check "a small tagged worker registers" start_worker small 500 --tags batch
mkdir -p "$MNT/tenants/batch/b/f"
echo batch >"$MNT/tenants/batch/b/f/tags"
echo 200 >"$MNT/tenants/batch/b/f/memory"
echo 4 >"$MNT/tenants/batch/b/f/parallelism"
echo 'sleep 1000' >"$MNT/tenants/batch/b/f/command"
check "two of four fit" wait_until 10 eval '[ "$(count_on "$MNT/tenants/batch/b/f" small)" = 2 ]'
states() {
	cat "$MNT/tenants/batch/b/f"/instances/*/state | sort | uniq -c | awk '{print $1 $2}' | tr '\n' ' '
}
check "two run and the other two wait" wait_until 10 eval '[ "$(states)" = "2pending 2running " ]'
check "with the reason" grep -q '^reason no worker with tag batch and 200 MB free$' "$MNT/tenants/batch/b/f/instances/3/status"

# Strategies: spread evens out (and avoids a second copy on one worker);
# pack fills the fullest worker that fits.
check "two equal workers register" eval 'start_worker s1 8192 --tags strat --namespaces strat/s && start_worker s2 8192 --tags strat --namespaces strat/s'
mkdir -p "$MNT/tenants/strat/s/spread" "$MNT/tenants/strat/s/pack" "$MNT/tenants/strat/s/rnd"
for f in spread pack rnd; do echo strat >"$MNT/tenants/strat/s/$f/tags"; done
echo 4 >"$MNT/tenants/strat/s/spread/parallelism"
echo 'sleep 1000' >"$MNT/tenants/strat/s/spread/command"
check "spread: 4 instances run" wait_until 10 running_all "$MNT/tenants/strat/s/spread" 4
check_eq "spread: two on each worker" "$(count_on "$MNT/tenants/strat/s/spread" s1) $(count_on "$MNT/tenants/strat/s/spread" s2)" "2 2"
echo pack >"$MNT/workers/strategy"
check_eq "the strategy is pack" "$(cat "$MNT/workers/strategy")" "pack"
check_fails_with "an unknown strategy is refused" "Invalid argument" write "$MNT/workers/strategy" fair
echo 1000 >"$MNT/tenants/strat/s/spread/memory" # s1 and s2 now hold 4000 each
echo 3 >"$MNT/tenants/strat/s/pack/parallelism"
echo 'sleep 1000' >"$MNT/tenants/strat/s/pack/command"
check "pack: 3 instances run" wait_until 10 running_all "$MNT/tenants/strat/s/pack" 3
p1=$(count_on "$MNT/tenants/strat/s/pack" s1)
p2=$(count_on "$MNT/tenants/strat/s/pack" s2)
check "pack: all on one worker" test "$p1$p2" = "30" -o "$p1$p2" = "03"
echo random >"$MNT/workers/strategy"
echo 2 >"$MNT/tenants/strat/s/rnd/parallelism"
echo 'sleep 1000' >"$MNT/tenants/strat/s/rnd/command"
check "random: placed on the candidates" wait_until 10 running_all "$MNT/tenants/strat/s/rnd" 2
echo spread >"$MNT/workers/strategy"
check "the strategy survives a remount" eval 'stop_fnfs; start_fnfs --workers 0 && [ "$(cat "$MNT/workers/strategy")" = spread ]'
done_testing
