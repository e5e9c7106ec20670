#!/usr/bin/env bash
# code/: a function's code, filled with cp, tar, rm, mkdir, mv, chmod; one
# revision per burst; a function whose program exists only in its code/
# runs with the code as a read-only cwd and answers calls; a change makes
# every instance run the new code; the limits refuse with EDQUOT; kill -9
# keeps code and revision; the worker's cache goes once nothing uses it.
. "$(dirname "$0")/lib.sh"
start_fnfs || exit 1
check "the local worker registers" wait_until 10 state_is "$MNT/workers/local-1/state" healthy
T0=$MNT/tenants/acme/prod
F=$T0/app
mkdir -p "$F"
C=$F/code

inv() { "$FNFS" invoke "acme/prod/$1" --mount "$MNT"; }
rev() { cat "$F/revision"; }
# settled FN N: the revision of function FN is N and stays so past the
# quiet time.
settled() {
	local fn=$1 want=$2
	wait_until 30 eval '[ "$(cat "$fn/revision")" = "$want" ]' || return 1
	sleep 0.8
	[ "$(cat "$fn/revision")" = "$want" ]
}

# ---- an app: a script, a subdirectory, data
A=$T/app
mkdir -p "$A/lib" "$A/empty"
cat >"$A/run.sh" <<'SH'
#!/bin/sh
# A hot line function: answers with its greeting, where it runs and
# whether it may write there.
g=$(cat lib/greeting)
while read -r l; do
	if touch ./probe 2>/dev/null; then w=writable; else w=read-only; fi
	echo "$g $l $(pwd) $w"
done
SH
chmod 755 "$A/run.sh"
echo hello >"$A/lib/greeting"
head -c 300000 /dev/urandom >"$A/lib/blob.bin"
chmod 640 "$A/lib/blob.bin"

check_eq "code/ is there and empty" "$(ls -A "$C")" ""
r0=$(rev)
check "cp -r of an app into code/ succeeds" cp -r "$A"/. "$C"/
check "one new revision after the burst" settled "$F" $((r0 + 1))
check "the tree reads back identical (diff -r)" diff -r "$A" "$C"
check_eq "ls -l shows the modes" "$(stat -c '%A %s %n' "$C/run.sh" "$C/lib/blob.bin" | sed "s|$C/||")" \
	"$(stat -c '%A %s %n' "$A/run.sh" "$A/lib/blob.bin" | sed "s|$A/||")"
check_eq "ls -R lists the same names" "$(cd "$C" && ls -R)" "$(cd "$A" && ls -R)"
check "du counts the bytes" eval '[ "$(du -sb "$C" | cut -f1)" -ge 300000 ]'
check "the journal has the code revision" grep -q "function.updated acme/prod/app revision=$((r0 + 1)) changed=code" "$MNT/events"
check "the objects are stored by hash" test -f "$DATA/code/objects/$(sha256sum "$A/lib/greeting" | cut -c1-2)/$(sha256sum "$A/lib/greeting" | cut -c3-64)"

# ---- the program exists only in code/
write "$F/mode" hot
write "$F/command" ./run.sh
check "the function runs its program from code/" wait_until 15 running_all "$F" 1
out=$(echo ping | inv app)
check_eq "a call is answered by the code" "${out%% *}" "hello"
# In the sandbox, at a path its user may walk (issue 23: python3 app.py
# opens its script by its absolute path).
check_eq "its cwd is the code, at /tmp/code, read-only" "$out" "hello ping /tmp/code read-only"
cwd=/proc/$(pid_of "$F/instances/0")/cwd
check "which is the unpacked code, in the worker's cache" \
	grep -q "code/trees/[0-9a-f]*/t /tmp/code ro," "/proc/$(pid_of "$F/instances/0")/mountinfo"
check_eq "the tree holds the same bytes" "$(cat "$cwd/lib/blob.bin" | sha256sum)" "$(sha256sum <"$A/lib/blob.bin")"
check_eq "the tree is read-only" "$(stat -c %a "$cwd/" "$cwd/run.sh" "$cwd/lib/greeting" | tr '\n' ' ')" "555 555 444 "

# ---- a change makes one revision, and every instance runs the new code
write "$F/parallelism" 2
check "two instances run" wait_until 15 running_all "$F" 2
r1=$(rev)
echo bonjour >"$A/lib/greeting"
check "cp of a changed file succeeds" cp -r "$A"/. "$C"/
check "one new revision" settled "$F" $((r1 + 1))
inst_rev() { awk '$1 == "revision" { print $2 }' "$1/status"; }
check "both instances restart on the new code" wait_until 15 eval 'running_all "$F" 2 && [ "$(inst_rev "$F/instances/0")" = $((r1 + 1)) ] && [ "$(inst_rev "$F/instances/1")" = $((r1 + 1)) ]'
ans=""
for i in 1 2 3 4 5 6; do ans="$ans $(echo x | inv app | cut -d' ' -f1)"; done
check_eq "every answer comes from the new code" "$ans" " bonjour bonjour bonjour bonjour bonjour bonjour"
r2=$(rev)
check "the same bytes again make no revision" cp -r "$A"/. "$C"/
check "no revision for unchanged content" settled "$F" "$r2"

# ---- rm, mkdir, rmdir, mv, chmod, truncate, append, overwrite
check "mkdir" mkdir "$C/d1"
check "rmdir" rmdir "$C/d1"
check "rmdir of a non-empty directory fails" eval '! rmdir "$C/lib" 2>/dev/null'
check "mv renames a file" mv "$C/lib/blob.bin" "$C/lib/blob2.bin"
check "mv renames a directory" mv "$C/empty" "$C/vide"
check_eq "the names after mv" "$(cd "$C" && ls -R | tr '\n' ' ')" ".: lib run.sh vide  ./lib: blob2.bin greeting  ./vide: "
check "chmod +x" chmod +x "$C/lib/greeting"
check_eq "the mode after chmod" "$(stat -c %a "$C/lib/greeting")" "755"
echo more >>"$C/lib/greeting"
check_eq "append" "$(cat "$C/lib/greeting")" $'bonjour\nmore'
echo salut >"$C/lib/greeting"
check_eq "overwrite" "$(cat "$C/lib/greeting")" "salut"
truncate -s 3 "$C/lib/greeting"
check_eq "truncate" "$(cat "$C/lib/greeting")" "sal"
python3 -c 'import sys; f = open(sys.argv[1], "r+"); f.truncate(0); f.write("sa"); f.flush(); f.seek(2); f.write("l"); f.close()' "$C/lib/greeting"
check_eq "ftruncate and writes through one descriptor" "$(cat "$C/lib/greeting")" "sal"
check "rm of a file" rm "$C/lib/blob2.bin"
check "rm -r of a directory" rm -r "$C/vide"
check_fails_with "a symlink is refused with EPERM" "not permitted" ln -s run.sh "$C/link"
check "the refusal is in error" grep -q "only files and directories" "$F/error"
check_fails_with "a name with a newline is refused" "Invalid argument" touch "$C/$(printf 'a\nb')"
# still: the revision does not move over the quiet time.
still() {
	local a
	a=$(rev)
	sleep 0.8
	[ "$(rev)" = "$a" ]
}
wait_until 10 still
check "the edits made new revisions (a burst at a time)" eval '[ "$(rev)" -gt "$r2" ]'
check "the new code runs" wait_until 15 eval '[ "$(echo y | inv app | cut -d" " -f1)" = sal ]'

# ---- tar -x into code/
rm -r "${C:?}"/*
tar -C "$A" -cf "$T/app.tar" .
check "tar -x into code/ succeeds" tar -x -C "$C" -f "$T/app.tar"
check "tar's tree reads back identical" diff -r "$A" "$C"
touch -d 2020-01-02T03:04:05Z "$A/lib/greeting"
check "cp -rp (chown, times) succeeds" cp -rp "$A"/. "$C"/
check_eq "cp -p keeps the mtime" "$(stat -c %Y "$C/lib/greeting")" "$(stat -c %Y "$A/lib/greeting")"

# ---- limits: 64 MiB and 10,000 files, EDQUOT, named in error
check_fails_with "a file over 64 MiB in all is refused (EDQUOT)" "quota" truncate -s 65M "$C/big"
check "the size limit is named in error" grep -q "limit of 64 MiB" "$F/error"
check "just under the limit is accepted" truncate -s 60M "$C/big"
check_fails_with "a write past the limit is refused" "quota" dd if=/dev/zero of="$C/big2" bs=1M count=8 status=none
rm -f "$C/big" "$C/big2"
mkdir "$C/many"
left=$((10000 - $(find "$C" -mindepth 1 | wc -l)))
(cd "$C/many" && touch $(seq -f 'f%05.0f' 1 5000) && touch $(seq -f 'g%05.0f' 1 $((left - 5000))))
check_eq "10,000 entries fit" "$(find "$C" -mindepth 1 | wc -l)" 10000
check_fails_with "one more file is refused (EDQUOT)" "quota" touch "$C/many/one-more"
check "the files limit is named in error" grep -q "limit of 10000 files" "$F/error"
check_fails_with "one more directory too" "quota" mkdir "$C/more"
rm -r "$C/many"
check "rm -r of thousands of files" test ! -e "$C/many"

# ---- isolation none: the same read-only code as cwd
N=$T0/bare
mkdir -p "$N"
cp -r "$A"/. "$N/code"/
write "$N/isolation" none
write "$N/mode" hot
write "$N/command" ./run.sh
# Its code is a revision 500 ms after the cp (the quiet time): until
# then the instance runs without it. Wait for an instance of that one.
check "its code becomes a revision" wait_until 15 grep -q "function.updated acme/prod/bare revision=[0-9]* changed=code" "$MNT/events"
# shellcheck disable=SC2034 # read in the eval below
nrev=$(cat "$N/revision")
check "isolation none runs from its code too" wait_until 15 eval 'running_all "$N" 1 && [ "$(inst_rev "$N/instances/0")" = "$nrev" ]'
out=$("$FNFS" invoke acme/prod/bare --mount "$MNT" <<<q)
check "with isolation none, the cwd is the code and read-only" eval '[[ "$out" == "bonjour q $DATA/cache/local-1/code/trees/"*"/t read-only" ]]'
# shellcheck disable=SC2034 # read in the eval below
npid=$(pid_of "$N/instances/0")
check "it runs as the function's user, not root" eval '[ "$(stat -c %u "/proc/$npid")" != 0 ]'
check_fails_with "another user cannot reach the tree by its path" "Permission denied" \
	setpriv --reuid=nobody --regid=nogroup --clear-groups cat "$(echo "$out" | cut -d" " -f3)/lib/greeting"

# ---- cwd set: the function runs there, not in its code
cat >"$N/config" <<JSON
{"command": "while read -r l; do pwd; done", "mode": "hot", "cwd": "/var/tmp",
 "isolation": "none"}
JSON
check "with cwd set, the function runs there, not in its code" \
	wait_until 15 eval '[ "$("$FNFS" invoke acme/prod/bare --mount "$MNT" <<<c 2>/dev/null)" = /var/tmp ]'
rmdir "$N"

# ---- a larger code arrives in many chunks while calls go on
B=$T0/big
mkdir -p "$B"
head -c $((12 << 20)) /dev/urandom >"$T/blob"
mkdir "$B/code/data"
cp "$T/blob" "$B/code/data/blob"
printf '#!/bin/sh\nwhile read -r l; do sha256sum data/blob | cut -c1-64; done\n' >"$B/code/sum.sh"
chmod +x "$B/code/sum.sh"
write "$B/mode" hot
write "$B/command" ./sum.sh
calls_ok=0
for i in $(seq 1 20); do
	[ "$(echo p | inv app | cut -d' ' -f1)" = bonjour ] && calls_ok=$((calls_ok + 1))
done
check_eq "calls to another function answer meanwhile" "$calls_ok" 20
check "12 MiB of code reach the worker" wait_until 30 running_all "$B" 1
check_eq "the function reads its 12 MiB intact" "$(echo s | inv big)" "$(sha256sum <"$T/blob" | cut -c1-64)"
write "$B/mode" daemon
write "$B/parallelism" 0
rm -r "${B:?}/code/"*
rmdir "$B"

# ---- a download that fails fails the start, with the reason
D=$T0/broken
mkdir -p "$D"
echo 'echo never' >"$D/code/x.sh"
settled "$D" 2
h=$(sha256sum <"$D/code/x.sh" | cut -c1-64)
rm "$DATA/code/objects/${h:0:2}/${h:2}" # what a lost disk block does
write "$D/command" "sh x.sh"
check "the instance fails" wait_until 15 state_is "$D/instances/0/state" failed
check "its reason says the code did not arrive" grep -q "code: the controller: the object is gone" "$D/instances/0/status"
write "$D/parallelism" 0
rm "$D/code/x.sh"
rmdir "$D"

# ---- kill -9 of the controller keeps code and revision
settled "$F" "$(rev)"
rkeep=$(rev)
crash_fnfs
fusermount3 -uz "$MNT"
start_fnfs || exit 1
check_eq "the revision survives kill -9" "$(rev)" "$rkeep"
check "the code survives kill -9" diff -r "$A" "$C"
check "the function answers with its code again" wait_until 20 eval '[ "$(echo z | inv app | cut -d" " -f1)" = bonjour ]'

# ---- a function without code runs as before
P=$T0/plain
mkdir -p "$P"
write "$P/mode" hot
write "$P/command" 'while read -r l; do echo "plain $l $(pwd)"; done'
check "a function without code runs" wait_until 15 running_all "$P" 1
check_eq "it answers as before, in /" "$(echo a | inv plain)" "plain a /"

# ---- the worker's cache goes once no instance uses a tree
# shellcheck disable=SC2034 # read in the evals below
trees=$DATA/cache/local-1/code/trees
check "the tree is in the cache" eval '[ -n "$(ls -A "$trees")" ]'
write "$F/parallelism" 0
write "$F/mode" daemon
check "scaled to 0, the tree is removed" wait_until 15 eval '[ -z "$(ls -A "$trees")" ]'
check "and its objects" wait_until 30 eval '[ -z "$(ls -A "$DATA/cache/local-1/code/objects")" ]'
rmdir "$F"
check "removing the function removes its code: only the empty file's object is left" \
	wait_until 10 eval '[ "$(find "$DATA/code/objects" -type f | wc -l)" = 1 ]'
done_testing
