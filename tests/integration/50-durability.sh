#!/usr/bin/env bash
# Every accepted change is committed before the write returns: kill -9 of
# the controller right after it, and a remount, lose nothing.
. "$(dirname "$0")/lib.sh"
start_fnfs || exit 1
F=$MNT/tenants/acme/prod/fn

mkdir -p "$F" "$MNT/tenants/acme/dev" "$MNT/tenants/other"
write "$F/command" "sleep 1000"
printf 'A=1\nB=2\n' >"$F/env"
write "$F/memory" 256
write "$F/tags" "gpu ssd"
write "$F/max_instances" 4
config_before=$(cat "$F/config")
rev_before=$(cat "$F/revision")
# The last write is followed at once by kill -9.
write "$F/timeout" 777
# The written file's attributes are fresh after the write (the
# directory's may still be in the kernel's 1 s attribute cache).
mtime_before=$(stat -c %Y "$F/timeout")
crash_fnfs

check "remount after kill -9" start_fnfs
check_eq "tenants survive" "$(ls "$MNT/tenants" | tr '\n' ' ')" "acme other "
check_eq "namespaces survive" "$(ls "$MNT/tenants/acme" | tr '\n' ' ')" "dev events prod quota "
check_eq "the last write before the kill survives" "$(cat "$F/timeout")" "777"
check_eq "the revision survives" "$(cat "$F/revision")" "$((rev_before + 1))"
check_eq "env survives" "$(cat "$F/env")" "$(printf 'A=1\nB=2')"
check_eq "the rest of the spec survives" \
	"$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d.pop("timeout"); print(json.dumps(d, sort_keys=True))' "$F/config")" \
	"$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d.pop("timeout"); print(json.dumps(d, sort_keys=True))' "$config_before")"
check_eq "mtime is kept across the remount" "$(stat -c %Y "$F/timeout")" "$mtime_before"

# Removal is durable too.
rmdir "$F"
crash_fnfs
start_fnfs
check "a removed function stays removed" test ! -e "$F"

# A clean unmount and remount keeps it all as well.
mkdir "$MNT/tenants/acme/dev/job"
write "$MNT/tenants/acme/dev/job/parallelism" 7
stop_fnfs
start_fnfs
check_eq "a clean remount keeps the spec" "$(cat "$MNT/tenants/acme/dev/job/parallelism")" "7"
# The version this fnfs writes is the one its source declares.
want=$(awk '$2 == "STORE_SCHEMA_VERSION" { print $3 }' "$(dirname "$0")/../../sched/store/store.h")
check_eq "the store records its schema version" "$(sqlite3 "$DATA/fnfs.db" 'PRAGMA user_version')" "$want"
done_testing
