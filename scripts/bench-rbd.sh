#!/usr/bin/env bash
# rtgt on an RBD image against librbd directly (`rbd bench`) on the same
# cluster, side by side (issue 6): 1 MiB sequential writes at 8 in flight
# and 4 KiB random writes at 16 in flight. Runs ROUNDS alternating rounds
# (the machine is shared, so single runs vary a lot) and prints the median
# of each and the ratio rtgt / rbd bench.
# Both sides move the same bytes in each run (a longer run meets more of the
# OSD's background work: rbd bench alone wrote 1 GiB at 489 MiB/s and 6 GiB at
# 416 MiB/s here).
#   env: CEPH_DIR (a cluster from scripts/ceph-cluster.sh; a throwaway one is
#        started and stopped when unset), ROUNDS (3), SEQ_BYTES (1G: one pass
#        over the image), RAND_BYTES (48M), PORT (random 4000-9000), RTGTD,
#        RTGT_BENCH
# rbd bench runs with rtgt's librbd settings (rbd_cache=false, rbd_io_scheduler=
# none; raid/README.md): same client library, same options, only the iSCSI hop
# differs.
set -u
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
SEQ_BYTES=${SEQ_BYTES:-1G}
RAND_BYTES=${RAND_BYTES:-48M}
PORT=${PORT:-$((4000 + RANDOM % 5000))}
RTGTD=${RTGTD:-bin/rtgtd}
BENCH=${RTGT_BENCH:-bin/rtgt-bench}
IQN=iqn.2026-11.org.rtgt:bench-rbd
dir=$(mktemp -d /tmp/rtgt-bench-rbd.XXXXXX)
pid=
own=
cleanup() {
	[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	# a cluster that outlives the run keeps no benchmark image
	if [ -z "$own" ] && [ -n "${img:-}" ]; then
		for i in "$img" "${img}p"; do
			rbd --conf "$cdir/ceph.conf" --name client.admin rm "$i" >/dev/null 2>&1
		done
	fi
	[ -n "$own" ] && scripts/ceph-cluster.sh stop "$own"
	rm -rf "$dir"
}
trap cleanup EXIT INT TERM
cdir=${CEPH_DIR:-}
if [ -z "$cdir" ]; then
	cdir=$dir/ceph
	own=$cdir
	scripts/ceph-cluster.sh start "$cdir" || exit 1
fi
cdir=$(cd "$cdir" && pwd)
# two images written out alike by rtgtd (layering only, as rtgtd creates
# them): LUN 0 for rtgt, "${img}p" for rbd bench, so that each side writes an
# image nobody else writes, as a LUN's image is in use (rtgtd never writes
# "${img}p" again once it is written out)
img=bench$$
cat > "$dir/rtgt.conf" <<CONF
daemon = { workers = 2; control = "rtgtd.sock"; log_level = "warn"; };
pools = ( { name = "c"; level = "rbd"; ceph_conf = "$cdir/ceph.conf"; rbd_pool = "rbd";
            ceph_id = "rtgt"; keyring = "$cdir/client.rtgt.keyring"; } );
portals = ( { name = "lo"; listen = "127.0.0.1:$PORT"; } );
targets = ( { iqn = "$IQN"; portals = ( "lo" );
              luns = ( { lun = 0; pool = "c"; volume = "$img"; size = "1G"; },
                       { lun = 1; pool = "c"; volume = "${img}p"; size = "1G"; } );
              allow = ( "ALL" ); } );
CONF
"$RTGTD" -c "$dir/rtgt.conf" 2> "$dir/rtgtd.log" &
pid=$!
for _ in $(seq 600); do
	(exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$pid" 2>/dev/null || { echo "bench-rbd: rtgtd did not start:"; cat "$dir/rtgtd.log"; exit 1; }
# a new thick image is written out in the background (NOT READY until then)
for _ in $(seq 1200); do
	st=$("${RTGTCTL:-bin/rtgtctl}" -s "$dir/rtgtd.sock" status --json 2>/dev/null) &&
		! grep -q '"provisioning"' <<<"$st" && break
	sleep 0.1
done
url=iscsi://127.0.0.1:$PORT/$IQN/0
rbdb() { rbd --conf "$cdir/ceph.conf" --name client.admin --rbd_cache=false \
	--rbd_io_scheduler=none bench "$@" "${img}p" 2>&1 |
	awk '/^elapsed:/ { for (i = 1; i <= NF; i++) if ($i == "ops/sec:") print $(i + 1) }' | tail -1; }
# session line of rtgt-bench: id url MB/s IOPS ...
rtgtb() { "$BENCH" --quiet --url "$url" "$@" | awk '$1 == "1" { print $4 }'; }
median() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { print (NR ? a[int((NR + 1) / 2)] : 0) }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b > 0) ? a / b : 0 }'; }
s_r= s_b= r_r= r_b= s_q= r_q=
for r in $(seq "$ROUNDS"); do
	# who goes first alternates: a run inherits the OSD's deferred work
	# from the one before it
	if [ $((r % 2)) = 1 ]; then
		a=$(rtgtb --pattern seqwrite --bs 1M --qd 8 --bytes "$SEQ_BYTES")
		b=$(rbdb --io-type write --io-size 1M --io-threads 8 --io-total "$SEQ_BYTES" --io-pattern seq)
		c=$(rtgtb --pattern randrw --rwmix 0 --bs 4K --qd 16 --bytes "$RAND_BYTES")
		d=$(rbdb --io-type write --io-size 4K --io-threads 16 --io-total "$RAND_BYTES" --io-pattern rand)
	else
		b=$(rbdb --io-type write --io-size 1M --io-threads 8 --io-total "$SEQ_BYTES" --io-pattern seq)
		a=$(rtgtb --pattern seqwrite --bs 1M --qd 8 --bytes "$SEQ_BYTES")
		d=$(rbdb --io-type write --io-size 4K --io-threads 16 --io-total "$RAND_BYTES" --io-pattern rand)
		c=$(rtgtb --pattern randrw --rwmix 0 --bs 4K --qd 16 --bytes "$RAND_BYTES")
	fi
	s_r+=" ${a:-0}"; s_b+=" ${b:-0}"; r_r+=" ${c:-0}"; r_b+=" ${d:-0}"
	# neighbours in time share the machine's load: compare within a round
	s_q+=" $(ratio "${a:-0}" "${b:-0}")"; r_q+=" $(ratio "${c:-0}" "${d:-0}")"
	echo "round $r: seq 1M IOPS rtgt/rbd ${a:-?}/${b:-?}, rand 4K IOPS rtgt/rbd ${c:-?}/${d:-?}"
done
sr=$(echo "$s_r" | median); sb=$(echo "$s_b" | median)
rr=$(echo "$r_r" | median); rb=$(echo "$r_b" | median)
sq=$(echo "$s_q" | median); rq=$(echo "$r_q" | median)
awk -v sr="$sr" -v sb="$sb" -v rr="$rr" -v rb="$rb" -v sq="$sq" -v rq="$rq" -v n="$ROUNDS" 'BEGIN {
	printf "| median of %d rounds | rtgt (iSCSI, loopback) | rbd bench (librbd) | rtgt / rbd (median of per-round ratios) |\n", n
	printf "|---|---|---|---|\n"
	printf "| 1 MiB seq write, 8 in flight | %.0f MB/s | %.0f MB/s | %.0f%% |\n", sr * 1.048576, sb * 1.048576, 100 * sq
	printf "| 4 KiB rand write, 16 in flight | %.0f IOPS | %.0f IOPS | %.0f%% |\n", rr, rb, 100 * rq
}'
