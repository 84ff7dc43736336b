#!/usr/bin/env bash
# tests/guest/test_guest_snapshot.sh - snapshots, clones, rollback and
# deletes on a RAID pool seen from the Linux kernel's own initiator: rtgtd
# on 127.0.0.1 with a thin LUN (128 MiB) on a raid5 pool of three sparse
# files; a Debian guest under qemu (../shared/initiator-guest) logs in
# through the host address 10.0.2.2 and checks, one numbered line each:
#   1 ext4 on the LUN, a file synced, fio writing four files at random with
#     crc32c verification; the host takes a snapshot (rtgtctl snapshot)
#     while fio still writes (after a sync), and fio's verify passes;
#   2 the snapshot exported as LUN 1 (config + rtgtctl reload): the kernel
#     sees it write-protected (/sys/block/X/ro, blockdev --getro), a WRITE(10)
#     sent to it anyway (sg_raw) gets DATA PROTECT, WRITE PROTECTED; a clone
#     of it (LUN 2) holds the same bytes, e2fsck -fn of the snapshot itself is
#     read-only (its journal, if any, is left alone), and once the clone's
#     journal is replayed (mounting it) it holds the four fio files and the
#     synced file's bytes, and e2fsck -fn of the clone finds nothing;
#   3 the clone mounted and written, a file read back after a remount, while
#     the original volume's and the snapshot's bytes stay what they were;
#   4 rollback: refused while the LUN exports the volume, then with --force
#     while the guest has taken the disk offline; after a rescan the volume
#     holds exactly the snapshot's bytes (and differed from them before);
#   5 delete: the clone and the snapshot deleted once no LUN has them open
#     (LUNs removed and a reload, which closes them); the pool's thin space in use (rtgtctl status --json)
#     falls by each one's exclusive bytes (rtgtctl volume list --json) and
#     rtgtctl check finds the maps consistent.
# Every raw device checksum is read with O_DIRECT, never from the guest's
# page cache. Host and guest step together through a small mailbox: the
# guest connects to a host port (python3 on the host, bash's /dev/tcp in
# the guest), names the step and waits for the host's answer.
#
# Slow (plain emulation, several minutes): `make guest-check`, not part of
# make check. Needs root, qemu, python3 and the guest (built with
# ../shared/initiator-guest/build.sh GUEST_DIR when missing); prints
# "SKIPPED: reason" and exits 0 when any of that is missing.
# env: GUEST_DIR (default /tmp/guest), GUEST_KIT (../shared/initiator-guest)
set -u
. "$(dirname "$0")/guest_lib.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root (qemu)"
command -v python3 >/dev/null || skip "python3 missing"
guest_ready

W=$(mktemp -d /tmp/rtgt-gsnap.XXXXXX)
cleanup() {
	[ -n "${GPID:-}" ] && kill "$GPID" 2>/dev/null
	[ -n "${MPID:-}" ] && kill "$MPID" 2>/dev/null
	[ -n "${DPID:-}" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT
t0=$(date +%s)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
IQN=iqn.2026-11.org.rtgt:gsnap
CTL() { "$RTGTCTL" -s "$W/rtgtd.sock" "$@"; }
LUN0='{ lun = 0; pool = "c"; volume = "vol0"; size = "128M"; thin = true; }'
LUN1='{ lun = 1; pool = "c"; volume = "vol0@snap1"; }'
LUN2='{ lun = 2; pool = "c"; volume = "clone1"; size = "128M"; thin = true; }'
# the configuration with the LUNs given
conf() {
	local luns
	luns=$(IFS=,; echo "$*")
	cat > "$W/rtgt.conf" <<CONF
daemon = { workers = 2; control = "$W/rtgtd.sock"; log_level = "info"; };
pools = ( { name = "c"; level = "raid5"; chunk = "64K";
            members = ( "$W/d0.img", "$W/d1.img", "$W/d2.img" ); create_size = "256M"; } );
portals = ( { name = "lo"; listen = "127.0.0.1:$PORT"; } );
targets = ( { iqn = "$IQN"; portals = ( "lo" ); luns = ( $luns ); allow = ( "ALL" ); } );
CONF
}
start_daemon() {
	rm -f "$W/rtgtd.sock"
	"$RTGTD" -c "$W/rtgt.conf" >> "$W/rtgtd.log" 2>&1 &
	DPID=$!
	for _ in $(seq 100); do [ -S "$W/rtgtd.sock" ] && break; sleep 0.2; done
	CTL status >/dev/null || fail "rtgtd did not start"
}
# FIELD of pool c in status --json, or FIELD of volume NAME in volume list --json
pool_field() {
	CTL status --json | python3 -c 'import json,sys; p=[p for p in json.load(sys.stdin)["pools"] if p["name"]=="c"][0]; print(p[sys.argv[1]])' "$1"
}
vol_field() {
	CTL volume list c --json | python3 -c 'import json,sys; v=[v for v in json.load(sys.stdin)["volumes"] if v["name"]==sys.argv[1]]; print(v[0][sys.argv[2]] if v else "none")' "$1" "$2"
}
conf "$LUN0"
start_daemon
ok

# the mailbox: the guest connects, sends one line (the step's name), gets
# what the host writes to rep.N (N counts the requests), then EOF
mkdir "$W/mb"
cat > "$W/mailbox.py" <<'PY'
import os, socket, sys, time
d = sys.argv[1]
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(4)
with open(d + "/port.tmp", "w") as f:
    f.write("%d\n" % s.getsockname()[1])
os.rename(d + "/port.tmp", d + "/port")
n = 0
while True:
    c, _ = s.accept()
    line = c.makefile("rb").readline().decode(errors="replace").strip()
    n += 1
    with open("%s/req.%d.tmp" % (d, n), "w") as f:
        f.write(line + "\n")
    os.rename("%s/req.%d.tmp" % (d, n), "%s/req.%d" % (d, n))
    while not os.path.exists("%s/rep.%d" % (d, n)):
        time.sleep(0.1)
    with open("%s/rep.%d" % (d, n), "rb") as f:
        c.sendall(f.read())
    c.close()
PY
python3 "$W/mailbox.py" "$W/mb" 2>"$W/mailbox.log" &
MPID=$!
for _ in $(seq 50); do [ -f "$W/mb/port" ] && break; sleep 0.1; done
CPORT=$(cat "$W/mb/port" 2>/dev/null) || fail "the mailbox did not start: $(cat "$W/mailbox.log")"
nreq=0
# waits for the guest's next request, which must be $1
serve() {
	nreq=$((nreq + 1))
	for _ in $(seq 9000); do
		[ -f "$W/mb/req.$nreq" ] && break
		kill -0 "$GPID" 2>/dev/null || break
		sleep 0.1
	done
	if [ ! -f "$W/mb/req.$nreq" ]; then
		wait "$GPID"; GPID=
		tail -40 "$W/console.log"
		fail "the guest never asked for '$1'"
	fi
	local got
	got=$(cat "$W/mb/req.$nreq")
	[ "$got" = "$1" ] || fail "the guest asked for '$got', not '$1'"
}
reply() { printf '%s\n' "$*" > "$W/mb/rep.$nreq.tmp" && mv "$W/mb/rep.$nreq.tmp" "$W/mb/rep.$nreq"; }

# the guest's script (its /bin/sh is dash: no bashisms but in ask's bash -c)
{
	echo "PORT=$PORT CPORT=$CPORT IQN=$IQN"
	cat <<'GS'
set -u
ask() { bash -c 'exec 3<>/dev/tcp/10.0.2.2/$0 && echo "$1" >&3 && cat <&3' "$CPORT" "$1"; }
# the disk of LUN $1 of the one session (empty while there is none)
lundev() {
	for d in /sys/class/scsi_disk/*:"$1"; do
		[ -d "$d/device/block" ] && ls "$d/device/block" | head -1
	done
}
waitlun() {
	for i in $(seq 60); do
		x=$(lundev "$1")
		[ -n "$x" ] && { udevadm settle -t 10; echo "$x"; return 0; }
		iscsiadm -m session --rescan >/dev/null 2>&1
		sleep 1
	done
	return 1
}
# sha256 of a whole device, read past the page cache
devsum() { dd if=/dev/$1 bs=1M iflag=direct 2>/dev/null | sha256sum | cut -c1-16; }
iscsid; sleep 1
iscsiadm -m discovery -t st -p 10.0.2.2:$PORT >/dev/null || exit 10
# SendTargets names the portal as configured (127.0.0.1), which is the
# host only from the host: a record for the address the guest reaches it by
iscsiadm -m node -o new -T $IQN -p 10.0.2.2:$PORT >/dev/null || exit 11
iscsiadm -m node -T $IQN -p 10.0.2.2:$PORT --login >/dev/null || exit 11
A=$(waitlun 0) || exit 12
echo "GS-DEV A=$A"
# itables and journal written now, not by ext4lazyinit behind the checksums
mkfs.ext4 -q -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 /dev/$A || exit 13
mkdir -p /mnt/a /mnt/c /mnt/s
mount /dev/$A /mnt/a || exit 14
dd if=/dev/urandom of=/mnt/a/pre bs=1M count=4 conv=fsync 2>/dev/null || exit 14
p1=$(sha256sum < /mnt/a/pre | cut -c1-16)
# 1: 48 MiB in four files, 16 KiB random writes at 4 MB/s (about 12 s),
# then the read-back; the snapshot after 4 s: extents the volume shares with
# it are then written in part, which copies them
fio --name=v --directory=/mnt/a --nrfiles=4 --size=48m --bs=16k --rw=randwrite \
	--verify=crc32c --direct=1 --ioengine=libaio --iodepth=4 --rate=4m \
	--output=/tmp/fio.txt &
FIO=$!
# the files fio laid out are made durable before the snapshot (a crash
# image holds what was synced; ext4 commits its journal only every 5 s)
sleep 3; sync; sleep 1
mid=no; kill -0 $FIO 2>/dev/null && mid=yes
r=$(ask snap)
mid2=no; kill -0 $FIO 2>/dev/null && mid2=yes
echo "GS-SNAP $r"
wait $FIO; frc=$?
grep -E "err=|verify|WRITE:|READ:" /tmp/fio.txt
echo "GS-1 $frc $mid $mid2 $(grep -o 'err= *[0-9]*' /tmp/fio.txt | tr -d ' ' | sort -u | tr '\n' ,)"
umount /mnt/a || exit 15
HA1=$(devsum $A)
# 2: the host clones the snapshot and exports both
r=$(ask export)
echo "GS-EXPORT $r"
case "$r" in ok*) ;; *) exit 20;; esac
S=$(waitlun 1) || exit 21
K=$(waitlun 2) || exit 22
echo "GS-DEV S=$S K=$K"
ro=$(cat /sys/block/$S/ro); gro=$(blockdev --getro /dev/$S)
rwro=$(cat /sys/block/$K/ro)
# past the kernel's refusal: WRITE(10) of LBA 0 straight to the target
lbs=$(cat /sys/block/$S/queue/logical_block_size)
sg_raw -R -s $lbs -i /dev/zero /dev/$S 2a 00 00 00 00 00 00 00 01 00 > /tmp/sgraw.txt 2>&1; sgrc=$?
cat /tmp/sgraw.txt
sense=$(grep -io 'data protect' /tmp/sgraw.txt | head -1 | tr ' ' _)
asc=$(grep -io 'write protected' /tmp/sgraw.txt | head -1 | tr ' ' _)
dd if=/dev/zero of=/dev/$S bs=4k count=1 oflag=direct 2>/dev/null && ddw=written || ddw=refused
HS1=$(devsum $S)
HK0=$(devsum $K)
rec=$(dumpe2fs -h /dev/$S 2>/dev/null | grep -c needs_recovery)
e2fsck -fn /dev/$S > /tmp/fsck-s.txt 2>&1; fs_s=$?
tail -3 /tmp/fsck-s.txt
HS1b=$(devsum $S)
# without the journal: what was checkpointed by then (the fio files may be
# only in the journal yet, 4 s after their creation)
nf=-
if mount -o ro,noload /dev/$S /mnt/s; then nf=$(ls /mnt/s | grep -c '^v\.'); umount /mnt/s; fi
# the clone: a mount replays the journal (what a crash's reboot does)
mount /dev/$K /mnt/c || exit 23
nk=$(ls /mnt/c | grep -c '^v\.')
p2=$(sha256sum < /mnt/c/pre | cut -c1-16)
umount /mnt/c
e2fsck -fn /dev/$K > /tmp/fsck-k.txt 2>&1; fs_k=$?
tail -3 /tmp/fsck-k.txt
echo "GS-2 $ro $gro $rwro $sgrc ${sense:--} ${asc:--} $ddw $HS1 $HK0 $rec $fs_s $HS1b $nf $nk $fs_k $p1 $p2"
# 3: the clone written, the original and the snapshot read again
mount /dev/$K /mnt/c || exit 24
dd if=/dev/urandom of=/mnt/c/new bs=1M count=8 conv=fsync 2>/dev/null || exit 25
w1=$(sha256sum < /mnt/c/new | cut -c1-16)
umount /mnt/c
echo 3 > /proc/sys/vm/drop_caches
mount /dev/$K /mnt/c || exit 26
w2=$(sha256sum < /mnt/c/new | cut -c1-16)
umount /mnt/c
HK1=$(devsum $K)
HA2=$(devsum $A)
HS2=$(devsum $S)
echo "GS-3 $w1 $w2 $HK0 $HK1 $HA1 $HA2 $HS1 $HS2"
# 4: the disk taken offline, the volume rolled back, the disk found again
echo 1 > /sys/block/$A/device/delete
r=$(ask rollback)
echo "GS-ROLLBACK $r"
case "$r" in ok*) ;; *) exit 30;; esac
A2=$(waitlun 0) || exit 31
HA3=$(devsum $A2)
# written after the rollback: extents the snapshot then holds alone
mount /dev/$A2 /mnt/a || exit 32
dd if=/dev/urandom of=/mnt/a/after bs=1M count=8 conv=fsync 2>/dev/null || exit 33
umount /mnt/a
e2fsck -fn /dev/$A2 > /tmp/fsck-a.txt 2>&1; fs_a=$?
echo "GS-4 $HA2 $HS1 $HA3 $A2 $fs_a"
iscsiadm -m node --logoutall=all >/dev/null 2>&1
exit 0
GS
} > "$W/guest.sh"

tg=$(date +%s)
"$kit/run.sh" "$W/guest.sh" 900 "$G" > "$W/console.log" 2>&1 &
GPID=$!

# 1: the snapshot, mid-run
serve snap
a_pre=$(vol_field vol0 allocated)
ts=$(date +%s%N)
out=$(CTL snapshot c vol0 snap1 2>&1); rc=$?
te=$(date +%s%N)
[ "$rc" -eq 0 ] || { reply "err $out"; fail "rtgtctl snapshot: $out"; }
reply "ok $(( (te - ts) / 1000000 ))ms vol0 allocated $a_pre"
echo "host: $out ($(( (te - ts) / 1000000 )) ms for rtgtctl; vol0 had $a_pre bytes allocated)"

# 2: a clone of it, both exported
serve export
out=$(CTL clone c vol0@snap1 clone1 2>&1) || { reply "err $out"; fail "rtgtctl clone: $out"; }
echo "host: $out"
conf "$LUN0" "$LUN1" "$LUN2"
out=$(CTL reload 2>&1) || { reply "err $out"; fail "rtgtctl reload: $out"; }
reply "ok"

# 4: rollback, refused while exported, then forced
serve rollback
if out=$(CTL rollback c vol0@snap1 2>&1); then
	reply "err"; fail "rollback while the LUN exports vol0 was not refused: $out"
fi
echo "host: refused: $out"
ts=$(date +%s%N)
out=$(CTL rollback --force c vol0@snap1 2>&1) || { reply "err $out"; fail "rtgtctl rollback --force: $out"; }
te=$(date +%s%N)
echo "host: $out ($(( (te - ts) / 1000000 )) ms)"
reply "ok"

wait "$GPID"; grc=$?; GPID=
echo "guest ran $(( $(date +%s) - tg )) s, exit $grc"
grep -aE "^GS-|err=|WRITE:|READ:|Sense|Write protect|clean|recover" "$W/console.log" | head -40
[ "$grc" -eq 0 ] || { tail -40 "$W/console.log"; fail "guest script exit $grc"; }
line() { grep -ao "^GS-$1 .*" "$W/console.log" | tail -1 | tr -d '\r' | cut -d' ' -f2-; }

read -r frc mid mid2 errs <<<"$(line 1)"
echo "1 fio randwrite+verify crc32c on ext4: exit $frc, errors ${errs%,}, running before the snapshot $mid, after it $mid2"
[ "$frc" = 0 ] && [ "$errs" = "err=0," ] || fail "fio's verify failed (exit $frc, $errs)"
[ "$mid" = yes ] && [ "$mid2" = yes ] || fail "the snapshot was not taken while fio ran ($mid/$mid2)"
[ "${a_pre:-0}" -gt 0 ] || fail "vol0 held nothing when the snapshot was taken"
ok

read -r ro gro rwro sgrc sense asc ddw HS1 HK0 rec fs_s HS1b nf nk fs_k p1 p2 <<<"$(line 2)"
echo "2 snapshot LUN: ro $ro, getro $gro (clone LUN ro $rwro), sg_raw WRITE(10) exit $sgrc: $sense $asc, dd write $ddw; sha256 snapshot $HS1 clone $HK0; needs_recovery $rec, e2fsck -fn snapshot exit $fs_s (bytes after $HS1b), fio files $nf mounted ro,noload; clone after journal replay: $nk fio files, file written before it $p1 / on the clone $p2, e2fsck -fn exit $fs_k"
[ "$ro" = 1 ] && [ "$gro" = 1 ] && [ "$rwro" = 0 ] || fail "the kernel does not see the snapshot LUN write-protected (ro $ro getro $gro; clone $rwro)"
[ "$sgrc" != 0 ] && [ "${sense,,}" = data_protect ] && [ "${asc,,}" = write_protected ] ||
	fail "WRITE(10) to the snapshot LUN: exit $sgrc, sense $sense $asc"
[ "$ddw" = refused ] || fail "a write to the snapshot's disk succeeded"
[ "$HS1" = "$HK0" ] || fail "the clone does not hold the snapshot's bytes ($HK0 vs $HS1)"
[ "$HS1" = "$HS1b" ] || fail "e2fsck -n changed the read-only snapshot ($HS1 -> $HS1b)"
# -n on an image that needs its journal replayed may see stale metadata
# (exit 4); without a journal to replay it must be clean
[ "$fs_s" = 0 ] || { [ "$rec" = 1 ] && [ "$fs_s" = 4 ]; } || fail "e2fsck -fn of the snapshot: exit $fs_s (needs_recovery $rec)"
[ "$nf" != - ] || fail "the snapshot does not mount with -o ro,noload"
[ "$nk" = 4 ] || fail "the clone after its journal replay shows $nk fio files, not 4"
[ "$p1" = "$p2" ] || fail "the file synced before the snapshot reads otherwise on the clone ($p2 vs $p1)"
[ "$fs_k" = 0 ] || fail "e2fsck -fn of the clone after its journal replay: exit $fs_k"
ok

read -r w1 w2 hk0 HK1 HA1 HA2 hs1 HS2 <<<"$(line 3)"
echo "3 clone written: file $w1, after remount $w2; clone $hk0 -> $HK1; original $HA1 -> $HA2; snapshot $hs1 -> $HS2"
[ "$w1" = "$w2" ] || fail "the file written on the clone reads back otherwise"
[ "$hk0" != "$HK1" ] || fail "the clone's bytes did not change"
[ "$HA1" = "$HA2" ] || fail "writing the clone changed the original volume"
[ "$hs1" = "$HS2" ] || fail "writing the clone changed the snapshot"
ok

read -r ha2 hs1 HA3 A2 fs_a <<<"$(line 4)"
echo "4 rollback --force (plain rollback refused while exported): original before $ha2, snapshot $hs1, original after (disk $A2 after rescan) $HA3; e2fsck -fn after a mount and a write: exit $fs_a"
[ "$ha2" != "$hs1" ] || fail "the original held the snapshot's bytes already: the rollback check cannot fail"
[ "$HA3" = "$hs1" ] || fail "after the rollback the volume does not hold the snapshot's bytes ($HA3 vs $hs1)"
[ "$fs_a" = 0 ] || fail "e2fsck -fn of the rolled-back volume: exit $fs_a"
ok

# 5: deletes, refused while open, then done once no LUN has them open
if out=$(CTL volume delete c clone1 2>&1); then fail "volume delete of an exported clone was not refused"; fi
echo "host: refused: $out"
CTL volume list c
conf "$LUN0"
out=$(CTL reload 2>&1) || fail "reload without LUNs 1 and 2: $out"
case $out in *"volumes no longer exported"*clone1*) ;; *) fail "reload did not close clone1: $out" ;; esac
if out=$(CTL snapshot delete c vol0@snap1 2>&1); then fail "snapshot delete while clone1 depends on it was not refused"; fi
echo "host: refused: $out"
used0=$(pool_field thin_used_bytes) space=$(pool_field thin_space_bytes)
excl_k=$(vol_field clone1 exclusive) alloc_a0=$(vol_field vol0 allocated)
out=$(CTL volume delete c clone1 2>&1) || fail "volume delete clone1: $out"
echo "host: $out"
used1=$(pool_field thin_used_bytes)
excl_s=$(vol_field vol0@snap1 exclusive)
out=$(CTL snapshot delete c vol0@snap1 2>&1) || fail "snapshot delete vol0@snap1: $out"
echo "host: $out"
used2=$(pool_field thin_used_bytes) alloc_a1=$(vol_field vol0 allocated)
CTL volume list c
chk=$(CTL check c 2>&1); crc=$?
echo "host: $chk"
echo "5 pool c thin used $used0 -> $used1 (clone1 deleted, exclusive $excl_k) -> $used2 bytes (vol0@snap1 deleted, exclusive $excl_s); free $((space - used0)) -> $((space - used2)) of $space; vol0 allocated $alloc_a0 -> $alloc_a1; check exit $crc"
[ "$excl_k" -gt 0 ] && [ "$excl_s" -gt 0 ] || fail "clone1 or the snapshot held nothing of its own ($excl_k, $excl_s): nothing to give back"
[ $((used0 - used1)) -eq "$excl_k" ] || fail "deleting clone1 gave back $((used0 - used1)) bytes, not its $excl_k exclusive"
[ $((used1 - used2)) -eq "$excl_s" ] || fail "deleting the snapshot gave back $((used1 - used2)) bytes, not its $excl_s exclusive"
[ "$alloc_a0" = "$alloc_a1" ] || fail "vol0's allocation changed with the deletes ($alloc_a0 -> $alloc_a1)"
[ "$(vol_field clone1 name)" = none ] && [ "$(vol_field vol0@snap1 name)" = none ] || fail "a deleted volume is still listed"
[ "$crc" = 0 ] || fail "rtgtctl check c: $chk"
ok
echo "guest-snapshot (raid5): $checks checks passed in $(( $(date +%s) - t0 )) s"
echo "100%: Checks: $checks, Failures: 0, Errors: 0"
