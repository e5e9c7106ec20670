#!/usr/bin/env bash
# The root's status and metrics, rendered as they are read (a piece at a
# time, from the offset the reader has reached): the same bytes as the
# rendering made whole at the first read (fixtures made by that older
# build), whatever the size of the reads; a function removed while a
# reader is in the middle is skipped from there on, one created is not
# shown, and no line is cut or repeated; readers that keep metrics open
# hold no copy of it.
#
# To remake the fixtures with another build (the rendering is
# deterministic for this tree):
#   DUMP_FIXTURES=tests/integration/fixtures FNFS=/path/to/fnfs \
#       bash tests/integration/101-large-files.sh
. "$(dirname "$0")/lib.sh"
start_fnfs --workers 0 || exit 1
check "a simulated worker registers" start_worker w1 100000 --simulate

# ---- a small tree, the same bytes as before
for t in acme beta; do
	for ns in dev prod; do
		mkdir -p "$MNT/tenants/$t/$ns"
		mkdir "$MNT/tenants/$t/$ns/"{f1,f2,f3,f4,f5}
	done
done
echo '{"command":"sleep 1000","parallelism":3}' >"$MNT/tenants/acme/prod/f2/config"
echo '{"command":"cat","mode":"hot","parallelism":2,"max_instances":4,"memory":64}' >"$MNT/tenants/beta/dev/f4/config"
check "the instances run" wait_until 10 eval 'state_is "$MNT/tenants/acme/prod/f2/state" running && state_is "$MNT/tenants/beta/dev/f4/state" running'
if [ -n "${DUMP_FIXTURES:-}" ]; then
	for f in status stats metrics; do
		cat "$MNT/$f" >"$DUMP_FIXTURES/large-files.$f"
	done
fi
for f in status stats metrics; do
	check "small tree: $f is the same as before (fixture)" cmp "$MNT/$f" "$FIXTURES/large-files.$f"
done
check "small tree: metrics pass promtool" eval 'promtool check metrics <"$MNT/metrics"'

# ---- a tree of 1,200 functions: metrics 1.7 MB, read in pieces
mkdir -p "$MNT/tenants/acme/big"
(cd "$MNT/tenants/acme/big" && seq -f 'g%04.0f' 0 1199 | xargs mkdir)
check_eq "1,220 functions" "$(stat_of "$MNT/stats" functions)" "1220"
cat "$MNT/metrics" >"$T/m.cat"
cat "$MNT/status" >"$T/s.cat"
check "metrics of 1,220 functions pass promtool" eval 'promtool check metrics <"$T/m.cat"'
check_eq "every function is in every function family once" \
	"$(grep -c '^fnfs_function_instances{' "$T/m.cat") $(grep -c '^fnfs_function_latency_seconds_count{' "$T/m.cat")" "1220 1220"
check_eq "status has a row per function" "$(($(wc -l <"$T/s.cat") - 1))" "1220"
check_eq "status: its size is what a read gives" "$(stat -c %s "$MNT/status")" "$(wc -c <"$T/s.cat")"
for bs in 1000 4093 65536 1048576; do
	check "metrics read with bs=$bs: the same bytes" eval \
		'dd if="$MNT/metrics" bs=$bs status=none | cmp - "$T/m.cat"'
done
check "status read with bs=7: the same bytes" eval \
	'dd if="$MNT/status" bs=7 status=none | cmp - "$T/s.cat"'
check "metrics read with bs=7 (the first 70,007 bytes): the same bytes" eval \
	'dd if="$MNT/metrics" bs=7 count=10001 status=none | cmp - <(head -c 70007 "$T/m.cat")'

# Reads of every size from 1 to 9,000 bytes in turn, then seeks: back to
# the start, back into the middle, and ahead past the end.
cat >"$T/reads.py" <<'PY'
import os, sys
path, ref = sys.argv[1], open(sys.argv[2], "rb").read()
fd = os.open(path, os.O_RDONLY)
out, n = [], 1
while True:
    b = os.read(fd, n)
    if not b:
        break
    out.append(b)
    n = n % 9000 + 1
assert b"".join(out) == ref, "sizes 1..9000"
assert os.pread(fd, 100, 0) == ref[:100], "from 0 again"
assert os.pread(fd, 5000, 777777) == ref[777777:782777], "ahead"
assert os.pread(fd, 300, 1234) == ref[1234:1534], "back"
assert os.pread(fd, 10, len(ref) + 10) == b"", "past the end"
os.close(fd)
PY
check "metrics read in pieces of 1 to 9,000 bytes, and with seeks" python3 "$T/reads.py" "$MNT/metrics" "$T/m.cat"

# ---- functions removed and created while a reader is in the middle.
# The reader has read the first line of acme/big/g0000 (in the first
# family) when g0000 and g0600 are removed and g0300x is created.
N=acme/big
line_of() { # the first line of FN in FILE
	grep -m1 "namespace=\"big\",function=\"$1\"" "$2"
}
first=$(line_of g0000 "$T/m.cat")
k=$(($(grep -b -m1 -F "$first" "$T/m.cat" | cut -d: -f1) + ${#first} + 1))
k=$(((k + 6) / 7 * 7))
exec 3<"$MNT/metrics"
dd bs=7 count=$((k / 7)) status=none <&3 >"$T/m.mid"
rmdir "$MNT/tenants/$N/g0000" "$MNT/tenants/$N/g0600"
mkdir "$MNT/tenants/$N/g0300x"
cat <&3 >>"$T/m.mid"
exec 3<&-
# Expected: g0600 nowhere, g0000 only in the first family, g0300x nowhere.
awk -v fam="fnfs_function_calls_received_total{" '
	/function="g0600"/ { next }
	/namespace="big",function="g0000"/ && index($0, fam) != 1 { next }
	{ print }' "$T/m.cat" >"$T/m.want"
check "metrics mid-read: a removed function is skipped from there on, a new one not shown" cmp "$T/m.mid" "$T/m.want"
check "metrics mid-read: it passes promtool" eval 'promtool check metrics <"$T/m.mid"'
check_eq "metrics mid-read: no line is repeated" "$(sort "$T/m.mid" | uniq -d | wc -l)" "0"
cat "$MNT/metrics" >"$T/m.after"
check "a new reader sees the new function and not the removed ones" eval \
	'grep -q "function=\"g0300x\"" "$T/m.after" && ! grep -q "function=\"g0600\"" "$T/m.after"'

cat "$MNT/status" >"$T/s.before"
exec 3<"$MNT/status"
dd bs=7 count=20 status=none <&3 >"$T/s.mid"
rmdir "$MNT/tenants/$N/g0700"
mkdir "$MNT/tenants/$N/g0001x"
cat <&3 >>"$T/s.mid"
exec 3<&-
check "status mid-read: the removed row is skipped, the new one not shown" eval \
	'grep -v "^acme/big/g0700 " "$T/s.before" | cmp - "$T/s.mid"'

# ---- readers that keep metrics open hold no copy of it: 8 readers,
# each having read 4 KiB of a 1.7 MB file. Rendered whole at the first
# read, they held 8 x 1.7 MB.
cat >"$T/hold.py" <<'PY'
import os, sys, time
pid, path = sys.argv[1], sys.argv[2]
def rss():
    for l in open("/proc/%s/status" % pid):
        if l.startswith("VmRSS:"):
            return int(l.split()[1])
before = rss()
fds = [os.open(path, os.O_RDONLY) for _ in range(8)]
for fd in fds:
    assert len(os.read(fd, 4096)) == 4096
time.sleep(0.2)
print(rss() - before)
for fd in fds:
    os.close(fd)
PY
grew=$(python3 "$T/hold.py" "$PID" "$MNT/metrics")
check "8 readers in the middle of metrics add under 4 MB to the controller (+$grew kB)" \
	eval '[ -n "$grew" ] && [ "$grew" -lt 4096 ]'
done_testing
