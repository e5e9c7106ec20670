#!/usr/bin/env bash
# The tenants/ tree: mkdir and rmdir at each level, names, errno, listings,
# types, modes and times.
# tests/run: smoke
. "$(dirname "$0")/lib.sh"
start_fnfs || exit 1
F=$MNT/tenants/acme/prod/thumb

check "mkdir -p of a function" mkdir -p "$F"
check_eq "ls tenants" "$(ls "$MNT/tenants")" "acme"
check_eq "ls tenant" "$(ls "$MNT/tenants/acme" | tr '\n' ' ')" "events prod quota "
check_eq "ls namespace" "$(ls "$MNT/tenants/acme/prod")" "thumb"
check_eq "ls function" "$(ls "$F" | tr '\n' ' ')" \
	"code command concurrency config cpu cwd env error format idle_timeout instances invoke isolation log max_instances memory mode mounts network parallelism pids ready ready_timeout restart restart_policy revision state stats status tags tags_policy timeout "
check_eq "ls -l shows directories as directories, of the tenant's mode" "$(ls -ld "$MNT/tenants/acme" | cut -c1-10)" "drwxr-x---"
check_eq "attribute files are 0640 in a 0750 tenant" "$(stat -c %A "$F/memory")" "-rw-r-----"
check_eq "read-only files are 0440 in a 0750 tenant" "$(stat -c '%A' "$F/revision" "$F/error" | tr '\n' ' ')" "-r--r----- -r--r----- "
check_eq "env and config are 0600" "$(stat -c '%a' "$F/env" "$F/config" | tr '\n' ' ')" "600 600 "
check_eq "find sees every level" "$(find "$MNT/tenants" -type d | tr '\n' ' ')" \
	"$MNT/tenants $MNT/tenants/acme $MNT/tenants/acme/quota $MNT/tenants/acme/prod $MNT/tenants/acme/prod/thumb $MNT/tenants/acme/prod/thumb/instances $MNT/tenants/acme/prod/thumb/code "
check_eq "a file's size is its content's length" "$(stat -c %s "$F/memory")" "4"
now=$(date +%s)
mt=$(stat -c %Y "$F")
check "mtime of a new function is now" test $((now - mt)) -le 5 -a $((mt - now)) -le 5
check_eq "owner is the mounting user" "$(stat -c %u "$F/memory")" "$(id -u)"

# EEXIST at each level.
check_fails_with "mkdir of an existing tenant" "File exists" mkdir "$MNT/tenants/acme"
check_fails_with "mkdir of an existing namespace" "File exists" mkdir "$MNT/tenants/acme/prod"
check_fails_with "mkdir of an existing function" "File exists" mkdir "$F"

# EINVAL for bad names, at each level, and nothing is created.
for bad in "-lead" ".dot" "_under" "has space" "semi;colon" "$(printf 'x%.0s' {1..64})" "caf$(printf '\xc3\xa9')"; do
	check_fails_with "tenant name '$bad' is refused" "Invalid argument" mkdir "$MNT/tenants/$bad"
done
check_fails_with "namespace name '-x' is refused" "Invalid argument" mkdir "$MNT/tenants/acme/-x"
check_fails_with "function name 'a b' is refused" "Invalid argument" mkdir "$MNT/tenants/acme/prod/a b"
check_eq "nothing was created by bad names" "$(ls "$MNT/tenants" | wc -l) $(ls "$MNT/tenants/acme" | wc -l)" "1 3"
check "a 63-character name is fine" mkdir "$MNT/tenants/$(printf 'y%.0s' {1..63})"
check "names may hold . _ -" mkdir "$MNT/tenants/a.b_c-d"
check "the rejection is journalled" grep -q 'tenant.rejected - op=mkdir name=-lead errno=EINVAL' "$MNT/events"

# ENOENT.
check_fails_with "mkdir below a missing tenant" "No such file" mkdir "$MNT/tenants/nope/ns"
check_fails_with "rmdir of a missing function" "No such file" rmdir "$MNT/tenants/acme/prod/nope"
check_fails_with "reading a missing attribute" "No such file" cat "$F/nope"

# Files are fixed and objects are directories.
check_fails_with "mkdir inside a function" "Operation not permitted" mkdir "$F/sub"
check_fails_with "a new file in a function" "Operation not permitted" touch "$F/newfile"
check_fails_with "rm of an attribute file" "Operation not permitted" rm -f "$F/memory"
check_fails_with "mv of a function" "Operation not permitted" mv "$F" "$MNT/tenants/acme/prod/other"
check_fails_with "mkdir in the root" "Operation not permitted" mkdir "$MNT/other"
check_fails_with "writing revision is refused" "Permission denied" sh -c "echo 5 > '$F/revision'"
check_fails_with "chmod is refused" "Operation not permitted" chmod 777 "$F/memory"

# ENOTEMPTY, and rmdir of a function with its files.
check_fails_with "rmdir of a tenant with namespaces" "Directory not empty" rmdir "$MNT/tenants/acme"
check_fails_with "rmdir of a namespace with functions" "Directory not empty" rmdir "$MNT/tenants/acme/prod"
check "rmdir of a function removes it with its files" rmdir "$F"
check "the function is gone" test ! -e "$F"
check "function.deleted is journalled" grep -q 'function.deleted acme/prod/thumb$' "$MNT/events"
check "rmdir of the empty namespace" rmdir "$MNT/tenants/acme/prod"
check "rmdir of the empty tenant" rmdir "$MNT/tenants/acme"
check_eq "the tree is empty but for the other tenants" "$(ls "$MNT/tenants" | grep -c acme)" "0"

# A name can be used again after removal, with a fresh revision.
mkdir -p "$F"
echo 64 >"$F/memory"
rmdir "$F"
mkdir "$F"
check_eq "a re-created function starts over" "$(cat "$F/memory") $(cat "$F/revision")" "128 1"

# A directory read while its entries are removed: no stale entries, no
# crash (the listing keeps ids, not pointers).
mkdir "$MNT/tenants/acme/prod/gone1" "$MNT/tenants/acme/prod/gone2"
listed=$(perl -e 'opendir(D, $ARGV[0]) or die; rmdir("$ARGV[0]/gone1") or die; rmdir("$ARGV[0]/gone2") or die; print join(" ", sort grep { !/^\./ } readdir(D)), "\n"' "$MNT/tenants/acme/prod")
check_eq "readdir after rmdir skips the removed entries" "$listed" "thumb"
check "the daemon is still there" alive "$PID"

# A big namespace lists completely (readdir in several rounds).
(cd "$MNT/tenants/acme/prod" && seq -f 'f%04g' 1 1500 | xargs mkdir)
check_eq "ls of 1,501 functions" "$(ls "$MNT/tenants/acme/prod" | wc -l)" "1501"
check_eq "ls -l of 1,501 functions" "$(ls -l "$MNT/tenants/acme/prod" | grep -c '^d')" "1501"
done_testing
