#!/bin/bash
# deb.lintian: the Debian packages (`make deb`: gpool-scheduler, gpool-worker, gpool-client)
# are built from this build tree with CPack and lintian reports no error on them; each has its
# programs where deploy/systemd's units run them, and gpool-client marks /etc/gpool/gpool.conf
# a conffile with every key of the table commented. Skips (77) without lintian or cpack.
set -u
BUILD=${1:?usage: lintian.sh BUILD_DIR}
command -v lintian >/dev/null || { echo "skip: lintian is not installed (deploy/install-deps.sh)"; exit 77; }
command -v cpack >/dev/null || { echo "skip: cpack is not installed"; exit 77; }
out=$(mktemp -d /tmp/gpool-deb.XXXXXX)
trap 'rm -rf "$out"' EXIT
fail=0
(cd "$BUILD" && cpack -G DEB -B "$out" >"$out/cpack.log" 2>&1) || { cat "$out/cpack.log"; exit 1; }
for p in scheduler worker client; do
	deb=$(ls "$out"/gpool-${p}_*.deb 2>/dev/null | head -1)
	[ -n "$deb" ] || { echo "not ok: gpool-$p was not built"; fail=1; continue; }
	l=$(lintian --tag-display-limit 0 "$deb" 2>&1 | grep -v 'running with root privileges')
	if grep -q '^E:' <<<"$l"; then
		echo "not ok: lintian errors on gpool-$p:"; grep '^E:' <<<"$l"; fail=1
	else
		echo "ok: lintian reports no error on gpool-$p ($(grep -c '^W:' <<<"$l") warnings)"
	fi
done
files() { dpkg-deb -c "$out"/gpool-$1_*.deb | awk '{print $6}'; }
for u in gschedd:scheduler gworkerd:worker; do
	unit=$(dpkg-deb --fsys-tarfile "$out"/gpool-${u#*:}_*.deb | tar -xO "./usr/lib/systemd/system/${u%:*}.service")
	exe=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' <<<"$unit")
	if files "${u#*:}" | grep -qx ".$exe"; then echo "ok: ${u%:*}.service runs $exe, which gpool-${u#*:} installs"; else echo "not ok: $exe not in gpool-${u#*:}"; fail=1; fi
done
files worker | grep -qx ./usr/sbin/gstepd && echo "ok: gstepd beside gworkerd" || { echo "not ok: gstepd"; fail=1; }
dpkg-deb --ctrl-tarfile "$out"/gpool-client_*.deb | tar -xO ./conffiles | grep -qx /etc/gpool/gpool.conf &&
	echo "ok: /etc/gpool/gpool.conf is a conffile" || { echo "not ok: conffile"; fail=1; }
conf=$(dpkg-deb --fsys-tarfile "$out"/gpool-client_*.deb | tar -xO ./etc/gpool/gpool.conf)
keys=$(grep -c '^#[a-z_]* = ' <<<"$conf")
[ "$keys" -gt 30 ] && echo "ok: the example gpool.conf has $keys keys, commented" || { echo "not ok: $keys keys"; fail=1; }
dpkg-deb --ctrl-tarfile "$out"/gpool-scheduler_*.deb | tar -xO ./postinst | grep -q 'adduser --system' &&
	echo "ok: gpool-scheduler's postinst creates the service account" || { echo "not ok: postinst"; fail=1; }
exit $fail
