#!/usr/bin/env bash
# scripts/bench-raid.sh - RAID engine throughput over iSCSI on memory-backed
# members: 1 MiB sequential writes (then reads) to a RAID0, a RAID5 and a
# RAID6 pool of the same four /dev/shm files' size, through bin/rtgtd and
# bin/rtgt-bench, plus a rebuild at a given cap. Prints one line per case and
# the RAID5/RAID0 and RAID6/RAID0 ratios (goals: >= 0.70 and >= 0.60).
#
#   scripts/bench-raid.sh [--time S] [--size MEMBER_SIZE] [--qd N] [--port P]
set -euo pipefail
cd "$(dirname "$0")/.."

TIME=10 SIZE=512M QD=8 PORT=$((4000 + RANDOM % 5000)) CAP=50
while [ $# -gt 0 ]; do
	case "$1" in
	--time) TIME=$2; shift 2 ;;
	--size) SIZE=$2; shift 2 ;;
	--qd) QD=$2; shift 2 ;;
	--port) PORT=$2; shift 2 ;;
	--cap) CAP=$2; shift 2 ;;
	*) echo "usage: $0 [--time S] [--size SIZE] [--qd N] [--port P] [--cap MBPS]" >&2; exit 2 ;;
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
declare -A W R
# warm-up (the first run of a fresh daemon is consistently slower)
TIME_SAVE=$TIME; TIME=2; mbps r0 seqwrite >/dev/null; TIME=$TIME_SAVE
for p in r0 r5 r6; do
	W[$p]=$(mbps $p seqwrite)
	R[$p]=$(mbps $p seqread)
	printf '%-6s seqwrite 1M qd%s: %8s MB/s   seqread: %8s MB/s\n' "$p" "$QD" "${W[$p]}" "${R[$p]}"
done
python3 -c "print('raid5/raid0 write: %.2f   raid6/raid0 write: %.2f' % (${W[r5]}/${W[r0]}, ${W[r6]}/${W[r0]}))"

# rebuild rate: fail a member of r5, time the rebuild onto its spare
bin/rtgtctl -s "$DIR/rtgtd.sock" fail r5 1 >/dev/null
t0=$(date +%s.%N)
for _ in $(seq 600); do
	st=$(bin/rtgtctl -s "$DIR/rtgtd.sock" status --json |
		python3 -c 'import json,sys; print([p["state"] for p in json.load(sys.stdin)["pools"] if p["name"]=="r5"][0])')
	[ "$st" = optimal ] && break
	sleep 0.5
done
t1=$(date +%s.%N)
python3 -c "
s='$SIZE'; m={'K':1<<10,'M':1<<20,'G':1<<30}
b=int(s[:-1])*m[s[-1]] if s[-1] in m else int(s)
b-=1<<20
print('rebuild of %d MiB at cap %s MB/s: %.1f s = %.1f MB/s' % (b>>20, '$CAP', $t1-$t0, b/1e6/($t1-$t0)))"
