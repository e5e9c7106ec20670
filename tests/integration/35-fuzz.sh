#!/usr/bin/env bash
# No accepted value is ever dropped. Text attributes are UTF-8: anything
# else (and control characters but tab) is EINVAL with a clean `error`
# line, and changes nothing; the running instance goes on and answers
# start/stop. Then a fuzzer (spec-fuzz.py) writes random bytes to every
# attribute, each value in one write(2) or cut across several through one
# open (judged whole), with a fixed seed and a random one that it prints, for a
# bounded time; after a remount every file reads exactly what was last
# acknowledged. FUZZ_SEED=N reruns with N as the random seed;
# FUZZ_SECONDS sets the time per seed (default 7).
. "$(dirname "$0")/lib.sh"
FUZZER=$(cd "$(dirname "$0")" && pwd)/spec-fuzz.py
FIXED_SEED=20261123
RANDOM_SEED=${FUZZ_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
FUZZ_SECONDS=${FUZZ_SECONDS:-6}

# clean_error FN_DIR: `error` is one line of UTF-8 without control
# characters (C0, DEL, C1).
clean_error() {
	[ "$(wc -l <"$1/error")" = 1 ] &&
		iconv -f UTF-8 -t UTF-8 "$1/error" >/dev/null 2>&1 &&
		! LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]\|\xc2[\x80-\x9f]' "$1/error"
}

# config_has FN_DIR KEY VALUE: config shows "KEY": VALUE (VALUE as JSON).
config_has() {
	grep -qxF "  \"$2\": $3," "$1/config"
}

# refused ATTR BYTES(printf format) WHY: the write is EINVAL, revision and
# config unchanged, and `error` says WHY on one clean line.
refused() {
	local attr=$1 fmt=$2 why=$3 rev cfg
	rev=$(cat "$F/revision")
	cfg=$(cat "$F/config")
	# shellcheck disable=SC2016 # expanded by the inner bash
	check_fails_with "$attr: $fmt is refused" "Invalid argument" \
		bash -c 'printf "$1" >"$2"' sh "$fmt" "$F/$attr"
	check_eq "$attr: $fmt leaves revision" "$(cat "$F/revision")" "$rev"
	check_eq "$attr: $fmt leaves config" "$(cat "$F/config")" "$cfg"
	check "$attr: error says \"$why\"" grep -qF "$why" "$F/error"
	check "$attr: error is one clean UTF-8 line" clean_error "$F"
}

# ---- the issue's case, with a running instance

start_fnfs || exit 1
F=$MNT/tenants/acme/prod/fn
mkdir -p "$F"
mark_env "$F"
write "$F/command" "sleep 1000"
check "the instance runs" wait_until 10 running_all "$F" 1
pid=$(pid_of "$F/instances/0")

refused command 'sleep 2000\xff\n' \
	"command is not UTF-8 text: byte 0xff at offset 10"
check_eq "command is still the old one" "$(cat "$F/command")" "sleep 1000"
check "config still has the command" config_has "$F" command '"sleep 1000"'
refused cwd '/tmp/\xc3\n' "cwd is not UTF-8 text: byte 0xc3 at offset 5"
refused cwd '/tmp/\xed\xa0\x80\n' "cwd is not UTF-8 text"
refused env "$RUN_MARK\\nA=\\xfe\\n" "env value of A is not UTF-8 text"
refused env "$RUN_MARK\\nB=\\xc0\\xaf\\n" "env value of B is not UTF-8 text"
refused config '{"command": "sleep 2000\xff"}\n' "config: not valid JSON"
refused memory '12\xff\x1b\n' 'not "12\xff\x1b"'
refused tags 'gpu \xff\n' 'tag "\xff" must be'
# Control characters: a CR (a file from Windows), an escape sequence.
refused command 'sleep 1000\r\n' "the control character U+000D"
refused command 'echo \x1b[2J\n' "the control character U+001B"
refused command 'echo \xc2\x9b\n' "the control character U+009B"
refused env "$RUN_MARK\\nA=\\x01\\n" "the control character U+0001"
refused config '{"command": "a\\u001bb"}\n' "the control character U+001B"
check_eq "the instance kept its process" "$(pid_of "$F/instances/0")" "$pid"
check "echo stop > state returns" timeout 10 bash -c "echo stop >'$F/state'"
check "echo start > state returns" timeout 5 bash -c "echo start >'$F/state'"
check "the instance runs again" wait_until 10 running_all "$F" 1

# UTF-8 and tabs are text like any other, and reach the process.
mkdir -p "$T/répertoire-日本"
rev=$(cat "$F/revision")
printf 'sleep\t1001\n' >"$F/command"
check_eq "a tab is accepted" "$(cat "$F/command")" "$(printf 'sleep\t1001')"
printf '%s\nGREETING=grüß dich €😀\n' "$RUN_MARK" >"$F/env"
echo "$T/répertoire-日本" >"$F/cwd"
check_eq "each accepted write is a revision" "$(cat "$F/revision")" "$((rev + 3))"
check "config shows the env" grep -qxF '    "GREETING": "grüß dich €😀"' "$F/config"
check "the instance restarts with them" wait_until 10 eval \
	'[ "$(env_of "$(pid_of "$F/instances/0")" GREETING)" = "grüß dich €😀" ]'
check_eq "its cwd is the UTF-8 path" \
	"$(readlink "/proc/$(pid_of "$F/instances/0")/cwd")" "$T/répertoire-日本"
stop_fnfs
start_fnfs || exit 1
check_eq "after a remount: command" "$(cat "$F/command")" "$(printf 'sleep\t1001')"
check_eq "after a remount: env" "$(sed -n 2p "$F/env")" "GREETING=grüß dich €😀"
check_eq "after a remount: cwd" "$(cat "$F/cwd")" "$T/répertoire-日本"
check "after a remount: config has the command" config_has "$F" command '"sleep\t1001"'
rmdir "$F"
stop_fnfs

# ---- the fuzzer, on a mount without workers: nothing it writes runs

DATA=$T/fuzz-data
echo "# fuzz seeds: fixed $FIXED_SEED, random $RANDOM_SEED" \
	"(again: FUZZ_SEED=$RANDOM_SEED), $FUZZ_SECONDS s each"
start_fnfs --workers 0 || exit 1
FX=$MNT/tenants/fuzz/ns/fixed
FR=$MNT/tenants/fuzz/ns/random
mkdir -p "$FX" "$FR"
check "fuzz (seeds $FIXED_SEED and $RANDOM_SEED): every write checked" \
	timeout $((2 * FUZZ_SECONDS + 60)) python3 "$FUZZER" run \
	"$FUZZ_SECONDS" "$T/fuzz.state" "$FX:$FIXED_SEED" "$FR:$RANDOM_SEED"
stop_fnfs
start_fnfs --workers 0 || exit 1
check "after a remount each function shows what was last acknowledged" \
	timeout 60 python3 "$FUZZER" verify "$T/fuzz.state"
done_testing
