#!/usr/bin/env bash
# config: the whole spec as JSON, read and written.
. "$(dirname "$0")/lib.sh"
start_fnfs || exit 1
F=$MNT/tenants/acme/prod/api
mkdir -p "$F"

check "config is valid JSON" python3 -m json.tool "$F/config" >/dev/null
keys=$(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))))' "$F/config")
check_eq "config has every attribute" "$keys" \
	"command mode format parallelism max_instances memory timeout idle_timeout env cwd tags tags_policy restart_policy pids cpu network isolation mounts ready ready_timeout concurrency"

cat >"$T/spec.json" <<'JSON'
{"command": "python3 -u app.py", "mode": "hot", "format": "json",
 "parallelism": 2, "max_instances": 8, "memory": 256, "timeout": 5000,
 "idle_timeout": 10, "env": {"K": "V", "GREETING": "hello world"},
 "cwd": "/srv", "tags": ["gpu", "ssd"], "tags_policy": "loose",
 "restart_policy": "on-failure", "pids": 64, "cpu": 500, "network": "none",
 "isolation": "sandbox", "mounts": ["/srv/data", "/var/cache/app rw"],
 "ready": "tcp", "ready_timeout": 10, "concurrency": 3}
JSON
r0=$(cat "$F/revision")
check "writing a whole config" sh -c "cat '$T/spec.json' > '$F/config'"
check_eq "one revision for the whole config" "$(cat "$F/revision")" "$((r0 + 1))"
check_eq "the attributes follow the config" \
	"$(cat "$F/command"),$(cat "$F/mode"),$(cat "$F/format"),$(cat "$F/parallelism"),$(cat "$F/max_instances"),$(cat "$F/memory"),$(cat "$F/timeout"),$(cat "$F/idle_timeout"),$(cat "$F/cwd"),$(cat "$F/tags"),$(cat "$F/tags_policy"),$(cat "$F/restart_policy")" \
	"python3 -u app.py,hot,json,2,8,256,5000,10,/srv,gpu ssd,loose,on-failure"
check_eq "the sandbox attributes follow the config" \
	"$(cat "$F/pids"),$(cat "$F/cpu"),$(cat "$F/network"),$(cat "$F/isolation"),$(cat "$F/mounts" | tr '\n' ';')" \
	"64,500,none,sandbox,/srv/data;/var/cache/app rw;"
check_eq "env follows the config" "$(cat "$F/env")" "$(printf 'K=V\nGREETING=hello world')"
same=$(python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); print(a==b)' "$T/spec.json" "$F/config")
check_eq "config reads back what was written" "$same" "True"

# Round trip through json.tool: read, pretty-print, write back: no change.
python3 -m json.tool "$F/config" >"$T/back.json"
r1=$(cat "$F/revision")
check "writing back what was read" sh -c "cat '$T/back.json' > '$F/config'"
check_eq "an identical config is not a change" "$(cat "$F/revision")" "$r1"

# An attribute write shows up in config.
write "$F/memory" 1024
check_eq "config follows an attribute write" \
	"$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["memory"])' "$F/config")" "1024"

# Missing keys take their defaults.
echo '{"command": "sleep 5"}' >"$F/config"
check_eq "missing keys take defaults" "$(cat "$F/mode") $(cat "$F/memory") $(cat "$F/parallelism") $(cat "$F/tags_policy")" "daemon 128 1 strict"

# Refusals: EINVAL and nothing changes.
before=$(cat "$F/config")
rb=$(cat "$F/revision")
for bad in '{"command": "x", "bogus": 1}' '{"revision": 4}' '{"memory": "64"}' \
	'{"memory": -1}' '{"mode": "warm"}' '{"tags": "gpu"}' '{"env": {"FN_X": "1"}}' \
	'{"env": ["A=1"]}' '[1, 2]' 'not json' \
	'{"parallelism": 9, "max_instances": 2}' '{"memory": 1, "memory": 2}'; do
	check_fails_with "config $bad is refused" "Invalid argument" bash -c 'printf "%s\n" "$1" > "$2"' sh "$bad" "$F/config"
done
# A JSON never closed may still be going on at each write: its close(2)
# refuses it (bash ignores that; a program that checks close sees it).
check_fails_with 'config {"memory": 64 is refused at close' "Invalid argument" python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)
os.write(fd, b"{\"memory\": 64\n")
os.close(fd)' "$F/config"
check_eq "config unchanged after refusals" "$(cat "$F/config")" "$before"
check_eq "revision unchanged after refusals" "$(cat "$F/revision")" "$rb"
check "the unknown key is named in events" grep -qF 'unknown key \"bogus\"' "$MNT/events"
echo '{"memory": 64' >"$F/config" 2>/dev/null
check "a JSON syntax error is explained" grep -q 'config: not valid JSON' "$F/error"
done_testing
