#!/usr/bin/env bash
# tests/guest/test_guest_fio.sh - the fio job set from a real Linux kernel
# initiator: rtgtd in a network namespace with two veth links (portals
# 198.19.X.1 and 198.19.X.5, from 198.18.0.0/15), a Debian guest under qemu
# (../shared/initiator-guest: open-iscsi, dm-multipath, fio) logs in through
# both portals, builds a round-robin multipath device, runs
# scripts/initiator/run-fio.sh --quick on it, while the host records
# `rtgtctl stats --watch 1 --json`; then scripts/initiator/report.py must turn
# the fio JSON and the record into the table with both paths at 35-65% each.
#
# Slow (plain emulation: 3-8 minutes): `make guest-check`, not part of make
# check. Needs root, iproute2, the guest (built here with
# ../shared/initiator-guest/build.sh GUEST_DIR when missing, which needs
# the Debian package registry). Prints "SKIPPED: reason" and exits 0 when
# any of that is missing.
# env: GUEST_DIR (default /tmp/guest), GUEST_KIT (../shared/initiator-guest)
set -u
. "$(dirname "$0")/guest_lib.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespace, veth links)"
command -v ip >/dev/null || skip "iproute2 missing"
guest_ready

W=$(mktemp -d /tmp/rtgt-guest.XXXXXX)
X=$((20 + $$ % 220)) NS=rtgtg$$ VA=rg$(($$ % 100000))a VB=rg$(($$ % 100000))b
A1=198.19.$X.1 A2=198.19.$X.5
cleanup() {
	[ -n "${WPID:-}" ] && kill "$WPID" 2>/dev/null
	[ -n "${DPID:-}" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	ip netns del "$NS" 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT
ip netns add "$NS" || skip "cannot create a network namespace"
ip link add "$VA" type veth peer name "${VA}n" && ip link add "$VB" type veth peer name "${VB}n" || fail "veth"
ip link set "${VA}n" netns "$NS" && ip link set "${VB}n" netns "$NS"
ip addr add "198.19.$X.2/30" dev "$VA" && ip link set "$VA" up
ip addr add "198.19.$X.6/30" dev "$VB" && ip link set "$VB" up
ip -n "$NS" link set lo up
ip -n "$NS" addr add "$A1/30" dev "${VA}n" && ip -n "$NS" link set "${VA}n" up
ip -n "$NS" addr add "$A2/30" dev "${VB}n" && ip -n "$NS" link set "${VB}n" up
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
IQN=iqn.2026-11.org.rtgt:guest
cat > "$W/rtgt.conf" <<CONF
daemon = { workers = 2; control = "$W/rtgtd.sock"; log_level = "info"; };
pools = ( { name = "p"; level = "raid0"; chunk = "64K";
            members = ( "$W/d0.img", "$W/d1.img" ); create_size = "384M"; } );
portals = ( { name = "nic1"; listen = "$A1:$PORT"; }, { name = "nic2"; listen = "$A2:$PORT"; } );
targets = ( { iqn = "$IQN"; portals = ( "nic1", "nic2" );
              luns = ( { lun = 0; pool = "p"; volume = "v0"; size = "80%"; } );
              allow = ( "ALL" ); } );
CONF
ip netns exec "$NS" "$RTGTD" -c "$W/rtgt.conf" > "$W/rtgtd.log" 2>&1 &
DPID=$!
for _ in $(seq 50); do [ -S "$W/rtgtd.sock" ] && break; sleep 0.2; done
"$RTGTCTL" -s "$W/rtgtd.sock" status >/dev/null || fail "rtgtd did not start"
ok

# the guest's script: the job set travels inside it
{
	cat <<GS
set -u
mkdir -p /kit/fio /out
GS
	for f in "$root"/scripts/initiator/fio/*.fio "$root/scripts/initiator/run-fio.sh"; do
		rel=${f#"$root"/scripts/initiator/}
		echo "cat > /kit/$rel <<'KIT_EOF'"; cat "$f"; echo "KIT_EOF"
	done
	cat <<GS
chmod +x /kit/run-fio.sh
cat > /etc/multipath.conf <<'MP'
defaults {
	user_friendly_names yes
	find_multipaths no
	path_grouping_policy multibus
	path_selector "round-robin 0"
	rr_min_io_rq 1
}
MP
iscsid; sleep 1
iscsiadm -m discovery -t st -p $A1:$PORT >/dev/null || exit 10
iscsiadm -m node -T $IQN -p $A1:$PORT --login || exit 11
iscsiadm -m node -T $IQN -p $A2:$PORT --login || exit 12
sleep 2; udevadm settle -t 20
multipathd; sleep 2; multipath -r >/dev/null 2>&1; sleep 2; udevadm settle -t 20
multipath -ll
DEV=\$(ls /dev/mapper/ | grep -v control | head -1)
[ -n "\$DEV" ] || exit 13
echo "GUEST-CLOCK-START \$(date +%s)"
/kit/run-fio.sh /dev/mapper/\$DEV --quick --out /out || exit 14
for j in /out/*.json; do echo "FIO-JSON \$(basename \$j) \$(base64 -w0 \$j)"; done
echo "GUEST-CLOCK-END \$(date +%s)"
iscsiadm -m node --logoutall=all >/dev/null 2>&1
exit 0
GS
} > "$W/guest.sh"

"$RTGTCTL" -s "$W/rtgtd.sock" stats --watch 1 --json > "$W/watch.jsonl" 2> "$W/watch.err" &
WPID=$!
t0=$(date +%s)
"$kit/run.sh" "$W/guest.sh" 900 "$G" > "$W/console.log" 2>&1
grc=$?
t1=$(date +%s)
kill "$WPID" 2>/dev/null; wait "$WPID" 2>/dev/null; WPID=
echo "guest ran $((t1 - t0)) s, exit $grc"
grep -E "mpath|round-robin|status=|run-fio" "$W/console.log" | head -20
[ "$grc" -eq 0 ] || { tail -40 "$W/console.log"; fail "guest script exit $grc"; }
ok
mkdir -p "$W/fio"
grep '^FIO-JSON ' "$W/console.log" | while read -r _ name b64; do
	echo "$b64" | base64 -d > "$W/fio/$name"
done
for j in seqwrite-1m seqread-1m randrw70-4k; do
	[ -s "$W/fio/$j.json" ] || fail "no fio result $j.json from the guest"
done
ok
# the guest's clock against the host's: both stamps at its end
gend=$(sed -n 's/^GUEST-CLOCK-END \([0-9]*\).*/\1/p' "$W/console.log" | tail -1)
off=$(( t1 - ${gend:-$t1} ))
echo "guest clock offset about $off s (host minus guest, shutdown included)"
python3 "$root/scripts/initiator/report.py" --fio "$W/fio" --stats "$W/watch.jsonl" \
	--config raid5-2L --label "guest, raid0, 2 paths" --clock-offset "$off" --out "$W/report" \
	> "$W/report.out" 2>&1 || { cat "$W/report.out"; fail "report.py"; }
cat "$W/report/report.md"
ok
# both paths near half of every job
for w in write read randrw; do
	line=$(grep -o "$w nic1 [0-9]*% / nic2 [0-9]*%" "$W/report/report.md")
	[ -n "$line" ] || fail "no path shares for $w in the table"
	s1=$(echo "$line" | sed 's/.*nic1 \([0-9]*\)%.*/\1/') s2=$(echo "$line" | sed 's/.*nic2 \([0-9]*\)%.*/\1/')
	[ "$s1" -ge 35 ] && [ "$s1" -le 65 ] && [ "$s2" -ge 35 ] && [ "$s2" -le 65 ] ||
		fail "$w shares $s1% / $s2% (want 35-65% each)"
	ok
done
[ -n "${KEEP:-}" ] && cp -r "$W" "$KEEP"
echo "100%: Checks: $checks, Failures: 0, Errors: 0"
