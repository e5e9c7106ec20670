#!/usr/bin/env bash
# fnfs store export / import: the whole state of a data directory (owners,
# specs, revisions, code, settings) as one JSON document, exported while
# the mount runs, imported into a new data directory that mounts to the
# same tree; a bad dump is refused with the reason and leaves no store,
# and a data directory with a store is never overwritten.
. "$(dirname "$0")/lib.sh"
start_fnfs || exit 1
check "the local worker registers" wait_until 10 state_is "$MNT/workers/local-1/state" healthy
NS=$MNT/tenants/acme/prod
mkdir -p "$NS/app" "$NS/idle" "$MNT/tenants/beta/dev/x"
chown nobody:nogroup "$MNT/tenants/beta"
chmod 750 "$MNT/tenants/beta"
A=$T/app
mkdir -p "$A/lib"
cat >"$A/run.sh" <<'SH'
#!/bin/sh
while read -r l; do echo "$(cat lib/word) $l"; done
SH
chmod 755 "$A/run.sh"
echo imported >"$A/lib/word"
head -c 200000 /dev/urandom >"$A/lib/blob.bin"
# A name that is not UTF-8: code/ takes any byte but '/' and NUL.
echo latin1 >"$A/lib/caf$(printf '\351')"
check "cp of an app into code/" cp -r "$A"/. "$NS/app/code"/
write "$NS/app/mode" hot
write "$NS/app/command" ./run.sh
write "$NS/app/env" 'GREETING=hi'
write "$NS/app/memory" 96
write "$NS/idle/command" 'sleep 1000'
write "$NS/idle/state" stop
echo pack >"$MNT/workers/strategy"
check "the app answers from its code" wait_until 20 eval '[ "$(echo a | "$FNFS" invoke acme/prod/app --mount "$MNT")" = "imported a" ]'

# snapshot: what a user reads of the tree, in a stable order.
snapshot() {
	local f
	(cd "$MNT/tenants" && find . -maxdepth 3 -mindepth 1 -type d | sort)
	stat -c '%n %U %G %a' "$MNT"/tenants/* | sed "s|$MNT/||"
	for f in "$MNT"/tenants/*/*/*/; do
		echo "== ${f#"$MNT"/}"
		cat "$f/config" "$f/revision" "$f/state"
	done
	cat "$MNT/workers/strategy"
}
before=$(snapshot)
check "the app's code revision is made" grep -q "function.updated acme/prod/app .*changed=code" "$MNT/events"

DUMP=$T/dump.json
check "export while the mount runs" eval '"$FNFS" store export --data "$DATA" >"$DUMP"'
check "the dump is JSON with every table" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "fnfs-dump" and d["version"] == 1
t = d["tables"]
assert len(t["tenants"]) == 2 and len(t["functions"]) == 3, t.keys()
assert any(r["key"] == "strategy" and r["value"] == "pack" for r in t["settings"]), t["settings"]
assert len(d["objects"]) >= 3
' "$DUMP"
check "every object the code tables and the manifests name is in it" python3 -c '
import base64, json, sys
d = json.load(open(sys.argv[1]))
t, objs = d["tables"], d["objects"]
need = {r["hash"] for r in t["code_files"] if len(r["hash"]) == 64}
for r in t["code_revisions"]:
    need.add(r["hash"])
    for line in base64.b64decode(objs[r["hash"]]).decode("latin-1").splitlines():
        if line.startswith("f "):
            need.add(line.split(" ")[3])
missing = need - set(objs)
assert not missing, missing
names = [r["path"] for r in t["code_files"]]
assert {"base64": base64.b64encode(b"lib/caf\xe9").decode()} in names, names
' "$DUMP"
stop_fnfs
check "export of a stopped mount works too" eval '"$FNFS" store export --data "$DATA" >"$T/dump2.json"'
check "and leaves no WAL files in the data directory" eval '[ ! -e "$DATA/fnfs.db-wal" ] && [ ! -e "$DATA/fnfs.db-shm" ]'

# ---- bad dumps are refused and leave no store
D3=$T/data3
refused() { # refused WHAT FILE: import of FILE fails, says WHAT, leaves no store
	local out
	out=$("$FNFS" store import --data "$D3" <"$2" 2>&1) && return 1
	echo "$out" | grep -q -- "$1" && [ ! -e "$D3/fnfs.db" ] && [ ! -e "$D3/fnfs.db.import" ]
}
echo '{"format": "fnfs-dump", "version": 1' >"$T/bad1.json"
check "a truncated dump is refused" refused "not JSON" "$T/bad1.json"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
def save(name, d):
    json.dump(d, open(sys.argv[2] + "/" + name, "w"))
e = json.loads(json.dumps(d)); e["schema"] = 99; save("bad2.json", e)
e = json.loads(json.dumps(d)); h = sorted(e["objects"])[-1]
v = e["objects"][h]; e["objects"][h] = ("B" if v[0] != "B" else "C") + v[1:]; save("bad3.json", e)
e = json.loads(json.dumps(d)); e["tables"]["nosuch"] = []; save("bad4.json", e)
e = json.loads(json.dumps(d))
for r in e["tables"]["functions"]:
    s = json.loads(r["spec"]); s["memory"] = -5; r["spec"] = json.dumps(s)
save("bad5.json", e)
e = json.loads(json.dumps(d)); e["tables"]["tenants"][0]["colour"] = "red"; save("bad6.json", e)
e = json.loads(json.dumps(d)); e["tables"]["tenants"].append(e["tables"]["tenants"][0]); save("bad7.json", e)
e = json.loads(json.dumps(d)); r = e["tables"]["code_revisions"][0]; del e["objects"][r["hash"]]; save("bad8.json", e)
e = json.loads(json.dumps(d)); f = [r for r in e["tables"]["code_files"] if len(r["hash"]) == 64][0]
e["tables"]["code_files"] = [r for r in e["tables"]["code_files"] if r["hash"] != f["hash"]] + [f]
del e["objects"][f["hash"]]; save("bad9.json", e)
' "$DUMP" "$T"
check "another schema version is refused" refused "schema version 99" "$T/bad2.json"
check "an object whose bytes do not match its hash is refused" refused "do not match its hash" "$T/bad3.json"
check "an unknown table is refused" refused "not a table of this fnfs" "$T/bad4.json"
check "a function with a bad spec is refused" refused "function acme/prod/" "$T/bad5.json"
check "an unknown column is refused" refused "no column" "$T/bad6.json"
check "a duplicate row is refused" refused "UNIQUE" "$T/bad7.json"
check "a dump without a revision's manifest is refused" refused "names object" "$T/bad8.json"
check "a dump without a file's object is refused" refused "names object" "$T/bad9.json"
check "nothing was left in the data directory" eval '[ -z "$(find "$D3" -name "fnfs.db*")" ]'
check_fails_with "export of a directory without a store fails" "no store" "$FNFS" store export --data "$T/nowhere"

# ---- import into a new data directory, and mount it
D2=$T/data2
check "import into a new data directory" eval '"$FNFS" store import --data "$D2" <"$DUMP" 2>/dev/null'
sum=$(sha256sum <"$D2/fnfs.db")
check_fails_with "import over an existing store is refused" "has a store already" "$FNFS" store import --data "$D2" <"$DUMP"
check_eq "the existing store is untouched" "$(sha256sum <"$D2/fnfs.db")" "$sum"
DATA=$D2
start_fnfs || exit 1
check "the imported mount's worker registers" wait_until 10 state_is "$MNT/workers/local-1/state" healthy
check_eq "the tree, owners, specs, revisions and settings are the same" "$(snapshot)" "$before"
check "the code is the same" diff -r "$A" "$NS/app/code"
check "the app answers from the imported code" wait_until 20 eval '[ "$(echo b | "$FNFS" invoke acme/prod/app --mount "$MNT")" = "imported b" ]'
check_eq "the stopped function stays stopped" "$(cat "$NS/idle/state")" "stopped"
done_testing
