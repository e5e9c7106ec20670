# users.sh - two real Unix users for the tests that attack fnfs as a
# tenant: alice ($A, uid $AU) and bob ($B, uid $BU), made for this test
# only and removed on exit with everything else (lib.sh's cleanup).
# Sourced after lib.sh. Each has a private 0700 directory under $T
# ($T/alice, $T/bob) for its functions' cwd and files.
# shellcheck shell=bash

A=fna$$
B=fnb$$
users_cleanup() {
	local u p
	cleanup
	# userdel refuses a user that still has processes: what is left of
	# these users' (made for this test) is ended, by pid, first.
	for u in "${USERS_MADE[@]}"; do
		for p in $(pgrep -u "$u" 2>/dev/null); do
			kill -9 "$p" 2>/dev/null
		done
		wait_until 10 eval '! pgrep -u "$u" >/dev/null'
		passwd_locked userdel "$u" 2>/dev/null
	done
}
trap users_cleanup EXIT
# The GECOS names the test (tests/run counts its users left behind).
USERS_GECOS="fnfs-test ${FNFS_TEST_RUN:-$$}"
# The names as made: a test may reuse $A and $B for its own values.
USERS_MADE=("$A" "$B")
passwd_locked useradd -M -N -s /usr/sbin/nologin -c "$USERS_GECOS" "$A" || exit 1
passwd_locked useradd -M -N -s /usr/sbin/nologin -c "$USERS_GECOS" "$B" || exit 1
# shellcheck disable=SC2034 # used by the tests that source this
AU=$(id -u "$A")
# shellcheck disable=SC2034
BU=$(id -u "$B")

# as USER COMMAND...: runs the command as USER, with USER's groups.
as() {
	local u=$1
	shift
	setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups -- "$@"
}

chmod 711 "$T"
mkdir -m 700 "$T/alice" "$T/bob"
chown "$A:" "$T/alice"
chown "$B:" "$T/bob"

# tenants_for_users: after start_fnfs, makes tenant acme for alice and
# bobco for bob, each with a namespace prod.
tenants_for_users() {
	mkdir -p "$MNT/tenants/acme/prod" "$MNT/tenants/bobco/prod" || return 1
	chown "$A:" "$MNT/tenants/acme" && chown "$B:" "$MNT/tenants/bobco"
}

# probe_fn USER TENANT NAME [NETWORK]: a hot function of USER's that runs
# each request line as shell code and answers its output on one line.
probe_fn() {
	local u=$1 f=$MNT/tenants/$2/prod/$3 home
	home=$T/alice
	[ "$u" = "$B" ] && home=$T/bob
	as "$u" mkdir -p "$f" || return 1
	as "$u" sh -c "echo hot > '$f/mode' && echo '$home' > '$f/cwd'" || return 1
	[ -n "${4:-}" ] && { as "$u" sh -c "echo $4 > '$f/network'" || return 1; }
	as "$u" sh -c "cat > '$f/command'" <<'EOS'
while IFS= read -r l; do sh -c "$l" </dev/null 2>&1 | tr '\n' ' '; echo; done
EOS
}

# ask_as USER TENANT/NS/FN COMMAND: runs COMMAND in that probe, through
# USER's invoke.
ask_as() {
	printf '%s' "$3" | as "$1" "$FNFS" invoke "$2" --mount "$MNT" | sed 's/ *$//'
}
