#!/bin/bash
# deb.lintian: the Debian packages (`make deb`: every package of build/deb/packages.txt, which
# deploy/deb/packaging.cmake writes) are built from this build tree with CPack, and
# - lintian reports no error on any of them;
# - every file `cmake --install` installs is in one of them (nothing left without a component);
# - every unit of deploy/systemd is in one, with the program its ExecStart= runs and the page
#   its Documentation= names in the same package;
# - every library an ELF file of a package needs comes from a package its Depends names
#   (shlibs right), or from the package itself;
# - gtrain from gpool-worker loads the card modules gpool-cuda and gpool-hip install (a
#   package's prefix, /usr, is not the one the build was configured with);
# - gpool-client marks /etc/gpool/gpool.conf a conffile with every key of the table commented,
#   and the maintainer scripts create the service accounts.
# Skips (77) without lintian or cpack.
set -u
BUILD=${1:?usage: lintian.sh BUILD_DIR}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
command -v lintian >/dev/null || { echo "skip: lintian is not installed (deploy/install-deps.sh)"; exit 77; }
command -v cpack >/dev/null || { echo "skip: cpack is not installed"; exit 77; }
out=$(mktemp -d /tmp/gpool-deb.XXXXXX)
trap 'rm -rf "$out"' EXIT
fail=0
ok() { echo "ok: $*"; }
notok() { echo "not ok: $*"; fail=1; }

[ -s "$BUILD/deb/packages.txt" ] || { echo "not ok: no $BUILD/deb/packages.txt (configure again)"; exit 1; }
mapfile -t pkgs < <(cut -d= -f2 "$BUILD/deb/packages.txt")
(cd "$BUILD" && cpack -G DEB -B "$out" >"$out/cpack.log" 2>&1) || { cat "$out/cpack.log"; exit 1; }
deb() { ls "$out"/"$1"_*.deb 2>/dev/null | head -1; }
files() { dpkg-deb -c "$(deb "$1")" | awk '{print $6}' | sed 's|^\.||'; }

# ---- lintian, on all packages at once (it starts once); their contents unpacked ----
debs=()
for p in "${pkgs[@]}"; do
	d=$(deb "$p")
	[ -n "$d" ] || { notok "$p was not built"; continue; }
	debs+=("$d")
	mkdir -p "$out/x/$p"
	dpkg-deb -x "$d" "$out/x/$p"
done
[ "$fail" = 0 ] || exit 1
l=$(lintian --tag-display-limit 0 "${debs[@]}" 2>&1 | grep -v 'running with root privileges')
for p in "${pkgs[@]}"; do
	if grep -q "^E: ${p}[: ]" <<<"$l"; then
		notok "lintian errors on $p:"; grep "^E: ${p}[: ]" <<<"$l"
	else
		ok "lintian reports no error on $p ($(grep -c "^W: ${p}[: ]" <<<"$l") warnings)"
	fi
done
grep -qE '^E: ' <<<"$l" && ! grep -qE "^E: ($(IFS='|'; echo "${pkgs[*]}"))[: ]" <<<"$l" &&
	notok "lintian errors:" && grep '^E: ' <<<"$l"
for p in "${pkgs[@]}"; do files "$p" | sed "s|\$| $p|"; done >"$out/owners"

# ---- everything `cmake --install` installs is packaged ----
DESTDIR="$out/root" cmake --install "$BUILD" --prefix /usr >"$out/install.log" 2>&1 ||
	{ cat "$out/install.log"; exit 1; }
(cd "$out/root" && find . \( -type f -o -type l \) | sed 's|^\.||' | sort) >"$out/installed"
cut -d' ' -f1 "$out/owners" | sort -u >"$out/owned"
n=$(wc -l <"$out/installed")
for f in $(comm -23 "$out/installed" "$out/owned"); do
	notok "$f is installed by cmake --install but in no package"
done
[ "$n" -gt 20 ] && ok "each of the $n files cmake --install installs is in a package" ||
	notok "cmake --install installed only $n files"
for prog in gschedd gworkerd gstepd ggated gsub gpool gtrain gserve gpool-launch gpool-rsh gcheck; do
	grep -qE "^/usr/s?bin/$prog " "$out/owners" || notok "$prog is in no package"
done

# ---- the units: packaged, with their program and their documentation ----
for unit in "$SRC"/deploy/systemd/*.service; do
	u=$(basename "$unit")
	owner=$(grep "^/usr/lib/systemd/system/$u " "$out/owners" | cut -d' ' -f2)
	[ -n "$owner" ] || { notok "$u is in no package"; continue; }
	exe=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$unit")
	grep -qx "$exe $owner" "$out/owners" && ok "$u ($owner) runs $exe, which $owner installs" ||
		notok "$u runs $exe, not in $owner"
	docs=$(sed -n 's/^Documentation=//p' "$unit")
	[ -n "$docs" ] || notok "$u has no Documentation="
	for doc in $docs; do
		case $doc in
		file://*) grep -qx "${doc#file://} $owner" "$out/owners" &&
			ok "$u's documentation ${doc#file://} is in $owner" ||
			notok "$u's Documentation=$doc is not in $owner" ;;
		*) notok "$u's Documentation=$doc: only file:// pages shipped here are checked" ;;
		esac
	done
done

# ---- shlibs: every NEEDED library of a package's ELF files comes from a package it depends on ----
for p in "${pkgs[@]}"; do
	[ -d "$out/x/$p" ] || continue
	depends=$(dpkg-deb -f "$(deb "$p")" Depends | tr ',|' '\n\n' | sed 's/(.*//; s/ //g')
	nelf=0
	before=$fail
	fail=0
	while read -r f; do
		file -b "$f" | grep -q '^ELF' || continue
		nelf=$((nelf + 1))
		for lib in $(objdump -p "$f" | awk '$1 == "NEEDED" {print $2}'); do
			[ -e "$out/x/$p/usr/lib/$lib" ] && continue # the package's own (libgcomm)
			path=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ {print $NF; exit}')
			from=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | head -1 | cut -d: -f1)
			[ -n "$from" ] || from=$(dpkg -S "$path" 2>/dev/null | head -1 | cut -d: -f1)
			# the names the library's shlibs or symbols file gives dependants (libopenblas0
			# for libopenblas0-pthread's libopenblas.so.0)
			given=$(cat "$(dpkg-query --control-path "$from" shlibs 2>/dev/null)" \
				"$(dpkg-query --control-path "$from" symbols 2>/dev/null)" 2>/dev/null |
				grep -E "^${lib%%.so*} |^${lib} " | awk '{for (i = 2; i <= NF; i++) print $i}')
			if [ -z "$from" ]; then
				notok "$p: ${f#"$out/x/$p"} needs $lib, which no Debian package installs here"
			elif ! grep -qx "$from" <<<"$depends" &&
				{ [ -z "$given" ] || ! grep -qxF -f <(echo "$given") <<<"$depends"; }; then
				notok "$p: ${f#"$out/x/$p"} needs $lib (package $from), not in Depends: $(tr '\n' ' ' <<<"$depends")"
			fi
		done
	done < <(find "$out/x/$p" -type f)
	[ "$fail" = 0 ] && ok "$p: the libraries of its $nelf ELF files come from its Depends"
	[ "$before" = 0 ] || fail=1
done

# ---- the card modules: gpool-worker's gtrain loads the module its packages installed ----
for m in cuda:gpool-cuda hip:gpool-hip; do
	[ -d "$out/x/${m#*:}" ] || continue
	root=$out/all-${m%:*}
	mkdir -p "$root"
	cp -a "$out/x/gpool-worker/." "$out/x/${m#*:}/." "$root/"
	for i in $(seq 40); do echo "$i,$((i * 2)),$((i % 2))"; done >"$out/d.csv"
	# without a card it ends "no ... device", with one it trains: either way the module is loaded
	got=$(LD_DEBUG=files "$root/usr/bin/gtrain" --data "$out/d.csv" --layers=2,4,2 -e 1 -b 8 \
		--backend="${m%:*}" 2>&1 | sed -n "s/.*file=\([^ ]*libgpool-kernels-${m%:*}\.so\) .*/\1/p" | head -1)
	[ "$got" = "$root/usr/bin/../lib/gpool/libgpool-kernels-${m%:*}.so" ] &&
		ok "gtrain --backend=${m%:*} from the packages loads ${m#*:}'s module" ||
		notok "gtrain --backend=${m%:*} from the packages loaded '${got:-nothing}'"
done

# ---- gpool-client's configuration, the service accounts ----
dpkg-deb --ctrl-tarfile "$(deb gpool-client)" | tar -xO ./conffiles | grep -qx /etc/gpool/gpool.conf &&
	ok "/etc/gpool/gpool.conf is a conffile" || notok "conffile"
keys=$(grep -c '^#[a-z_]* = ' "$out/x/gpool-client/etc/gpool/gpool.conf")
[ "$keys" -gt 30 ] && ok "the example gpool.conf has $keys keys, commented" || notok "$keys keys"
for a in gpool-scheduler:gpool gpool-gateway:ggated; do
	dpkg-deb --ctrl-tarfile "$(deb "${a%:*}")" | tar -xO ./postinst | tr -d '\\\n\t' |
		grep -q "adduser --system[^;]* ${a#*:} >" &&
		ok "${a%:*}'s postinst creates the service account ${a#*:}" || notok "${a%:*}'s postinst"
done
exit $fail
