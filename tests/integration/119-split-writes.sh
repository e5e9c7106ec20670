#!/usr/bin/env bash
# A value written in several write(2) calls through one open is one value,
# for every attribute file (issue 23, item 9): bash's printf writes
# `printf '/a\n/b rw\n'` one line per write(2), and `{ printf a; printf b; }`
# two writes. The whole is judged: a value only begun (no newline at its
# end; config: its JSON not closed) is not refused for what it lacks yet;
# a finished bad one fails its write(2), a bad end fails the close.
. "$(dirname "$0")/lib.sh"
start_fnfs || exit 1
F=$MNT/tenants/acme/prod/fn
mkdir -p "$F"
write "$F/command" 'sleep 1000'
mkdir -p "$T/srv/a" "$T/srv/b"

rev() { cat "$F/revision"; }
# py_writes FILE PIECE...: one open, one write(2) per piece (Python
# escapes), then close; prints what each write and the close returned.
py_writes() {
	python3 - "$@" <<'PY'
import ast, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)
out = []
for p in sys.argv[2:]:
    try:
        os.write(fd, ast.literal_eval("b'" + p + "'")); out.append("ok")
    except OSError as e:
        out.append(e.strerror)
try:
    os.close(fd); out.append("closed")
except OSError as e:
    out.append("close: " + e.strerror)
print(", ".join(out))
PY
}

# ---- what a shell writes in several write(2) calls, file by file
r0=$(rev)
printf '%s\n%s rw\n' "$T/srv/a" "$T/srv/b" >"$F/mounts"
check_eq "mounts: two lines from one printf are both kept" "$(cat "$F/mounts")" "$T/srv/a
$T/srv/b rw"
check_eq "one revision for them" "$(rev)" "$((r0 + 1))"
r0=$(rev)
{ printf 'sleep '; printf '2000\n'; } >"$F/command"
check_eq "command: two printfs make one command" "$(cat "$F/command")" "sleep 2000"
check_eq "one revision" "$(rev)" "$((r0 + 1))"
{ printf 'GRE'; printf 'ETING=hi\nB=2'; printf '\n'; } >"$F/env"
check_eq "env: a line cut inside its key" "$(tr '\n' ' ' <"$F/env")" "GREETING=hi B=2 "
{ printf '/sr'; printf 'v\n'; } >"$F/cwd"
check_eq "cwd: a path in two writes" "$(cat "$F/cwd")" "/srv"
{ printf gpu; printf ' ssd\n'; } >"$F/tags"
check_eq "tags: words in two writes" "$(cat "$F/tags")" "gpu ssd"
{ printf 9; printf 6; } >"$F/memory"
check_eq "memory: a number in two writes" "$(cat "$F/memory")" "96"
{ printf 2; printf '5\n'; } >"$F/cpu"
check_eq "cpu: a number whose first digit alone is refused" "$(cat "$F/cpu")" "25"
{ printf on-; printf 'failure\n'; } >"$F/restart_policy"
check_eq "restart_policy: a word in two writes" "$(cat "$F/restart_policy")" "on-failure"
{ printf 'htt'; printf 'p:/healthz\n'; } >"$F/ready"
check_eq "ready: in two writes" "$(cat "$F/ready")" "http:/healthz"
{ printf '1'; printf '0\n'; } >"$F/ready_timeout"
check_eq "ready_timeout: in two writes" "$(cat "$F/ready_timeout")" "10"
r0=$(rev)
printf '{\n"command": "sleep 3000",\n"memory": 80,\n"tags": ["x"]\n}\n' >"$F/config"
check_eq "config: pretty JSON written line by line" "$(cat "$F/command") $(cat "$F/memory") $(cat "$F/tags")" "sleep 3000 80 x"
check_eq "one revision" "$(rev)" "$((r0 + 1))"
# A program's buffered output arrives in pieces cut anywhere.
python3 -c '
import json, os, sys
doc = json.dumps({"command": "sleep 4000", "env": {"K%d" % i: "v" * 50 for i in range(80)}}, indent=2).encode()
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)
for i in range(0, len(doc), 997):
    os.write(fd, doc[i:i + 997])
os.close(fd)' "$F/config"
check_eq "config: a large JSON in pieces of 997 bytes" "$(cat "$F/command") $(grep -c '^K' "$F/env") $(cat "$F/memory")" "sleep 4000 80 128"
# A mode change last: the function is a hot one from here on.
{ printf h; printf 'ot\n'; } >"$F/mode"
check_eq "mode: in two writes" "$(cat "$F/mode")" "hot"

# ---- bad values in pieces: refused, nothing applied
r0=$(rev)
check_eq "a finished bad value fails its write(2), and the close" "$(py_writes "$F/memory" '64\n' 'x\n')" "ok, Invalid argument, close: Invalid argument"
check_eq "an unfinished bad end fails the close" "$(py_writes "$F/memory" '64' 'x')" "ok, ok, close: Invalid argument"
check "the close's refusal is in error" grep -q "memory" "$F/error"
check_eq "memory is as before" "$(cat "$F/memory")" "128"
check_eq "JSON that is never closed: the close fails" "$(py_writes "$F/config" '{\n' '\"memory\": 64\n')" "ok, ok, close: Invalid argument"
check_eq "bad JSON, closed: its write fails" "$(py_writes "$F/config" '{\n' '\"memory\": 64}}\n')" "ok, Invalid argument, close: Invalid argument"
check_eq "nothing of them applied" "$(cat "$F/memory") $(rev)" "128 $r0"

# ---- offsets: a write at 0 starts over, one that follows adds
check_eq "a write at offset 0 again starts over" "$(python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)
os.write(fd, b"lots"); os.pwrite(fd, b"112\n", 0); os.close(fd)
print(open(sys.argv[1]).read().strip())' "$F/memory")" "112"
# A kept-open descriptor: each close of a copy that wrote applies; a
# one-value file starts over after that, a list goes on.
exec 3>"$F/memory"
echo 64 >&3
check_eq "kept open: the first value is applied" "$(cat "$F/memory")" "64"
echo 72 >&3
exec 3>&-
check_eq "kept open: a one-value file takes the next value whole" "$(cat "$F/memory")" "72"
echo "$T/srv/a" >"$F/mounts"
echo "$T/srv/b rw" >>"$F/mounts"
check_eq ">> adds a line to mounts" "$(cat "$F/mounts")" "$T/srv/a
$T/srv/b rw"

done_testing
