#!/usr/bin/env bash
# Owners of tenants, with two real users: chown and chmod of a tenant
# (root's and the owner's), the modes the kernel checks (allow_other,
# default_permissions), what the owner may do and others may not, the
# root's status, stats and metrics rendered per caller, the root-only
# events file and a tenant's own, and owners kept across a clean remount
# and a kill -9.
. "$(dirname "$0")/lib.sh"

A=fa$$ # alice: owns acme
B=fb$$ # bob: owns nothing; a member of group S
S=fs$$ # a group shared by alice's tenant team and bob
owners_cleanup() {
	cleanup
	passwd_locked userdel "$A" 2>/dev/null
	passwd_locked userdel "$B" 2>/dev/null
	passwd_locked groupdel "$A" 2>/dev/null
	passwd_locked groupdel "$B" 2>/dev/null
	passwd_locked groupdel "$S" 2>/dev/null
}
trap owners_cleanup EXIT
if ! { passwd_locked groupadd "$A" && passwd_locked groupadd "$B" && passwd_locked groupadd "$S" &&
	passwd_locked useradd -M -N -s /usr/sbin/nologin -c "fnfs-test ${FNFS_TEST_RUN:-$$}" -g "$A" "$A" &&
	passwd_locked useradd -M -N -s /usr/sbin/nologin -c "fnfs-test ${FNFS_TEST_RUN:-$$}" -g "$B" -G "$S" "$B"; }; then
	echo "not ok 1 - cannot create the test users"
	exit 1
fi
UA=$(id -u "$A")
# The users must reach the mountpoint.
chmod 755 "$T"

# as USER COMMAND...: runs the command as USER, with its groups.
as() {
	local u=$1
	shift
	setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups "$@"
}
# sh_as USER SCRIPT: a shell line as USER.
sh_as() {
	as "$1" bash -c "$2"
}
# call_as USER FN PAYLOAD: one transaction on FN's invoke file, as USER.
call_as() {
	sh_as "$1" "exec 3<>'$2/invoke' && printf '%s' '$3' >&3 && cat <&3"
}

start_fnfs || exit 1
check "the local worker registers" wait_until 10 state_is "$MNT/workers/local-1/state" healthy
check "the mount has allow_other and default_permissions" \
	grep -q " $MNT fuse.fnfs .*default_permissions,allow_other" /proc/mounts
TA=$MNT/tenants/acme
mkdir -p "$TA" "$MNT/tenants/other/prod/fn" "$MNT/tenants/team/prod/fn"
check_eq "a new tenant is root's, 0750" "$(stat -c '%U:%G %a' "$TA")" "root:root 750"
check_fails_with "only root creates tenants" "Permission denied" as "$A" mkdir "$MNT/tenants/mine"
check_fails_with "chown by a non-root is EPERM" "Operation not permitted" as "$A" chown "$A:$A" "$TA"
check "root chowns acme to alice" chown "$A:$A" "$TA"
check_eq "the tenant shows its owner" "$(stat -c '%U:%G %a' "$TA")" "$A:$A 750"
check_fails_with "chown of a namespace is EPERM" "Operation not permitted" chown "$A" "$MNT/tenants/other/prod"
check_fails_with "chmod of a file is EPERM" "Operation not permitted" chmod 600 "$MNT/tenants/other/prod/fn/memory"
check_fails_with "set-id and sticky bits are EINVAL" "Invalid argument" chmod 4750 "$TA"
chown "$A:$S" "$MNT/tenants/team"

# ---- alice manages her tenant
F=$TA/prod/up
check "alice makes a namespace and a function" as "$A" mkdir -p "$F"
check_eq "they are hers" "$(stat -c '%U:%G' "$TA/prod" "$F" "$F/memory" "$F/instances" | sort -u)" "$A:$A"
check_eq "file modes in a 0750 tenant" \
	"$(stat -c '%n %a' "$F"/{memory,revision,env,config,restart,invoke,log} "$TA/events" | sed "s|$TA/||")" \
	"prod/up/memory 640
prod/up/revision 440
prod/up/env 600
prod/up/config 600
prod/up/restart 200
prod/up/invoke 600
prod/up/log 440
events 440"
check "alice writes attributes" sh_as "$A" "echo hot > '$F/mode' && echo 'while read -r l; do echo \"\$l\" | tr a-z A-Z; done' > '$F/command' && echo SECRET=1 > '$F/env'"
check "its instance runs" wait_until 15 state_is "$F/instances/0/state" running
check_eq "alice invokes" "$(call_as "$A" "$F" hello)" "HELLO"
pid=$(pid_of "$F/instances/0")
check "alice restarts it" sh_as "$A" "echo 1 > '$F/restart'"
check "a new process runs" wait_until 15 eval '[ -n "$(pid_of "$F/instances/0")" ] && [ "$(pid_of "$F/instances/0")" != "$pid" ]'
check "alice stops and starts an instance" sh_as "$A" "echo stop > '$F/instances/0/state' && echo start > '$F/instances/0/state'"
check "it runs again" wait_until 15 state_is "$F/instances/0/state" running
check "alice reads its log" sh_as "$A" "cat '$F/log' >/dev/null"
check "alice reads env" sh_as "$A" "grep -q SECRET=1 '$F/env'"
check "alice removes a function she made" sh_as "$A" "mkdir '$TA/prod/tmp' && rmdir '$TA/prod/tmp'"

# ---- bob does not
check_fails_with "bob cannot list acme" "Permission denied" as "$B" ls "$TA"
check_fails_with "bob cannot reach acme's env" "Permission denied" as "$B" cat "$F/env"
check_fails_with "bob cannot write acme's restart" "Permission denied" sh_as "$B" "echo 1 > '$F/restart'"
check_fails_with "bob cannot invoke acme's function" "Permission denied" call_as "$B" "$F" hello
check_fails_with "bob cannot make a namespace in acme" "Permission denied" as "$B" mkdir "$TA/x"
check_fails_with "bob cannot chmod acme" "Operation not permitted" as "$B" chmod 777 "$TA"
# In team (alice's, group S, 0750) bob is the group: he reads, never
# secrets, never writes.
G=$MNT/tenants/team/prod/fn
check_eq "bob, in team's group, lists it" "$(as "$B" ls "$MNT/tenants/team" | tr '\n' ' ')" "events prod quota "
check_eq "bob reads team's memory" "$(as "$B" cat "$G/memory")" "128"
check_fails_with "bob cannot read team's env" "Permission denied" as "$B" cat "$G/env"
check_fails_with "bob cannot read team's config" "Permission denied" as "$B" cat "$G/config"
check_fails_with "bob cannot write team's restart" "Permission denied" sh_as "$B" "echo 1 > '$G/restart'"
check_fails_with "bob cannot write team's memory" "Permission denied" sh_as "$B" "echo 64 > '$G/memory'"
check_fails_with "bob cannot invoke team's function" "Permission denied" call_as "$B" "$G" hello
check_fails_with "bob cannot remove team's function" "Permission denied" as "$B" rmdir "$G"

# ---- the root's files, per caller
check "root's status shows acme" grep -q "^acme/prod/up " "$MNT/status"
check "bob reads the status header" eval 'as "$B" cat "$MNT/status" | head -1 | grep -q "^FUNCTION "'
check "bob's status does not" eval '! as "$B" cat "$MNT/status" | grep -q acme'
check "bob's status shows team, through his supplementary group" eval 'as "$B" cat "$MNT/status" | grep -q "^team/prod/fn "'
check_eq "alice's status: acme and team" "$(as "$A" cat "$MNT/status" | awk 'NR > 1 { print $1 }' | tr '\n' ' ')" "acme/prod/up team/prod/fn "
check "bob's metrics do not mention acme" eval '! as "$B" cat "$MNT/metrics" | grep -q "tenant=\"acme\""'
check "root's metrics do" grep -q 'tenant="acme"' "$MNT/metrics"
check "bob's metrics show team" eval 'as "$B" cat "$MNT/metrics" | grep -q "tenant=\"team\""'
check_eq "bob's stats count his tenants" "$(as "$B" cat "$MNT/stats" | awk '$1 == "tenants" || $1 == "functions" { print $2 }' | tr '\n' ' ')" "1 1 "
check_eq "root's stats count all" "$(awk '$1 == "tenants" || $1 == "functions" { print $2 }' "$MNT/stats" | tr '\n' ' ')" "3 3 "
check_eq "bob's status size is what he reads" "$(as "$B" stat -c %s "$MNT/status")" "$(as "$B" cat "$MNT/status" | wc -c)"
check "bob's assignments do not name acme" eval '! as "$B" ls "$MNT"/workers/*/assignments | grep -q acme'
check "root's do" eval 'ls "$MNT"/workers/*/assignments | grep -q "^acme:prod:up:0$"'
# The kernel does not go on with the modes it cached inside a tenant:
# with team 0710, bob still passes through, and reads nothing at once.
as "$B" cat "$G/memory" >/dev/null
chmod 710 "$MNT/tenants/team"
check_fails_with "team 0710: bob cannot read its memory at once" "Permission denied" as "$B" cat "$G/memory"
chmod 700 "$MNT/tenants/team"
check "team closed: bob's status drops it at once" eval '! as "$B" cat "$MNT/status" | grep -q team'
check_fails_with "team closed: bob cannot list it at once" "Permission denied" as "$B" ls "$MNT/tenants/team"

# ---- events
check_fails_with "bob cannot read the root's events" "Permission denied" as "$B" cat "$MNT/events"
ev=$(as "$A" cat "$TA/events")
check "alice reads acme's events" test -n "$ev"
check "they hold acme's lines only" eval '! grep -v " acme\(/[^ ]*\)\?\( \|$\)" <<<"$ev" | grep -q .'
check "acme's creation is there" grep -q " tenant.created acme$" <<<"$ev"
check "and its chown" grep -q " tenant.owner acme uid=$UA " <<<"$ev"
check "every line is a line of the root's events" eval '! grep -vxFf "$MNT/events" <<<"$ev" | grep -q .'
check "other tenants' lines are not there" eval '! grep -q "other\|team" <<<"$ev"'
# (a line may come between two reads: both are read again until equal)
check "its size is its length" wait_until 10 eval '[ "$(stat -c %s "$TA/events")" = "$(as "$A" cat "$TA/events" | wc -c)" ]'
size=$(stat -c %s "$TA/events")
as "$A" tail -c 0 -f "$TA/events" >"$T/tail" 2>&1 &
BGPIDS+=($!)
# A change after tail's first read shows: tail may take a while to start
# on a loaded machine (and -c 0 skips what came before), so the memory
# changes (64, 65, 64...) until one is seen, however late.
mem=65
follows() {
	mem=$((129 - mem))
	echo "$mem" >"$F/memory"
	wait_until 1 grep -q "function.updated acme/prod/up .*changed=memory" "$T/tail"
}
check "tail -f follows acme's events" wait_until 30 follows
check "what was there keeps its offsets" eval '[ "$(head -c "$size" "$TA/events")" = "$(head -c "$size" <<<"$ev")" ]'
check_eq "a read at an offset starts there" "$(dd if="$TA/events" bs=1 skip=$((size - 20)) count=20 2>/dev/null)" "$(tail -c 20 <<<"$ev")"
check_fails_with "a namespace cannot be named events" "File exists" mkdir "$TA/events"

stat "$MNT/tenants/other/prod/fn/memory" "$MNT/tenants/other/prod" >/dev/null
chown "$A" "$MNT/tenants/other"
check "after a chown, the owner writes inside at once" sh_as "$A" "echo 64 > '$MNT/tenants/other/prod/fn/memory'"

# ---- kept across remounts
chmod 0710 "$TA"
stop_fnfs
check "clean remount" start_fnfs
check_eq "owner and mode survive a clean remount" "$(stat -c '%U:%G %a' "$TA" "$MNT/tenants/team" | tr '\n' ' ')" "$A:$A 710 $A:$S 700 "
crash_fnfs
stop_fnfs
check "remount after kill -9" start_fnfs
check_eq "owner and mode survive kill -9" "$(stat -c '%U:%G %a' "$TA" "$MNT/tenants/team" | tr '\n' ' ')" "$A:$A 710 $A:$S 700 "
check_eq "alice still owns what is inside" "$(stat -c '%U' "$F/memory")" "$A"
check "alice still writes" sh_as "$A" "echo 32 > '$F/memory'"
check_eq "the value is hers" "$(cat "$F/memory")" "32"

done_testing
