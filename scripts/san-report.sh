#!/usr/bin/env bash
# After `make check SAN=1` (or unit/nettest/conformance SAN=1), or after
# `make tsan-check` (any target with TSAN=1): fails when
# any process of the run reported a sanitizer error, even one whose exit
# status nobody checks (a daemon killed at teardown, a leak at exit).
#  - ASan and LSan reports of every process are in DIR/asan.PID
#    (ASAN_OPTIONS log_path, set by the Makefile);
#  - gcc's UBSan ignores log_path and prints to stderr (then aborts, with
#    -fno-sanitize-recover=all): those are searched for in the test logs
#    (var/test-logs/*.log, which hold each test's stderr and the daemon logs
#    the harness dumps) and var/conformance.log;
#  - ThreadSanitizer reports of every process are in DIR/tsan.PID
#    (TSAN_OPTIONS log_path); a report in a test log counts too.
# usage: scripts/san-report.sh DIR
set -u
dir=${1:?usage: scripts/san-report.sh DIR}
shopt -s nullglob
pattern='runtime error:|ERROR: AddressSanitizer|ERROR: LeakSanitizer|ERROR: UndefinedBehaviorSanitizer|WARNING: ThreadSanitizer|ERROR: ThreadSanitizer'
reports=("$dir"/asan.* "$dir"/ubsan.* "$dir"/tsan.*)
logs=()
for l in var/test-logs/*.log var/conformance.log; do
	[ -e "$l" ] || continue
	grep -qE "$pattern" "$l" && logs+=("$l")
done
if [ ${#reports[@]} -eq 0 ] && [ ${#logs[@]} -eq 0 ]; then
	echo "sanitizers: no reports"
	exit 0
fi
echo "sanitizers: ${#reports[@]} report file(s) in $dir, ${#logs[@]} log(s) with reports:"
for r in "${reports[@]}"; do
	echo "--- $r"
	grep -E 'ERROR|WARNING|SUMMARY|runtime error|#[0-9]+ |Previous|Location|thread T' "$r" \
		| head -40 | sed 's/^/    /'
done
for l in "${logs[@]}"; do
	echo "--- $l"
	grep -E -A12 "$pattern" "$l" | head -25 | sed 's/^/    /'
done
exit 1
