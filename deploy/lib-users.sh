#!/bin/bash
# lib-users.sh: the unprivileged accounts that tests and the demo submit jobs as.
# gschedd refuses root's jobs unless allow_root is set, and authorization tests need a second
# user, so: gpool-user (submits) and gpool-other (tries to touch gpool-user's jobs).
# Source it (gpool_users_ensure) or run it as a command (needs root).

GPOOL_TEST_USERS="gpool-user gpool-other"

# Create the test accounts when they are missing. 0 / 1 (message on stderr).
gpool_users_ensure() {
	local u
	for u in $GPOOL_TEST_USERS; do
		id -u "$u" >/dev/null 2>&1 && continue
		if [ "$(id -u)" != 0 ]; then
			echo "gpool-cluster: user '$u' is missing and only root can create it" >&2
			return 1
		fi
		# system tests start side by side (tests/netslots.json): one useradd at a time, and
		# none for a user another test made meanwhile
		(
			flock -w 60 9 || exit 1
			id -u "$u" >/dev/null 2>&1 ||
				useradd --create-home --shell /bin/bash --comment "gpool test user" "$u"
		) 9>>/run/gpool-users.lock ||
			{ echo "gpool-cluster: cannot create user '$u'" >&2; return 1; }
	done
}

# gpool_users_bin BINDIR COPYDIR: a directory the test accounts can run the commands from.
# BINDIR itself when they can (prints it); else (a checkout under root's 0700 home, say) a
# copy of its files in COPYDIR/bin, readable by all.
gpool_users_bin() {
	local bin=$1 copy=$2 u=${GPOOL_TEST_USERS%% *}
	if runuser -u "$u" -- test -x "$bin/gsub" 2>/dev/null; then
		echo "$bin"
		return 0
	fi
	mkdir -p "$copy/bin" || return 1
	cp -p "$bin"/* "$copy/bin/" 2>/dev/null
	chmod 0755 "$copy" "$copy/bin"
	chmod -R a+rX "$copy/bin"
	runuser -u "$u" -- test -x "$copy/bin/gsub" || {
		echo "gpool-cluster: '$u' cannot run the commands from '$bin' nor from a copy in '$copy/bin'" >&2
		return 1
	}
	echo "$copy/bin"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -eu
	gpool_users_ensure
	for u in $GPOOL_TEST_USERS; do id "$u"; done
fi
