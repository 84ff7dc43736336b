#!/usr/bin/env bash
# Runs test binaries one after the other; prints each result and a closing
# "N passed, N failed" line; exits non-zero when any failed.
# usage: scripts/run-tests.sh LABEL BIN...
set -u
label=$1; shift
pass=0; fail=0; failed=()
logdir=var/test-logs
mkdir -p "$logdir"
for t in "$@"; do
	name=$(basename "$t")
	start=$(date +%s)
	if timeout 900 "$t" > "$logdir/$name.log" 2>&1; then
		pass=$((pass + 1)); res=ok
	else
		fail=$((fail + 1)); res=FAIL; failed+=("$name")
	fi
	# a program may run several suites (each prints its own Checks line):
	# show them all, so that no suite's count hides another's
	printf '%-28s %-4s (%ss) %s\n' "$name" "$res" "$(( $(date +%s) - start ))" \
		"$(grep -E '^[0-9]+%: Checks' "$logdir/$name.log" | paste -sd ';' | sed 's/;/; /g')"
	if [ "$res" = FAIL ]; then
		sed 's/^/    /' "$logdir/$name.log" | tail -40
	fi
done
echo "$label: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
