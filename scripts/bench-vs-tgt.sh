#!/usr/bin/env bash
# Benchmarks rtgtd against Debian's tgtd side by side, in one run, on the
# same memory-backed storage (/dev/shm) and with the same client
# (bin/rtgt-bench): 1 MiB sequential write and read at qd 8, 4 KiB random
# 70/30 at qd 32 (one session), 4 KiB random read at qd 32 with 4 sessions
# (2 per portal where the target has two) and 4 KiB random read at qd 1,
# alternating between the two targets in every round; before each round the
# single-stream loopback TCP limit (iperf3, 1 MiB writes). For each run it
# records the target process's CPU time (utime + stime of every thread, from
# /proc/PID/stat, io_uring and tgt worker threads included) and per thread
# name (rtgtd's worker 0 is its main thread "rtgtd", the others
# "rtgtd-wN"). It prints the
# medians over the rounds of IOPS, MB/s, CPU-seconds, IOPS per CPU-second and
# p99 of both, the median of the rounds' rtgt/tgt ratios, and the load
# average. Everything it creates is removed on exit (also on Ctrl-C).
#
# env: TIME      seconds per run (10)
#      SIZE      backing storage per target (1G); rtgt splits it over MEMBERS
#      SPAN      region the benchmark uses on both LUNs (512M, <= LUN size)
#      LEVEL     rtgt pool level (raid0)      MEMBERS  rtgt member files (2)
#      WORKERS   rtgtd reactor threads (2)
#      PORT_TGT / PORT_RTGT   iSCSI ports (random in 4000-8999 by default)
#      ROUNDS    how many times each test alternates (3)
#      TESTS     space-separated subset of the test names (all)
#      JSON_OUT  also write one JSON line per run (result, CPU seconds) to this file
set -u
cd "$(dirname "$0")/.."

TIME=${TIME:-10}
SIZE=${SIZE:-1G}
SPAN=${SPAN:-512M}
LEVEL=${LEVEL:-raid0}
MEMBERS=${MEMBERS:-2}
WORKERS=${WORKERS:-2}
ROUNDS=${ROUNDS:-3}
TESTS=${TESTS:-"seqwrite-1M-qd8 seqread-1M-qd8 randrw70-4K-qd32 randread-4K-qd32-4s randread-4K-qd1"}
JSON_OUT=${JSON_OUT:-}
base=$((4000 + RANDOM % 4900))
PORT_TGT=${PORT_TGT:-$base}
PORT_RTGT=${PORT_RTGT:-$((base + 1))}
TGT_CTL=${TGT_CTL:-$((base + 2))}      # tgtd's management channel number
BENCH=${BENCH:-bin/rtgt-bench}
RTGTD=${RTGTD:-bin/rtgtd}
RTGT_LUN=${RTGT_LUN:-0}
IQN_TGT=iqn.2026-11.org.rtgt:bench-tgt
IQN_RTGT=iqn.2026-11.org.rtgt:bench-rtgt

die() { echo "bench-vs-tgt: $*" >&2; exit 1; }

for p in "$PORT_TGT" "$PORT_RTGT"; do
	case $p in 3260|3261) die "port $p is reserved, pick another";; esac
done
command -v tgtd >/dev/null && command -v tgtadm >/dev/null || die "tgtd/tgtadm not installed (apt-get install tgt)"
command -v python3 >/dev/null || die "python3 not installed (scripts/deps.sh)"
[ -x "$BENCH" ] || die "$BENCH missing: run make first"
[ -x "$RTGTD" ] || die "$RTGTD missing: run make first"
[ "$MEMBERS" -ge 1 ] 2>/dev/null || die "MEMBERS must be a number >= 1"

to_bytes() {
	local v=$1 n
	n=${v%[KkMmGgTt]}
	case $v in
	*[Kk]) echo $((n << 10)) ;; *[Mm]) echo $((n << 20)) ;;
	*[Gg]) echo $((n << 30)) ;; *[Tt]) echo $((n << 40)) ;;
	*) echo "$v" ;;
	esac
}
size_b=$(to_bytes "$SIZE")
span_b=$(to_bytes "$SPAN")
[ "$span_b" -gt 0 ] && [ "$span_b" -le "$size_b" ] 2>/dev/null || die "SPAN must be 1..SIZE"
member_b=$(( (size_b / MEMBERS) >> 20 << 20 ))

shm=$(mktemp -d /dev/shm/rtgt-bench.XXXXXX) || die "cannot create a directory in /dev/shm"
work=$(mktemp -d /tmp/rtgt-bench.XXXXXX) || die "cannot create a temp directory"
tgt_pid=
rtgt_pid=
iperf_pid=
cleanup() {
	trap "" INT TERM   # finish cleaning up even when hit again
	if [ -n "$rtgt_pid" ]; then
		kill -TERM "$rtgt_pid" 2>/dev/null
		for _ in $(seq 100); do kill -0 "$rtgt_pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$rtgt_pid" 2>/dev/null
		wait "$rtgt_pid" 2>/dev/null
	fi
	if [ -n "$tgt_pid" ]; then
		# tgtd does not stop on SIGTERM while it has targets; ask it.
		tgtadm -C "$TGT_CTL" --op delete --mode system >/dev/null 2>&1
		for _ in $(seq 30); do kill -0 "$tgt_pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$tgt_pid" 2>/dev/null
		wait "$tgt_pid" 2>/dev/null
	fi
	if [ -n "$iperf_pid" ]; then
		kill -TERM "$iperf_pid" 2>/dev/null
		wait "$iperf_pid" 2>/dev/null
	fi
	rm -rf "$shm" "$work"
}
trap cleanup EXIT
trap 'echo "bench-vs-tgt: interrupted" >&2; exit 130' INT TERM

wait_port() {   # pid port
	for _ in $(seq 100); do
		kill -0 "$1" 2>/dev/null || return 1
		(exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# ---- tgtd: one target, one LUN backed by a /dev/shm file (rdwr) ----
truncate -s "$size_b" "$shm/tgt.img" || die "cannot create $shm/tgt.img"
tgtd -f -C "$TGT_CTL" --iscsi "portal=127.0.0.1:$PORT_TGT,portal=127.0.0.2:$PORT_TGT" > "$work/tgtd.log" 2>&1 &
tgt_pid=$!
wait_port "$tgt_pid" "$PORT_TGT" || { cat "$work/tgtd.log" >&2; die "tgtd did not start on port $PORT_TGT"; }
for _ in $(seq 50); do
	tgtadm -C "$TGT_CTL" --op show --mode target >/dev/null 2>&1 && break
	sleep 0.1
done
tgtadm -C "$TGT_CTL" --lld iscsi --op new --mode target --tid 1 -T "$IQN_TGT" &&
tgtadm -C "$TGT_CTL" --lld iscsi --op new --mode logicalunit --tid 1 --lun 1 \
	-b "$shm/tgt.img" --bstype rdwr &&
tgtadm -C "$TGT_CTL" --lld iscsi --op bind --mode target --tid 1 -I ALL ||
	die "tgtadm could not configure tgtd"

# ---- rtgtd: one pool of MEMBERS files in /dev/shm, one target ----
members=
for i in $(seq 0 $((MEMBERS - 1))); do
	members="$members${members:+, }\"$shm/r$i.img\""
done
cat > "$work/rtgt.conf" <<CONF
daemon = { workers = $WORKERS; control = "$work/rtgtd.sock"; log_level = "warn"; };
pools = ( { name = "shm"; level = "$LEVEL"; chunk = "64K"; members = ( $members );
            create_size = "$((member_b >> 20))M"; } );
portals = ( { name = "lo"; listen = "127.0.0.1:$PORT_RTGT"; },
            { name = "lo2"; listen = "127.0.0.2:$PORT_RTGT"; } );
targets = ( { iqn = "$IQN_RTGT"; portals = ( "lo", "lo2" );
              luns = ( { lun = 0; pool = "shm"; volume = "bench"; size = "100%"; } );
              allow = ( "ALL" ); } );
CONF
"$RTGTD" -c "$work/rtgt.conf" > "$work/rtgtd.log" 2>&1 &
rtgt_pid=$!
wait_port "$rtgt_pid" "$PORT_RTGT" || { cat "$work/rtgtd.log" >&2; die "rtgtd did not start on port $PORT_RTGT"; }

URL_TGT="iscsi://127.0.0.1:$PORT_TGT/$IQN_TGT/1"
URL_RTGT="iscsi://127.0.0.1:$PORT_RTGT/$IQN_RTGT/$RTGT_LUN"
# second portal of each (tgtd listens on both addresses, like rtgtd)
URL2_TGT="iscsi://127.0.0.2:$PORT_TGT/$IQN_TGT/1"
URL2_RTGT="iscsi://127.0.0.2:$PORT_RTGT/$IQN_RTGT/$RTGT_LUN"
(exec 3<>"/dev/tcp/127.0.0.2/$PORT_TGT") 2>/dev/null || URL2_TGT=$URL_TGT

# ---- runs ----
runs="$work/runs.jsonl"
: > "$runs"
failed=0
clk_tck=$(getconf CLK_TCK)
cpu_ticks() {   # pid: utime + stime of all its threads, in clock ticks
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }
	s=${s##*) }    # after the command name
	awk '{ print $12 + $13 }' <<<"$s"
}
loadavg() { cut -d' ' -f1 /proc/loadavg; }
thread_ticks() {   # pid: "name ticks" per thread (a thread id in a name dropped)
	local t s
	for t in /proc/"$1"/task/*; do
		s=$(cat "$t/stat" 2>/dev/null) || continue
		printf '%s %s\n' "$(sed -E 's/-[0-9]{3,}$//; s/ /_/g' "$t/comm")" \
			"$(awk '{ print $12 + $13 }' <<<"${s##*) }")"
	done
}

run() {   # name round pid test-args...
	local name=$1 round=$2 pid=$3 out c0 c1 cpu urls u
	shift 3
	case $TEST in
	*-4s) if [ "$name" = tgt ]; then urls="$URL_TGT $URL2_TGT $URL_TGT $URL2_TGT"
	      else urls="$URL_RTGT $URL2_RTGT $URL_RTGT $URL2_RTGT"; fi ;;
	*) if [ "$name" = tgt ]; then urls=$URL_TGT; else urls=$URL_RTGT; fi ;;
	esac
	local uargs=()
	for u in $urls; do uargs+=(--url "$u"); done
	c0=$(cpu_ticks "$pid")
	thread_ticks "$pid" > "$work/th0"
	if ! out=$("$BENCH" "${uargs[@]}" --span "$SPAN" --time "$TIME" --json --quiet "$@" \
		2> "$work/bench.err"); then
		echo "bench-vs-tgt: $name $TEST failed:" >&2
		cat "$work/bench.err" >&2
		failed=1
		out=
	fi
	c1=$(cpu_ticks "$pid")
	thread_ticks "$pid" > "$work/th1"
	cpu=$(awk -v a="$c0" -v b="$c1" -v t="$clk_tck" 'BEGIN { printf "%.2f", (b - a) / t }')
	# CPU seconds per thread name over the run (threads that ended during
	# it, like idle io_uring workers, count in cpu_s only)
	threads=$(awk -v t="$clk_tck" 'NR == FNR { a[$1] += $2; next } { b[$1] += $2 }
		END { s = ""; for (k in b) { s = s (s ? "," : "") sprintf("\"%s\":%.2f", k, (b[k] - a[k]) / t) }
		      print "{" s "}" }' "$work/th0" "$work/th1")
	printf '{"target":"%s","test":"%s","round":%d,"cpu_s":%s,"threads":%s,"load":%s,"result":%s}\n' \
		"$name" "$TEST" "$round" "$cpu" "$threads" "$(loadavg)" "${out:-null}" >> "$runs"
	python3 -c 'import json,sys
r=json.loads(sys.argv[1]); t=(r["result"] or {}).get("total") or {}
i=t.get("iops",0); c=r["cpu_s"]
print("  %-5s %-22s %9.1f MB/s %9.0f IOPS  cpu %6.2f s  %8.0f IOPS/cpu-s  p99 %7.3f ms" % (
    r["target"], r["test"], t.get("mbps",0), i, c, i / c if c > 0 else 0,
    t.get("lat_ms",{}).get("p99",0)))' "$(tail -n 1 "$runs")" >&2
}

tcp_limit() {   # round: one iperf3 stream over loopback, 1 MiB writes
	local round=$1 port out
	command -v iperf3 >/dev/null || return 0
	port=$((PORT_RTGT + 10))
	iperf3 -s -1 -p "$port" > /dev/null 2>&1 &
	iperf_pid=$!
	for _ in $(seq 50); do   # listening? (a probe connection would be its one client)
		ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && break
		sleep 0.1
	done
	out=$(iperf3 -c 127.0.0.1 -p "$port" -t "$TIME" -l 1M -J 2>/dev/null)
	wait "$iperf_pid" 2>/dev/null
	iperf_pid=
	python3 -c 'import json,sys
try:
    j=json.loads(sys.argv[1]); mbps=j["end"]["sum_received"]["bits_per_second"]/8e6
except Exception:
    sys.exit(0)
print(json.dumps({"target":"tcp","test":"tcp-1stream","round":int(sys.argv[2]),"cpu_s":0,
    "load":float(open("/proc/loadavg").read().split()[0]),"result":{"total":{"mbps":mbps}}}))
print("  tcp   single stream (iperf3)  %9.1f MB/s" % mbps, file=sys.stderr)' "$out" "$round" >> "$runs"
}

args_for() {
	case $1 in
	seqwrite-1M-qd8) echo "--pattern seqwrite --bs 1M --qd 8" ;;
	seqread-1M-qd8) echo "--pattern seqread --bs 1M --qd 8" ;;
	randrw70-4K-qd32) echo "--pattern randrw --rwmix 70 --bs 4K --qd 32" ;;
	randread-4K-qd32-4s) echo "--pattern randrw --rwmix 100 --bs 4K --qd 32" ;;
	randread-4K-qd1) echo "--pattern randrw --rwmix 100 --bs 4K --qd 1" ;;
	*) return 1 ;;
	esac
}
for TEST in $TESTS; do
	args_for "$TEST" > /dev/null || die "unknown test $TEST"
done

echo "bench-vs-tgt: tgtd on :$PORT_TGT, rtgtd ($LEVEL x$MEMBERS, $WORKERS workers) on :$PORT_RTGT," \
	"storage $SIZE each in $shm, span $SPAN, $TIME s per run, $ROUNDS round(s), $(nproc) cores," \
	"load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for r in $(seq "$ROUNDS"); do
	tcp_limit "$r"
	for TEST in $TESTS; do
		# alternate which target goes first so neither always runs warm
		if [ $((r % 2)) -eq 1 ]; then
			run tgt "$r" "$tgt_pid" $(args_for "$TEST")
			run rtgt "$r" "$rtgt_pid" $(args_for "$TEST")
		else
			run rtgt "$r" "$rtgt_pid" $(args_for "$TEST")
			run tgt "$r" "$tgt_pid" $(args_for "$TEST")
		fi
	done
done
[ -n "$JSON_OUT" ] && cat "$runs" >> "$JSON_OUT"

python3 - "$runs" "$WORKERS" <<'PY'
import json, sys, statistics as st
runs = [json.loads(l) for l in open(sys.argv[1])]
workers = int(sys.argv[2])
def med(v):
    return st.median(v) if v else 0.0
def get(r, k):
    t = (r["result"] or {}).get("total") or {}
    if k == "p99":
        return t.get("lat_ms", {}).get("p99", 0.0)
    if k == "ipc":
        return t.get("iops", 0.0) / r["cpu_s"] if r["cpu_s"] > 0 else 0.0
    if k == "cpu":
        return r["cpu_s"]
    return t.get(k, 0.0)
tests = []
for r in runs:
    if r["target"] != "tcp" and r["test"] not in tests:
        tests.append(r["test"])
def cell(test, tgt, k):
    return med([get(r, k) for r in runs if r["test"] == test and r["target"] == tgt])
def ratio(test, k):
    rs = []
    for rnd in sorted({r["round"] for r in runs}):
        a = [get(r, k) for r in runs if r["test"] == test and r["target"] == "tgt" and r["round"] == rnd]
        b = [get(r, k) for r in runs if r["test"] == test and r["target"] == "rtgt" and r["round"] == rnd]
        if a and b and a[0] > 0:
            rs.append(b[0] / a[0])
    return "%.2f" % med(rs) if rs else "-"
print("\nmedians of %d round(s); ratio = median of the rounds' rtgt/tgt" %
      len({r["round"] for r in runs}))
hdr = ("test", "tgt IOPS", "rtgt IOPS", "ratio", "tgt MB/s", "rtgt MB/s", "ratio",
       "tgt cpu-s", "rtgt cpu-s", "tgt IOPS/cpu-s", "rtgt IOPS/cpu-s", "ratio", "tgt p99", "rtgt p99")
fmt = "%-20s %9s %9s %6s %9s %9s %6s %9s %10s %14s %15s %6s %9s %9s"
print(fmt % hdr)
for t in tests:
    print(fmt % (t, "%.0f" % cell(t, "tgt", "iops"), "%.0f" % cell(t, "rtgt", "iops"), ratio(t, "iops"),
                 "%.1f" % cell(t, "tgt", "mbps"), "%.1f" % cell(t, "rtgt", "mbps"), ratio(t, "mbps"),
                 "%.2f" % cell(t, "tgt", "cpu"), "%.2f" % cell(t, "rtgt", "cpu"),
                 "%.0f" % cell(t, "tgt", "ipc"), "%.0f" % cell(t, "rtgt", "ipc"), ratio(t, "ipc"),
                 "%.2fms" % cell(t, "tgt", "p99"), "%.2fms" % cell(t, "rtgt", "p99")))
tcp = [get(r, "mbps") for r in runs if r["target"] == "tcp"]
if tcp:
    m = med(tcp)
    line = "single-stream loopback TCP (iperf3, 1 MiB writes): %.1f MB/s" % m
    sr = cell("seqread-1M-qd8", "rtgt", "mbps")
    if sr:
        line += "; rtgt seqread-1M-qd8 = %.0f%% of it, tgt %.0f%%" % (
            100 * sr / m, 100 * cell("seqread-1M-qd8", "tgt", "mbps") / m)
    print(line)
else:
    print("single-stream loopback TCP: iperf3 not installed (scripts/deps.sh), not measured")
if "randread-4K-qd32-4s" in tests:
    t4 = [r for r in runs if r["test"] == "randread-4K-qd32-4s" and r["target"] == "rtgt"]
    names = sorted({k for r in t4 for k in r.get("threads", {})})
    split = ", ".join("%s %.2f" % (k, med([r.get("threads", {}).get(k, 0.0) for r in t4]))
                      for k in names)
    print("randread-4K-qd32-4s: rtgt %.0f IOPS per worker (%d workers; CPU-s per thread: %s), "
          "tgt %.0f IOPS in all" % (cell("randread-4K-qd32-4s", "rtgt", "iops") / workers, workers,
                                    split, cell("randread-4K-qd32-4s", "tgt", "iops")))
loads = [r["load"] for r in runs]
print("load average during the runs: %.2f to %.2f (median %.2f)" % (min(loads), max(loads), med(loads)))
PY
[ "$failed" -eq 0 ] || { echo "bench-vs-tgt: some runs failed (see above)" >&2; exit 1; }
exit 0
