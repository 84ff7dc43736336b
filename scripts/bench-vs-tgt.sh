#!/usr/bin/env bash
# Benchmarks rtgtd against Debian's tgtd side by side, in one run, on the
# same memory-backed storage (/dev/shm) and with the same client
# (bin/rtgt-bench): 1 MiB sequential write qd 8, 1 MiB sequential read qd 8,
# 4 KiB random 70% read qd 32, alternating between the two targets, then a
# table of MB/s and IOPS with the rtgt/tgt ratio. Everything it creates is
# removed on exit (also on Ctrl-C).
#
# env: TIME      seconds per run (10)
#      SIZE      backing storage per target (1G); rtgt splits it over MEMBERS
#      SPAN      region the benchmark uses on both LUNs (512M, <= LUN size)
#      LEVEL     rtgt pool level (raid0)      MEMBERS  rtgt member files (2)
#      WORKERS   rtgtd reactor threads (2)
#      PORT_TGT / PORT_RTGT   iSCSI ports (random in 4000-8999 by default)
#      ROUNDS    how many times each test alternates (1)
#      JSON_OUT  also write the raw rtgt-bench JSON lines to this file
set -u
cd "$(dirname "$0")/.."

TIME=${TIME:-10}
SIZE=${SIZE:-1G}
SPAN=${SPAN:-512M}
LEVEL=${LEVEL:-raid0}
MEMBERS=${MEMBERS:-2}
WORKERS=${WORKERS:-2}
ROUNDS=${ROUNDS:-1}
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
tgtd -f -C "$TGT_CTL" --iscsi "portal=127.0.0.1:$PORT_TGT" > "$work/tgtd.log" 2>&1 &
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
portals = ( { name = "lo"; listen = "127.0.0.1:$PORT_RTGT"; } );
targets = ( { iqn = "$IQN_RTGT"; portals = ( "lo" );
              luns = ( { lun = 0; pool = "shm"; volume = "bench"; size = "100%"; } );
              allow = ( "ALL" ); } );
CONF
"$RTGTD" -c "$work/rtgt.conf" > "$work/rtgtd.log" 2>&1 &
rtgt_pid=$!
wait_port "$rtgt_pid" "$PORT_RTGT" || { cat "$work/rtgtd.log" >&2; die "rtgtd did not start on port $PORT_RTGT"; }

URL_TGT="iscsi://127.0.0.1:$PORT_TGT/$IQN_TGT/1"
URL_RTGT="iscsi://127.0.0.1:$PORT_RTGT/$IQN_RTGT/$RTGT_LUN"

# ---- runs ----
declare -A mbps iops p99
failed=0
run() {   # name url test-args...
	local name=$1 url=$2 out key
	shift 2
	key="$name/$TEST"
	if ! out=$("$BENCH" --url "$url" --span "$SPAN" --time "$TIME" --json --quiet "$@" \
		2> "$work/bench.err"); then
		echo "bench-vs-tgt: $name $TEST failed:" >&2
		cat "$work/bench.err" >&2
		failed=1
	fi
	[ -n "$JSON_OUT" ] && printf '{"target":"%s","test":"%s","result":%s}\n' \
		"$name" "$TEST" "${out:-null}" >> "$JSON_OUT"
	# total.mbps / total.iops / total.lat_ms.p99 out of the one-line JSON
	local m i l
	m=$(sed -n 's/.*"total":{"mbps":\([0-9.]*\),"iops":\([0-9.]*\),"lat_ms":{"p50":[0-9.]*,"p99":\([0-9.]*\).*/\1/p' <<<"$out")
	i=$(sed -n 's/.*"total":{"mbps":\([0-9.]*\),"iops":\([0-9.]*\),"lat_ms":{"p50":[0-9.]*,"p99":\([0-9.]*\).*/\2/p' <<<"$out")
	l=$(sed -n 's/.*"total":{"mbps":\([0-9.]*\),"iops":\([0-9.]*\),"lat_ms":{"p50":[0-9.]*,"p99":\([0-9.]*\).*/\3/p' <<<"$out")
	# several rounds: keep the sum, divided at print time
	mbps[$key]=$(awk -v a="${mbps[$key]:-0}" -v b="${m:-0}" 'BEGIN{print a+b}')
	iops[$key]=$(awk -v a="${iops[$key]:-0}" -v b="${i:-0}" 'BEGIN{print a+b}')
	p99[$key]=$(awk -v a="${p99[$key]:-0}" -v b="${l:-0}" 'BEGIN{print a+b}')
	printf '  %-5s %-26s %9.1f MB/s %9.0f IOPS  p99 %7.3f ms\n' "$name" "$TEST" \
		"${m:-0}" "${i:-0}" "${l:-0}" >&2
}

tests=("seqwrite-1M-qd8" "seqread-1M-qd8" "randrw70-4K-qd32")
args_for() {
	case $1 in
	seqwrite-1M-qd8) echo "--pattern seqwrite --bs 1M --qd 8" ;;
	seqread-1M-qd8) echo "--pattern seqread --bs 1M --qd 8" ;;
	randrw70-4K-qd32) echo "--pattern randrw --rwmix 70 --bs 4K --qd 32" ;;
	esac
}

echo "bench-vs-tgt: tgtd on :$PORT_TGT, rtgtd ($LEVEL x$MEMBERS, $WORKERS workers) on :$PORT_RTGT," \
	"storage $SIZE each in $shm, span $SPAN, $TIME s per run, $ROUNDS round(s)" >&2
for r in $(seq "$ROUNDS"); do
	for TEST in "${tests[@]}"; do
		# alternate which target goes first so neither always runs warm
		if [ $((r % 2)) -eq 1 ]; then
			run tgt "$URL_TGT" $(args_for "$TEST")
			run rtgt "$URL_RTGT" $(args_for "$TEST")
		else
			run rtgt "$URL_RTGT" $(args_for "$TEST")
			run tgt "$URL_TGT" $(args_for "$TEST")
		fi
	done
done

printf '\n%-18s %11s %11s %7s %11s %11s %7s %9s %9s\n' test "tgt MB/s" "rtgt MB/s" ratio \
	"tgt IOPS" "rtgt IOPS" ratio "tgt p99" "rtgt p99"
for TEST in "${tests[@]}"; do
	awk -v t="$TEST" -v n="$ROUNDS" -v tm="${mbps[tgt/$TEST]}" -v rm="${mbps[rtgt/$TEST]}" \
		-v ti="${iops[tgt/$TEST]}" -v ri="${iops[rtgt/$TEST]}" \
		-v tl="${p99[tgt/$TEST]}" -v rl="${p99[rtgt/$TEST]}" 'BEGIN {
		tm /= n; rm /= n; ti /= n; ri /= n; tl /= n; rl /= n
		printf "%-18s %11.1f %11.1f %7s %11.0f %11.0f %7s %7.2fms %7.2fms\n", t, tm, rm,
			(tm > 0 ? sprintf("%.2f", rm / tm) : "-"), ti, ri,
			(ti > 0 ? sprintf("%.2f", ri / ti) : "-"), tl, rl }'
done
[ "$failed" -eq 0 ] || { echo "bench-vs-tgt: some runs failed (see above)" >&2; exit 1; }
exit 0
