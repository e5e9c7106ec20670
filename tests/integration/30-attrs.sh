#!/usr/bin/env bash
# Every function attribute: defaults, round trips, the newline rule, bad
# values refused with EINVAL and the file unchanged, error and events, and
# the revision bump.
. "$(dirname "$0")/lib.sh"
start_fnfs || exit 1
F=$MNT/tenants/acme/prod/fn
mkdir -p "$F"

# Defaults.
for pair in "command:" "mode:daemon" "format:line" "parallelism:1" \
	"max_instances:1" "memory:128" "timeout:30000" "idle_timeout:30" \
	"cwd:" "tags:" "tags_policy:strict" "restart_policy:always" "revision:1" \
	"ready:started" "ready_timeout:30" "concurrency:1"; do
	check_eq "default ${pair%%:*}" "$(cat "$F/${pair%%:*}")" "${pair#*:}"
done
check_eq "default env is empty" "$(wc -c <"$F/env")" "0"
check_eq "error is empty while there is none" "$(wc -c <"$F/error")" "0"

# Round trips: what is written is what is read.
roundtrip() {
	local attr=$1 value=$2
	if ! write "$F/$attr" "$value"; then
		not_ok "write $attr=$value"
		return
	fi
	check_eq "round trip $attr=$value" "$(cat "$F/$attr")" "$value"
}
roundtrip command "sleep 1000"
roundtrip command "while true; do echo hi; sleep 1; done"
roundtrip mode hot
roundtrip mode cold
roundtrip mode daemon
roundtrip format json
roundtrip format line
roundtrip parallelism 3
roundtrip parallelism 0
roundtrip max_instances 8
roundtrip memory 512
roundtrip timeout 2500
roundtrip idle_timeout 0
roundtrip idle_timeout 120
roundtrip cwd /srv/app
roundtrip tags "gpu ssd"
roundtrip tags_policy loose
roundtrip restart_policy on-failure
roundtrip restart_policy never
roundtrip ready tcp
roundtrip ready notify
roundtrip ready http:/healthz?x=1
roundtrip ready started
roundtrip ready_timeout 5
roundtrip concurrency 4
roundtrip concurrency 1
# ready follows the format until it is set.
echo >"$F/ready"
echo hot >"$F/mode"
echo http >"$F/format"
check_eq "ready of a hot http function defaults to http:/" "$(cat "$F/ready")" "http:/"
echo lambda >"$F/format"
check_eq "ready of a hot lambda function defaults to lambda" "$(cat "$F/ready")" "lambda"
roundtrip ready lambda
check_fails_with "ready lambda keeps a function from leaving format lambda" "Invalid argument" bash -c "echo line > '$F/format'"
check_eq "format unchanged after the refusal" "$(cat "$F/format")" "lambda"
check_eq "the refusal is in error" "$(grep -c 'ready lambda' "$F/error")" "1"
echo >"$F/ready"
echo line >"$F/format"
check_eq "ready of a line function is back to started" "$(cat "$F/ready")" "started"
echo daemon >"$F/mode"
printf 'A=1\nB=two words\nC=x=y\n' >"$F/env"
check_eq "round trip env" "$(cat "$F/env")" "$(printf 'A=1\nB=two words\nC=x=y')"
printf '%s' 64 >"$F/memory"
check_eq "a value without a trailing newline is fine" "$(cat "$F/memory")" "64"
check_eq "every file ends in a newline" "$(tail -c1 "$F/memory" | od -An -c | tr -d ' ')" '\n'
echo >"$F/cwd"
check_eq "writing an empty line clears a string" "$(cat "$F/cwd")" ""
echo >"$F/env"
check_eq "writing an empty line clears env" "$(wc -c <"$F/env")" "0"

# Bad values: EINVAL, the file unchanged, the reason in error and events.
refuse() {
	local attr=$1 value=$2 before
	before=$(cat "$F/$attr")
	check_fails_with "$attr='$value' is refused" "Invalid argument" bash -c "printf '%s\n' \"\$1\" > '$F/$attr'" sh "$value"
	check_eq "$attr unchanged after '$value'" "$(cat "$F/$attr")" "$before"
}
for attr in parallelism max_instances memory timeout idle_timeout ready_timeout concurrency; do
	refuse "$attr" abc
	refuse "$attr" -1
	refuse "$attr" 99999999999
	refuse "$attr" ""
	refuse "$attr" "1 2"
	refuse "$attr" 1.5
done
refuse parallelism 1001
refuse max_instances 0
refuse memory 0
refuse memory 1048577
refuse timeout 0
refuse idle_timeout 86401
refuse ready_timeout 0
refuse ready_timeout 3601
refuse concurrency 0
refuse concurrency 1001
refuse ready http
refuse ready "http:/a b"
refuse ready "http:"
refuse ready "http:x"
refuse ready tcp:80
refuse ready lambda
refuse ready READY
refuse mode warm
refuse mode HOT
refuse mode ""
refuse format xml
refuse tags_policy sometimes
refuse restart_policy on_failure
refuse cwd relative/path
refuse tags "gpu,ssd"
refuse tags "-gpu"
refuse env NOEQUALS
refuse env "1BAD=x"
refuse env "FN_TENANT=x"
before=$(cat "$F/memory")
check_fails_with "two newlines are not one value" "Invalid argument" bash -c "printf '64\n\n' > '$F/memory'"
check_fails_with "a command of two lines in one write is refused" "Invalid argument" bash -c "printf 'a\nb\n' | cat > '$F/command'"
# Files of one value take each write(2) whole: a second write through a
# kept-open descriptor replaces the first.
exec 3>"$F/parallelism"
echo 2 >&3
echo 3 >&3
exec 3>&-
check_eq "each write to a kept-open fd is a whole value" "$(cat "$F/parallelism")" "3"
# env adds up the writes of one open; >> appends to what is there.
printf 'A=1\nB=2\n' >"$F/env"
echo C=3 >>"$F/env"
check_eq ">> appends to env" "$(cat "$F/env" | tr '\n' ' ')" "A=1 B=2 C=3 "
check_fails_with "a refused line fails the rest of that write" "Invalid argument" bash -c "{ echo D=4; echo BAD; echo E=5; } > '$F/env'"
check_eq "and that open changes nothing, not even its lines before" "$(cat "$F/env" | tr '\n' ' ')" "A=1 B=2 C=3 "
echo >"$F/env"
check_fails_with "a huge value is refused" "Invalid argument" bash -c "head -c 300000 /dev/zero | tr '\\0' a | cat > '$F/tags'"
check_fails_with "a NUL byte is refused" "Invalid argument" bash -c "printf 'A=1\0\n' > '$F/env'"

echo bogus >"$F/mode" 2>/dev/null
check "error holds the reason with a time" grep -qE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z mode must be one of daemon \| hot \| cold$' "$F/error"
# (refusals past 5 a second are held back a second, then summarised)
check "events hold the rejection" wait_until 30 grep -q 'function.rejected acme/prod/fn file=mode errno=EINVAL reason="mode must be one of daemon | hot | cold"' "$MNT/events"

# Cross-attribute rule: parallelism may not pass an explicit max_instances.
write "$F/parallelism" 1
write "$F/max_instances" 2
check_fails_with "parallelism above max_instances is refused" "Invalid argument" write "$F/parallelism" 3
check "the reason names max_instances" grep -q "raise max_instances first" "$F/error"

# Revision: one bump per accepted change, none for a refusal or no change.
r0=$(cat "$F/revision")
write "$F/memory" 300
check_eq "a change bumps the revision" "$(cat "$F/revision")" "$((r0 + 1))"
write "$F/memory" 300
check_eq "writing the same value does not" "$(cat "$F/revision")" "$((r0 + 1))"
write "$F/memory" nope 2>/dev/null
check_eq "a refused write does not" "$(cat "$F/revision")" "$((r0 + 1))"
check "function.updated names the change" grep -q "function.updated acme/prod/fn revision=$((r0 + 1)) changed=memory" "$MNT/events"

# Files of a removed function answer ENOENT, even through an open fd.
exec 3<"$F/memory"
rmdir "$F"
check_fails_with "reading through an fd of a removed function" "No such file" cat <&3
exec 3<&-
done_testing
