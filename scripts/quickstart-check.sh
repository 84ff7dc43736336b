#!/usr/bin/env bash
# The README's first command, as a newcomer types it: a fresh `git clone` of
# this checkout into a temporary folder (no var/, no build output), `make run`
# (installs what is missing, builds, serves conf/examples/quickstart.conf on
# 127.0.0.1:3260), then from another "terminal": iscsi-ls must list the
# quickstart target, rtgt-bench writes 64 MiB of stamped data and reads it
# back verified, `rtgtctl status` answers; then Ctrl-C (SIGINT to rtgtd, as
# the terminal sends it) and `make run` must exit 0 with "stopped" logged.
# Then every other example in conf/examples/ is started from the same clone.
# usage: scripts/quickstart-check.sh [REPO]   (default: this checkout)
#   env: QUICKSTART_KEEP=1 keeps the temporary folder
# Exit 0 when every step passed; 1 with the failing step and the tail of the
# make run log otherwise. Needs port 3260 free on 127.0.0.1.
set -uo pipefail
repo=$(cd "${1:-$(dirname "$0")/..}" && pwd)
t=$(mktemp -d /tmp/rtgt-quickstart.XXXXXX)
log=$t/make-run.log
pid=
cleanup() {
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM -- "-$pid" 2>/dev/null
		sleep 1
		kill -KILL -- "-$pid" 2>/dev/null
	fi
	[ -n "${QUICKSTART_KEEP:-}" ] || rm -rf "$t"
}
trap cleanup EXIT
fail() {
	echo "quickstart: FAILED: $*" >&2
	echo "--- last lines of make run ($log):" >&2
	tail -n 30 "$log" >&2
	exit 1
}
step() { echo "quickstart: $*"; }

if ss -Hltn 'sport = :3260' 2>/dev/null | grep -q .; then
	echo "quickstart: FAILED: port 3260 is already in use (ss -ltnp 'sport = :3260' names the program); the quick start serves there" >&2
	exit 1
fi
step "git clone $repo -> $t/rtgt"
git clone -q "$repo" "$t/rtgt" || fail "git clone"
cd "$t/rtgt" || fail "cd"
[ ! -e var ] || fail "a fresh clone already has var/"

step "make run (in the background, its own process group)"
start=$(date +%s)
setsid make run > "$log" 2>&1 < /dev/null &
pid=$!
# the build takes about a minute on 2 cores; deps may install packages first
deadline=$(( start + 900 ))
until (exec 3<>/dev/tcp/127.0.0.1/3260) 2>/dev/null; do
	kill -0 "$pid" 2>/dev/null || { wait "$pid"; fail "make run exited ($?) before 127.0.0.1:3260 accepted"; }
	[ "$(date +%s)" -lt "$deadline" ] || fail "127.0.0.1:3260 not accepting after 900 s"
	sleep 1
done
step "127.0.0.1:3260 accepts after $(( $(date +%s) - start )) s"

iqn=iqn.2026-11.org.rtgt:quickstart
out=$(iscsi-ls -i iqn.2026-11.org.rtgt:newcomer iscsi://127.0.0.1:3260 2>&1) || fail "iscsi-ls: $out"
echo "$out" | grep -q "Target:$iqn" || fail "iscsi-ls does not list $iqn: $out"
step "iscsi-ls lists $iqn"

url=iscsi://127.0.0.1:3260/$iqn/0
bin/rtgt-bench --url "$url" --pattern seqwrite --bs 1M --qd 4 --bytes 64M --verify --seed 7 \
	--quiet > "$t/write.txt" 2>&1 || { cat "$t/write.txt" >&2; fail "rtgt-bench write"; }
bin/rtgt-bench --url "$url" --pattern seqread --bs 1M --qd 4 --bytes 64M --verify --seed 7 \
	--quiet > "$t/read.txt" 2>&1 || { cat "$t/read.txt" >&2; fail "rtgt-bench read-back verify"; }
step "64 MiB written and read back verified: $(grep -m1 '^verify:' "$t/read.txt")"

st=$(bin/rtgtctl -s var/rtgtd.sock status 2>&1) || fail "rtgtctl status: $st"
echo "$st" | grep -q quickstart || fail "rtgtctl status does not show the pool: $st"
step "rtgtctl status answers"

# Ctrl-C: the terminal sends SIGINT to the foreground job; make passes it on
# and dies of it itself, so the check is on rtgtd: it must stop cleanly and
# make then exits 0. Send it to rtgtd alone to see make's exit status.
rpid=$(pgrep -g "$pid" -x rtgtd) || fail "no rtgtd in make run's process group"
kill -INT "$rpid"
for _ in $(seq 1 300); do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$pid" 2>/dev/null && fail "make run still running 30 s after SIGINT to rtgtd"
wait "$pid"
rc=$?
pid=
[ "$rc" -eq 0 ] || fail "make run exited $rc after SIGINT, expected 0"
grep -q '\[rtgtd\] stopped' "$log" || fail "no 'stopped' line from rtgtd"
step "SIGINT: rtgtd stopped, make run exited 0 ($(( $(date +%s) - start )) s)"

# Every other example starts from the same fresh clone: each serves on
# 127.0.0.1:3260 (so one at a time), serves every target it declares and
# iscsi-ls on its portals lists the open ones, SIGTERM -> exit 0. The RBD node examples need a Ceph cluster
# (test_net_rbd runs two nodes): --check only. rtgt.conf.default names
# /var/lib/rtgt and /run/rtgt, the installed layout: --check only.
for ex in conf/examples/*.conf conf/examples/rtgt.conf.default; do
	name=$(basename "$ex")
	[ "$name" = quickstart.conf ] && continue
	case $name in
	rbd-node-*|rtgt.conf.default)
		out=$(bin/rtgtd -c "$ex" --check 2>&1) || fail "$name: rtgtd --check: $out"
		step "$name: --check passes (serving it needs a Ceph cluster or the installed layout)"
		continue ;;
	esac
	exlog=$t/$name.log
	bin/rtgtd -c "$ex" > "$exlog" 2>&1 &
	epid=$!
	ok=
	for _ in $(seq 1 300); do
		(exec 3<>/dev/tcp/127.0.0.1/3260) 2>/dev/null && { ok=1; break; }
		kill -0 "$epid" 2>/dev/null || break
		sleep 0.1
	done
	[ -n "$ok" ] || { kill -KILL "$epid" 2>/dev/null; log=$exlog; fail "$name: not serving 127.0.0.1:3260 within 30 s"; }
	# every target declared is served; discovery lists those whose allow
	# takes any initiator (the others only show to their initiators)
	n=$(grep -c '^ *iqn *= *"' "$ex")
	grep -q "serving $n target(s)" "$exlog" || { kill -KILL "$epid"; log=$exlog; fail "$name: not serving its $n target(s)"; }
	# discovery lists the targets of the portal it asks: ask every IPv4
	# portal of the example
	out=
	for a in $(grep -o 'listen *= *"[0-9.]*:[0-9]*"' "$ex" | grep -o '[0-9.]*:[0-9]*'); do
		out+=$(iscsi-ls -i iqn.2026-11.org.rtgt:newcomer "iscsi://$a" 2>&1)$'\n'
	done
	echo "$out" | grep -q "Target:iqn" || { kill -KILL "$epid"; log=$exlog; fail "$name: iscsi-ls lists no target on any portal: $out"; }
	kill -TERM "$epid"
	wait "$epid"
	rc=$?
	log=$exlog
	[ "$rc" -eq 0 ] || fail "$name: rtgtd exited $rc after SIGTERM"
	step "$name: served from the fresh clone (all its targets up, open ones discovered), SIGTERM -> exit 0"
done
step "all passed ($(( $(date +%s) - start )) s in all)"
