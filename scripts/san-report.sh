#!/usr/bin/env bash
# After `make check SAN=1`: every process of the run (test binaries, the
# rtgtd instances they start, rtgtctl, conformance's rtgtd) wrote its
# sanitizer reports to DIR/{asan,ubsan}.PID (ASAN_OPTIONS/UBSAN_OPTIONS
# log_path, set by the Makefile). A report from a process whose exit status
# nobody checks (a daemon killed at teardown, a leak at exit) would otherwise
# go unnoticed: any file there fails the run.
# usage: scripts/san-report.sh DIR
set -u
dir=${1:?usage: scripts/san-report.sh DIR}
shopt -s nullglob
reports=("$dir"/asan.* "$dir"/ubsan.*)
if [ ${#reports[@]} -eq 0 ]; then
	echo "sanitizers: no reports"
	exit 0
fi
echo "sanitizers: ${#reports[@]} report(s) in $dir:"
for r in "${reports[@]}"; do
	echo "--- $r"
	grep -E 'ERROR|SUMMARY|runtime error|#[0-9]+ ' "$r" | head -25 | sed 's/^/    /'
done
exit 1
