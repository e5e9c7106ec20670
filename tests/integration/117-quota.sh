#!/usr/bin/env bash
# Quotas per tenant (issue 23, items 5 and 6), with two real users: alice
# (tenant acme) and bob (tenant bobco). The files of tenants/T/quota/,
# root's to write; EDQUOT with the reason in `error` for memory,
# instances, functions, code/ bytes and held request bytes; bob's calls
# unharmed by alice's try; the quotas kept across kill -9; `usage`; and
# the flood of 1,000 invoke files of 1 MiB each, which must leave the
# daemon's RSS bounded.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/users.sh"

start_fnfs || {
	echo "not ok 1 - mount"
	exit 1
}
tenants_for_users || {
	echo "not ok 1 - tenants"
	exit 1
}
Q=$MNT/tenants/acme/quota
FA=$MNT/tenants/acme/prod

# sh_as USER SCRIPT: a shell line as USER (bash: dash's echo says "I/O
# error" for any errno).
sh_as() { as "$1" bash -c "$2"; }

# usage_of TENANT RESOURCE: "USED LIMIT" from quota/usage.
usage_of() {
	awk -v r="$2" '$1 == r { print $2, $3 }' "$MNT/tenants/$1/quota/usage" 2>/dev/null
}

# ---- the files and their defaults
check_eq "alice's tenant has the default memory quota" "$(cat "$Q/memory" 2>&1)" "4096"
check_eq "and the default instances quota" "$(cat "$Q/instances" 2>&1)" "32"
mkdir -p "$MNT/tenants/ours/prod"
check_eq "root's tenant is unlimited" "$(cat "$MNT/tenants/ours/quota/memory" 2>&1)" "none"
check_eq "alice reads her quota" "$(as "$A" cat "$Q/functions" 2>&1)" "100"
as "$A" chmod 700 "$MNT/tenants/acme"
check "bob cannot read alice's quota once her tenant is 0700" eval "! as '$B' cat '$Q/memory' >/dev/null 2>&1"
check_eq "the quota files are root's" "$(stat -c '%u %a' "$Q/memory")" "0 644"

# ---- memory: the issue's scenario
# Cold functions without a command: what they hold counts, nothing runs.
as "$A" mkdir "$FA/big" || not_ok "alice makes a function"
sh_as "$A" "echo cold > '$FA/big/mode'" || not_ok "big is cold"
check_fails_with "alice's memory 23000 is over her quota (EDQUOT)" "Disk quota exceeded" \
	sh_as "$A" "echo 23000 > '$FA/big/memory'"
check "the reason is in error" grep -q "tenant acme: over its quota of 4096 MB of memory (128 used, 22872 asked)" "$FA/big/error"
check_eq "nothing changed" "$(cat "$FA/big/memory")" "128"
check "the journal has the refusal" eval "grep 'function.rejected' '$MNT/tenants/acme/events' | grep -q 'errno=EDQUOT'"
probe_fn "$B" bobco p || not_ok "bob's probe"
check_eq "bob's next call works" "$(ask_as "$B" bobco/prod/p 'echo hi' 2>&1)" "hi"
check "alice's memory 3000 is within it" sh_as "$A" "echo 3000 > '$FA/big/memory'"

# ---- instances (memory x the instance ceiling)
as "$A" mkdir "$FA/many" || not_ok "alice makes another function"
sh_as "$A" "echo cold > '$FA/many/mode'" || not_ok "many is cold"
check_fails_with "max_instances 40 passes 32 instances (EDQUOT)" "Disk quota exceeded" \
	sh_as "$A" "echo 40 > '$FA/many/max_instances'"
check "the reason names instances" grep -q "over its quota of 32 instances" "$FA/many/error"
check_fails_with "so does parallelism 33" "Disk quota exceeded" \
	sh_as "$A" "echo 33 > '$FA/many/parallelism'"
printf '{"mode": "cold", "max_instances": 50}' >"$T/big.json"
chmod 644 "$T/big.json"
check_fails_with "a config asking as much is refused too" "Disk quota exceeded" \
	sh_as "$A" "cat '$T/big.json' > '$FA/many/config'"
check "max_instances 8 fits (3000 + 8 x 128 MB)" sh_as "$A" "echo 8 > '$FA/many/max_instances'"

# ---- alice cannot raise her quota; root can
check_fails_with "alice cannot write her quota" "Permission denied" \
	sh_as "$A" "echo 99999 > '$Q/memory'"
check "nor chmod it" eval "! as '$A' chmod 666 '$Q/memory' 2>/dev/null"
check_eq "it is unchanged" "$(cat "$Q/memory")" "4096"
check_fails_with "a bad value is refused (EINVAL)" "Invalid argument" bash -c "echo lots > '$Q/memory'"
check_fails_with "so is a negative one" "Invalid argument" bash -c "echo -5 > '$Q/memory'"
check "root raises it" write "$Q/memory" 30000
check "alice's 23000 is taken now" sh_as "$A" "echo 23000 > '$FA/big/memory'"

# ---- functions (big, many, sink and third)
as "$A" mkdir "$FA/sink"
sh_as "$A" "echo hot > '$FA/sink/mode' && echo 'while IFS= read -r l; do echo ok; done' > '$FA/sink/command'"
check "root sets alice's functions to 4" write "$Q/functions" 4
check "her third function is made" as "$A" mkdir "$FA/third"
check_fails_with "a fourth is over the quota (EDQUOT)" "Disk quota exceeded" as "$A" mkdir "$FA/fourth"
check "the refusal is journalled with its reason" eval "grep 'function.rejected' '$MNT/tenants/acme/events' | grep -q 'over its quota of 4 functions'"
check "rmdir frees one" as "$A" rmdir "$FA/third"
check "and another is made" as "$A" mkdir "$FA/fourth"

# ---- code bytes, over all the tenant's functions
check "root sets code_bytes to 100000" write "$Q/code_bytes" 100000
check "60000 bytes of code in one function" sh_as "$A" "head -c 60000 /dev/zero > '$FA/big/code/a'"
check_fails_with "60000 more in another pass the quota (EDQUOT)" "Disk quota exceeded" \
	sh_as "$A" "head -c 60000 /dev/zero > '$FA/many/code/b'"
check "the reason names the code bytes" grep -q "over its quota of 100000 bytes of code" "$FA/many/error"
as "$A" rm -f "$FA/many/code/b" # what was written before the refusal
check "30000 fit" sh_as "$A" "head -c 30000 /dev/zero > '$FA/many/code/c'"
check "removing code frees it" sh_as "$A" "rm '$FA/big/code/a' && head -c 60000 /dev/zero > '$FA/many/code/d'"

# ---- usage
check_eq "usage: functions" "$(usage_of acme functions)" "4 4"
check_eq "usage: memory (23000 + 8 x 128 + 128 + 128)" "$(usage_of acme memory)" "24280 30000"
check_eq "usage: code bytes" "$(usage_of acme code_bytes)" "$((60000 + 30000)) 100000"
check_eq "usage: bob's defaults" "$(usage_of bobco instances)" "1 32"

# ---- request bytes held in open invoke files
check "root sets request_bytes to 1000000" write "$Q/request_bytes" 1000000
cat >"$T/hold.py" <<'EOF'
import errno, os, resource, sys
path, n, size, pid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 64), hard))
def rss():
    with open("/proc/%s/status" % pid) as f:
        for l in f:
            if l.startswith("VmRSS:"):
                return int(l.split()[1])
base = rss()
fds, errs, peak = [], {}, 0
chunk = b"x" * size
for i in range(n):
    fd = os.open(path, os.O_RDWR)
    fds.append(fd)
    try:
        left = chunk
        while left:
            left = left[os.write(fd, left):]
    except OSError as e:
        errs[errno.errorcode[e.errno]] = errs.get(errno.errorcode[e.errno], 0) + 1
    if i % 50 == 49:
        peak = max(peak, rss())
peak = max(peak, rss())
print("held", " ".join("%s=%d" % kv for kv in sorted(errs.items())))
print("grew_kb", peak - base)
sys.stdout.flush()
sys.stdin.read(1)
for fd in fds:
    os.close(fd)
EOF
mkfifo "$T/hold.in"
# hold USER INVOKE N SIZE: USER opens INVOKE N times and writes SIZE bytes
# to each, and holds them open until hold_end; sets HELD (the errnos of
# the refused writes) and GREW (kB the daemon's RSS grew meanwhile).
hold() {
	local u=$1
	shift
	rm -f "$T/hold.out"
	if [ "$u" = root ]; then
		/usr/bin/python3 "$T/hold.py" "$@" "$PID" <"$T/hold.in" >"$T/hold.out" 2>&1 &
	else
		as "$u" /usr/bin/python3 "$T/hold.py" "$@" "$PID" <"$T/hold.in" >"$T/hold.out" 2>&1 &
	fi
	HOLD_PID=$!
	BGPIDS+=("$HOLD_PID")
	exec {HI}>"$T/hold.in"
	wait_until 300 grep -q grew_kb "$T/hold.out"
	HELD=$(sed -n 's/^held //p' "$T/hold.out")
	GREW=$(sed -n 's/^grew_kb //p' "$T/hold.out")
	echo "# daemon RSS grew ${GREW:-?} kB"
}
hold_end() {
	exec {HI}>&-
	wait "$HOLD_PID" 2>/dev/null
}
hold "$A" "$FA/sink/invoke" 2 600000
check_eq "the second 600000 bytes pass it (EDQUOT)" "$HELD" "EDQUOT=1"
check_eq "usage counts the held request" "$(usage_of acme request_bytes)" "600000 1000000"
hold_end
check "closed, it is given back" wait_until 30 eval '[ "$(usage_of acme request_bytes)" = "0 1000000" ]'
check "the refusal is in error" grep -q "over its quota of 1000000 bytes of held requests" "$FA/sink/error"

# ---- kill -9 and remount: the quotas stay
crash_fnfs
fusermount3 -uz "$MNT" 2>/dev/null
start_fnfs || not_ok "remount"
check_eq "after kill -9: memory" "$(cat "$Q/memory" 2>&1)" "30000"
check_eq "functions" "$(cat "$Q/functions" 2>&1)" "4"
check_eq "code_bytes" "$(cat "$Q/code_bytes" 2>&1)" "100000"
check_eq "the use is counted again" "$(usage_of acme memory)" "24280 30000"
check_eq "and the code bytes" "$(usage_of acme code_bytes)" "90000 100000"
check_fails_with "still enforced" "Disk quota exceeded" as "$A" mkdir "$FA/fifth"
check "default brings the default back" write "$Q/request_bytes" default
check_eq "request_bytes reads the default" "$(cat "$Q/request_bytes")" "16777216"
check "a removed tenant's quotas go with it" eval "write '$MNT/tenants/ours/quota/functions' 7 && rmdir '$MNT/tenants/ours/prod' '$MNT/tenants/ours' && mkdir '$MNT/tenants/ours' && [ \"\$(cat '$MNT/tenants/ours/quota/functions')\" = none ]"

# ---- the flood: 1,000 opens of alice's invoke, 1 MiB written to each
# The bound of the RSS's growth: 100 MB; with AddressSanitizer, whose
# quarantine keeps up to 256 MB of freed memory resident, 400 MB (the old
# fnfs grew by 1 GB).
RSS_MAX=102400
ldd "$FNFS" 2>/dev/null | grep -q libasan && RSS_MAX=409600
wait_until 10 state_is "$FA/sink/state" running
# The requests not refused start at the close and wait in the queue (held
# still) until their timeout.
write "$FA/sink/timeout" 3000
hold "$A" "$FA/sink/invoke" 1000 1048576
check_eq "past 16 MiB every write is refused (EDQUOT)" "$HELD" "EDQUOT=984"
check "the daemon's RSS grew by less than $((RSS_MAX / 1024)) MB" [ "${GREW:-999999}" -lt "$RSS_MAX" ]
hold_end
check "closed, every byte is given back" wait_until 60 eval '[ "$(usage_of acme request_bytes)" = "0 16777216" ]'

# ---- requests closed unread wait in the queue: held all the same
write "$Q/functions" 5
as "$A" mkdir "$FA/slow"
sh_as "$A" "echo hot > '$FA/slow/mode' && echo 20000 > '$FA/slow/timeout' && echo 'sleep 100000' > '$FA/slow/command'"
wait_until 15 state_is "$FA/slow/instances/0/state" running
cat >"$T/closes.py" <<'EOF'
import errno, os, sys
path, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
errs = {}
for i in range(n):
    fd = os.open(path, os.O_WRONLY)
    try:
        left = b"x" * size
        while left:
            left = left[os.write(fd, left):]
    except OSError as e:
        k = errno.errorcode[e.errno]
        errs[k] = errs.get(k, 0) + 1
    os.close(fd)
print(" ".join("%s=%d" % kv for kv in sorted(errs.items())))
EOF
out=$(as "$A" /usr/bin/python3 "$T/closes.py" "$FA/slow/invoke" 30 1048576 2>&1)
check "30 requests of 1 MiB closed unread: past 16 MiB queued, EDQUOT ($out)" \
	eval '[ "${out#EDQUOT=}" != "$out" ] && [ "${out#EDQUOT=}" -ge 10 ]'
used=$(usage_of acme request_bytes)
check "the queue holds no more than the quota ($used)" [ "${used% *}" -le 16777216 ]
check "the calls' end gives every byte back" wait_until 60 eval '[ "$(usage_of acme request_bytes)" = "0 16777216" ]'

# ---- the daemon's bound: root's tenant is unlimited, fnfs is not
mkdir -p "$MNT/tenants/ours/prod/sink"
echo hot >"$MNT/tenants/ours/prod/sink/mode"
echo 'while IFS= read -r l; do echo ok; done' >"$MNT/tenants/ours/prod/sink/command"
write "$MNT/tenants/ours/prod/sink/timeout" 3000
hold root "$MNT/tenants/ours/prod/sink/invoke" 100 1048576
check_eq "past 64 MiB held in all, a write gets EAGAIN" "$HELD" "EAGAIN=36"
check "the daemon's RSS grew by less than $((RSS_MAX / 1024)) MB" [ "${GREW:-999999}" -lt "$RSS_MAX" ]
hold_end
check "their calls' end gives every byte back" wait_until 60 eval '[ "$(usage_of ours request_bytes)" = "0 none" ]'
check_eq "bob's call still works" "$(ask_as "$B" bobco/prod/p 'echo hi' 2>&1)" "hi"

done_testing
