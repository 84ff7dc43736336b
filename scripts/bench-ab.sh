#!/usr/bin/env bash
# A/B of two rtgtd builds side by side, in one run: both daemons run at once
# on the same kind of memory-backed pool (LEVEL of MEMBERS files in
# /dev/shm, one LUN each, portal 127.0.0.1 on two free ports) and
# bin/rtgt-bench drives them alternately, the order flipped every round so
# neither always runs warm. Tests: 1 MiB sequential write and read at qd 8,
# 4 KiB random 70/30 at qd 32 (one session each), after one untimed
# sequential write over each LUN. Prints every run, then
# per test the medians of MB/s, IOPS and p99 over the rounds and the
# median of the rounds' B/A ratios. Everything it creates is removed on
# exit (also on Ctrl-C).
#
# Noise: on a shared 2-core VM a run of the same binary against itself
# (A/A, 21 rounds of 2 s, load average 2.4-3.9) gave a median B/A of 1.036
# on the 1 MiB write. For an effect of a few percent, run it both ways
# round (A B, then B A) and once A/A, and compare.
#
# usage: scripts/bench-ab.sh A/bin/rtgtd B/bin/rtgtd
# env: TIME      seconds per run (4)
#      ROUNDS    how many times each test alternates (3)
#      MEMBERS   pool member files per daemon (4)   MEMBER_SIZE  each, in M (256M)
#      LEVEL     pool level (raid0)                  WORKERS      reactor threads (2)
#      TESTS     space-separated subset of the test names (all)
#      BENCH     the client (bin/rtgt-bench)
#      JSON_OUT  also write one JSON line per run to this file
set -u
cd "$(dirname "$0")/.."

[ $# -eq 2 ] || { sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
A=$1
B=$2
TIME=${TIME:-4}
ROUNDS=${ROUNDS:-3}
MEMBERS=${MEMBERS:-4}
MEMBER_SIZE=${MEMBER_SIZE:-256M}
LEVEL=${LEVEL:-raid0}
WORKERS=${WORKERS:-2}
TESTS=${TESTS:-"seqwrite-1M-qd8 seqread-1M-qd8 randrw70-4K-qd32"}
BENCH=${BENCH:-bin/rtgt-bench}
JSON_OUT=${JSON_OUT:-}
IQN=iqn.2026-12.org.rtgt:bench-ab

die() { echo "bench-ab: $*" >&2; exit 1; }

for f in "$A" "$B" "$BENCH"; do
	[ -x "$f" ] || die "$f is not an executable (run make first)"
done
command -v python3 >/dev/null || die "python3 not installed (scripts/deps.sh)"
case $MEMBER_SIZE in *[0-9]M) ;; *) die "MEMBER_SIZE must be given in M, e.g. 256M" ;; esac

args_for() {
	case $1 in
	seqwrite-1M-qd8) echo "--pattern seqwrite --bs 1M --qd 8" ;;
	seqread-1M-qd8) echo "--pattern seqread --bs 1M --qd 8" ;;
	randrw70-4K-qd32) echo "--pattern randrw --rwmix 70 --bs 4K --qd 32" ;;
	*) return 1 ;;
	esac
}
for t in $TESTS; do
	args_for "$t" > /dev/null || die "unknown test $t"
done

# a port nobody listens on (3260/3261 are left to real targets)
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

shm=$(mktemp -d /dev/shm/rtgt-ab.XXXXXX) || die "cannot create a directory in /dev/shm"
work=$(mktemp -d /tmp/rtgt-ab.XXXXXX) || die "cannot create a temp directory"
pids=()
cleanup() {
	trap "" INT TERM
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${pids[@]}"; do
		for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	rm -rf "$shm" "$work"
}
trap cleanup EXIT
trap 'echo "bench-ab: interrupted" >&2; exit 130' INT TERM

wait_port() {   # pid port
	for _ in $(seq 100); do
		kill -0 "$1" 2>/dev/null || return 1
		(exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# start NAME BINARY: its own pool files, config and port; sets port_NAME
start() {
	local name=$1 bin=$2 port members= i
	port=$(free_port) || die "no free port"
	mkdir -p "$shm/$name"
	for i in $(seq 0 $((MEMBERS - 1))); do
		members="$members${members:+, }\"$shm/$name/m$i.img\""
	done
	cat > "$work/$name.conf" <<CONF
daemon = { workers = $WORKERS; control = "$work/$name.sock"; log_level = "warn"; };
pools = ( { name = "shm"; level = "$LEVEL"; chunk = "64K"; members = ( $members );
            create_size = "$MEMBER_SIZE"; } );
portals = ( { name = "lo"; listen = "127.0.0.1:$port"; } );
targets = ( { iqn = "$IQN"; portals = ( "lo" );
              luns = ( { lun = 0; pool = "shm"; volume = "bench"; size = "100%"; } );
              allow = ( "ALL" ); } );
CONF
	"$bin" -c "$work/$name.conf" > "$work/$name.log" 2>&1 &
	pids+=($!)
	wait_port "$!" "$port" || { cat "$work/$name.log" >&2; die "$name ($bin) did not start on port $port"; }
	eval "port_$name=$port"
}
start A "$A"
start B "$B"
# first touch of the tmpfs pages of a pool costs what no later run pays:
# one untimed pass over each LUN before the rounds
for name in A B; do
	eval "port=\$port_$name"
	"$BENCH" --url "iscsi://127.0.0.1:$port/$IQN/0" --pattern seqwrite --bs 1M --qd 8 \
		--bytes "$((MEMBERS * ${MEMBER_SIZE%M}))M" --quiet > /dev/null 2> "$work/bench.err" ||
		{ cat "$work/bench.err" >&2; die "warm-up of $name failed"; }
done

runs="$work/runs.jsonl"
: > "$runs"
failed=0
run() {   # name round test
	local name=$1 round=$2 test=$3 port out
	eval "port=\$port_$name"
	# shellcheck disable=SC2046
	if ! out=$("$BENCH" --url "iscsi://127.0.0.1:$port/$IQN/0" --time "$TIME" --json --quiet \
		$(args_for "$test") 2> "$work/bench.err"); then
		echo "bench-ab: $name $test failed:" >&2
		cat "$work/bench.err" >&2
		failed=1
		return
	fi
	printf '{"build":"%s","test":"%s","round":%d,"load":%s,"result":%s}\n' "$name" "$test" \
		"$round" "$(cut -d' ' -f1 /proc/loadavg)" "$out" >> "$runs"
	python3 -c 'import json,sys
r=json.loads(sys.argv[1]); t=r["result"]["total"]
print("  %s round %d %-18s %8.1f MB/s %8.0f IOPS  p99 %7.3f ms  load %.2f" % (r["build"],
    r["round"], r["test"], t["mbps"], t["iops"], t["lat_ms"]["p99"], r["load"]))' \
		"$(tail -n 1 "$runs")" >&2
}

echo "bench-ab: A=$A on :$port_A, B=$B on :$port_B ($LEVEL x$MEMBERS of $MEMBER_SIZE," \
	"$WORKERS workers), $TIME s per run, $ROUNDS round(s), load average" \
	"$(cut -d' ' -f1-3 /proc/loadavg)" >&2
for r in $(seq "$ROUNDS"); do
	for t in $TESTS; do
		if [ $((r % 2)) -eq 1 ]; then
			run A "$r" "$t"; run B "$r" "$t"
		else
			run B "$r" "$t"; run A "$r" "$t"
		fi
	done
done
[ -n "$JSON_OUT" ] && cat "$runs" >> "$JSON_OUT"

python3 - "$runs" "$A" "$B" <<'PY'
import json, sys, statistics as st
runs = [json.loads(l) for l in open(sys.argv[1])]
def val(r, k):
    t = r["result"]["total"]
    return t["lat_ms"]["p99"] if k == "p99" else t[k]
tests = []
for r in runs:
    if r["test"] not in tests:
        tests.append(r["test"])
print("\nA = %s\nB = %s" % (sys.argv[2], sys.argv[3]))
print("medians over %d round(s); B/A = median of the rounds' ratios" %
      len({r["round"] for r in runs}))
fmt = "%-18s %10s %10s %6s %9s %9s %6s %9s %9s"
print(fmt % ("test", "A MB/s", "B MB/s", "B/A", "A IOPS", "B IOPS", "B/A", "A p99", "B p99"))
for t in tests:
    def cell(b, k):
        v = [val(r, k) for r in runs if r["test"] == t and r["build"] == b]
        return st.median(v) if v else 0.0
    def ratio(k):
        rs = []
        for rnd in sorted({r["round"] for r in runs}):
            a = [val(r, k) for r in runs if r["test"] == t and r["build"] == "A" and r["round"] == rnd]
            b = [val(r, k) for r in runs if r["test"] == t and r["build"] == "B" and r["round"] == rnd]
            if a and b and a[0] > 0:
                rs.append(b[0] / a[0])
        return "%.3f" % st.median(rs) if rs else "-"
    print(fmt % (t, "%.1f" % cell("A", "mbps"), "%.1f" % cell("B", "mbps"), ratio("mbps"),
                 "%.0f" % cell("A", "iops"), "%.0f" % cell("B", "iops"), ratio("iops"),
                 "%.2fms" % cell("A", "p99"), "%.2fms" % cell("B", "p99")))
loads = [r["load"] for r in runs]
if loads:
    print("load average during the runs: %.2f to %.2f (median %.2f)" %
          (min(loads), max(loads), st.median(loads)))
PY
[ "$failed" -eq 0 ] || { echo "bench-ab: some runs failed (see above)" >&2; exit 1; }
exit 0
