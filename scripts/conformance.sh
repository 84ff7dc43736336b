#!/usr/bin/env bash
# Runs libiscsi's conformance suite (iscsi-test-cu, every test, destructive
# tests on, its two default initiator names) against a freshly started rtgtd
# and requires 0 failures and at least MIN_PASSED passes. Then runs the
# multipath family with one URL per portal (127.0.0.1 and 127.0.0.2) on a
# second, fresh LUN of the same target, which must pass without failures.
#   env: LEVEL (raid5)  PORT (the first free from 13260)  MIN_PASSED (598)  TESTS (ALL regexp)
#   THIN=1: both LUNs are thin (thin = true: UNMAP, GET LBA STATUS, WRITE
#   SAME with UNMAP), so libiscsi's thin-provisioning tests run instead of
#   being skipped. The summary counts the tests that skipped. On RAID levels
#   (4 KiB physical blocks) one assertion of GetLBAStatus.UnmapSingle is
#   the suite's own bug and reported apart, not counted: its second loop
#   asks for LBA i+1 and wants the first descriptor at i+8 (i + logical
#   blocks per physical block), a descriptor that does not hold the LBA
#   asked for (SBC-3 5.8: the first descriptor holds the starting LBA); with
#   512-byte physical blocks (rbd) both are i+1 and it passes. When every
#   failure is that assertion they are reported apart; with any other
#   failure all of them count.
#   CLONE=1 (with THIN=1, RAID levels): LUN 0 is a clone. v0 is written
#   (8 MiB), snapshotted (v0@base) and cloned (c0), and a reload replaces
#   LUN 0's volume by c0 before the suite runs: every write of the suite
#   that meets v0's data copies a shared extent first, and GET LBA STATUS
#   answers for the clone's own map.
#   LEVEL=rbd: the LUNs are RBD images on the Ceph cluster of CEPH_DIR (made by
#   scripts/ceph-cluster.sh), or on a throwaway one started here and stopped
#   at the end when CEPH_DIR is unset.
set -u
cd "$(dirname "$0")/.."
LEVEL=${LEVEL:-raid5}
# the first free port from 13260 on (another target or test run may hold one)
if [ -z "${PORT:-}" ]; then
	PORT=13260
	while ss -Hltn "sport = :$PORT" 2>/dev/null | grep -q .; do
		PORT=$((PORT + 1))
		[ "$PORT" -lt 13360 ] || { echo "conformance: ports 13260-13359 all in use" >&2; exit 1; }
	done
fi
MIN_PASSED=${MIN_PASSED:-598}
TESTS=${TESTS:-}
THIN=${THIN:-}
CLONE=${CLONE:-}
if [ -n "$CLONE" ] && { [ -z "$THIN" ] || [ "$LEVEL" = rbd ]; }; then
	echo "conformance: CLONE=1 needs THIN=1 and a RAID level" >&2
	exit 2
fi
thin=
if [ -n "$THIN" ]; then
	thin=" thin = true;"
fi
IQN=iqn.2026-11.org.rtgt:conformance
dir=$(mktemp -d /tmp/rtgt-conf.XXXXXX)
pid=
ceph_own=
cleanup() {
	[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	[ -n "$ceph_own" ] && scripts/ceph-cluster.sh stop "$ceph_own"
	rm -rf "$dir"
}
trap cleanup EXIT INT TERM
case $LEVEL in
raid0) members='"d0.img", "d1.img"' ;;
raid1) members='"d0.img", "d1.img"' ;;
raid5) members='"d0.img", "d1.img", "d2.img", "d3.img"' ;;
raid6) members='"d0.img", "d1.img", "d2.img", "d3.img"' ;;
raid10) members='"d0.img", "d1.img", "d2.img", "d3.img"' ;;
rbd) members= ;;
*) echo "conformance: unknown LEVEL $LEVEL" >&2; exit 2 ;;
esac
size0=40%; size1=10%
pool="{ name = \"p\"; level = \"$LEVEL\"; chunk = \"64K\"; members = ( $members ); create_size = \"64M\"; }"
# ---- rbd: a Ceph cluster and fresh images instead of member files ----
if [ "$LEVEL" = rbd ]; then
	cdir=${CEPH_DIR:-}
	if [ -z "$cdir" ]; then
		cdir=$dir/ceph
		ceph_own=$cdir
		scripts/ceph-cluster.sh start "$cdir" || { echo "conformance: no Ceph cluster for LEVEL=rbd"; exit 1; }
	fi
	cdir=$(cd "$cdir" && pwd)
	pool="{ name = \"p\"; level = \"rbd\"; ceph_conf = \"$cdir/ceph.conf\"; rbd_pool = \"rbd\";
            ceph_id = \"rtgt\"; keyring = \"$cdir/client.rtgt.keyring\"; }"
	# the raid5 run's sizes (40% / 10% of 4 x 64M); new image names every run
	size0=76M; size1=19M
	sfx=$(date +%s)-$$
fi
cat > "$dir/rtgt.conf" <<CONF
daemon = { workers = 2; control = "rtgtd.sock"; state_dir = "state"; log_level = "warn"; };
pools = ( $pool );
portals = ( { name = "lo"; listen = "127.0.0.1:$PORT"; },
            { name = "lo2"; listen = "127.0.0.2:$PORT"; } );
targets = ( { iqn = "$IQN"; portals = ( "lo", "lo2" );
              luns = ( { lun = 0; pool = "p"; volume = "v0${sfx:-}"; size = "$size0";$thin },
                       { lun = 1; pool = "p"; volume = "mp${sfx:-}"; size = "$size1";$thin } );
              allow = ( "ALL" ); } );
CONF
"${RTGTD:-bin/rtgtd}" -c "$dir/rtgt.conf" 2> "$dir/rtgtd.log" &
pid=$!
for _ in $(seq 300); do
	(exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
if ! kill -0 "$pid" 2>/dev/null; then
	echo "conformance: rtgtd did not start:"; cat "$dir/rtgtd.log"; exit 1
fi
# rbd thick images are written out in the background (NOT READY until then)
if [ "$LEVEL" = rbd ]; then
	for _ in $(seq 1200); do
		st=$("${RTGTCTL:-bin/rtgtctl}" -s "$dir/rtgtd.sock" status --json 2>/dev/null) &&
			! grep -q '"provisioning"' <<<"$st" && break
		sleep 0.1
	done
fi
if [ -n "$CLONE" ]; then
	ctl() { "${RTGTCTL:-bin/rtgtctl}" -s "$dir/rtgtd.sock" "$@"; }
	"${BENCH:-$(dirname "${RTGTD:-bin/rtgtd}")/rtgt-bench}" --url "iscsi://127.0.0.1:$PORT/$IQN/0" --pattern seqwrite --bs 1M \
		--qd 4 --bytes 8M --quiet > /dev/null || { echo "conformance: writing v0 failed"; exit 1; }
	ctl snapshot p v0 base > /dev/null && ctl clone p v0@base c0 > /dev/null ||
		{ echo "conformance: snapshot or clone failed"; exit 1; }
	sed -i 's/volume = "v0"; size = "[^"]*";/volume = "c0"; size = "'"$(ctl volume list p --json |
		python3 -c 'import json,sys; print([v["size"] for v in json.load(sys.stdin)["volumes"] if v["name"] == "c0"][0])')"'";/' \
		"$dir/rtgt.conf"
	ctl reload > "$dir/reload.out" 2>&1 || { echo "conformance: reload failed:"; cat "$dir/reload.out"; exit 1; }
	ctl volume list p --json | python3 -c 'import json,sys
v = {x["name"]: x for x in json.load(sys.stdin)["volumes"]}
sys.exit(0 if v["c0"]["open"] and v["c0"]["origin"] == "v0@base" and v["c0"]["shared"] > 0 else 1)' ||
		{ echo "conformance: LUN 0 is not the clone c0 of v0@base, sharing its extents"; exit 1; }
fi
args=(-d)
[ -n "$TESTS" ] && args+=(-t "$TESTS")
mkdir -p var
timeout 1200 iscsi-test-cu "${args[@]}" "iscsi://127.0.0.1:$PORT/$IQN/0" > var/conformance.log 2>&1
# CUnit lists each failed assertion as "N. test_file.c:LINE - ..."
grep -aE "^ +[0-9]+\. test_" var/conformance.log | head -60
summary=$(grep -aE '^ +tests ' var/conformance.log | tail -1)
echo "conformance ($LEVEL${THIN:+, thin}${CLONE:+, clone}): $summary   (columns: Total Ran Passed Failed Inactive)"
# a test that finds the LU lacks what it needs passes with "[SKIPPED]"
skipped=$(grep -ac "\[SKIPPED\]" var/conformance.log)
echo "conformance ($LEVEL${THIN:+, thin}${CLONE:+, clone}): $skipped of them skipped; thin-provisioning tests skipped: $(grep -aiE "\[SKIPPED\]" var/conformance.log | grep -aicE "provisioned|UNMAP is not|LBPU|LBPWS|LBPME|LBPRZ|thin")"
read -r _ total ran passed failed _ <<<"$summary"
if [ -n "$THIN" ] && [ "$LEVEL" != rbd ] && [ "${failed:-0}" -ge 1 ]; then
	# the suite runs the test once per family that lists it
	fails=$(grep -aE "^ +[0-9]+\. test_" var/conformance.log)
	known=$(grep -c "test_get_lba_status_unmap_single.c:135 .*lba offset in first descriptor" <<<"$fails")
	if [ "$known" -ge 1 ] && [ "$known" -eq "$(grep -c . <<<"$fails")" ] && [ "$known" -eq "$failed" ]; then
		echo "conformance: GetLBAStatus.UnmapSingle's assertion at line 135 is the suite's bug with 4 KiB physical blocks (see the top of this script): its $known failure(s) not counted"
		failed=0
	fi
fi
mp_failed=0
if [ -z "$TESTS" ]; then
	timeout 600 iscsi-test-cu -d -t ALL.MultipathIO "iscsi://127.0.0.1:$PORT/$IQN/1" \
		"iscsi://127.0.0.2:$PORT/$IQN/1" > var/conformance-multipath.log 2>&1
	mp=$(grep -aE '^ +tests ' var/conformance-multipath.log | tail -1)
	echo "multipath ($LEVEL, 2 portals): $mp"
	read -r _ _ _ mp_passed mp_failed _ <<<"$mp"
	if [ -z "${mp_passed:-}" ] || [ "${mp_passed:-0}" -lt 4 ]; then
		echo "conformance: multipath suite did not run 4 tests (see var/conformance-multipath.log)"
		mp_failed=$((${mp_failed:-0} + 1))
	fi
	failed=$((${failed:-0} + mp_failed))
	passed=$((${passed:-0} + ${mp_passed:-0}))
fi
kill -TERM "$pid"; wait "$pid"; rc=$?; pid=
if [ "$rc" -ne 0 ]; then
	echo "conformance: rtgtd exited $rc on SIGTERM"; tail -20 "$dir/rtgtd.log"; failed=$((${failed:-0} + 1))
fi
if grep -qE "ERROR|AddressSanitizer|runtime error" "$dir/rtgtd.log"; then
	grep -E "ERROR|AddressSanitizer|runtime error" "$dir/rtgtd.log" | head -20
fi
if [ -z "${passed:-}" ]; then
	echo "conformance: no summary (see var/conformance.log)"; tail -20 var/conformance.log; exit 1
fi
echo "conformance: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -ge "$MIN_PASSED" ]
