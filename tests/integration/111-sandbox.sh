#!/usr/bin/env bash
# Tenants as a security boundary, with two real users: a tenant given to
# alice runs its functions as alice, in a sandbox (its own pids, a private
# /tmp, a read-only system, no capabilities, no_new_privs, no new user
# namespaces), held to its pids, memory and cpu limits; bob's tenant and
# its files are out of reach. Root's tenants run as --run-as (nobody).
. "$(dirname "$0")/lib.sh"

# alice ($A) and bob ($B), with private directories $T/alice and $T/bob.
. "$(dirname "$0")/users.sh"
echo "bob's secret" >"$T/bob/secret"
chown "$B:" "$T/bob/secret"
chmod 600 "$T/bob/secret"

start_fnfs || exit 1
mkdir -p "$MNT/tenants/acme" "$MNT/tenants/bobco/prod/idle" "$MNT/tenants/rootco/prod/who"
chown "$A:" "$MNT/tenants/acme"
chown "$B:" "$MNT/tenants/bobco"

# ---- bob's function, to aim at
BI=$MNT/tenants/bobco/prod/idle
echo "$T/bob" >"$BI/cwd"
echo 'sleep 1000' >"$BI/command"
check "bob's function runs" wait_until 10 running_all "$BI" 1
BP=$(pid_of "$BI/instances/0")
check_eq "bob's function runs as bob" "$(stat -c %u "/proc/$BP")" "$BU"

# ---- alice's probe: a hot function that runs each request as shell code
P=$MNT/tenants/acme/prod/probe
as "$A" mkdir -p "$P"
check "alice made a function in her tenant" test -d "$P"
as "$A" sh -c "echo hot > '$P/mode' && echo '$T/alice' > '$P/cwd'"
as "$A" sh -c "cat > '$P/command'" <<'EOF'
while IFS= read -r l; do sh -c "$l" </dev/null 2>&1 | tr '\n' ' '; echo; done
EOF
check "alice's probe runs" wait_until 10 running_all "$P" 1

# ask COMMAND: runs COMMAND inside the probe, through alice's invoke.
ask() {
	printf '%s' "$1" | as "$A" "$FNFS" invoke acme/prod/probe --mount "$MNT" | sed 's/ *$//'
}

check_eq "a function of acme runs with alice's uid" "$(ask 'id -u')" "$AU"
check_eq "and alice's group" "$(ask 'id -g')" "$(id -g "$A")"
check_eq "no capabilities" "$(ask 'grep CapEff /proc/self/status')" "$(printf 'CapEff:\t0000000000000000')"
check_eq "no capabilities to regain either" "$(ask 'grep CapBnd /proc/self/status')" "$(printf 'CapBnd:\t0000000000000000')"
check_eq "no_new_privs" "$(ask 'grep NoNewPrivs /proc/self/status')" "$(printf 'NoNewPrivs:\t1')"
n=$(ask 'ls /proc | grep -c "^[0-9][0-9]*$"')
check "ls /proc lists only its own processes ($n)" test "$n" -ge 1 -a "$n" -le 6
check_eq "the daemon's pid is not there" "$(ask "test -e /proc/$PID && echo visible || echo hidden")" "hidden"
check_eq "bob's process cannot be signalled" "$(ask "kill -0 $BP 2>/dev/null && echo sent || echo refused")" "refused"
check "bob's function still runs" alive "$BP"
check_eq "bob's files cannot be read" "$(ask "cat $T/bob/secret >/dev/null 2>&1 && echo read || echo refused")" "refused"
check_eq "the system is read-only" "$(ask "touch /etc/fnfs-$$ 2>/dev/null && echo wrote || echo refused")" "refused"
check "and nothing was written there" test ! -e "/etc/fnfs-$$"
check_eq "nor in another directory of the host" "$(ask "touch /var/tmp/fnfs-$$ 2>/dev/null && echo wrote || echo refused")" "refused"
check_eq "its cwd is writable" "$(ask "touch $T/alice/made && echo wrote || echo refused")" "wrote"
check "as alice" test "$(stat -c %U "$T/alice/made" 2>/dev/null)" = "$A"
check_eq "/tmp is writable" "$(ask "touch /tmp/fnfs-$$ && echo wrote || echo refused")" "wrote"
check "and private: not the host's /tmp" test ! -e "/tmp/fnfs-$$"
check_eq "the fnfs tree is not in its view" "$(ask "test -e $MNT/tenants && echo seen || echo hidden")" "hidden"
check_eq "no new user namespace" "$(ask 'unshare -U true 2>/dev/null && echo escaped || echo refused')" "refused"
check_eq "no user namespace mapped to root" "$(ask 'unshare -r id -u 2>/dev/null || echo refused')" "refused"

# ---- limits
F=$MNT/tenants/acme/prod/bomb
as "$A" mkdir "$F"
as "$A" sh -c "echo 32 > '$F/pids' && echo '$T/alice' > '$F/cwd'"
as "$A" sh -c "cat > '$F/command'" <<'EOF'
bash -c 'b() { b | b & }; b; sleep 1000'
EOF
check "the fork bomb starts" wait_until 10 running_all "$F" 1
FP=$(pid_of "$F/instances/0")
# Count alice's processes while the bomb goes off: at most pids (32) for
# the bomb plus the probe's few.
most=0
for _ in $(seq 40); do
	k=$(ps -u "$A" --no-headers | wc -l)
	[ "$k" -gt "$most" ] && most=$k
	sleep 0.05
done
check "a fork bomb is stopped at pids ($most processes of alice at most)" test "$most" -le 40
check_eq "the worker and other functions keep running" "$(ask 'echo alive')" "alive"
check "bob's function too" alive "$BP"
echo stop >"$F/state"
check "stopping it ends every process of the bomb" wait_until 15 eval '[ "$(ps -u "$A" --no-headers | wc -l)" -le 8 ]'
check "its first process is gone" eval "! alive $FP"

H=$MNT/tenants/acme/prod/hog
as "$A" mkdir "$H"
as "$A" sh -c "echo 32 > '$H/memory' && echo never > '$H/restart_policy' && echo '$T/alice' > '$H/cwd' && echo 'tail /dev/zero' > '$H/command'"
check "a memory hog is OOM-killed" wait_until 20 state_is "$H/instances/0/state" failed
check_eq "and recorded as oom" "$(stat_of "$H/instances/0/status" last_exit)" "oom"
check "without touching another tenant" alive "$BP"
check_eq "or another function" "$(ask 'echo alive')" "alive"

C=$MNT/tenants/acme/prod/spin
as "$A" mkdir "$C"
as "$A" sh -c "echo 100 > '$C/cpu' && echo '$T/alice' > '$C/cwd' && echo 'while :; do :; done' > '$C/command'"
check "a busy loop runs" wait_until 10 running_all "$C" 1
CP=$(pid_of "$C/instances/0")
ticks() { awk '{print $14 + $15}' "/proc/$CP/stat"; }
sleep 0.5
t0=$(ticks)
s0=$(date +%s%N)
sleep 3
t1=$(ticks)
s1=$(date +%s%N)
hz=$(getconf CLK_TCK)
pct=$(( (t1 - t0) * 100000000000 / hz / (s1 - s0) ))
# (the cap is the point; a loaded machine may give it less than its 10%)
check "cpu 100 keeps a busy loop near 10% of a CPU ($pct%)" test "$pct" -ge 1 -a "$pct" -le 16
# (group names hold colons: tenant:namespace:function)
cg=$(sed -n 's/^[0-9]*:\(cpu,cpuacct\|cpu\)://p' "/proc/$CP/cgroup")
if [ -n "$cg" ] && [ -r "/sys/fs/cgroup/cpu$cg/cpu.stat" ]; then
	thr=$(awk '$1 == "nr_throttled" {print $2}' "/sys/fs/cgroup/cpu$cg/cpu.stat")
	check "its cgroup shows the throttling ($thr periods)" test "${thr:-0}" -gt 0
	check_eq "its quota is 10 ms per 100 ms" "$(cat "/sys/fs/cgroup/cpu$cg/cpu.cfs_quota_us")/$(cat "/sys/fs/cgroup/cpu$cg/cpu.cfs_period_us")" "10000/100000"
else
	cg=$(sed -n 's/^0:://p' "/proc/$CP/cgroup")
	check_eq "its cgroup's cpu.max is 10 ms per 100 ms" "$(cat "/sys/fs/cgroup$cg/cpu.max")" "10000 100000"
fi
echo stop >"$C/state"

# ---- network none
N=$MNT/tenants/acme/prod/offline
as "$A" mkdir "$N"
as "$A" sh -c "echo none > '$N/network' && echo hot > '$N/mode' && echo '$T/alice' > '$N/cwd'"
as "$A" sh -c "cat > '$N/command'" <<'EOF'
while IFS= read -r l; do sh -c "$l" </dev/null 2>&1 | tr '\n' ' '; echo; done
EOF
check "a function without network runs" wait_until 10 running_all "$N" 1
# /proc/net/dev is the caller's network namespace's (sysfs is the host's).
devs='tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "'
check_eq "it sees only a loopback device" \
	"$(printf '%s' "$devs" | as "$A" "$FNFS" invoke acme/prod/offline --mount "$MNT" | sed 's/ *$//')" "lo"
check "the probe, with the host's network, sees more" eval '[ "$(ask "$devs")" != lo ]'

# ---- isolation is root's
check_fails_with "alice cannot take her function out of the sandbox" "not permitted\|Permission denied" \
	as "$A" sh -c "echo none > '$P/isolation'"
check_fails_with "nor through config" "not permitted\|Permission denied" \
	as "$A" sh -c "sed 's/\"sandbox\"/\"none\"/' '$P/config' > '$T/alice/cfg' && cat '$T/alice/cfg' > '$P/config'"
check_eq "isolation is unchanged" "$(cat "$P/isolation")" "sandbox"
echo none >"$P/isolation"
check_eq "root can" "$(cat "$P/isolation")" "none"
check "and then the probe sees the host's processes" wait_until 10 eval '[ "$(ask "test -e /proc/$PID && echo visible")" = visible ]'
check_eq "still as alice" "$(ask 'id -u')" "$AU"
check_eq "still without capabilities" "$(ask 'grep CapEff /proc/self/status')" "$(printf 'CapEff:\t0000000000000000')"

# ---- root's tenants run as --run-as (nobody)
W=$MNT/tenants/rootco/prod/who
echo 'sleep 1000' >"$W/command"
check "a function of a root-owned tenant runs" wait_until 10 running_all "$W" 1
check_eq "as nobody" "$(stat -c %U "/proc/$(pid_of "$W/instances/0")")" "nobody"

# ---- functions as root only when allowed
stop_fnfs
check_fails_with "--run-as root is refused without --allow-root-functions" "allow-root-functions" \
	"$FNFS" mount --data "$DATA" --run-as root "$MNT"
check "and nothing was mounted" eval '! mounted'
check "--run-as root --allow-root-functions mounts" start_fnfs --run-as root --allow-root-functions
check "root's function runs again" wait_until 10 running_all "$W" 1
RP=$(pid_of "$W/instances/0")
check_eq "as root, when allowed" "$(stat -c %U "/proc/$RP")" "root"
check_eq "still without capabilities" "$(awk '$1 == "CapEff:" {print $2}' "/proc/$RP/status")" "0000000000000000"
check_eq "alice's functions still run as alice" "$(ask 'id -u')" "$AU"
done_testing
