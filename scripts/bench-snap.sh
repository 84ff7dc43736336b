#!/usr/bin/env bash
# What snapshots cost a thin LUN on a RAID pool, side by side in one run:
# one rtgtd (bin/rtgtd), a LEVEL pool of MEMBERS files in /dev/shm, two thin
# LUNs of SIZE: "plain" (never snapshotted) and "snap". Both are written in
# full first (untimed), then bin/rtgt-bench drives them alternately:
#   none    4 KiB random 70/30 at qd 32 and 1 MiB sequential write at qd 8
#           on both, before any snapshot (snap/plain should be ~1);
#   first   right after `rtgtctl snapshot` of "snap": one 1 MiB sequential
#           write pass over each LUN (on "snap" every extent is copied on
#           its first write; 1 MiB writes that cover whole extents copy
#           nothing from the old one) and, after a fresh snapshot, 4 KiB
#           random 70/30 for TIME (each first write copies its extent);
#   copied  after every extent was copied once (no extent shared): the two
#           tests of "none" again.
# Then snapshot creation under load: while 4 KiB random 70/30 runs on
# "snap", NSNAP snapshots are taken one after another (each deleted after
# the next is taken); the wall time of each `rtgtctl snapshot` (a process
# start included) and the time the daemon held requests (its log line)
# are reported as p50/p99/max.
# Prints every run, then the medians and the snap/plain ratios. Everything
# it creates is removed on exit.
#
# usage: scripts/bench-snap.sh
# env: TIME seconds per timed run (4)   ROUNDS rounds of "none"/"copied" (3)
#      MEMBERS (4)  MEMBER_SIZE in M (384M)  LEVEL (raid0)  WORKERS (2)
#      SIZE each LUN (256M)  NSNAP (40)  RTGTD (bin/rtgtd)  BENCH (bin/rtgt-bench)
set -u
cd "$(dirname "$0")/.."

[ $# -eq 0 ] || { sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
TIME=${TIME:-4}
ROUNDS=${ROUNDS:-3}
MEMBERS=${MEMBERS:-4}
MEMBER_SIZE=${MEMBER_SIZE:-384M}
LEVEL=${LEVEL:-raid0}
WORKERS=${WORKERS:-2}
SIZE=${SIZE:-256M}
NSNAP=${NSNAP:-40}
RTGTD=${RTGTD:-bin/rtgtd}
BENCH=${BENCH:-bin/rtgt-bench}
CTL=bin/rtgtctl
IQN=iqn.2026-12.org.rtgt:bench-snap

die() { echo "bench-snap: $*" >&2; exit 1; }
for f in "$RTGTD" "$BENCH" "$CTL"; do
	[ -x "$f" ] || die "$f is not an executable (run make first)"
done
command -v python3 >/dev/null || die "python3 not installed (scripts/deps.sh)"

free_port() {
	local p
	for _ in $(seq 50); do
		p=$((4000 + RANDOM % 4900))
		ss -Hltn "sport = :$p" 2>/dev/null | grep -q . && continue
		echo "$p"
		return 0
	done
	return 1
}

shm=$(mktemp -d /dev/shm/rtgt-snap.XXXXXX) || die "cannot create a directory in /dev/shm"
work=$(mktemp -d /tmp/rtgt-snap.XXXXXX) || die "cannot create a temp directory"
pid=
cleanup() {
	trap "" INT TERM
	if [ -n "$pid" ]; then
		kill -TERM "$pid" 2>/dev/null
		for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	fi
	rm -rf "$shm" "$work"
}
trap cleanup EXIT
trap 'echo "bench-snap: interrupted" >&2; exit 130' INT TERM

port=$(free_port) || die "no free port"
members=
for i in $(seq 0 $((MEMBERS - 1))); do
	members="$members${members:+, }\"$shm/m$i.img\""
done
cat > "$work/rtgt.conf" <<CONF
daemon = { workers = $WORKERS; control = "$work/rtgtd.sock"; log_level = "info"; };
pools = ( { name = "shm"; level = "$LEVEL"; chunk = "64K"; members = ( $members );
            create_size = "$MEMBER_SIZE"; thin_threshold = 100; } );
portals = ( { name = "lo"; listen = "127.0.0.1:$port"; } );
targets = ( { iqn = "$IQN"; portals = ( "lo" );
              luns = ( { lun = 0; pool = "shm"; volume = "plain"; size = "$SIZE"; thin = true; },
                       { lun = 1; pool = "shm"; volume = "snap"; size = "$SIZE"; thin = true; } );
              allow = ( "ALL" ); } );
CONF
"$RTGTD" -c "$work/rtgt.conf" > "$work/rtgtd.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
	kill -0 "$pid" 2>/dev/null || { cat "$work/rtgtd.log" >&2; die "rtgtd did not start"; }
	(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
	sleep 0.1
done
ctl() { "$CTL" -s "$work/rtgtd.sock" "$@"; }
url() { echo "iscsi://127.0.0.1:$port/$IQN/$1"; }
lun_of() { [ "$1" = plain ] && echo 0 || echo 1; }

for v in plain snap; do
	"$BENCH" --url "$(url "$(lun_of $v)")" --pattern seqwrite --bs 1M --qd 8 --bytes "$SIZE" \
		--quiet > /dev/null 2> "$work/bench.err" || { cat "$work/bench.err" >&2; die "prefill of $v failed"; }
done

runs="$work/runs.jsonl"
: > "$runs"
args_for() {
	case $1 in
	seqwrite-1M-qd8) echo "--pattern seqwrite --bs 1M --qd 8" ;;
	randrw70-4K-qd32) echo "--pattern randrw --rwmix 70 --bs 4K --qd 32" ;;
	esac
}
run() {   # phase round vol test [--bytes B]
	local phase=$1 round=$2 vol=$3 test=$4 out amount
	amount=${5:---time $TIME}
	# shellcheck disable=SC2046,SC2086
	out=$("$BENCH" --url "$(url "$(lun_of "$vol")")" $amount --json --quiet $(args_for "$test") \
		2> "$work/bench.err") || { cat "$work/bench.err" >&2; die "$phase $vol $test failed"; }
	printf '{"phase":"%s","round":%d,"vol":"%s","test":"%s","load":%s,"result":%s}\n' "$phase" \
		"$round" "$vol" "$test" "$(cut -d' ' -f1 /proc/loadavg)" "$out" >> "$runs"
	python3 -c 'import json,sys
r=json.loads(sys.argv[1]); t=r["result"]["total"]
print("  %-6s round %d %-5s %-18s %8.1f MB/s %8.0f IOPS  p99 %7.3f ms  load %.2f" % (r["phase"],
    r["round"], r["vol"], r["test"], t["mbps"], t["iops"], t["lat_ms"]["p99"], r["load"]))' \
		"$(tail -n 1 "$runs")" >&2
}
pair() {   # phase round test [amount]: both volumes, the order flipped each round
	if [ $(($2 % 2)) -eq 1 ]; then
		run "$1" "$2" plain "$3" "${4:-}"; run "$1" "$2" snap "$3" "${4:-}"
	else
		run "$1" "$2" snap "$3" "${4:-}"; run "$1" "$2" plain "$3" "${4:-}"
	fi
}

echo "bench-snap: $LEVEL x$MEMBERS of $MEMBER_SIZE in /dev/shm, two thin LUNs of $SIZE," \
	"$TIME s per run, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for r in $(seq "$ROUNDS"); do
	pair none "$r" randrw70-4K-qd32
	pair none "$r" seqwrite-1M-qd8
done
ctl snapshot shm snap first > /dev/null || die "snapshot failed"
pair first 1 seqwrite-1M-qd8 "--bytes $SIZE"
ctl snapshot delete shm snap@first > /dev/null || die "snapshot delete failed"
ctl snapshot shm snap first4k > /dev/null || die "snapshot failed"
pair first 1 randrw70-4K-qd32
# every extent copied once: a whole pass, then no extent is shared
run setup 0 snap seqwrite-1M-qd8 "--bytes $SIZE"
ctl snapshot delete shm snap@first4k > /dev/null || die "snapshot delete failed"
ctl snapshot shm snap copied > /dev/null || die "snapshot failed"
run setup 0 snap seqwrite-1M-qd8 "--bytes $SIZE"
for r in $(seq "$ROUNDS"); do
	pair copied "$r" randrw70-4K-qd32
	pair copied "$r" seqwrite-1M-qd8
done
ctl snapshot delete shm snap@copied > /dev/null || die "snapshot delete failed"

# snapshot creation under load
"$BENCH" --url "$(url 1)" --time $((NSNAP / 4 + 10)) --quiet --pattern randrw --rwmix 70 --bs 4K \
	--qd 32 > "$work/load.out" 2>&1 &
load=$!
sleep 1
times="$work/snap-times"
: > "$times"
prev=
for i in $(seq "$NSNAP"); do
	t0=$(date +%s%N)
	ctl snapshot shm snap "l$i" > /dev/null || die "snapshot $i under load failed"
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000)) >> "$times"
	[ -n "$prev" ] && { ctl snapshot delete shm "snap@$prev" > /dev/null || die "delete failed"; }
	prev=l$i
done
wait "$load" || { cat "$work/load.out" >&2; die "the load run failed"; }
ctl snapshot delete shm "snap@$prev" > /dev/null
grep -o 'snapshot snap@l[0-9]* taken (requests held [0-9]* us)' "$work/rtgtd.log" |
	sed 's/.*held \([0-9]*\) us.*/\1/' > "$work/held-times"

python3 - "$runs" "$times" "$work/held-times" <<'PY'
import json, sys, statistics as st
runs = [json.loads(l) for l in open(sys.argv[1])]
def med(phase, vol, test, k):
    v = [r["result"]["total"][k] for r in runs
         if r["phase"] == phase and r["vol"] == vol and r["test"] == test]
    return st.median(v) if v else 0.0
print("\nmedians; snap/plain = the ratio of the medians")
fmt = "%-7s %-18s %11s %11s %7s %10s %10s %7s"
print(fmt % ("phase", "test", "plain MB/s", "snap MB/s", "ratio", "plain IOPS", "snap IOPS",
             "ratio"))
for phase in ("none", "first", "copied"):
    for test in ("randrw70-4K-qd32", "seqwrite-1M-qd8"):
        pm, sm = med(phase, "plain", test, "mbps"), med(phase, "snap", test, "mbps")
        pi, si = med(phase, "plain", test, "iops"), med(phase, "snap", test, "iops")
        print(fmt % (phase, test, "%.1f" % pm, "%.1f" % sm, "%.3f" % (sm / pm if pm else 0),
                     "%.0f" % pi, "%.0f" % si, "%.3f" % (si / pi if pi else 0)))
def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]
wall = [int(l) / 1000.0 for l in open(sys.argv[2]) if l.strip()]
held = [int(l) / 1000.0 for l in open(sys.argv[3]) if l.strip()]
print("\nsnapshot under 4 KiB random 70/30 load, %d snapshots:" % len(wall))
print("  rtgtctl snapshot wall time (process start included): p50 %.1f ms, p99 %.1f ms, max %.1f ms"
      % (pct(wall, 50), pct(wall, 99), max(wall)))
if held:
    print("  requests held by the daemon:                         p50 %.2f ms, p99 %.2f ms, max %.2f ms"
          % (pct(held, 50), pct(held, 99), max(held)))
PY
