#!/usr/bin/env bash
# make deb: the Debian package, built with debhelper from a copy of this
# tree (tracked and new files as they are now, no build output) with
# scripts/debian/ as its debian/, in build/deb/rtgt-VERSION. Prints the
# path of the .deb; the build's output is in build/deb/build.log.
# usage: scripts/deb.sh   (env: DEB_BUILD_OPTIONS, default parallel=2)
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/deb
ver=$(dpkg-parsechangelog -l scripts/debian/changelog -S Version)
src=$out/rtgt-$ver
log=$out/build.log
rm -rf "$out"
mkdir -p "$src"
if git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
	# a file deleted but not yet committed is left out
	git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
		tar -c --null -T - | tar -x -C "$src"
else
	tar -c --exclude=./build --exclude=./bin --exclude=./var --exclude='./build-*' \
		--exclude='./bin-*' . | tar -x -C "$src"
fi
cp -r scripts/debian "$src/debian"
# run from make (make check, make deb): the package's own make must not
# inherit the outer one's command-line variables or jobserver
unset MAKEFLAGS MFLAGS MAKELEVEL
echo "deb: building rtgt $ver in $src (log: $log)"
start=$(date +%s)
if ! (cd "$src" && DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS:-parallel=2} \
	dpkg-buildpackage -b -us -uc) > "$log" 2>&1; then
	tail -n 40 "$log" >&2
	echo "deb: FAILED: dpkg-buildpackage (whole log: $log)" >&2
	exit 1
fi
deb=$(ls "$out"/rtgt_"$ver"_*.deb)
echo "deb: $deb ($(( $(date +%s) - start )) s)"
