#!/usr/bin/env bash
# Throwaway single-node Ceph cluster on 127.0.0.1 for rtgt's RBD pools:
# one monitor, one manager, one OSD whose BlueStore lives in a sparse file,
# cephx on, pool "rbd" initialised, client "client.rtgt" allowed on it.
# Everything lives under DIR (default var/ceph); nothing system-wide is read
# or written (every command gets --conf DIR/ceph.conf).
#
#   scripts/ceph-cluster.sh start  [DIR]   bring it up, wait for HEALTH_OK and
#                                          every PG active+clean (bounded)
#   scripts/ceph-cluster.sh stop   [DIR]   stop OSD, manager, monitor; remove DIR
#   scripts/ceph-cluster.sh status [DIR]   `ceph -s`
#
# After start, DIR holds:
#   ceph.conf                 for clients (rtgt's ceph_conf)
#   client.rtgt.keyring       rtgt's key (ceph_id "rtgt", rbd profile on "rbd")
#   client.admin.keyring      the admin key (used by this script and the tests)
#   env                       CEPH_CONF=..., CEPH_ARGS=... for interactive use
#
# env: CEPH_MON_PORT (random 4000-9000 when unset), CEPH_OSD_BYTES (4G
#      sparse), CEPH_TIMEOUT (120 s: limit for the cluster to become healthy),
#      CEPH_OSD_MEM (896M: osd_memory_target; Ceph's minimum)
# Exit codes: 0 ok, 1 failure (logs under DIR/log are printed), 2 usage,
#             3 ceph packages missing (the message names them).
set -u
cmd=${1:-}
dir=${2:-var/ceph}
case $cmd in start|stop|status) ;; *)
	echo "usage: $0 start|stop|status [DIR]" >&2; exit 2 ;;
esac
mkdir -p "$dir" 2>/dev/null
dir=$(cd "$dir" 2>/dev/null && pwd) || { echo "ceph-cluster: cannot use $2" >&2; exit 1; }
conf=$dir/ceph.conf
timeout_s=${CEPH_TIMEOUT:-120}

need=()
for b in ceph-mon ceph-mgr ceph-osd ceph ceph-authtool monmaptool rbd; do
	command -v "$b" >/dev/null 2>&1 || need+=("$b")
done
if [ ${#need[@]} -ne 0 ]; then
	echo "ceph-cluster: missing ${need[*]} (apt-get install ceph-mon ceph-mgr ceph-osd ceph-common, or scripts/deps.sh)" >&2
	exit 3
fi

ceph_() { timeout 30 ceph --conf "$conf" --name client.admin "$@"; }

# pid files are written by the daemons themselves (pid_file in ceph.conf)
term_daemon() {   # name: SIGTERM, no wait
	local pf=$dir/run/$1.pid pid
	[ -f "$pf" ] || return 0
	pid=$(cat "$pf" 2>/dev/null)
	[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null
	return 0
}
wait_daemon() {   # name: wait up to 10 s for it to end, then SIGKILL
	local pf=$dir/run/$1.pid pid i
	[ -f "$pf" ] || return 0
	pid=$(cat "$pf" 2>/dev/null)
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		for i in $(seq 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			echo "ceph-cluster: $1 ignored SIGTERM for 10 s, killing" >&2
			kill -KILL "$pid" 2>/dev/null
			sleep 0.2
		fi
	fi
	rm -f "$pf"
}

do_stop() {
	# OSD (and manager) before the monitor: an OSD whose monitor went
	# first keeps retrying for minutes
	term_daemon osd.0
	term_daemon mgr.x
	wait_daemon osd.0
	wait_daemon mgr.x
	term_daemon mon.a
	wait_daemon mon.a
	case $dir in
	/|"") ;;
	*) rm -rf "$dir" ;;
	esac
}

fail() {
	echo "ceph-cluster: $*" >&2
	for f in "$dir"/log/*.log; do
		[ -f "$f" ] || continue
		echo "---- $(basename "$f") (last 15 lines)" >&2
		tail -15 "$f" >&2
	done
	do_stop
	exit 1
}

if [ "$cmd" = status ]; then
	[ -f "$conf" ] || { echo "ceph-cluster: no cluster in $dir" >&2; exit 1; }
	ceph_ -s
	exit $?
fi
if [ "$cmd" = stop ]; then
	do_stop
	exit 0
fi

# ---- start ----
if [ -f "$dir/run/mon.a.pid" ] && kill -0 "$(cat "$dir/run/mon.a.pid")" 2>/dev/null; then
	echo "ceph-cluster: a cluster is already running in $dir (stop it first)" >&2
	exit 1
fi
rm -rf "${dir:?}"/*
mkdir -p "$dir/run" "$dir/log" "$dir/mon.a" "$dir/mgr.x" "$dir/osd.0" "$dir/crash"
t0=$(date +%s%N)
# a random port that nothing listens on (two clusters of parallel test
# runs, or another service, must not meet on one)
port=${CEPH_MON_PORT:-}
while [ -z "$port" ]; do
	port=$((4000 + RANDOM % 5000))
	! ss -Hltn "sport = :$port" 2>/dev/null | grep -q . || port=
done
fsid=$(cat /proc/sys/kernel/random/uuid)
cat > "$conf" <<EOF
# written by scripts/ceph-cluster.sh: a throwaway single-node test cluster
[global]
fsid = $fsid
mon_host = [v2:127.0.0.1:$port]
public_addr = 127.0.0.1
ms_bind_msgr1 = false
auth_cluster_required = cephx
auth_service_required = cephx
auth_client_required = cephx
auth_allow_insecure_global_id_reclaim = false
run_dir = $dir/run
pid_file = $dir/run/\$name.pid
admin_socket = $dir/run/\$name.asok
log_file = $dir/log/\$name.log
crash_dir = $dir/crash
mon_cluster_log_file = $dir/log/cluster.log
osd_pool_default_size = 1
osd_pool_default_min_size = 1
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
osd_pool_default_pg_autoscale_mode = off
osd_crush_chooseleaf_type = 0
mon_allow_pool_size_one = true
mon_allow_pool_delete = true
mon_warn_on_pool_no_redundancy = false
mon_data_avail_warn = 2
mon_data_avail_crit = 1
[client]
keyring = $dir/\$name.keyring
log_file = $dir/log/\$name.\$pid.log
admin_socket =
[mon]
mon_data = $dir/\$name
[mgr]
mgr_data = $dir/\$name
[osd]
osd_data = $dir/\$name
osd_objectstore = bluestore
bluestore_block_create = true
bluestore_block_size = ${CEPH_OSD_BYTES:-4294967296}
osd_memory_target = ${CEPH_OSD_MEM:-939524096}
bluestore_cache_autotune = false
bluestore_cache_size = 134217728
osd_max_object_name_len = 256
EOF

q() { "$@" > "$dir/log/setup.log" 2>&1 || fail "failed: $*: $(tail -3 "$dir/log/setup.log")"; }

q ceph-authtool --create-keyring "$dir/mon.keyring" --gen-key -n mon. --cap mon 'allow *'
q ceph-authtool --create-keyring "$dir/client.admin.keyring" --gen-key -n client.admin \
	--cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *' --cap mds 'allow *'
# every key is made here and given to the monitor at mkfs: no round trips to
# it later (each `ceph` command costs about a second on a busy 2-core box)
q ceph-authtool --create-keyring "$dir/mgr.x/keyring" --gen-key -n mgr.x \
	--cap mon 'allow profile mgr' --cap osd 'allow *' --cap mds 'allow *'
q ceph-authtool --create-keyring "$dir/client.rtgt.keyring" --gen-key -n client.rtgt \
	--cap mon 'profile rbd' --cap osd 'profile rbd pool=rbd' --cap mgr 'profile rbd pool=rbd'
for k in client.admin.keyring mgr.x/keyring client.rtgt.keyring; do
	q ceph-authtool "$dir/mon.keyring" --import-keyring "$dir/$k"
done
q monmaptool --create --addv a "[v2:127.0.0.1:$port]" --fsid "$fsid" "$dir/monmap"
q ceph-mon --conf "$conf" --mkfs -i a --monmap "$dir/monmap" --keyring "$dir/mon.keyring"
q ceph-mon --conf "$conf" -i a

q ceph-mgr --conf "$conf" -i x

osd_uuid=$(cat /proc/sys/kernel/random/uuid)
osd_key=$(ceph-authtool --gen-print-key) || fail "ceph-authtool --gen-print-key failed"
id=$(echo "{\"cephx_secret\": \"$osd_key\"}" | ceph_ osd new "$osd_uuid" -i - 2>"$dir/log/setup.log") ||
	fail "ceph osd new: $(tail -3 "$dir/log/setup.log")"
[ "$id" = 0 ] || fail "ceph osd new gave id '$id', expected 0"
q ceph-authtool --create-keyring "$dir/osd.0/keyring" --name osd.0 --add-key "$osd_key"
# the monitor takes the pool now; its PGs peer as soon as the OSD is up
q ceph_ osd pool create rbd 8 8   # size 1 from osd_pool_default_size
# --no-mon-config: mkfs must not wait for the monitor's config database
q ceph-osd --conf "$conf" -i 0 --mkfs --osd-uuid "$osd_uuid" --no-mon-config
q ceph-osd --conf "$conf" -i 0

q timeout 60 rbd --conf "$conf" --name client.admin pool init rbd
printf 'CEPH_CONF=%s\nCEPH_ARGS="--name client.admin"\n' "$conf" > "$dir/env"

# HEALTH_OK can come before the PGs are active+clean: wait for both.
deadline=$(( $(date +%s) + timeout_s ))
while :; do
	# one command per poll: "status":"HEALTH_OK", "num_pgs":N and a
	# single PG state "active+clean" with count N
	st=$(ceph_ status -f json 2>/dev/null | tr -d ' \n')
	health=$(grep -o '"health":{"status":"[A-Z_]*"' <<<"$st" | cut -d'"' -f6)
	npgs=$(grep -o '"num_pgs":[0-9]*' <<<"$st" | head -1 | cut -d: -f2)
	pgs=$(grep -o '"pgs_by_state":\[[^]]*\]' <<<"$st")
	if [ "$health" = HEALTH_OK ] && [ -n "$npgs" ] && [ "$npgs" -gt 0 ] &&
	   [ "$pgs" = "\"pgs_by_state\":[{\"state_name\":\"active+clean\",\"count\":$npgs}]" ]; then
		break
	fi
	if [ "$(date +%s)" -ge "$deadline" ]; then
		fail "not healthy after ${timeout_s}s: health '$health', pgs '$pgs'; $(ceph_ health detail 2>&1 | head -5)"
	fi
	sleep 0.5
done
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "ceph-cluster: up in $((ms / 1000)).$((ms % 1000 / 100)) s: mon 127.0.0.1:$port, conf $conf, client.rtgt keyring $dir/client.rtgt.keyring"
