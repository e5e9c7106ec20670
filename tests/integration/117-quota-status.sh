#!/usr/bin/env bash
# Use against quota in the root's files (issue 23, item 5: "`status`
# shows use against quota"): the root `stats` has quota/T/R_used and
# quota/T/R_limit for each tenant the reader may read, `metrics` has
# fnfs_tenant_quota_used and fnfs_tenant_quota_limit (+Inf: none), both
# agree with tenants/T/quota/usage, and a tenant hidden from a reader
# (alice's 0700 acme, from bob) is in neither. The `status` table keeps
# one row per function.
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
FA=$MNT/tenants/acme/prod
as "$A" chmod 700 "$MNT/tenants/acme" || not_ok "acme is alice's alone"
as "$B" chmod 700 "$MNT/tenants/bobco" || not_ok "bobco is bob's alone"
mkdir -p "$MNT/tenants/ours/prod" || not_ok "root's tenant"

# stat_as USER KEY: the value of KEY in the root's stats, as USER reads it.
stat_as() {
	as "$1" cat "$MNT/stats" | awk -v k="$2" '$1 == k { print $2 }'
}

# sample FILE FAMILY TENANT RESOURCE: the value of that sample in FILE.
sample() {
	awk -v l="$2{tenant=\"$3\",resource=\"$4\"}" '$1 == l { print $2 }' "$1"
}

# ---- root sets acme's quotas; alice makes a function and code
write "$MNT/tenants/acme/quota/memory" 2048 || not_ok "memory quota"
write "$MNT/tenants/acme/quota/functions" 5 || not_ok "functions quota"
as "$A" mkdir "$FA/f1" || not_ok "alice makes a function"
as "$A" bash -c "echo cold > '$FA/f1/mode' && echo 8 > '$FA/f1/max_instances' && echo 64 > '$FA/f1/memory'" ||
	not_ok "alice's spec"
as "$A" bash -c "head -c 1000 /dev/zero > '$FA/f1/code/blob'" || not_ok "alice's code"

# ---- root's stats
cat "$MNT/stats" >"$T/root.stats"
check_eq "root's stats: acme's memory used (8 x 64 MB) and its limit" \
	"$(stat_of "$T/root.stats" quota/acme/memory_used) $(stat_of "$T/root.stats" quota/acme/memory_limit)" "512 2048"
check_eq "instances: 8 of the default 32" \
	"$(stat_of "$T/root.stats" quota/acme/instances_used) $(stat_of "$T/root.stats" quota/acme/instances_limit)" "8 32"
check_eq "functions: 1 of 5" \
	"$(stat_of "$T/root.stats" quota/acme/functions_used) $(stat_of "$T/root.stats" quota/acme/functions_limit)" "1 5"
check_eq "code_bytes: 1000 of 256 MiB" \
	"$(stat_of "$T/root.stats" quota/acme/code_bytes_used) $(stat_of "$T/root.stats" quota/acme/code_bytes_limit)" "1000 268435456"
check_eq "request_bytes: none held" "$(stat_of "$T/root.stats" quota/acme/request_bytes_used)" "0"
check_eq "root's own tenant is unlimited: none" "$(stat_of "$T/root.stats" quota/ours/memory_limit)" "none"
check_eq "root's stats show acme, bobco and ours, in order" \
	"$(awk -F/ '$1 == "quota" && $3 ~ /^memory_used / { print $2 }' "$T/root.stats" | tr '\n' ' ')" "acme bobco ours "
check_eq "every stats line is still one key and one value" "$(awk 'NF != 2' "$T/root.stats")" ""
check_eq "the counts before them are as they were" "$(stat_of "$T/root.stats" tenants) $(stat_of "$T/root.stats" functions)" "3 1"
# stats agrees with quota/usage, line for line
want=$(awk '{ print "quota/acme/" $1 "_used " $2; print "quota/acme/" $1 "_limit " $3 }' "$MNT/tenants/acme/quota/usage")
check_eq "stats agree with acme's quota/usage" "$(grep '^quota/acme/' "$T/root.stats")" "$want"

# ---- root's metrics
cat "$MNT/metrics" >"$T/root.metrics"
check_eq "metrics: acme's memory used and limit" \
	"$(sample "$T/root.metrics" fnfs_tenant_quota_used acme memory) $(sample "$T/root.metrics" fnfs_tenant_quota_limit acme memory)" "512 2048"
check_eq "metrics: code bytes used" "$(sample "$T/root.metrics" fnfs_tenant_quota_used acme code_bytes)" "1000"
check_eq "metrics: an unlimited quota is +Inf" "$(sample "$T/root.metrics" fnfs_tenant_quota_limit ours memory)" "+Inf"
check_eq "metrics: five resources a tenant, in each family" \
	"$(grep -c '^fnfs_tenant_quota_used{tenant="acme"' "$T/root.metrics") $(grep -c '^fnfs_tenant_quota_limit{tenant="acme"' "$T/root.metrics")" "5 5"
check "metrics: each family has its HELP and TYPE" eval 'grep -qx "# TYPE fnfs_tenant_quota_used gauge" "$T/root.metrics" && grep -qx "# TYPE fnfs_tenant_quota_limit gauge" "$T/root.metrics"'
check "metrics pass promtool" eval 'promtool check metrics <"$T/root.metrics"'

# ---- status: the table is unchanged (a header, one row per function)
check_eq "status: a header and one row per function, as before" \
	"$(awk 'NR > 1 { print $1 }' "$MNT/status" | tr '\n' ' ')" "acme/prod/f1 "

# ---- what alice sees
check_eq "alice's stats: her memory use and limit" \
	"$(stat_as "$A" quota/acme/memory_used) $(stat_as "$A" quota/acme/memory_limit)" "512 2048"
check_eq "alice's stats show only acme's quotas" \
	"$(as "$A" cat "$MNT/stats" | awk -F/ '$1 == "quota" { print $2 }' | sort -u | tr '\n' ' ')" "acme "
check_eq "alice's metrics: her memory use" "$(as "$A" cat "$MNT/metrics" | awk '$1 == "fnfs_tenant_quota_used{tenant=\"acme\",resource=\"memory\"}" { print $2 }')" "512"

# ---- bob: acme is 0700, hidden from him, and its use with it
as "$B" cat "$MNT/stats" >"$T/bob.stats"
as "$B" cat "$MNT/metrics" >"$T/bob.metrics"
check "bob cannot list acme" eval "! as '$B' ls '$MNT/tenants/acme' >/dev/null 2>&1"
check_eq "bob's stats name no quota of acme (nor any acme)" "$(grep -c acme "$T/bob.stats")" "0"
check_eq "bob's metrics name no quota of acme (nor any acme)" "$(grep -c acme "$T/bob.metrics")" "0"
check_eq "bob's stats: his own tenant's quotas" "$(stat_of "$T/bob.stats" quota/bobco/memory_limit)" "4096"
check_eq "bob's metrics: his own tenant's quotas" "$(sample "$T/bob.metrics" fnfs_tenant_quota_limit bobco functions)" "100"
check_eq "bob's stats: its size is what he reads" "$(as "$B" stat -c %s "$MNT/stats")" "$(wc -c <"$T/bob.stats")"

# ---- alice opens acme to her group (bob's too): he sees it at once
as "$A" chmod 750 "$MNT/tenants/acme" || not_ok "alice opens acme to her group"
check_eq "bob now reads acme's memory use" "$(stat_as "$B" quota/acme/memory_used)" "512"
as "$A" chmod 700 "$MNT/tenants/acme"
check_eq "and not after she closes it again" "$(as "$B" cat "$MNT/stats" | grep -c acme)" "0"

# ---- the use moves with the tree
write "$MNT/tenants/acme/quota/memory" none || not_ok "memory unlimited"
as "$A" bash -c "echo 16 > '$FA/f1/max_instances'" || not_ok "alice grows f1"
check_eq "stats follow a new spec and limit" \
	"$(stat_as "$A" quota/acme/memory_used) $(stat_as "$A" quota/acme/memory_limit)" "1024 none"
check_eq "metrics too (+Inf)" \
	"$(as "$A" cat "$MNT/metrics" | awk '$1 == "fnfs_tenant_quota_limit{tenant=\"acme\",resource=\"memory\"}" { print $2 }')" "+Inf"
as "$A" rmdir "$FA/f1" || not_ok "alice removes f1"
check_eq "removing the function gives back what it held" \
	"$(stat_as "$A" quota/acme/functions_used) $(stat_as "$A" quota/acme/memory_used) $(stat_as "$A" quota/acme/instances_used)" "0 0 0"
rmdir "$MNT/tenants/ours/prod" "$MNT/tenants/ours" || not_ok "root removes its tenant"
check_eq "a removed tenant leaves stats" "$(grep -c '^quota/ours/' "$MNT/stats")" "0"
check_eq "and metrics" "$(grep -c 'tenant="ours"' "$MNT/metrics")" "0"

done_testing
