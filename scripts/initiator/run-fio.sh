#!/usr/bin/env bash
# The published benchmark matrix from a Linux initiator, with fio:
# fill the test span, then 1 MiB sequential write and read at queue depth
# 8 per path, 4 KiB random 70/30 at queue depth 32 per path, O_DIRECT.
# Results: one fio JSON per job in OUT (fill.json, seqwrite-1m.json,
# seqread-1m.json, randrw70-4k.json), which scripts/initiator/report.py
# turns into the lab's table.
#
# usage: run-fio.sh DEVICE [--paths N] [--span SIZE] [--time S] [--ramp S]
#                   [--engine libaio|io_uring] [--no-fill] [--quick] [--out DIR]
#   DEVICE   the multipath device (/dev/mapper/mpatha, /dev/dm-N) or /dev/sdX
#   --paths  paths under the device (default: counted by `multipath -ll`, else 1)
#   --span   bytes of the device the runs cover (default: the whole device;
#            it must exceed the target's RAM and the initiator's, see README)
#   --quick  a correctness run: span 256M, 5 s per job, 1 s ramp
# WARNING: overwrites DEVICE.
set -euo pipefail
# per-path queue depths of the matrix (tests/unit/test_initiator_matrix.py
# compares them and the job files with diskspd.ps1)
PER_PATH_QD_SEQ=8
PER_PATH_QD_RAND=32
here=$(cd "$(dirname "$0")" && pwd)
dev="" paths="" span="" runtime=60 ramp=5 engine=libaio fill=1 out=var/initiator
while [ $# -gt 0 ]; do
	case $1 in
	--paths) paths=$2; shift ;;
	--span) span=$2; shift ;;
	--time) runtime=$2; shift ;;
	--ramp) ramp=$2; shift ;;
	--engine) engine=$2; shift ;;
	--no-fill) fill=0 ;;
	--quick) span=${span:-256M}; runtime=5; ramp=1 ;;
	--out) out=$2; shift ;;
	-h|--help) sed -n '2,17p' "$0"; exit 0 ;;
	-*) echo "run-fio.sh: unknown option $1" >&2; exit 2 ;;
	*) dev=$1 ;;
	esac
	shift
done
[ -n "$dev" ] || { echo "run-fio.sh: give the device (see --help)" >&2; exit 2; }
[ -b "$dev" ] || { echo "run-fio.sh: $dev is not a block device" >&2; exit 2; }
command -v fio >/dev/null || { echo "run-fio.sh: fio not installed (apt-get install fio)" >&2; exit 2; }
case $engine in libaio|io_uring) ;; *) echo "run-fio.sh: --engine libaio or io_uring" >&2; exit 2 ;; esac
if [ -z "$paths" ]; then
	# the paths of the map holding DEV: lines like "|- 2:0:0:0 sda 8:0 active ready running"
	name=$(basename "$(readlink -f "$dev")")
	paths=$(multipath -ll "$dev" 2>/dev/null | grep -cE '[0-9]+:[0-9]+:[0-9]+:[0-9]+ +sd' || true)
	[ "${paths:-0}" -gt 0 ] || paths=1
	echo "run-fio.sh: $name: $paths path(s)" >&2
fi
span=${span:-100%}
mkdir -p "$out"
export DEV=$dev SPAN=$span RUNTIME=$runtime RAMP=$ramp ENGINE=$engine
export QD_SEQ=$((PER_PATH_QD_SEQ * paths)) QD_RAND=$((PER_PATH_QD_RAND * paths))
jobs=(seqwrite-1m seqread-1m randrw70-4k)
[ "$fill" -eq 1 ] && jobs=(fill "${jobs[@]}")
for j in "${jobs[@]}"; do
	echo "run-fio.sh: $j on $dev (span $span, qd $([ "$j" = randrw70-4k ] && echo "$QD_RAND" || echo "$QD_SEQ"), $paths path(s))" >&2
	fio --output-format=json --output="$out/$j.json" "$here/fio/$j.fio"
done
printf '{"device":"%s","paths":%d,"span":"%s","runtime_s":%d,"engine":"%s"}\n' \
	"$dev" "$paths" "$span" "$runtime" "$engine" > "$out/run.json"
echo "run-fio.sh: results in $out" >&2
