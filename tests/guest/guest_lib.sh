# tests/guest/guest_lib.sh - sourced by the tests/guest/test_guest_*.sh
# scripts (bash, after `set -u`): where things are, the check counters and
# their ends (skip: "SKIPPED: reason", exit 0; fail: the daemon log's tail
# when $W/rtgtd.log exists, a failed summary, exit 1), and guest_ready, which
# builds the guest when missing (or skips).
# env: GUEST_DIR (default /tmp/guest), GUEST_KIT (../shared/initiator-guest)
root=$(cd "$(dirname "$0")/../.." && pwd)
kit=${GUEST_KIT:-$root/../shared/initiator-guest}
[ -d "$kit" ] || kit=/work/shared/initiator-guest
G=${GUEST_DIR:-/tmp/guest}
RTGTD=${RTGTD:-$root/bin/rtgtd} RTGTCTL=${RTGTCTL:-$root/bin/rtgtctl}
skip() { echo "SKIPPED: $*"; exit 0; }
fail() { echo "FAIL: $*"; [ -n "${W:-}" ] && tail -20 "$W/rtgtd.log" 2>/dev/null; echo "0%: Checks: $checks, Failures: 1, Errors: 0"; exit 1; }
checks=0
ok() { checks=$((checks + 1)); }
# the daemon binaries, the guest (built in $G if missing) and qemu, or skip
guest_ready() {
	[ -x "$RTGTD" ] && [ -x "$RTGTCTL" ] || skip "build rtgtd and rtgtctl first (make)"
	if [ ! -f "$G/vmlinuz" ] || [ ! -f "$G/base.cpio" ]; then
		[ -x "$kit/build.sh" ] || skip "no guest in $G and no $kit/build.sh"
		echo "building the guest in $G (2-3 minutes)"
		"$kit/build.sh" "$G" || skip "guest build failed (no Debian package registry?)"
	fi
	command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 missing"
}
