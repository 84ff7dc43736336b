#!/usr/bin/env bash
# The 4-bay NAS lab of issue 4 on one Linux machine (run as root).
#
# Builds a "NAS host" in its own network namespace joined to the root
# namespace by two veth links (198.18.1.1 <-> 198.18.1.2 and 198.18.2.1 <->
# 198.18.2.2, from 198.18.0.0/15, the benchmark range), each shaped with tc
# tbf to RATE (2.5 Gbit/s) in both directions, runs bin/rtgtd inside it with
# four HDD-modelled sparse member files (hdd = 260 MB/s, 8.5 ms, 7200 rpm),
# and drives it with bin/rtgt-bench from the root namespace through the
# published matrix (../shared/lab/seed-results.md, section 1):
#
#   RAID5, RAID6, RAID10 (4 members), one target on one link
#   the same pools with two targets (two volumes of the pool), one per link
#   2 x RAID1 (2 members each), one target per link
#   x  1 MiB sequential write qd 8, 1 MiB sequential read qd 8 (per session),
#      4 KiB random 70% read qd 32 over the same test data on every level
#      (--rand-span)
#
# Results: OUT/results.md (table beside the published figures, requirement
# checks, fairness), OUT/results.json (the same plus every rtgt-bench JSON),
# OUT/results.png (gnuplot bar chart). OUT defaults to var/lab.
#
# This script keeps what needs a shell and root: the namespace, the links,
# tc, the daemons and the runs. Every figure, check, table, JSON and the
# chart are scripts/lab/report.py's, from the rtgt-bench --json output of
# each run (one file per run) and the run's parameters (KEY=VALUE lines).
#
# Everything it creates (namespace, veths, qdiscs, rtgtd, member files, temp
# files) is removed on exit, Ctrl-C included. Only the two lab subnets carry
# traffic; nothing leaves the machine. One lab at a time (lock file).
set -u
set -o pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
PROG=lab.sh
ARGS_ORIG="$*"

usage() {
	cat <<'EOF'
usage: scripts/lab.sh [--links 1|2] [--rate RATE] [--quick] [--time N]
                      [--out DIR] [--dir DIR] [--member-size SIZE] [--span SIZE]
                      [--hdd MBPS:SEEK_MS:RPM | --no-hdd] [--write-cache on|off]
                      [--keep-logs]

Runs the 4-bay NAS lab (issue 4) in a network namespace as root and writes
OUT/results.md, OUT/results.json and OUT/results.png.

  --links 1|2          links to build and use (default 2); with 1 only the
                       one-link configurations run
  --rate RATE          tc rate of each link in each direction, e.g. 2.5gbit,
                       1gbit, 900mbit (default 2.5gbit)
  --quick              short runs, small members and spans (about 2-3 minutes)
  --time N             seconds per benchmark run (default 10, quick 3)
  --out DIR            where results go (default var/lab)
  --dir DIR            where the sparse member files go (default /dev/shm
                       when it has room, else /tmp)
  --member-size SIZE   sparse size of each member (default 16G, quick 4G)
  --span SIZE          region of each LUN the sequential runs use (default
                       1G, quick 256M)
  --rand-span SIZE|lun region of each LUN the random runs use: the same
                       amount of test data on every level, as the published
                       lab's 2 TB on 4 x 8 TB (default a sixteenth of the
                       four members together: 4G, quick 1G); lun: the whole
                       LUN
  --hdd M:S:R          HDD model of every member (default 260:8.5:7200)
  --no-hdd             no HDD model: members run at memory speed
  --write-cache on|off the modelled disks' volatile write cache (default
                       on: writes are acknowledged into a 64 MiB cache and
                       destaged later; off: write-through disks, as arrays
                       that care about power loss run them: every member
                       write costs head time before it completes, and a
                       write that arrives after the head idled waits for
                       its sector to come round, so sequential writes that
                       arrive at link rate lose rotations)
  --keep-logs          copy rtgtd logs into OUT/logs
  --nice N             niceness of rtgtd, rtgt-bench and the raw TCP probe
                       (default -10: other work on the machine, e.g. builds,
                       takes less CPU from the system under test; 0 = as is)
  --log-level LEVEL    rtgtd log level (default warn; info adds the HDD
                       model's accounting per member every 5 s: head busy
                       share, positioning share, seeks; use with --keep-logs)
  --calibrate-only     build the links, measure them (raw TCP with
                       scripts/lab/tcprate.py, then a memory-backed target),
                       print the figures and stop (no results files)
  --only LIST          run only these pools, comma separated: raid5, raid6,
                       raid10, 2xraid1 (default: all)
  --tbf-latency MS     tbf queue limit as a delay (default 2 ms: a deep queue only adds
                       round-trip time to every R2T of a write)
  --tbf-burst BYTES    tbf bucket (default: 1 ms of the rate, >= 64 KiB)
  --help               this text

SIZE takes K, M, G suffixes (powers of 1024). Exit status: 0 when every run
completed (requirement checks that fail are reported, not fatal), 1 when the
lab could not be built or a run failed, 2 on bad usage.
EOF
}

die() { echo "$PROG: $*" >&2; exit 1; }
bad_usage() { echo "$PROG: $*" >&2; echo "try: scripts/lab.sh --help" >&2; exit 2; }
note() { echo "$PROG: $*" >&2; }

to_bytes() {   # SIZE -> bytes, empty on a malformed size
	local v=$1 n
	n=${v%[KkMmGgTt]}
	[[ $n =~ ^[0-9]+$ ]] || return 0
	case $v in
	*[Kk]) echo $((n << 10)) ;; *[Mm]) echo $((n << 20)) ;;
	*[Gg]) echo $((n << 30)) ;; *[Tt]) echo $((n << 40)) ;;
	*) echo "$n" ;;
	esac
}

rate_bits() {   # tc-style rate (2.5gbit, 900mbit, 100kbit, 1000000bit) -> bit/s
	awk -v r="$1" 'BEGIN {
		r = tolower(r)
		if (!match(r, /^[0-9]+(\.[0-9]+)?/)) exit 1
		n = substr(r, 1, RLENGTH); u = substr(r, RLENGTH + 1)
		if (u == "gbit") n *= 1e9; else if (u == "mbit") n *= 1e6
		else if (u == "kbit") n *= 1e3; else if (u != "bit") exit 1
		if (n < 1e6) exit 1
		printf "%.0f\n", n }'
}

# ---------------------------------------------------------------- options
LINKS=2
RATE=2.5gbit
QUICK=0
TIME=
OUT=var/lab
DIR=
MEMBER_SIZE=
SPAN=
RSPAN=
HDD=260:8.5:7200
WCACHE=on
KEEP_LOGS=0
NICE=-10
LOG_LEVEL=warn
CAL_ONLY=0
ONLY=raid5,raid6,raid10,2xraid1
TBF_LAT=2
TBF_BURST=
while [ $# -gt 0 ]; do
	case $1 in
	--links) [ $# -ge 2 ] || bad_usage "--links needs 1 or 2"; LINKS=$2; shift 2 ;;
	--rate) [ $# -ge 2 ] || bad_usage "--rate needs a rate"; RATE=$2; shift 2 ;;
	--quick) QUICK=1; shift ;;
	--time) [ $# -ge 2 ] || bad_usage "--time needs seconds"; TIME=$2; shift 2 ;;
	--out) [ $# -ge 2 ] || bad_usage "--out needs a directory"; OUT=$2; shift 2 ;;
	--dir) [ $# -ge 2 ] || bad_usage "--dir needs a directory"; DIR=$2; shift 2 ;;
	--member-size) [ $# -ge 2 ] || bad_usage "--member-size needs a size"; MEMBER_SIZE=$2; shift 2 ;;
	--span) [ $# -ge 2 ] || bad_usage "--span needs a size"; SPAN=$2; shift 2 ;;
	--rand-span) [ $# -ge 2 ] || bad_usage "--rand-span needs a size or lun"; RSPAN=$2; shift 2 ;;
	--hdd) [ $# -ge 2 ] || bad_usage "--hdd needs MBPS:SEEK_MS:RPM"; HDD=$2; shift 2 ;;
	--no-hdd) HDD=; shift ;;
	--write-cache) [ $# -ge 2 ] || bad_usage "--write-cache needs on or off"; WCACHE=$2; shift 2 ;;
	--keep-logs) KEEP_LOGS=1; shift ;;
	--nice) [ $# -ge 2 ] || bad_usage "--nice needs a value"; NICE=$2; shift 2 ;;
	--log-level) [ $# -ge 2 ] || bad_usage "--log-level needs a level"; LOG_LEVEL=$2; shift 2 ;;
	--calibrate-only) CAL_ONLY=1; shift ;;
	--only) [ $# -ge 2 ] || bad_usage "--only needs a list"; ONLY=$2; shift 2 ;;
	--tbf-latency) [ $# -ge 2 ] || bad_usage "--tbf-latency needs ms"; TBF_LAT=$2; shift 2 ;;
	--tbf-burst) [ $# -ge 2 ] || bad_usage "--tbf-burst needs bytes"; TBF_BURST=$2; shift 2 ;;
	--help|-h) usage; exit 0 ;;
	*) bad_usage "unknown argument '$1'" ;;
	esac
done
case $LINKS in 1|2) ;; *) bad_usage "--links must be 1 or 2, not '$LINKS'" ;; esac
RATE_BPS=$(rate_bits "$RATE") || bad_usage "--rate '$RATE' is not a rate like 2.5gbit, 900mbit (>= 1mbit)"
if [ "$QUICK" -eq 1 ]; then
	: "${TIME:=3}" "${MEMBER_SIZE:=4G}" "${SPAN:=256M}"
else
	: "${TIME:=10}" "${MEMBER_SIZE:=16G}" "${SPAN:=1G}"
fi
WARM_TIME=2
SETTLE_TIME=3
for o in ${ONLY//,/ }; do
	case $o in raid5|raid6|raid10|2xraid1) ;; *) bad_usage "--only: unknown pool '$o' (raid5, raid6, raid10, 2xraid1)" ;; esac
done
want() { [[ ",$ONLY," == *",$1,"* ]]; }
[[ $TBF_LAT =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v l="$TBF_LAT" 'BEGIN { exit !(l >= 0.1 && l <= 1000) }' ||
	bad_usage "--tbf-latency must be 0.1..1000 ms, not '$TBF_LAT'"
[ -z "$TBF_BURST" ] || { [[ $TBF_BURST =~ ^[0-9]+$ ]] && [ "$TBF_BURST" -ge 16384 ]; } ||
	bad_usage "--tbf-burst must be bytes >= 16384, not '$TBF_BURST'"
[[ $NICE =~ ^-?[0-9]+$ ]] && [ "$NICE" -ge -20 ] && [ "$NICE" -le 19 ] ||
	bad_usage "--nice must be -20..19, not '$NICE'"
case $LOG_LEVEL in error|warn|info|debug) ;; *) bad_usage "--log-level must be error, warn, info or debug, not '$LOG_LEVEL'" ;; esac
[[ $TIME =~ ^[0-9]+$ ]] && [ "$TIME" -ge 1 ] && [ "$TIME" -le 3600 ] ||
	bad_usage "--time must be 1..3600 seconds, not '$TIME'"
member_b=$(to_bytes "$MEMBER_SIZE")
span_b=$(to_bytes "$SPAN")
[ -n "$member_b" ] && [ "$member_b" -ge $((256 << 20)) ] ||
	bad_usage "--member-size '$MEMBER_SIZE' must be a size >= 256M"
[ $((member_b % 4096)) -eq 0 ] || bad_usage "--member-size must be a multiple of 4K"
[ -n "$span_b" ] && [ "$span_b" -ge $((16 << 20)) ] && [ $((span_b % (1 << 20))) -eq 0 ] ||
	bad_usage "--span '$SPAN' must be a multiple of 1M, >= 16M"
# the smallest LUN is 40% of a 4-member RAID6/RAID10 pool: 0.8 member
[ "$span_b" -le $((member_b * 3 / 4)) ] ||
	bad_usage "--span must be at most 3/4 of --member-size (the smallest LUN is 40% of a RAID6 pool)"
# the published lab filled each LUN with 2 TB of test data (4 x 8 TB
# members): a sixteenth of the raw capacity, the same bytes on every level
[ -n "$RSPAN" ] || RSPAN="$((member_b / 4 >> 20))M"
RSPAN_ARGS=()
if [ "$RSPAN" != lun ]; then
	rspan_b=$(to_bytes "$RSPAN")
	[ -n "$rspan_b" ] && [ "$rspan_b" -ge $((16 << 20)) ] && [ $((rspan_b % (1 << 20))) -eq 0 ] &&
		[ "$rspan_b" -le $((member_b * 3 / 4)) ] ||
		bad_usage "--rand-span '$RSPAN' must be lun or a multiple of 1M, >= 16M, at most 3/4 of --member-size"
	RSPAN_ARGS=(--span "$rspan_b")
fi
HDD_MBPS='' HDD_SEEK='' HDD_RPM=''
if [ -n "$HDD" ]; then
	IFS=: read -r HDD_MBPS HDD_SEEK HDD_RPM extra <<<"$HDD"
	[[ $HDD_MBPS =~ ^[0-9]+(\.[0-9]+)?$ && $HDD_SEEK =~ ^[0-9]+(\.[0-9]+)?$ &&
		$HDD_RPM =~ ^[0-9]+$ && -z $extra ]] ||
		bad_usage "--hdd '$HDD' must be MBPS:SEEK_MS:RPM, e.g. 260:8.5:7200"
fi
case $WCACHE in
on) WCACHE_CONF=true ;;
off) WCACHE_CONF=false ;;
*) bad_usage "--write-cache '$WCACHE' must be on or off" ;;
esac

# ---------------------------------------------------------------- preconditions
[ "$(id -u)" -eq 0 ] || die "must run as root (it creates a network namespace, veth links and tc qdiscs); try: sudo scripts/lab.sh"
for t in ip tc awk sed grep truncate mktemp; do
	command -v "$t" >/dev/null || die "'$t' not found (install iproute2 / coreutils)"
done
command -v python3 >/dev/null || die "python3 not found: the report (scripts/lab/report.py) needs it"
REPORT=$ROOT/scripts/lab/report.py
RTGTD=$ROOT/bin/rtgtd
BENCH=$ROOT/bin/rtgt-bench
[ -x "$RTGTD" ] || die "$RTGTD missing: run make first"
[ -x "$BENCH" ] || die "$BENCH missing: run make first"
HAVE_GNUPLOT=1
command -v gnuplot >/dev/null || { HAVE_GNUPLOT=0; note "gnuplot not found: no PNG chart (apt-get install gnuplot-nox)"; }

# one lab at a time: a second one would add the same addresses
if command -v flock >/dev/null; then
	{ exec 9>/run/lock/rtgt-lab.lock; } 2>/dev/null || exec 9>/tmp/rtgt-lab.lock
	flock -n 9 || die "another lab is running (lock /run/lock/rtgt-lab.lock)"
fi
if ip -4 -o addr show | grep -Eq ' inet 198\.18\.(1|2)\.'; then
	die "198.18.1.0/24 or 198.18.2.0/24 is already configured in the root namespace (a lab left over, or another user): $(ip -4 -o addr show | grep -E ' inet 198\.18\.(1|2)\.' | awk '{print $2, $4}' | tr '\n' ' ')"
fi

mkdir -p "$OUT" || die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
if [ -z "$DIR" ]; then
	# worst case written per pool: two spans on RAID6 (x2) plus random writes
	need=$((span_b * 4 + (1 << 30)))
	shm_free=$(df -B1 --output=avail /dev/shm 2>/dev/null | tail -1)
	if [ -n "$shm_free" ] && [ "$shm_free" -gt $((need * 2)) ]; then DIR=/dev/shm; else DIR=/tmp; fi
fi
[ -d "$DIR" ] || die "--dir $DIR is not a directory"

# ---------------------------------------------------------------- state + cleanup
NS=rtgt-nas-$$
C1=rlc1-$$ N1=rln1-$$ C2=rlc2-$$ N2=rln2-$$
NAS1=198.18.1.1 CLI1=198.18.1.2 NAS2=198.18.2.1 CLI2=198.18.2.2
PORT=3260            # inside the lab namespace only: no clash with the host
work=
members_dir=
daemon_pid=
bench_pid=
ns_made=0

stop_daemon() {
	[ -n "$daemon_pid" ] || return 0
	kill -TERM "$daemon_pid" 2>/dev/null
	for _ in $(seq 150); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$daemon_pid" 2>/dev/null; then
		note "rtgtd ($daemon_pid) did not stop on SIGTERM within 15 s: killing it"
		kill -KILL "$daemon_pid" 2>/dev/null
	fi
	wait "$daemon_pid" 2>/dev/null
	daemon_pid=
}

cleanup() {
	trap "" INT TERM   # finish cleaning up even when hit again
	if [ -n "$bench_pid" ]; then
		kill -TERM "$bench_pid" 2>/dev/null
		wait "$bench_pid" 2>/dev/null
	fi
	stop_daemon
	if [ "$ns_made" -eq 1 ]; then
		# anything else still running in the lab namespace was started by us
		for p in $(ip netns pids "$NS" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
		ip link del "$C1" 2>/dev/null
		ip link del "$C2" 2>/dev/null
		ip netns del "$NS" 2>/dev/null
	fi
	[ -n "$members_dir" ] && rm -rf "$members_dir"
	[ -n "$work" ] && rm -rf "$work"
}
trap cleanup EXIT
trap 'echo; note "interrupted: cleaning up"; exit 130' INT TERM HUP

work=$(mktemp -d /tmp/rtgt-lab.XXXXXX) || die "cannot create a temp directory"
members_dir=$(mktemp -d "$DIR/rtgt-lab-members.XXXXXX") || die "cannot create a directory in $DIR"

# ---------------------------------------------------------------- network
# burst: 1 ms worth of the rate (>= 64 KiB) so one GSO segment always fits
# and TCP is not starved between token refills; latency caps the queue.
BURST=${TBF_BURST:-$(awk -v b="$RATE_BPS" 'BEGIN { x = int(b / 8 / 1000); if (x < 65536) x = 65536; print x }')}
shape() {   # dev [netns]
	local cmd=(tc)
	[ $# -ge 2 ] && cmd=(ip netns exec "$2" tc)
	"${cmd[@]}" qdisc replace dev "$1" root tbf rate "$RATE_BPS"bit burst "$BURST" latency "${TBF_LAT}ms"
}
link_up() {   # n client-dev nas-dev client-ip nas-ip
	ip link add "$2" type veth peer name "$3" || return 1
	ip link set "$3" netns "$NS" || return 1
	ip addr add "$4/24" dev "$2" || return 1
	ip link set "$2" up || return 1
	ip -n "$NS" addr add "$5/24" dev "$3" || return 1
	ip -n "$NS" link set "$3" up || return 1
	shape "$2" || return 1
	shape "$3" "$NS" || return 1
	# traffic to the NAS address must leave through this veth, nowhere else
	ip -o route get "$5" | grep -q " dev $2 " || { note "route to $5 does not use $2"; return 1; }
}
ip netns add "$NS" || die "cannot create network namespace $NS"
ns_made=1
ip -n "$NS" link set lo up || die "cannot bring up lo in $NS"
link_up 1 "$C1" "$N1" "$CLI1" "$NAS1" || die "cannot build link 1 ($C1 <-> $NS/$N1)"
if [ "$LINKS" -eq 2 ]; then
	link_up 2 "$C2" "$N2" "$CLI2" "$NAS2" || die "cannot build link 2 ($C2 <-> $NS/$N2)"
fi
note "namespace $NS: link1 $CLI1 -> $NAS1 ($C1)$([ "$LINKS" -eq 2 ] && echo ", link2 $CLI2 -> $NAS2 ($C2)"), tbf $RATE ($RATE_BPS bit/s, burst $BURST B) both directions"

# ---------------------------------------------------------------- daemon
# write_conf name level hdd(0|1) then pool/target lines on stdin are built here
IQN_BASE=iqn.2026-11.org.rtgt:lab
conf_daemon() {
	printf 'daemon = { workers = 2; control = "%s/rtgtd.sock"; log_level = "%s"; };\n' "$work" "$LOG_LEVEL"
}
conf_portals() {
	if [ "$LINKS" -eq 2 ]; then
		printf 'portals = ( { name = "nic1"; listen = "%s:%s"; }, { name = "nic2"; listen = "%s:%s"; } );\n' \
			"$NAS1" "$PORT" "$NAS2" "$PORT"
	else
		printf 'portals = ( { name = "nic1"; listen = "%s:%s"; } );\n' "$NAS1" "$PORT"
	fi
}
conf_pool() {   # name level hdd(0|1) member-names...
	local name=$1 level=$2 hdd=$3 m list=
	shift 3
	for m in "$@"; do list="$list${list:+, }\"$members_dir/$m.img\""; done
	printf '  { name = "%s"; level = "%s"; chunk = "64K"; members = ( %s );\n' "$name" "$level" "$list"
	printf '    create_size = "%sK"; direct_io = false;' $((member_b >> 10))
	if [ "$hdd" -eq 1 ] && [ -n "$HDD" ]; then
		printf '\n    hdd = { mbps = %s; avg_seek_ms = %s; rpm = %s; write_cache = %s; };' \
			"$HDD_MBPS" "$HDD_SEEK" "$HDD_RPM" "$WCACHE_CONF"
	fi
	printf ' }'
}
conf_target() {   # iqn portal pool volume size
	printf '  { iqn = "%s"; portals = ( "%s" ); allow = ( "ALL" );\n' "$1" "$2"
	printf '    luns = ( { lun = 0; pool = "%s"; volume = "%s"; size = "%s"; } ); }' "$3" "$4" "$5"
}

wait_portal() {   # ip: until rtgtd accepts on ip:PORT or dies
	for _ in $(seq 150); do
		kill -0 "$daemon_pid" 2>/dev/null || return 1
		(exec 3<>"/dev/tcp/$1/$PORT") 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

start_daemon() {   # conf-file
	rm -f "$members_dir"/*.img
	ip netns exec "$NS" nice -n "$NICE" "$RTGTD" -c "$1" > "$work/rtgtd.log" 2>&1 &
	daemon_pid=$!
	if ! wait_portal "$NAS1" || { [ "$LINKS" -eq 2 ] && ! wait_portal "$NAS2"; }; then
		sed 's/^/  rtgtd: /' "$work/rtgtd.log" | tail -20 >&2
		die "rtgtd did not start (config $1)"
	fi
}

finish_daemon() {   # label
	stop_daemon
	if [ "$KEEP_LOGS" -eq 1 ]; then
		mkdir -p "$OUT/logs" && cp "$work/rtgtd.log" "$OUT/logs/rtgtd-$1.log"
	fi
	if grep -q ' ERR\|error' "$work/rtgtd.log"; then
		note "rtgtd ($1) logged errors:"
		grep ' ERR\|error' "$work/rtgtd.log" | head -5 | sed 's/^/  /' >&2
	fi
	rm -f "$members_dir"/*.img
}

# ---------------------------------------------------------------- benchmark runs
# Each run's rtgt-bench --json output is RUNS/CONFIG.WORKLOAD.json (empty
# when the run failed); META holds the lab's parameters for the report.
RUNS=$work/runs
META=$work/meta
mkdir -p "$RUNS" || die "cannot create $RUNS"
: > "$META"
failed=0
url_of() { echo "iscsi://$1:$PORT/$2/0"; }
run_file() { echo "$RUNS/${1/|/.}.json"; }   # config|workload -> its file
meta() { printf '%s=%s\n' "$1" "$2" >> "$META"; }

# packets the tbf qdiscs dropped so far, client egress (writes) and NAS
# egress (reads), summed over the links: a run that makes TCP back off shows
# here
tbf_drops() {
	local c=0 n=0 d
	for d in "$C1" ${C2:+"$C2"}; do
		[ "$d" = "$C2" ] && [ "$LINKS" -ne 2 ] && continue
		c=$((c + $(tc -s qdisc show dev "$d" 2>/dev/null | grep -o 'dropped [0-9]*' | head -1 | awk '{print $2 + 0}') ))
	done
	for d in "$N1" ${N2:+"$N2"}; do
		[ "$d" = "$N2" ] && [ "$LINKS" -ne 2 ] && continue
		n=$((n + $(ip netns exec "$NS" tc -s qdisc show dev "$d" 2>/dev/null | grep -o 'dropped [0-9]*' | head -1 | awk '{print $2 + 0}') ))
	done
	echo "$c $n"
}

bench() {   # key label timeout-extra bench-args... (urls included)
	local key=$1 label=$2 extra=$3 rc d0 d1 file
	shift 3
	file=$(run_file "$key")
	d0=$(tbf_drops)
	# in the background so that a signal reaches the trap at once; timeout
	# bounds a run whose target stopped answering
	timeout -s TERM $((TIME + extra + 60)) nice -n "$NICE" "$BENCH" --json --quiet \
		--initiator-name "$IQN_BASE:client" "$@" > "$work/bench.out" 2> "$work/bench.err" &
	bench_pid=$!
	wait "$bench_pid"
	rc=$?
	bench_pid=
	cp "$work/bench.out" "$file"
	if [ "$rc" -ne 0 ] || [ ! -s "$file" ]; then
		note "$label failed (rtgt-bench exit $rc):"
		sed 's/^/  /' "$work/bench.err" | tail -8 >&2
		failed=1
	fi
	d1=$(tbf_drops)
	python3 "$REPORT" run-line "$file" "$label" \
		"$(( ${d1% *} - ${d0% *} )) $(( ${d1#* } - ${d0#* } ))" >&2
}

# the sequential read span: what the sequential write of the same sessions
# covered (it wraps at SPAN), so reads return written data, never holes
read_span() {   # seqwrite-key
	python3 "$REPORT" read-span "$(run_file "$1")" "$span_b"
}

run_config() {   # config-key label url...
	local cfg=$1 label=$2 span
	shift 2
	local urls=() u
	for u in "$@"; do urls+=(--url "$u"); done
	bench "$cfg|seqwrite" "$label seqwrite" 0 "${urls[@]}" \
		--pattern seqwrite --bs 1M --qd 8 --time "$TIME" --span "$span_b"
	span=$(read_span "$cfg|seqwrite")
	bench "$cfg|seqread" "$label seqread" 0 "${urls[@]}" \
		--pattern seqread --bs 1M --qd 8 --time "$TIME" --span "$span"
	# warm-up: the modelled disks' write caches hold up to 128 random
	# extents each; fill them first so the measured run sees the steady
	# state (every random write paying its destage), not a cache absorbing
	# the first few hundred writes
	bench "$cfg|randwarm" "$label randrw warm-up (not reported)" 0 "${urls[@]}" \
		--pattern randrw --rwmix 70 --bs 4K --qd 32 --time "$WARM_TIME" "${RSPAN_ARGS[@]}"
	bench "$cfg|randrw" "$label randrw" 0 "${urls[@]}" \
		--pattern randrw --rwmix 70 --bs 4K --qd 32 --time "$TIME" "${RSPAN_ARGS[@]}"
	# let the modelled disks destage the random writes still in their
	# caches (128 extents x ~12 ms each) before the next configuration's
	# sequential runs, as a disk left idle would; otherwise the next
	# sequential reads pay those seeks whenever a disk idles
	sleep "$SETTLE_TIME"
}

# Is the HDD model in this build? A 4 KiB random read at qd 1 costs a seek
# plus half a rotation (~10 ms) on a modelled disk, microseconds in memory.
HDD_ACTIVE=unknown
HDD_PROBE_MS=
probe_hdd() {   # url
	[ -n "$HDD" ] || { HDD_ACTIVE=off; return; }
	bench "probe|randread" "hdd model probe (4K rand read qd1)" 0 --url "$1" \
		--pattern randrw --rwmix 100 --bs 4K --qd 1 --time 1
	HDD_PROBE_MS=$(python3 "$REPORT" p50 "$(run_file "probe|randread")")
	if [ -z "$HDD_PROBE_MS" ]; then HDD_ACTIVE=unknown
	elif awk -v p="$HDD_PROBE_MS" 'BEGIN { exit !(p >= 2) }'; then HDD_ACTIVE=yes
	else HDD_ACTIVE=no
	fi
	note "HDD model active: $HDD_ACTIVE (4K random read p50 ${HDD_PROBE_MS:-?} ms)"
}

# key label links targets, in run order
add_cfg() { meta config "$1|$2|$3|$4"; }

t_start=$(date +%s)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
note "members: 4 x $MEMBER_SIZE sparse in $members_dir, span $SPAN, random span $RSPAN, $TIME s per run, hdd ${HDD:-none}${HDD:+, write cache $WCACHE}"

# ---- link calibration: raw TCP, then memory-backed RAID0 (no HDD model), 1 MiB qd 8
cal_time=$(( TIME < 5 ? TIME : 5 ))
RAW_W='' RAW_R=''
TCPRATE=$ROOT/scripts/lab/tcprate.py
if command -v python3 >/dev/null && [ -f "$TCPRATE" ]; then
	# one TCP stream over link 1, client -> NAS (what a write sends) and
	# NAS -> client (a read); the sink/source runs inside the namespace
	ip netns exec "$NS" nice -n "$NICE" python3 "$TCPRATE" serve "$NAS1" 5201 > "$work/tcprate.log" 2>&1 &
	raw_pid=$!
	for _ in $(seq 50); do (exec 3<>"/dev/tcp/$NAS1/5201") 2>/dev/null && break; sleep 0.1; done
	RAW_W=$(timeout $((cal_time + 20)) nice -n "$NICE" python3 "$TCPRATE" run "$NAS1" 5201 "$cal_time" send 2>>"$work/tcprate.log")
	RAW_R=$(timeout $((cal_time + 20)) nice -n "$NICE" python3 "$TCPRATE" run "$NAS1" 5201 "$cal_time" recv 2>>"$work/tcprate.log")
	kill "$raw_pid" 2>/dev/null; wait "$raw_pid" 2>/dev/null
	note "raw TCP over link 1 (one stream, $cal_time s): client->NAS ${RAW_W:-?} MB/s, NAS->client ${RAW_R:-?} MB/s"
else
	note "python3 or $TCPRATE missing: no raw TCP figure"
fi
{
	conf_daemon
	printf 'pools = (\n'; conf_pool mem raid0 0 c0 c1; printf '\n);\n'
	conf_portals
	printf 'targets = (\n'
	conf_target "$IQN_BASE:mem.a" nic1 mem a 40%
	[ "$LINKS" -eq 2 ] && { printf ',\n'; conf_target "$IQN_BASE:mem.b" nic2 mem b 40%; }
	printf '\n);\n'
} > "$work/mem.conf"
# the calibration pool is small: it only has to hold the calibration span
# (each 40% volume >= span: two members of 1.5 spans)
sed -i "s/create_size = \"[0-9]*K\"/create_size = \"$(( (span_b * 3 / 2 >> 10) + 4096 ))K\"/" "$work/mem.conf"
start_daemon "$work/mem.conf"
note "link calibration (memory-backed raid0, $cal_time s per run)"
save_time=$TIME; TIME=$cal_time
bench "cal1|seqwrite" "link1 raw seqwrite" 0 --url "$(url_of $NAS1 "$IQN_BASE:mem.a")" \
	--pattern seqwrite --bs 1M --qd 8 --time "$TIME" --span "$span_b"
bench "cal1|seqread" "link1 raw seqread" 0 --url "$(url_of $NAS1 "$IQN_BASE:mem.a")" \
	--pattern seqread --bs 1M --qd 8 --time "$TIME" --span "$(read_span "cal1|seqwrite")"
if [ "$LINKS" -eq 2 ]; then
	bench "cal2|seqwrite" "link1+2 raw seqwrite" 0 --url "$(url_of $NAS1 "$IQN_BASE:mem.a")" \
		--url "$(url_of $NAS2 "$IQN_BASE:mem.b")" --pattern seqwrite --bs 1M --qd 8 --time "$TIME" --span "$span_b"
	bench "cal2|seqread" "link1+2 raw seqread" 0 --url "$(url_of $NAS1 "$IQN_BASE:mem.a")" \
		--url "$(url_of $NAS2 "$IQN_BASE:mem.b")" --pattern seqread --bs 1M --qd 8 --time "$TIME" \
		--span "$(read_span "cal2|seqwrite")"
fi
TIME=$save_time
finish_daemon mem
if [ "$CAL_ONLY" -eq 1 ]; then
	note "calibration only: no results written"
	[ "$failed" -eq 0 ] || exit 1
	exit 0
fi

# ---- RAID5 / RAID6 / RAID10, one pool of four members: one volume per link
for level in raid5 raid6 raid10; do
	want "$level" || continue
	{
		conf_daemon
		printf 'pools = (\n'; conf_pool nas "$level" 1 d0 d1 d2 d3; printf '\n);\n'
		conf_portals
		printf 'targets = (\n'
		if [ "$LINKS" -eq 2 ]; then
			conf_target "$IQN_BASE:$level.a" nic1 nas a 40%; printf ',\n'
			conf_target "$IQN_BASE:$level.b" nic2 nas b 40%
		else
			conf_target "$IQN_BASE:$level.a" nic1 nas a 80%
		fi
		printf '\n);\n'
	} > "$work/$level.conf"
	note "$level: 4 members$([ "$LINKS" -eq 2 ] && echo ", volumes a (40%) on nic1 and b (40%) on nic2" || echo ", volume a (80%) on nic1")"
	start_daemon "$work/$level.conf"
	ua=$(url_of $NAS1 "$IQN_BASE:$level.a")
	[ "$HDD_ACTIVE" = unknown ] && probe_hdd "$ua"
	add_cfg "$level-1L" "${level^^}, 1 target, 1 link" 1 1
	run_config "$level-1L" "$level 1 link" "$ua"
	if [ "$LINKS" -eq 2 ]; then
		add_cfg "$level-2L" "${level^^}, 2 targets on 1 pool, 2 links" 2 2
		run_config "$level-2L" "$level 2 targets 2 links" "$ua" "$(url_of $NAS2 "$IQN_BASE:$level.b")"
	fi
	finish_daemon "$level"
done

# ---- 2 x RAID1, one target per pool and link
if [ "$LINKS" -eq 2 ] && want 2xraid1; then
	{
		conf_daemon
		printf 'pools = (\n'
		conf_pool m1 raid1 1 d0 d1; printf ',\n'
		conf_pool m2 raid1 1 d2 d3; printf '\n);\n'
		conf_portals
		printf 'targets = (\n'
		conf_target "$IQN_BASE:raid1.a" nic1 m1 a 80%; printf ',\n'
		conf_target "$IQN_BASE:raid1.b" nic2 m2 b 80%
		printf '\n);\n'
	} > "$work/raid1x2.conf"
	note "2 x raid1: pools m1 (d0,d1) and m2 (d2,d3), a (80% of m1) on nic1, b (80% of m2) on nic2"
	start_daemon "$work/raid1x2.conf"
	[ "$HDD_ACTIVE" = unknown ] && probe_hdd "$(url_of $NAS1 "$IQN_BASE:raid1.a")"
	add_cfg "2xraid1-2L" "2 x RAID1, 1 target each, 2 links" 2 2
	run_config "2xraid1-2L" "2xraid1 2 links" "$(url_of $NAS1 "$IQN_BASE:raid1.a")" \
		"$(url_of $NAS2 "$IQN_BASE:raid1.b")"
	finish_daemon raid1x2
fi
t_total=$(( $(date +%s) - t_start ))
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

# ---------------------------------------------------------------- report
meta args "$ARGS_ORIG"
meta rev "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
meta host "$(uname -sr), $(nproc) cores"
meta seconds "$t_total"
meta load_start "$LOAD_START"
meta load_end "$LOAD_END"
meta links "$LINKS"
meta rate "$RATE"
meta rate_bps "$RATE_BPS"
meta tbf_burst "$BURST"
meta tbf_latency "$TBF_LAT"
meta quick "$QUICK"
meta time "$TIME"
meta member_size "$MEMBER_SIZE"
meta member_bytes "$member_b"
meta dir "$DIR"
meta span "$SPAN"
meta span_bytes "$span_b"
meta rand_span "$RSPAN"
meta hdd "$HDD"
meta hdd_mbps "$HDD_MBPS"
meta hdd_seek "$HDD_SEEK"
meta hdd_rpm "$HDD_RPM"
meta write_cache "$WCACHE"
meta hdd_active "$HDD_ACTIVE"
meta hdd_probe_ms "$HDD_PROBE_MS"
meta raw_w "$RAW_W"
meta raw_r "$RAW_R"
meta nice "$NICE"
chart=()
[ "$HAVE_GNUPLOT" -eq 1 ] || chart=(--no-chart)
# prints results.md; 3: only the chart failed (said why)
python3 "$REPORT" report --runs "$RUNS" --meta "$META" --out "$OUT" "${chart[@]}" || failed=1
note "results: $OUT/results.md $OUT/results.json$([ "$HAVE_GNUPLOT" -eq 1 ] && echo " $OUT/results.png") ($t_total s)"
[ "$failed" -eq 0 ] || { note "some runs failed (see above)"; exit 1; }
exit 0
