#!/usr/bin/env bash
# tests/pkg/test_pkg_deb.sh - the Debian package (make deb, scripts/debian/):
# 01 it builds (scripts/deb.sh, timed); 02 lintian reports no error and no
# warning (overrides say why in scripts/debian/rtgt.lintian-overrides), but
# no-manual-page for a program whose page is not in the tree yet; 03 its
# Depends name the package of every shared library the programs link (from
# ${shlibs:Depends}), the programs are hardened (PIE, BIND_NOW, RELRO,
# fortified), its conffiles /etc/rtgt/rtgt.conf; 04 installed into
# a throwaway root (dpkg --root with --force-script-chrootless: the
# maintainer scripts run here with DPKG_ROOT set, as no chroot can run
# without a Debian system inside; dependencies forced, the root has none):
# the programs, unit, configuration (0640), state directory (0750),
# completion, dashboards and every man page of the tree are there, the unit
# enabled (its multi-user.target.wants link) and nothing started; the
# installed programs run; 05 `systemd-analyze verify` of the installed unit
# (its ExecStart pointed into the root) prints nothing and exits 0; 06 the
# installed rtgtd --check accepts the installed configuration; the installed
# completion defines itself; 07 remove keeps /etc/rtgt and /var/lib/rtgt
# (an edited configuration and a member file) and says so, a reinstall
# keeps the edited configuration; 08 purge says what it removes (both
# directories, with sizes) and removes them and the unit's enable link.
# SKIPPED (exit 0) with the reason when debhelper, lintian or dpkg-deb is
# missing, or (04-08) when not root.
# Prints "N%: Checks: N, Failures: N, Errors: 0"; exit 1 on any failure.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo" || exit 1
checks=0
failures=0
ok() { checks=$((checks + 1)); echo "ok   $1"; }
bad() { checks=$((checks + 1)); failures=$((failures + 1)); echo "FAIL $1${2:+: $2}"; }
# t NAME COMMAND...: the command's exit status is the check
t() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
finish() {
	local pct=100
	[ "$checks" -eq 0 ] || pct=$(( 100 * (checks - failures) / checks ))
	echo "$pct%: Checks: $checks, Failures: $failures, Errors: 0"
	[ "$failures" -eq 0 ]
	exit
}
skip() { echo "0%: Checks: 0, SKIPPED: $*"; exit 0; }

for tool in dh lintian dpkg-buildpackage dpkg-deb; do
	command -v "$tool" > /dev/null ||
		skip "$tool not installed (scripts/deps.sh installs debhelper, lintian, build-essential)"
done

# ---- 01 build ----
start=$(date +%s)
if ! scripts/deb.sh; then
	bad "01 make deb builds the package"
	finish
fi
ver=$(dpkg-parsechangelog -l scripts/debian/changelog -S Version)
deb=$(ls build/deb/rtgt_"$ver"_*.deb)
ok "01 make deb builds $deb in $(( $(date +%s) - start )) s"

# ---- 02 lintian ----
start=$(date +%s)
lint=$(lintian --show-overrides "$deb" 2>&1 | grep -v '^running with root privileges')
echo "02 lintian ($(( $(date +%s) - start )) s):"
echo "$lint" | sed 's/^/    /'
unexplained=
while IFS= read -r line; do
	case $line in
	[EW]:*no-manual-page*)
		prog=$(basename "$(echo "$line" | sed 's/.*\[\(.*\)\]/\1/')")
		if ls target/daemon/"$prog".[0-9] target/tools/"$prog".[0-9] > /dev/null 2>&1; then
			unexplained+="$line (its page is in the tree)"$'\n'
		else
			echo "    (no-manual-page for $prog: no page for it in the tree yet)"
		fi ;;
	[EW]:*) unexplained+="$line"$'\n' ;;
	esac
done <<< "$lint"
if [ -z "$unexplained" ]; then ok "02 lintian: no error or warning"; else bad "02 lintian" "$unexplained"; fi
# an override without its reason is a warning a maintainer must justify
if grep -q '^O:' <<< "$lint"; then
	t "02 every override has its reason" awk '/^O:/ && prev !~ /^N: ./ { bad = 1 } { prev = $0 } END { exit bad }' <<< "$lint"
fi

# ---- 03 control ----
depends=$(dpkg-deb -f "$deb" Depends)
echo "03 Depends: $depends"
for prog in usr/sbin/rtgtd usr/bin/rtgtctl usr/bin/rtgt-bench; do
	bin=build/deb/rtgt-$ver/debian/rtgt/$prog
	for lib in $(objdump -p "$bin" | awk '$1 == "NEEDED" { print $2 }'); do
		path=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64|x32|AArch64|64bit/ { print $NF; exit }')
		[ -n "$path" ] || path=$(ldconfig -p | awk -v l="$lib" '$1 == l { print $NF; exit }')
		pkg=$(dpkg-query -S "$(readlink -f "$path")" 2> /dev/null | head -1 | cut -d: -f1)
		[ -n "$pkg" ] || pkg=$(dpkg-query -S "$path" 2> /dev/null | head -1 | cut -d: -f1)
		if [ -n "$pkg" ] && [[ ", $depends," == *", $pkg "* || ", $depends," == *", $pkg,"* ]]; then
			ok "03 $prog needs $lib of $pkg, a dependency"
		else
			bad "03 $prog needs $lib of ${pkg:-?}, not in Depends"
		fi
	done
done
# hardening=+all: position independent, relocations read-only after
# start-up, _FORTIFY_SOURCE (the Makefile's CFLAGS carry CPPFLAGS here)
for prog in usr/sbin/rtgtd usr/bin/rtgtctl usr/bin/rtgt-bench; do
	bin=build/deb/rtgt-$ver/debian/rtgt/$prog
	t "03 $prog hardened (PIE, BIND_NOW, RELRO, fortified calls)" bash -c "
		readelf -h '$bin' | grep -q 'Type: *DYN' &&
		readelf -d '$bin' | grep -q 'BIND_NOW' &&
		readelf -lW '$bin' | grep -q GNU_RELRO &&
		readelf -sW '$bin' | grep -q '_chk@'"
done
t "03 conffiles: /etc/rtgt/rtgt.conf" \
	bash -c "dpkg-deb --ctrl-tarfile '$deb' | tar -xO ./conffiles | grep -qx /etc/rtgt/rtgt.conf"

[ "$(id -u)" -eq 0 ] || { echo "04-08 SKIPPED: installing into a root needs root (file owners)"; finish; }

# ---- 04 install into a throwaway root ----
root=$(mktemp -d /tmp/rtgt-pkgroot.XXXXXX)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/var/lib/dpkg/{info,updates,triggers}
touch "$root"/var/lib/dpkg/{status,available}
dpkg_root() { dpkg --root="$root" --force-script-chrootless --force-depends --force-confdef --force-confold "$@"; }
if out=$(dpkg_root -i "$deb" 2>&1); then ok "04 dpkg --root -i"; else bad "04 dpkg --root -i" "$out"; finish; fi
status=$(dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${Status}' rtgt)
t "04 installed ($status)" test "$status" = "install ok installed"
for f in usr/sbin/rtgtd usr/bin/rtgtctl usr/bin/rtgt-bench; do
	t "04 $f executable" test -x "$root/$f"
done
for f in lib/systemd/system/rtgtd.service usr/share/bash-completion/completions/rtgtctl \
	usr/share/rtgt/monitoring/rtgt-dashboard.json usr/share/rtgt/monitoring/rtgt-alerts.yml \
	usr/share/rtgt/examples/full.conf usr/share/doc/rtgt/copyright; do
	t "04 $f" test -s "$root/$f"
done
t "04 etc/rtgt/rtgt.conf, the commented default, 0640" \
	bash -c "[ \"\$(stat -c %a '$root/etc/rtgt/rtgt.conf')\" = 640 ] && cmp -s '$root/etc/rtgt/rtgt.conf' conf/examples/rtgt.conf.default"
t "04 var/lib/rtgt, 0750" bash -c "[ \"\$(stat -c %a '$root/var/lib/rtgt')\" = 750 ]"
pages=0
for m in target/daemon/*.[0-9] target/tools/*.[0-9] conf/*.[0-9]; do
	[ -e "$m" ] || continue
	pages=$((pages + 1))
	t "04 man page $(basename "$m")" test -s "$root/usr/share/man/man${m##*.}/$(basename "$m").gz"
done
echo "04 $pages man page(s) in the tree"
t "04 the unit enabled (multi-user.target.wants/rtgtd.service)" \
	test -L "$root/etc/systemd/system/multi-user.target.wants/rtgtd.service"
t "04 postinst starts nothing (dh_installsystemd --no-start)" \
	bash -c "! grep -Eq 'deb-systemd-invoke (start|\\\$_dh_action)' '$root/var/lib/dpkg/info/rtgt.postinst'"
t "04 the installed rtgtctl runs" bash -c "'$root/usr/bin/rtgtctl' --help > /dev/null"
t "04 the installed rtgt-bench runs" bash -c "'$root/usr/bin/rtgt-bench' --help > /dev/null"

# ---- 05 the unit ----
if command -v systemd-analyze > /dev/null; then
	v=$root/verify
	mkdir -p "$v"
	sed "s|/usr/sbin/rtgtd|$root/usr/sbin/rtgtd|g" "$root/lib/systemd/system/rtgtd.service" > "$v/rtgtd.service"
	out=$(systemd-analyze verify "$v/rtgtd.service" 2>&1)
	rc=$?
	if [ "$rc" -eq 0 ] && [ -z "$out" ]; then ok "05 systemd-analyze verify: clean"; else bad "05 systemd-analyze verify (exit $rc)" "$out"; fi
	t "05 the unit runs the installed rtgtd on /etc/rtgt/rtgt.conf" \
		grep -qx 'ExecStart=/usr/sbin/rtgtd -c /etc/rtgt/rtgt.conf' "$root/lib/systemd/system/rtgtd.service"
else
	echo "05 SKIPPED: systemd-analyze not installed (package systemd)"
fi

# ---- 06 the configuration and the completion ----
if out=$("$root/usr/sbin/rtgtd" -c "$root/etc/rtgt/rtgt.conf" --check 2>&1); then
	ok "06 installed rtgtd --check accepts the installed configuration"
else
	bad "06 rtgtd --check" "$out"
fi
t "06 the installed completion registers _rtgtctl" \
	bash -c "source '$root/usr/share/bash-completion/completions/rtgtctl' && complete -p rtgtctl | grep -q -- '-F _rtgtctl'"

# ---- 07 remove keeps configuration and data; reinstall keeps the edit ----
echo "# edited by the administrator" >> "$root/etc/rtgt/rtgt.conf"
head -c 1M /dev/zero > "$root/var/lib/rtgt/pool0-d0.img"
out=$(dpkg_root -r rtgt 2>&1)
rc=$?
echo "$out" | sed 's/^/    /'
t "07 dpkg -r" test "$rc" -eq 0
t "07 the programs are gone" test ! -e "$root/usr/sbin/rtgtd"
t "07 the edited configuration is kept" grep -q 'edited by the administrator' "$root/etc/rtgt/rtgt.conf"
t "07 the member file is kept" test -s "$root/var/lib/rtgt/pool0-d0.img"
t "07 remove says what it kept" grep -q 'kept /etc/rtgt' <<< "$out"
out=$(dpkg_root -i "$deb" 2>&1) || bad "07 reinstall" "$out"
t "07 a reinstall keeps the edited configuration" grep -q 'edited by the administrator' "$root/etc/rtgt/rtgt.conf"

# ---- 08 purge ----
dpkg_root -r rtgt > /dev/null 2>&1
out=$(dpkg_root -P rtgt 2>&1)
rc=$?
echo "$out" | sed 's/^/    /'
t "08 dpkg -P" test "$rc" -eq 0
t "08 purge names /etc/rtgt" grep -q 'purge: removing /etc/rtgt' <<< "$out"
t "08 purge names /var/lib/rtgt and what it holds" \
	grep -Eq 'purge: removing /var/lib/rtgt \(member files.*: 1 entries, 1\.[0-9]M\)' <<< "$out"
t "08 /etc/rtgt removed" test ! -e "$root/etc/rtgt"
t "08 /var/lib/rtgt removed" test ! -e "$root/var/lib/rtgt"
t "08 the enable link removed" test ! -e "$root/etc/systemd/system/multi-user.target.wants/rtgtd.service"
status=$(dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${Status}' rtgt 2>/dev/null)
t "08 dpkg forgot the package (${status:-not known})" bash -c "[ -z '$status' ] || [ '$status' = 'unknown ok not-installed' ]"
finish
