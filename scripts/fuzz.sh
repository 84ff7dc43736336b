#!/usr/bin/env bash
# Runs every libFuzzer target for SECONDS each, one after the other, on a
# scratch corpus seeded from tests/fuzz/corpus/<target>/ (the checked-in seeds
# are never modified). A crash, leak, timeout, sanitizer report or broken
# invariant fails the run; its input is kept under var/fuzz/<target>/ and the
# last lines of the report are printed.
# usage: scripts/fuzz.sh SECONDS bin/fuzz/fuzz_X...
#   env: FUZZ_SEED (libFuzzer -seed; unset = random, CI fixes it so that a
#        run explores the same paths every time)  FUZZ_KEEP (keep the
#        scratch corpora)
set -u
cd "$(dirname "$0")/.."
secs=$1; shift
case $secs in ''|*[!0-9]*) echo "fuzz: SECONDS must be a number, got '$secs'" >&2; exit 2 ;; esac
[ $# -gt 0 ] || { echo "fuzz: no targets" >&2; exit 2; }
scratch=$(mktemp -d /tmp/rtgt-fuzz.XXXXXX)
[ -n "${FUZZ_KEEP:-}" ] || trap 'rm -rf "$scratch"' EXIT INT TERM
# The fuzzers abort on a sanitizer report; leaks are reported at exit.
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}
# known leaks inside third-party libraries (each one documented there)
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/scripts/lsan.supp:print_suppressions=0}
pass=0; fail=0; failed=()
for bin in "$@"; do
	name=$(basename "$bin")
	seeds=tests/fuzz/corpus/$name
	out=var/fuzz/$name
	mkdir -p "$out" "$scratch/$name"
	opts=()
	[ -n "${FUZZ_SEED:-}" ] && opts+=(-seed="$FUZZ_SEED")
	if [ -f "tests/fuzz/$name.options" ]; then
		read -r -a more < "tests/fuzz/$name.options"
		opts+=("${more[@]}")
	fi
	start=$(date +%s)
	# -close_fd_mask=2: the code under test logs to stderr on every bad
	# input; libFuzzer and the sanitizers keep their own copy of stderr.
	if "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -close_fd_mask=2 -artifact_prefix="$out/" "${opts[@]}" \
		"$scratch/$name" "$seeds" > "$out/run.log" 2>&1; then
		pass=$((pass + 1)); res=ok
	else
		fail=$((fail + 1)); res=FAIL; failed+=("$name")
	fi
	printf '%-16s %-4s (%ss) %s\n' "$name" "$res" "$(( $(date +%s) - start ))" \
		"$(grep -E '^stat::number_of_executed_units' "$out/run.log" | awk '{print $2 " runs"}')"
	if [ "$res" = FAIL ]; then
		grep -E 'ERROR|SUMMARY|invariant|runtime error|Test unit written' "$out/run.log" | head -20 | sed 's/^/    /'
		echo "    reproduce: $bin $out/<crash|leak|timeout|oom>-*  (log: $out/run.log)"
	fi
done
echo "fuzz: $pass passed, $fail failed${failed[*]:+ (${failed[*]})}"
[ "$fail" -eq 0 ]
