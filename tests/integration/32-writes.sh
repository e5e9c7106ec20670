#!/usr/bin/env bash
# One open-write-close of an attribute file is one change: the writes of
# one open make one value, checked at each write(2) (which reports the
# error) and applied once at close, with one revision and one restart. A
# refused write leaves the function as it was before the open.
. "$(dirname "$0")/lib.sh"
# The data directory is a small tmpfs of its own, so that the store can be
# made to fail at the end (a full disk).
TMPFS=""
if mkdir -p "$DATA" && mount -t tmpfs -o size=16m fnfs-test "$DATA" 2>/dev/null; then
	TMPFS=$DATA
	trap 'cleanup; umount "$TMPFS"; rm -rf "$T"' EXIT
fi
start_fnfs || exit 1
F=$MNT/tenants/acme/prod/fn
mkdir -p "$F"
write "$F/command" 'sleep 1000'
check "the instance runs" wait_until 10 running_all "$F" 1

rev() { cat "$F/revision"; }
# updates N: the journal holds N function.updated lines of fn.
updates() { grep -c ' function.updated acme/prod/fn ' "$MNT/events"; }
# starts: how many times instance 0 has started.
starts() { grep -c ' instance.started acme/prod/fn/0 ' "$MNT/events"; }

# ---- several writes in one open: one revision, one restart
pid0=$(pid_of "$F/instances/0")
r0=$(rev)
u0=$(updates)
s0=$(starts)
# bash writes this as one write(2) per line.
printf 'LOG_LEVEL=debug\nREGION=eu\n' >"$F/env"
check_eq "two lines written by printf make one revision" "$(rev)" "$((r0 + 1))"
check_eq "and one function.updated" "$(updates)" "$((u0 + 1))"
check "the instance restarts with the new env" wait_until 10 eval '[ "$(env_of "$(pid_of "$F/instances/0")" REGION)" = eu ]'
check_eq "once: one new start" "$(starts)" "$((s0 + 1))"
check_eq "its env has both lines" "$(env_of "$(pid_of "$F/instances/0")" LOG_LEVEL)" "debug"
check "the old process is gone" wait_until 10 eval "! alive $pid0"

# A child that inherits the descriptor and never writes (a command
# substitution) does not apply half of the value when it exits.
r0=$(rev)
{
	echo A=1
	x=$(printf '%s' sub)
	echo "B=$x"
} >"$F/env"
check_eq "a group redirect with a command substitution is one revision" "$(rev)" "$((r0 + 1))"
check_eq "with the whole value" "$(tr '\n' ' ' <"$F/env")" "A=1 B=sub "

# ---- a refused write inside an open changes nothing
pid1=$(pid_of "$F/instances/0")
r0=$(rev)
s0=$(starts)
check_fails_with "a bad second line fails its write(2)" "Invalid argument" bash -c "printf 'A=9\n1BAD=2\n' > '$F/env'"
check_eq "env is as before the open" "$(tr '\n' ' ' <"$F/env")" "A=1 B=sub "
check_eq "no revision" "$(rev)" "$r0"
check "the refusal names the line and EINVAL" grep -q 'function.rejected acme/prod/fn file=env errno=EINVAL reason="env key \\"1BAD\\"' "$MNT/events"
check_fails_with "a one-value file: a bad second write fails" "Invalid argument" bash -c "{ echo 64; echo lots; } > '$F/memory'"
check_eq "and its good first write is not applied" "$(cat "$F/memory")" "128"
check_eq "no revision for either" "$(rev)" "$r0"
# Writes after a refused one fail too, with the same errno.
check_fails_with "a write after a refused one fails" "Invalid argument" bash -c "{ echo X=1; echo BAD; echo Y=2; } > '$F/env'"
check_eq "nothing of that open is applied" "$(tr '\n' ' ' <"$F/env")" "A=1 B=sub "
# The close of a spoiled open says so again (bash ignores it; a program
# that checks close(2) sees it).
closed=$(python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)
for v in (b"Z=1\n", b"1BAD=1\n", b"Y=2\n"):
    try:
        os.write(fd, v); print("ok", end=" ")
    except OSError as e:
        print(e.strerror, end=", ")
try:
    os.close(fd); print("closed")
except OSError as e:
    print("close:", e.strerror)' "$F/env")
check_eq "each write(2) and the close report the refusal" "$closed" "ok Invalid argument, Invalid argument, close: Invalid argument"
check_eq "the instance was not restarted" "$(pid_of "$F/instances/0")" "$pid1"
check_eq "no start" "$(starts)" "$s0"

# ---- descriptors kept open, duplicated, and two opens at once
r0=$(rev)
exec 3>"$F/env"
echo K1=a >&3
# Each close of a copy that wrote applies the value so far.
check_eq "a kept-open fd: the close of the copy that wrote applies it" "$(cat "$F/env")" "K1=a"
echo K2=b >&3
exec 3>&-
check_eq "the writes of one open add up" "$(tr '\n' ' ' <"$F/env")" "K1=a K2=b "
check_eq "one revision per command that wrote" "$(rev)" "$((r0 + 2))"
exec 3>"$F/tags" 4>"$F/tags"
echo gpu >&3
echo ssd >&4
check_eq "two opens: each applies its own value" "$(cat "$F/tags")" "ssd"
echo bad,tag >&3 2>/dev/null
exec 3>&- 2>/dev/null
exec 4>&-
check_eq "a spoiled open does not undo another" "$(cat "$F/tags")" "ssd"
echo >"$F/tags"
# >> adds to the value env has when the open applies, not when it opened:
# a change made in between by another open is kept.
exec 3>>"$F/env"
echo P=1 >"$F/env"
echo Q=2 >&3
exec 3>&-
check_eq ">> appends to the current value" "$(tr '\n' ' ' <"$F/env")" "P=1 Q=2 "

# ---- the change is done when the shell's echo returns (spec 6)
echo 3 >"$F/parallelism"
check_eq "instances are assigned when echo returns" "$(ls "$F/instances" | wc -l)" "3"
echo 1 >"$F/parallelism"
: >"$F/command"
check_eq "an open that writes nothing changes nothing" "$(cat "$F/command")" "sleep 1000"

# ---- other writable files take each write(2) as one command
echo stop >"$F/state"
check_eq "state: a command applied in write(2)" "$(cat "$F/state")" "stopped"
check_fails_with "state: a bad command is refused" "Invalid argument" bash -c "echo halt > '$F/state'"
check_eq "and changes nothing" "$(cat "$F/state")" "stopped"
echo start >"$F/state"
check "the instance runs again" wait_until 10 running_all "$F" 1

# ---- a store that cannot be written: close(2) says so, nothing changes
if [ -n "$TMPFS" ]; then
	r0=$(rev)
	dd if=/dev/zero of="$DATA/fill" bs=64k 2>/dev/null
	closed=$(python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)
print("wrote", os.write(fd, b"64\n"), end=", ")
try:
    os.close(fd); print("closed")
except OSError as e:
    print("close:", e.strerror)' "$F/memory")
	rm -f "$DATA/fill"
	check_eq "a full disk: the write is taken, its close fails with ENOSPC" "$closed" "wrote 3, close: No space left on device"
	check_eq "memory is as before" "$(cat "$F/memory")" "128"
	check_eq "no revision" "$(rev)" "$r0"
	check "the reason is in error" grep -q "the store could not be written" "$F/error"
	write "$F/memory" 64
	check_eq "with room again, the same write works" "$(cat "$F/memory")" "64"
else
	not_ok "a full disk: no tmpfs could be mounted for the data directory"
fi

done_testing
