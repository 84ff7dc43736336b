#!/usr/bin/env bash
# scripts/bench-raid.sh - RAID engine throughput over iSCSI on memory-backed
# members: 1 MiB sequential writes (then reads) to a RAID0, a RAID5 and a
# RAID6 pool of the same four /dev/shm files' size, through bin/rtgtd and
# bin/rtgt-bench, plus a rebuild at a given cap. Prints one line per case and
# the RAID5/RAID0 and RAID6/RAID0 ratios (goals: >= 0.70 and >= 0.60).
#
#   scripts/bench-raid.sh [--time S] [--size MEMBER_SIZE] [--qd N] [--port P]
#                         [--cap MBPS] [--rounds N]
set -euo pipefail
cd "$(dirname "$0")/.."

TIME=10 SIZE=512M QD=8 PORT=$((4000 + RANDOM % 5000)) CAP=50 ROUNDS=3
while [ $# -gt 0 ]; do
	case "$1" in
	--time) TIME=$2; shift 2 ;;
	--size) SIZE=$2; shift 2 ;;
	--qd) QD=$2; shift 2 ;;
	--port) PORT=$2; shift 2 ;;
	--cap) CAP=$2; shift 2 ;;
	--rounds) ROUNDS=$2; shift 2 ;;
	*) echo "usage: $0 [--time S] [--size SIZE] [--qd N] [--port P] [--cap MBPS] [--rounds N]" >&2; exit 2 ;;
	esac
done
[ -x bin/rtgtd ] && [ -x bin/rtgt-bench ] && [ -x bin/rtgtctl ] || make -s all

DIR=$(mktemp -d /dev/shm/rtgt-bench-XXXXXX)
PID=
cleanup() {
	[ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
	rm -rf "$DIR"
}
trap cleanup EXIT

pool() { # name level
	cat <<EOP
  { name = "$1"; level = "$2"; chunk = "64K"; create_size = "$SIZE"; rebuild_mbps = $CAP;
    members = ( "$1-0.img", "$1-1.img", "$1-2.img", "$1-3.img" ); spares = ( "$1-s.img" ); },
EOP
}
target() { # name
	cat <<EOT
  { iqn = "iqn.2026-11.org.rtgt:bench.$1"; portals = ( "lo" ); allow = ( "ALL" );
    luns = ( { lun = 0; pool = "$1"; volume = "v"; size = "90%"; } ); },
EOT
}
{
	echo "daemon = { workers = 2; control = \"rtgtd.sock\"; log_level = \"warn\"; };"
	echo "pools = ("; pool r0 raid0; pool r5 raid5; pool r6 raid6; echo ");"
	echo "portals = ( { name = \"lo\"; listen = \"127.0.0.1:$PORT\"; } );"
	echo "targets = ("; target r0; target r5; target r6; echo ");"
} | sed -e ':a' -e 'N' -e '$!ba' -e 's/,\n)/\n)/g' > "$DIR/bench.conf"
for p in r0 r5 r6; do truncate -s "$SIZE" "$DIR/$p-s.img"; done

bin/rtgtd -c "$DIR/bench.conf" 2> "$DIR/rtgtd.log" &
PID=$!
for _ in $(seq 50); do
	bin/rtgtctl -s "$DIR/rtgtd.sock" status >/dev/null 2>&1 && break
	sleep 0.2
done

mbps() { # pool pattern
	bin/rtgt-bench --url "iscsi://127.0.0.1:$PORT/iqn.2026-11.org.rtgt:bench.$1/0" \
		--pattern "$2" --bs 1M --qd "$QD" --time "$TIME" --json $([ "$2" = seqwrite ] && echo --prefill) |
		python3 -c 'import json,sys; d=json.load(sys.stdin); print("%.1f" % d["total"]["mbps"])'
}
# Rounds alternate the three pools so that a change in the machine's load
# hits all of them alike; the ratios are the medians of the per-round ratios.
declare -A W R
# warm-up (the first run of a fresh daemon is consistently slower)
TIME_SAVE=$TIME; TIME=2; mbps r0 seqwrite >/dev/null; TIME=$TIME_SAVE
R5=() R6=()
for round in $(seq "$ROUNDS"); do
	for p in r0 r5 r6; do
		W[$p]=$(mbps $p seqwrite)
		R[$p]=$(mbps $p seqread)
		printf 'round %s  %-4s seqwrite 1M qd%s: %8s MB/s   seqread: %8s MB/s\n' \
			"$round" "$p" "$QD" "${W[$p]}" "${R[$p]}"
	done
	R5+=("$(python3 -c "print('%.3f' % (${W[r5]}/${W[r0]}))")")
	R6+=("$(python3 -c "print('%.3f' % (${W[r6]}/${W[r0]}))")")
	printf 'round %s  raid5/raid0 write: %s   raid6/raid0 write: %s   (load %s)\n' "$round" \
		"${R5[-1]}" "${R6[-1]}" "$(cut -d' ' -f1 /proc/loadavg)"
done
python3 -c "
import statistics as s
r5=[$(IFS=,; echo "${R5[*]}")]; r6=[$(IFS=,; echo "${R6[*]}")]
print('median of %d rounds: raid5/raid0 write: %.2f (goal 0.70)   raid6/raid0 write: %.2f (goal 0.60)' % (len(r5), s.median(r5), s.median(r6)))"

# Rebuild rate: fail a member of r5 and follow the rebuild onto its spare in
# rtgtctl status. The rate is taken between the first and the last sample
# that show the rebuild running (progress strictly between 0 and 1), so the
# time to notice the failure and the polling granularity do not count; the
# end-to-end time from the fail command to "optimal" is printed too.
T_FAIL=$(date +%s.%N)
bin/rtgtctl -s "$DIR/rtgtd.sock" fail r5 1 >/dev/null
python3 - "$DIR/rtgtd.sock" "$CAP" "$SIZE" "$T_FAIL" <<'EOP'
import json, subprocess, sys, time
sock, cap = sys.argv[1], float(sys.argv[2])
t0 = float(sys.argv[4])   # wall clock when the fail command was sent
samples = []
member = None
while time.time() - t0 < 600:
    out = subprocess.run(["bin/rtgtctl", "-s", sock, "status", "--json"],
                         capture_output=True, text=True, check=True).stdout
    p = [p for p in json.loads(out)["pools"] if p["name"] == "r5"][0]
    t = time.time()
    if p["state"] == "optimal":
        break
    if 0.0 < p["rebuild_progress"] < 1.0:
        samples.append((t, p["rebuild_progress"]))
    time.sleep(0.2)
t1 = time.time()
# the member's data area: its size less the 1 MiB of superblocks and bitmap
# in front of it (RAID_DATA_OFF in raid/raid_int.h)
size = sys.argv[3]
mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
member_bytes = (int(size[:-1]) * mult[size[-1]] if size[-1] in mult else int(size)) - (1 << 20)
print("rebuild of %.0f MiB onto the spare at cap %.0f MB/s: %.1f s from fail to optimal (%.1f MB/s end to end)"
      % (member_bytes / 2**20, cap, t1 - t0, member_bytes / 1e6 / (t1 - t0)))
if len(samples) >= 2 and samples[-1][0] > samples[0][0]:
    (ta, pa), (tb, pb) = samples[0], samples[-1]
    rate = (pb - pa) * member_bytes / 1e6 / (tb - ta)
    print("rebuild rate while running: %.1f MB/s over %.1f s (%d samples) = %.2f of the cap"
          % (rate, tb - ta, len(samples), rate / cap))
else:
    print("rebuild rate while running: too few samples (%d) to measure" % len(samples))
EOP
