"""tests/lib/ckpy.py - the Check runner's contract for the Python tests of
tests/unit: named checks, every case run even when one crashes, and the
closing "N%: Checks: N, Failures: N, Errors: 0" line that
scripts/run-tests.sh reads; exit 1 on any failure."""
import sys

_checks = 0
_failures = []


def check(name, cond, detail=""):
    global _checks
    _checks += 1
    if not cond:
        _failures.append(f"{name}: {detail}")
        print(f"FAIL {name}: {detail}")


def main(cases, cleanup=None):
    """Runs @cases (functions) in order, then @cleanup; prints the line and
    exits."""
    for t in cases:
        try:
            t()
        except Exception as e:  # a crash is a failure, not a traceback
            check(t.__name__, False, repr(e))
    if cleanup:
        cleanup()
    ok = _checks - len(_failures)
    print(f"{100 * ok // max(_checks, 1)}%: Checks: {_checks}, Failures: {len(_failures)}, Errors: 0")
    sys.exit(1 if _failures else 0)
