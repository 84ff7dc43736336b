#!/usr/bin/env bash
# tests/guest/test_guest_thin.sh - a thin LUN and an online grow seen from
# the Linux kernel's own initiator: rtgtd on 127.0.0.1 with a thin LUN on
# an rbd pool (a throwaway Ceph cluster, scripts/ceph-cluster.sh) or, with
# POOL=raid, on a raid5 pool of three sparse files; a Debian guest under
# qemu (../shared/initiator-guest) logs in through the host address
# 10.0.2.2 and checks, one numbered line each:
#   1 the kernel took the LUN as thin: discard_max_bytes 512 MiB (the Block
#     Limits page), discard_granularity 4 MiB (the object; raid5: 1 MiB,
#     the extent), provisioning mode "unmap" and LBPRZ (lbprz 1);
#   2 ext4 on it, 256 MiB of data: GET LBA STATUS (sg_get_lba_status) says
#     the file's first block is mapped;
#   3 the file removed and fstrim run: it says deallocated, and the host sees
#     the image's allocation fall (`rbd du`; raid: the volume's
#     allocated_bytes in `rtgtctl status --json`);
#   4 the host grows the LUN (rtgtctl resize) while the file system is
#     mounted: a rescan (iscsiadm -m session --rescan) shows the new size,
#     resize2fs grows the file system online, and a file written into the
#     new space reads back after a remount.
#
# Slow (plain emulation, several minutes): `make guest-check`, not part of
# make check. Needs root, the Ceph packages, librbd in the build and the
# guest (built with ../shared/initiator-guest/build.sh GUEST_DIR when
# missing); prints "SKIPPED: reason" and exits 0 when any of that is missing.
# env: GUEST_DIR (default /tmp/guest), GUEST_KIT (../shared/initiator-guest),
#      POOL (rbd | raid)
set -u
. "$(dirname "$0")/guest_lib.sh"
POOL=${POOL:-rbd}
[ "$(id -u)" -eq 0 ] || skip "needs root (qemu, the Ceph cluster)"
if [ "$POOL" = rbd ]; then
	[ -f /usr/include/rbd/librbd.h ] || skip "rtgtd is built without librbd (install librbd-dev librados-dev)"
	for c in ceph-mon ceph-osd ceph rbd; do
		command -v "$c" >/dev/null || skip "Ceph packages missing ($c; scripts/deps.sh installs them)"
	done
fi
guest_ready

W=$(mktemp -d /tmp/rtgt-gthin.XXXXXX)
cleanup() {
	[ -n "${GPID:-}" ] && kill "$GPID" 2>/dev/null
	[ -n "${DPID:-}" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	[ -d "$W/ceph" ] && "$root/scripts/ceph-cluster.sh" stop "$W/ceph" >/dev/null 2>&1
	rm -rf "$W"
}
trap cleanup EXIT
if [ "$POOL" = rbd ]; then
	"$root/scripts/ceph-cluster.sh" start "$W/ceph" > "$W/ceph.log" 2>&1 || { cat "$W/ceph.log"; fail "no Ceph cluster"; }
fi
ok
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
IQN=iqn.2026-11.org.rtgt:gthin
IMG=gthin$$
if [ "$POOL" = rbd ]; then
	pooldef="{ name = \"c\"; level = \"rbd\"; ceph_conf = \"$W/ceph/ceph.conf\"; rbd_pool = \"rbd\";
            ceph_id = \"rtgt\"; keyring = \"$W/ceph/client.rtgt.keyring\"; }"
	GRAN=4194304
else
	# 64 KiB chunks over 3 members: 128 KiB stripes, 1 MiB extents
	pooldef="{ name = \"c\"; level = \"raid5\"; chunk = \"64K\";
            members = ( \"$W/d0.img\", \"$W/d1.img\", \"$W/d2.img\" ); create_size = \"2G\"; }"
	GRAN=1048576
fi
cat > "$W/rtgt.conf" <<CONF
daemon = { workers = 2; control = "$W/rtgtd.sock"; log_level = "info"; };
pools = ( $pooldef );
portals = ( { name = "lo"; listen = "127.0.0.1:$PORT"; } );
targets = ( { iqn = "$IQN"; portals = ( "lo" );
              luns = ( { lun = 0; pool = "c"; volume = "$IMG"; size = "1G"; thin = true; } );
              allow = ( "ALL" ); } );
CONF
"$RTGTD" -c "$W/rtgt.conf" > "$W/rtgtd.log" 2>&1 &
DPID=$!
for _ in $(seq 100); do [ -S "$W/rtgtd.sock" ] && break; sleep 0.2; done
"$RTGTCTL" -s "$W/rtgtd.sock" status >/dev/null || fail "rtgtd did not start"
ok
du_used() {
	if [ "$POOL" = rbd ]; then
		rbd --conf "$W/ceph/ceph.conf" --name client.admin du --format json "$IMG" 2>/dev/null |
			grep -o '"used_size":[0-9]*' | head -1 | cut -d: -f2
	else
		"$RTGTCTL" -s "$W/rtgtd.sock" status --json 2>/dev/null |
			grep -o '"allocated_bytes": *[0-9]*' | head -1 | grep -o '[0-9]*$'
	fi
}

# the guest runs it with its /bin/sh (dash): no bashisms
cat > "$W/guest.sh" <<GS
set -u
iscsid; sleep 1
iscsiadm -m discovery -t st -p 10.0.2.2:$PORT >/dev/null || exit 10
# SendTargets names the portal as configured (127.0.0.1), which is the
# host only from the host: a record for the address the guest reaches it by
iscsiadm -m node -o new -T $IQN -p 10.0.2.2:$PORT >/dev/null || exit 11
iscsiadm -m node -T $IQN -p 10.0.2.2:$PORT --login || exit 11
sleep 2; udevadm settle -t 20
D=\$(ls /sys/class/scsi_disk/*/device/block/ | head -1)
[ -n "\$D" ] || exit 12
DEV=/dev/\$D
SD=\$(ls /sys/class/scsi_disk/ | head -1)
echo "THIN-1 \$(cat /sys/block/\$D/queue/discard_max_bytes) \$(cat /sys/block/\$D/queue/discard_granularity) \$(cat /sys/class/scsi_disk/\$SD/provisioning_mode) \$(cat /sys/class/scsi_disk/\$SD/thin_provisioning 2>/dev/null || echo -)"
echo "THIN-RC \$(sg_readcap -l \$DEV | grep -o 'lbpme=[01], lbprz=[01]')"
mkfs.ext4 -q -E nodiscard \$DEV || exit 13
mkdir -p /mnt && mount \$DEV /mnt || exit 14
dd if=/dev/urandom of=/mnt/f bs=1M count=256 conv=fsync 2>/dev/null || exit 15
sync
# the middle of the file's first extent, in 512-byte LBAs: a 4 MiB object
# that holds nothing but the file
ext=\$(filefrag -v /mnt/f | awk '/^ *0:/ { sub(/\.\..*/, "", \$4); sub(/:/, "", \$6); print \$4, \$6; exit }')
blk=\${ext% *}
len=\${ext#* }
bs=\$(stat -f -c %S /mnt)
lba=\$(((blk + len / 2) * bs / 512))
echo "THIN-FILE \$blk \$len \$bs \$lba"
echo "THIN-2 \$(sg_get_lba_status -bb --lba=\$lba \$DEV | tail -1)"
rm /mnt/f; sync
fstrim -v /mnt || exit 16
echo "THIN-3 \$(sg_get_lba_status -bb --lba=\$lba \$DEV | tail -1)"
# the host grows the LUN once it sees the space come back (the console
# reaches it too late to be a signal)
for i in \$(seq 300); do
	iscsiadm -m session --rescan >/dev/null 2>&1
	sz=\$(cat /sys/block/\$D/size)
	[ "\$sz" -gt 2097152 ] && break
	sleep 1
done
echo "THIN-4 \$(cat /sys/block/\$D/size)"
resize2fs \$DEV >/dev/null 2>&1 || exit 17
df -B1 /mnt | tail -1
# more than the old 1 GiB held, then data that must come back
dd if=/dev/zero of=/mnt/g bs=1M count=1200 conv=fsync 2>/dev/null || exit 18
dd if=/dev/urandom of=/mnt/h bs=1M count=32 conv=fsync 2>/dev/null || exit 18
sum1=\$(md5sum < /mnt/h)
umount /mnt && mount \$DEV /mnt || exit 19
sum2=\$(md5sum < /mnt/h)
echo "THIN-5 \$(df -B1 --output=size /mnt | tail -1) \$([ "\$sum1" = "\$sum2" ] && echo same || echo differs)"
umount /mnt
iscsiadm -m node --logoutall=all >/dev/null 2>&1
exit 0
GS

t0=$(date +%s)
"$kit/run.sh" "$W/guest.sh" 1500 "$G" > "$W/console.log" 2>&1 &
GPID=$!
# the image fills with the guest's file, then fstrim gives the space back:
# that is when the LUN grows (the guest then rescans for up to 300 s)
peak= trimmed=
for _ in $(seq 1400); do
	kill -0 "$GPID" 2>/dev/null || break
	u=$(du_used)
	if [ -z "$peak" ] && [ "${u:-0}" -ge $((200 << 20)) ]; then
		peak=$u
	elif [ -n "$peak" ] && [ -n "$u" ] && [ "$u" -lt $((96 << 20)) ]; then
		trimmed=$u
		break
	fi
	sleep 1
done
echo "$POOL allocation: ${peak:-?} bytes with the file, ${trimmed:-?} after fstrim"
[ -n "$peak" ] && [ -n "$trimmed" ] || { tail -40 "$W/console.log"; fail "the volume never filled and emptied (${peak:-?} / ${u:-?} bytes allocated)"; }
ok
out=$("$RTGTCTL" -s "$W/rtgtd.sock" resize "$IQN" 0 2G 2>&1) || fail "rtgtctl resize: $out"
echo "host: $out"
wait "$GPID"; grc=$?; GPID=
t1=$(date +%s)
echo "guest ran $((t1 - t0)) s, exit $grc"
grep -aE "THIN-|fstrim|/mnt" "$W/console.log" | head -20
[ "$grc" -eq 0 ] || { tail -40 "$W/console.log"; fail "guest script exit $grc"; }
line() { grep -ao "THIN-$1 .*" "$W/console.log" | tail -1 | tr -d '\r' | cut -d' ' -f2-; }
read -r dmax dgran pmode tp <<<"$(line 1)"
[ "$dmax" = 536870912 ] && [ "$dgran" = "$GRAN" ] && [ "$pmode" = unmap ] ||
	fail "the kernel did not take the LUN as thin: discard_max_bytes $dmax granularity $dgran mode $pmode"
[ "$(line RC)" = "lbpme=1, lbprz=1" ] || fail "READ CAPACITY(16) as the guest sees it: $(line RC)"
ok
# sg_get_lba_status -bb: the status of that LBA, 0 mapped, 1 deallocated
st2=$(line 2)
st3=$(line 3)
[ "$st2" = 0 ] || fail "the file's block was not mapped (GET LBA STATUS: $(line 2))"
[ "$st3" = 1 ] || fail "after rm and fstrim its block is not deallocated (GET LBA STATUS: $(line 3))"
ok
sz=$(line 4)
[ "$sz" = 4194304 ] || fail "the guest sees $sz sectors after the grow, not 4194304 (2 GiB)"
read -r fs same <<<"$(line 5)"
[ "$same" = same ] && [ "$fs" -gt $((1536 << 20)) ] || fail "after resize2fs: size $fs, data $same"
ok
echo "guest-thin ($POOL): $checks checks passed"
echo "100%: Checks: $checks, Failures: 0, Errors: 0"
