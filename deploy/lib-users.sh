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
		useradd --create-home --shell /bin/bash --comment "gpool test user" "$u" ||
			{ echo "gpool-cluster: cannot create user '$u'" >&2; return 1; }
	done
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -eu
	gpool_users_ensure
	for u in $GPOOL_TEST_USERS; do id "$u"; done
fi
