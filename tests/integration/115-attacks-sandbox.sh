#!/usr/bin/env bash
# Attacks on the sandbox through `mounts` and `cwd` (issue 23, items 1-3
# and 19), replayed as alice against bob and the host: a source is
# resolved as the function's user without following any symbolic link
# (a link to /, into bob's 0700 tree, into fnfs's data directory, one
# swapped in after the write, a path through /proc/self/root), `rw` only
# where that user may write, every bind nosuid and nodev, /proc, /sys,
# /dev, the data directory and the mount refused at the write (EINVAL,
# through `mounts` and `config`), no FUSE filesystem in a sandbox (not
# even through a bind of an ancestor of the mount), an unmount that ends
# everything although instances bind that ancestor, and a remount after
# a crash that does not wait for a controller that is gone.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/users.sh"

start_fnfs || exit 1
tenants_for_users || exit 1
check "the local worker registers" wait_until 10 state_is "$MNT/workers/local-1/state" healthy

# reason_has INSTANCE-DIR TEXT: its status's reason holds TEXT.
reason_has() {
	awk '$1 == "reason" { $1 = ""; print }' "$1/status" 2>/dev/null | grep -q -- "$2"
}
# never_ran FUNCTION-DIR: no instance of it got a pid.
never_ran() {
	[ -z "$(pid_of "$1/instances/0")" ] || [ "$(pid_of "$1/instances/0")" = 0 ]
}
# afn NAME MOUNTS: alice's function NAME (sleep, cwd her directory) with
# MOUNTS (one line) written before its command.
afn() {
	local f=$MNT/tenants/acme/prod/$1
	as "$A" mkdir -p "$f" || return 1
	as "$A" sh -c "echo '$T/alice' > '$f/cwd'" || return 1
	if [ -n "$2" ]; then as "$A" sh -c "echo '$2' > '$f/mounts'" || return 1; fi
	as "$A" sh -c "echo 'sleep 1000' > '$f/command'"
}
# refused NAME TEXT: alice's function NAME does not start, and says TEXT.
refused() {
	local f=$MNT/tenants/acme/prod/$1
	wait_until 15 reason_has "$f/instances/0" "$2" && never_ran "$f"
}

# ---- what bob keeps from alice: a 0700 directory
mkdir -m 700 "$T/bob/private" && mkdir "$T/bob/private/pub"
echo "bob-private-note" >"$T/bob/private/pub/n.txt"
chown -R "$B:" "$T/bob/private"
check "alice cannot read bob's note on the host" eval "! as '$A' cat '$T/bob/private/pub/n.txt' 2>/dev/null"

# ---- item 1: symbolic links are never followed, and only alice's rights
as "$A" ln -s / "$T/alice/rootlink"
afn rootlink "$T/alice/rootlink rw"
check "a symlink to / bound rw is refused at the start" refused rootlink "symbolic link"
check "with the reason in error" wait_until 15 grep -q "rootlink: a symbolic link" "$MNT/tenants/acme/prod/rootlink/error"

as "$A" ln -s "$T/bob/private/pub" "$T/alice/boblink"
afn boblink "$T/alice/boblink"
check "a symlink past bob's 0700 directory is refused" refused boblink "symbolic link"
afn bobdirect "$T/bob/private/pub"
check "so is the path itself: alice cannot open it" refused bobdirect "cannot open it as uid $AU: Permission denied"
afn bobhome "$T/bob"
check "and bob's home (0700)" refused bobhome "Permission denied"

mkdir -p "$T/alice/real/sub"
chown -R "$A:" "$T/alice/real"
as "$A" ln -s "$T/alice/real" "$T/alice/mid"
afn midlink "$T/alice/mid/sub"
check "a symlink in the middle of the path is refused too" refused midlink "symbolic link"

mkdir -m 755 "$T/rootdir"
afn rwroot "$T/rootdir rw"
check "rw of a directory alice may not write is refused" refused rwroot "rw, but uid $AU may not write there"
afn roroot "$T/rootdir"
check "read-only, it is bound" wait_until 15 running_all "$MNT/tenants/acme/prod/roroot" 1
RP=$(pid_of "$MNT/tenants/acme/prod/roroot/instances/0")
check "every bind is nosuid,nodev (the mount)" grep -Eq " $T/rootdir [^ ]*nosuid,nodev" "/proc/$RP/mountinfo"
check "every bind is nosuid,nodev (the cwd)" grep -Eq " $T/alice [^ ]*nosuid,nodev" "/proc/$RP/mountinfo"

# A symlink swapped in after the write, before a start: the start
# resolves again.
as "$A" mkdir "$T/alice/swap"
afn swap "$T/alice/swap rw"
check "a real directory binds" wait_until 15 running_all "$MNT/tenants/acme/prod/swap" 1
SP=$(pid_of "$MNT/tenants/acme/prod/swap/instances/0")
as "$A" sh -c "rmdir '$T/alice/swap' && ln -s / '$T/alice/swap'"
as "$A" kill -9 "$SP"
check "swapped for a symlink to /, the restart is refused" wait_until 15 reason_has "$MNT/tenants/acme/prod/swap/instances/0" "symbolic link"
check "and the instance does not run again" eval '[ "$(pid_of "$MNT/tenants/acme/prod/swap/instances/0")" != "$SP" ] && ! state_is "$MNT/tenants/acme/prod/swap/instances/0/state" running'

# A cwd through /proc/self/root (a magic link) or into /proc.
F=$MNT/tenants/acme/prod/procroot
as "$A" mkdir -p "$F"
as "$A" sh -c "echo '/proc/self/root$T/alice' > '$F/cwd' && echo 'sleep 1000' > '$F/command'"
check "a cwd through /proc/self/root is refused" refused procroot "/proc is the host's"
as "$A" ln -s "$DATA" "$T/alice/datalink"
afn datalink "$T/alice/datalink"
check "a symlink to fnfs's data directory is refused" refused datalink "symbolic link"

# ---- item 3: refused at the write, with EINVAL and a reason
F=$MNT/tenants/acme/prod/w
as "$A" mkdir -p "$F"
# write_as FILE TEXT: alice writes a line (dd says which error).
write_as() {
	echo "$2" | as "$A" dd of="$1" status=none
}
for p in /proc "/proc rw" /proc/1 /proc/self/root/etc /sys /sys/fs/cgroup /dev /dev/shm "$DATA" "$DATA/cache" "$MNT" "$MNT/tenants"; do
	check_fails_with "mounts \"$p\" is refused at the write" "Invalid argument" write_as "$F/mounts" "$p"
done
# (the reason shortens a long path: its start, then "...")
check "error says why" grep -q "is in the fnfs mount: no FUSE" "$F/error"
# config_as JSON: alice writes JSON to w's config.
config_as() {
	write_as "$F/config" "$1"
}
check_fails_with "config with mounts /proc is refused too" "Invalid argument" \
	config_as '{"command": "sleep 1", "mounts": ["/proc rw"]}'
check "with the reason in error" grep -q 'mounts: "/proc": /proc is the host' "$F/error"
check_fails_with "config with the data directory too" "Invalid argument" \
	config_as "{\"command\": \"sleep 1\", \"mounts\": [\"$DATA\"]}"
check_eq "nothing was kept" "$(cat "$F/mounts")" ""

# ---- item 2: no FUSE filesystem in a sandbox, even through an ancestor
probe_fn "$A" acme probe || exit 1
as "$A" sh -c "echo '$T' > '$MNT/tenants/acme/prod/probe/mounts'"
check "alice's probe binds the mount's ancestor" wait_until 15 running_all "$MNT/tenants/acme/prod/probe" 1
check_eq "the fnfs mount is not seen through it" "$(ask_as "$A" acme/prod/probe "stat -f -c %T $MNT; ls $MNT | wc -l")" "ext2/ext3 0"
PP=$(pid_of "$MNT/tenants/acme/prod/probe/instances/0")
check "no FUSE mount in its view" eval "! grep -q ' - fuse' /proc/$PP/mountinfo"
check_eq "nor the host's /proc (its own pids only)" "$(ask_as "$A" acme/prod/probe "test -e /proc/$PID && echo seen || echo hidden")" "hidden"

# ---- a sandbox's /tmp outlives a run (its instance's), not its bound:
# four cold calls of 6 MB each fill a /tmp of 16 MB, the function's
# memory, and no more.
TF=$MNT/tenants/acme/prod/tmpflood
as "$A" mkdir -p "$TF"
as "$A" sh -c "echo cold > '$TF/mode' && echo 16 > '$TF/memory'"
as "$A" sh -c "cat > '$TF/command'" <<'EOS'
dd if=/dev/zero of=/tmp/f$$ bs=1M count=6 2>/dev/null; df -k /tmp | awk 'NR==2 {print $2, $3}'
EOS
for i in 1 2 3 4; do used=$(ask_as "$A" acme/prod/tmpflood x); done
size=${used% *}
used=${used#* }
check_eq "its /tmp holds the function's memory" "$size" 16384
check "what the calls wrote stayed, up to that bound ($used KB)" test "$used" -gt 12000 -a "$used" -le 16384
afn holder "$T"
check "a second instance binds it too" wait_until 15 running_all "$MNT/tenants/acme/prod/holder" 1
HP=$(pid_of "$MNT/tenants/acme/prod/holder/instances/0")
check "and has no FUSE mount either" eval "! grep -q ' - fuse' /proc/$HP/mountinfo"

# ---- item 2: the unmount ends everything, whatever the instances bind
# shellcheck disable=SC2034 # read by the eval below
WP=$(worker_pids)
fusermount3 -u "$MNT"
check "the unmount ends the daemon" wait_until 20 eval '! alive "$PID"'
check "and its worker" wait_until 20 eval '! alive "$WP"'
check "and the instances that bound the ancestor" wait_until 20 eval '! alive "$PP" && ! alive "$HP" && ! alive "$RP"'
alive "$PID" || PID=""

# ---- item 19: a remount after a crash does not wait for the dead
# (The wrong wait would be 5 s; a mount's own time, measured first, is
# the reference, as a loaded machine makes both slower.)
t0=$(date +%s%N)
start_fnfs || exit 1
fresh=$((($(date +%s%N) - t0) / 1000000))
crash_fnfs
fusermount3 -uz "$MNT"
t0=$(date +%s%N)
start_fnfs
ms=$((($(date +%s%N) - t0) / 1000000))
check "a remount after kill -9 and fusermount3 -uz waits for nobody (${ms} ms; a first mount took ${fresh} ms)" test "$ms" -lt $((fresh + 3500))
check "and serves" mounted

done_testing
