#!/usr/bin/env bash
# A newcomer's first function runs, or says exactly why not (issue 23,
# items 10-14): a program in code/ runs by relative name in python3 and
# node, in a tenant of root's (as nobody) and in one of a user's; a
# program the function's user cannot run, or one in the host's /tmp, is
# named with the cause in `error`, the instance's `status` and invoke's
# message; a function gets a clean PATH (its `env` may set one) and
# nothing of the daemon's environment; a stopped instance keeps its log;
# a call waiting for an instance that fails ends at once with its reason
# (a Lambda init error: EREMOTEIO).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/users.sh"
# The daemon's own environment must not reach a function.
export SSH_AUTH_SOCK=/nonexistent/fnfs-test LD_FNFS_TEST=leak FNFS_DAEMON_ONLY=leak
start_fnfs || exit 1
check "the local worker registers" wait_until 10 state_is "$MNT/workers/local-1/state" healthy
tenants_for_users || exit 1
R=$MNT/tenants/rootco/prod
mkdir -p "$R"

inv() { printf '%s' "$2" | "$FNFS" invoke "$1" --mount "$MNT"; }

# ---- items 11: python3 and node from code/, by relative name
APP=$T/app
mkdir -p "$APP"
cat >"$APP/app.py" <<'PY'
import os, sys
for line in sys.stdin:
    print("py", line.strip(), os.path.basename(__file__), flush=True)
PY
cat >"$APP/app.js" <<'JS'
const rl = require('readline').createInterface({ input: process.stdin });
rl.on('line', (l) => console.log('js ' + l.trim() + ' ' + require('path').basename(__filename)));
JS
chmod 644 "$APP/app.py" "$APP/app.js"

# code_fn AS TENANT NAME COMMAND: a hot function of user AS ("" for root)
# whose program is in its code/.
code_fn() {
	local u=$1 f=$MNT/tenants/$2/prod/$3 run=()
	[ -n "$u" ] && run=(as "$u")
	"${run[@]}" mkdir -p "$f" || return 1
	"${run[@]}" cp "$APP/app.py" "$APP/app.js" "$f/code/" || return 1
	"${run[@]}" sh -c "echo hot > '$f/mode' && echo '$4' > '$f/command'"
}
for who in root alice; do
	case $who in
	root) u="" t=rootco ;;
	alice) u=$A t=acme ;;
	esac
	code_fn "$u" "$t" py "python3 app.py"
	code_fn "$u" "$t" js "node app.js"
	f=$MNT/tenants/$t/prod
	check "$who: python3 app.py from code/ answers" \
		wait_until 20 eval '[ "$(inv $t/prod/py hi 2>/dev/null)" = "py hi app.py" ]'
	check "$who: node app.js from code/ answers" \
		wait_until 20 eval '[ "$(inv $t/prod/js hi 2>/dev/null)" = "js hi app.js" ]'
done
check_eq "root's tenant runs as nobody" "$(stat -c %U "/proc/$(pid_of "$R/py/instances/0")")" "nobody"
check_eq "alice's runs as alice" "$(stat -c %U "/proc/$(pid_of "$MNT/tenants/acme/prod/py/instances/0")")" "$A"
# Her function runs in /tmp/code, in its sandbox; bob cannot read her
# code in the worker's cache, nor at /tmp/code (his /tmp is not hers).
apid=$(pid_of "$MNT/tenants/acme/prod/py/instances/0")
check_eq "alice's function runs in /tmp/code" "$(readlink "/proc/$apid/cwd")" "/tmp/code"
tree=$(ls -d "$DATA"/cache/local-1/code/trees/*/t | head -1)
check "the tree is in the worker's cache ($tree)" test -f "$tree/app.py"
check "bob cannot read it there" eval '! as "$B" cat "$tree/app.py" >/dev/null 2>&1'
check "nor list the code cache" eval '! as "$B" ls "$DATA/cache" >/dev/null 2>&1'
check "nor read it at /tmp/code" eval '! as "$B" cat /tmp/code/app.py >/dev/null 2>&1'
for f in "$R/py" "$R/js" "$MNT/tenants/acme/prod/py" "$MNT/tenants/acme/prod/js"; do
	write "$f/state" stop
done

# ---- item 12: a program the function cannot run names the cause
mkdir -m 700 "$T/priv"
printf '#!/bin/sh\necho hi\n' >"$T/priv/fn.sh"
printf 'print("hi")\n' >"$T/priv/fn.py"
chmod 755 "$T/priv/fn.sh"
P=$R/private
mkdir -p "$P"
write "$P/mode" hot
write "$P/restart_policy" never
write "$P/command" "$T/priv/fn.sh"
want="cannot run $T/priv/fn.sh as nobody (uid 65534): Permission denied"
check "a program nobody cannot run fails" wait_until 15 state_is "$P/instances/0/state" failed
check "error names the program, the user and the cause" grep -qF "$want" "$P/error"
check "so does the instance's status" grep -qF "$want" "$P/instances/0/status"
write "$P/state" start
check_fails_with "so does invoke's message" "$want" inv rootco/prod/private x
write "$P/command" "python3 $T/priv/fn.py"
check "an interpreter that cannot open its script fails" wait_until 15 eval 'grep -q "fn.py" "$P/error"'
check "error ends with the interpreter's own last words" grep -q "exited (status 2): .*python3: can't open file '$T/priv/fn.py': \[Errno 13\] Permission denied" "$P/error"

TMPD=$(mktemp -d /tmp/fnfs-it-tmp.XXXXXX)
BGCLEAN=$TMPD
trap 'rm -rf "$BGCLEAN"; users_cleanup' EXIT
chmod 755 "$TMPD"
printf '#!/bin/sh\necho hi\n' >"$TMPD/fn.sh"
chmod 755 "$TMPD/fn.sh"
write "$P/command" "$TMPD/fn.sh"
check "a program in the host's /tmp fails" wait_until 15 eval 'grep -qF "$TMPD/fn.sh" "$P/error"'
check "error says /tmp is private to the sandbox" grep -qF "/tmp is private to the sandbox: put the program where nobody can read it, or in code/" "$P/error"
write "$P/state" stop

# ---- item 10: the environment a function gets
E=$R/envfn
mkdir -p "$E"
write "$E/mode" hot
write "$E/command" cat
check "a function runs" wait_until 15 running_all "$E" 1
epid=$(pid_of "$E/instances/0")
get() { v=$(tr '\0' '\n' <"/proc/$epid/environ" | grep "^$1=") && echo "${v#*=}" || echo -; }
check_eq "PATH is the clean default" "$(get PATH)" "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
check_eq "HOME is nobody's" "$(get HOME)" "$(getent passwd nobody | cut -d: -f6)"
check_eq "USER is nobody" "$(get USER)" "nobody"
check_eq "LOGNAME is nobody" "$(get LOGNAME)" "nobody"
check_eq "no SSH_* of the daemon" "$(get SSH_AUTH_SOCK)" "-"
check_eq "no LD_* of the daemon" "$(get LD_FNFS_TEST)" "-"
check_eq "no other variable of the daemon" "$(get FNFS_DAEMON_ONLY)" "-"
write "$E/env" "PATH=/opt/fnfs-none:/usr/bin:/bin"
check "with env PATH set, it restarts with it" wait_until 15 eval 'running_all "$E" 1 && epid=$(pid_of "$E/instances/0") && [ "$(get PATH)" = "/opt/fnfs-none:/usr/bin:/bin" ]'
check_eq "env's PATH is the only one" "$(tr '\0' '\n' <"/proc/$epid/environ" | grep -c '^PATH=')" "1"
write "$E/state" stop

# ---- item 13: a stopped instance keeps its log
L=$R/logfn
mkdir -p "$L"
write "$L/mode" hot
write "$L/command" "sh -c 'echo hello-from-the-log >&2; exec cat'"
check "a function that logs runs" wait_until 15 running_all "$L" 1
check "its line is in the instance's log" wait_until 30 grep -q hello-from-the-log "$L/instances/0/log"
write "$L/instances/0/state" stop
check "the instance stops" wait_until 15 state_is "$L/instances/0/state" stopped
check "its log keeps the line once stopped" grep -q hello-from-the-log "$L/instances/0/log"
check "so does the function's log" grep -q hello-from-the-log "$L/log"

# ---- item 14: a call waiting for an instance that fails ends at once
B=$R/lambad
mkdir -p "$B"
write "$B/mode" hot
write "$B/format" lambda
write "$B/cwd" "$FIXTURES/lambda"
write "$B/timeout" 40000
write "$B/env" "_HANDLER=nosuch.handler"
write "$B/command" ./bootstrap
t0=$(date +%s)
out=$(inv rootco/prod/lambad x 2>&1)
rc=$?
t1=$(date +%s)
check "the waiting call fails ($out)" test "$rc" != 0
check "with EREMOTEIO" grep -q "Remote I/O error" <<<"$out"
check "and the init error" grep -q "Runtime.NoSuchHandler" <<<"$out"
check "at once, not at its 40 s timeout ($((t1 - t0)) s)" eval '[ $((t1 - t0)) -lt 25 ]'
write "$B/state" stop

# A hot function whose every start fails: a waiting call ends once it
# has failed, with the reason, not at its timeout.
X=$R/dies
mkdir -p "$X"
write "$X/mode" hot
write "$X/timeout" 40000
write "$X/restart_policy" never
write "$X/command" "sh -c 'echo cannot-start-here >&2; exit 3'"
t0=$(date +%s)
out=$(inv rootco/prod/dies x 2>&1)
rc=$?
t1=$(date +%s)
check "a call waiting for an instance that fails fails ($out)" test "$rc" != 0
check "with its reason" grep -q "cannot-start-here" <<<"$out"
check "at once ($((t1 - t0)) s)" eval '[ $((t1 - t0)) -lt 25 ]'

done_testing
