#!/usr/bin/env python3
"""tests/unit/test_lab_report.py - scripts/lab/report.py, the NAS lab's
report (scripts/lab.sh runs the lab as root and hands it the rtgt-bench
--json output of every run): on made-up runs, the calibration and
configuration tables beside the published figures, the session shares,
the requirement checks met and not met, a failed run, results.json, and
the helpers lab.sh calls while it runs (run-line, read-span, p50).
Prints "N%: Checks: N, Failures: N" like the Check programs; exit 1 on any
failure.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
from ckpy import check, main  # noqa: E402
REPORT = os.path.join(ROOT, "scripts", "lab", "report.py")
scratch = tempfile.mkdtemp(prefix="rtgt-lab-report.")



def run(*args):
    p = subprocess.run([sys.executable, REPORT, *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def bench_json(mbps, shares, p99=8.5, p50=1.25, mib=256):
    """rtgt-bench --json as it prints it: figures with fixed decimals."""
    ss = ",".join(
        '{"url":"iscsi://198.18.1.1:3260/iqn.x/0","mbps":%.2f,"iops":%.1f,"lat_ms":{"p50":%.3f,'
        '"p99":%.3f,"p999":%.3f},"share":%.4f,"bytes":%d,"ops":1,"reads":1,"writes":0,'
        '"errors":0,"seconds":3.000}' % (mbps * s, mbps * s * 4, p50, p99, p99, s,
                                         (mib + i) << 20)
        for i, s in enumerate(shares))
    return ('{"sessions":[%s],"total":{"mbps":%.2f,"iops":%.1f,"lat_ms":{"p50":%.3f,"p99":%.3f,'
            '"p999":%.3f},"share":1.0000,"bytes":1,"ops":1,"reads":1,"writes":0,"errors":0,'
            '"seconds":3.000},"pattern":"seqwrite","bs":1048576,"qd":8}\n'
            % (ss, mbps, mbps * 4, p50, p99, p99))


CONFIGS = [("raid5-1L", "RAID5, 1 target, 1 link", 1), ("raid5-2L", "RAID5, 2 targets on 1 pool, 2 links", 2),
           ("raid6-1L", "RAID6, 1 target, 1 link", 1), ("raid10-1L", "RAID10, 1 target, 1 link", 1),
           ("2xraid1-2L", "2 x RAID1, 1 target each, 2 links", 2)]


def lab(tweak=None):
    """A runs directory and meta file for a two-link lab; returns (runs, meta, out)."""
    d = tempfile.mkdtemp(dir=scratch)
    runs, out = os.path.join(d, "runs"), os.path.join(d, "out")
    os.makedirs(runs)
    os.makedirs(out)
    figures = {   # key -> (MB/s, shares); randrw MB/s * 4 = IOPS in bench_json
        "cal1|seqwrite": (297.21, [1.0]), "cal1|seqread": (297.83, [1.0]),
        "cal2|seqwrite": (596.3, [0.5, 0.5]), "cal2|seqread": (595.9, [0.5012, 0.4988]),
        "raid5-1L|seqwrite": (296.9, [1.0]), "raid5-1L|seqread": (295.9, [1.0]),
        "raid5-1L|randrw": (102.25, [1.0]),
        "raid5-2L|seqwrite": (588.6, [0.5, 0.5]), "raid5-2L|seqread": (569.6, [0.3, 0.7]),
        "raid5-2L|randrw": (78.0, [0.47, 0.53]),
        "raid6-1L|seqwrite": (295.8, [1.0]), "raid6-1L|seqread": (296.8, [1.0]),
        "raid6-1L|randrw": (98.5, [1.0]),
        "raid10-1L|seqwrite": (298.0, [1.0]), "raid10-1L|seqread": (297.2, [1.0]),
        "raid10-1L|randrw": (143.25, [1.0]),
        "2xraid1-2L|seqwrite": (529.1, [0.5, 0.5]), "2xraid1-2L|seqread": (592.4, [0.5, 0.5]),
        "2xraid1-2L|randrw": (123.75, [0.49, 0.51]),
    }
    if tweak:
        tweak(figures)
    for key, v in figures.items():
        with open(os.path.join(runs, key.replace("|", ".") + ".json"), "w") as f:
            f.write("" if v is None else bench_json(*v))
    meta = os.path.join(d, "meta")
    with open(meta, "w") as f:
        for k, v in (("args", "--quick"), ("rev", "abc1234"), ("host", "Linux 6.1, 2 cores"),
                     ("seconds", "185"), ("load_start", "1.00 0.50 0.20"),
                     ("load_end", "0.90 0.60 0.30"), ("links", "2"), ("rate", "2.5gbit"),
                     ("rate_bps", "2500000000"), ("tbf_burst", "312500"), ("tbf_latency", "2"),
                     ("quick", "1"), ("time", "3"), ("member_size", "4G"),
                     ("member_bytes", str(4 << 30)), ("dir", "/dev/shm"), ("span", "256M"),
                     ("span_bytes", str(256 << 20)), ("rand_span", "1024M"),
                     ("hdd", "260:8.5:7200"), ("hdd_mbps", "260"), ("hdd_seek", "8.5"),
                     ("hdd_rpm", "7200"), ("write_cache", "on"), ("hdd_active", "yes"),
                     ("hdd_probe_ms", "10.512"), ("raw_w", "298.5"), ("raw_r", "298.3"),
                     ("nice", "-10")):
            f.write(f"{k}={v}\n")
        for key, label, n in CONFIGS:
            f.write(f"config={key}|{label}|{n}|{n}\n")
    return runs, meta, out


def report(runs, meta, out):
    rc, stdout, err = run("report", "--runs", runs, "--meta", meta, "--out", out, "--no-chart")
    md = open(os.path.join(out, "results.md")).read() if os.path.exists(
        os.path.join(out, "results.md")) else ""
    return rc, stdout, err, md


def t01_tables():
    rc, stdout, err, md = report(*lab())
    check("01 exit 0", rc == 0, err)
    check("01 results.md on stdout", stdout == md, stdout[:200])
    check("01 command and parameters", "Command: `scripts/lab.sh --quick`  " in md and
          "rtgt abc1234 on Linux 6.1, 2 cores" in md and "**yes** (4K random read p50 10.512 ms)"
          in md, md[:600])
    check("01 raw TCP row", "| link 1, raw TCP (one stream, no iSCSI) | 298.5 | 298.3 |" in md, md)
    check("01 calibration rows", "| link 1 | 297.2 | 297.8 |" in md and
          "| links 1+2 together | 596.3 | 595.9 |" in md, md)
    check("01 configuration row", "| RAID5, 1 target, 1 link | 296.9 | ~290 MB/s (link bound) | "
          "295.9 | ~290 MB/s (link bound) | 409 | 2nd (RAID10 > RAID5 > RAID6) | - |" in md, md)
    check("01 session shares", "| write 50/50%, read 30/70%, randrw 47/53% |" in md, md)
    check("01 published 2 x RAID1", "| 529.1 | 522 MB/s | 592.4 | 572 MB/s | 495 |" in md, md)
    check("01 p99 line", "p99 latency (ms): raid5-1L seqwrite 8.5; " in md, md)
    check("01 no HDD warning", "was not active" not in md, md)


def t02_checks():
    rc, _, _, md = report(*lab())
    check("02 2 x RAID1 write met", "| 2 x RAID1, 2 links, seq write | >= 480 MB/s | 529.1 MB/s | yes |"
          in md, md)
    check("02 RAID6 not above RAID5", "| RAID6 seq write not above RAID5's (1 link) | RAID6 <= RAID5 "
          "(+1% noise) | 295.8 vs 296.9 MB/s | yes |" in md, md)
    check("02 random order", "| mixed random order (1 link) | RAID10 > RAID5 > RAID6, each >= 2% "
          "ahead | 573.0 > 409.0 > 394.0 IOPS (+40%, +4%) | yes |" in md, md)
    check("02 beyond the box", "| RAID5 2 targets on 1 pool, 2 links, 1M seq write qd8 (beyond the "
          "box) | >= 90% of 2 x RAID1 (476.2 MB/s) | 588.6 MB/s (111%) | yes |" in md, md)
    check("02 raid6 not required", "(beyond the box) | >= 90% of 2 x RAID1 (476.2 MB/s) | - MB/s (0%) "
          "| n.a. (not required) |" in md, md)
    check("02 unfair read", "| fairness: every session >= 80% of an even share (6 two-session runs) "
          "| >= 0.40 each | below: raid5-2L/seqread:0.3000  | no |" in md, md)

    def slow(f):
        f["raid6-1L|seqwrite"] = (310.0, [1.0])
        f["2xraid1-2L|seqwrite"] = (470.0, [0.5, 0.5])
    _, _, _, md = report(*lab(slow))
    check("02 RAID6 above RAID5 fails", "| 310.0 vs 296.9 MB/s | no |" in md, md)
    check("02 2 x RAID1 write short", "| 2 x RAID1, 2 links, seq write | >= 480 MB/s | 470.0 MB/s | no |"
          in md, md)


def t03_failed_run():
    def fail(f):
        f["raid10-1L|randrw"] = None
    rc, _, _, md = report(*lab(fail))
    check("03 still exit 0", rc == 0, md)
    check("03 dash for the failed run", "| RAID10, 1 target, 1 link | 298.0 | ~290 MB/s (link bound) | "
          "297.2 | ~290 MB/s (link bound) | - | 1st | - |" in md, md)
    check("03 order check fails", "| - > 409.0 > 394.0 IOPS (-, +4%) | no |" in md, md)


def t04_json():
    runs, meta, out = lab()
    report(runs, meta, out)
    try:
        j = json.load(open(os.path.join(out, "results.json")))
    except (OSError, ValueError) as e:
        check("04 results.json parses", False, repr(e))
        return
    check("04 lab", j["lab"]["rev"] == "abc1234" and j["lab"]["links"] == 2 and
          j["lab"]["hdd"] == {"mbps": 260, "avg_seek_ms": 8.5, "rpm": 7200, "write_cache": True} and
          j["lab"]["calibration"]["links12"]["read_mbps"] == 595.9, j["lab"])
    check("04 one result per config and workload", len(j["results"]) == 3 * len(CONFIGS),
          len(j["results"]))
    r = [x for x in j["results"] if x["config"] == "raid5-2L" and x["workload"] == "seqread"][0]
    check("04 result", r["mbps"] == 569.6 and r["shares"] == [0.3, 0.7] and
          r["published"] == {"mbps": 375, "text": "350-400 MB/s"} and
          r["bench"]["total"]["mbps"] == 569.6, r)
    met = {c["check"].split(" (")[0]: c["met"] for c in j["checks"]}
    check("04 checks", met["2 x RAID1, 2 links, seq write"] is True and
          met["fairness: every session >= 80% of an even share"] is False and
          met["RAID6 2 targets on 1 pool, 2 links, 1M seq read qd8"] is None, met)
    text = open(os.path.join(out, "results.json")).read()
    check("04 figures as rtgt-bench printed them", '"share":0.3000' in text, text[:300])


def t05_helpers():
    runs, meta, out = lab()
    f = os.path.join(runs, "raid5-2L.seqread.json")
    rc, line, _ = run("run-line", f, "raid5 2 targets 2 links seqread", "0 3")
    check("05 run-line", rc == 0 and line == "  %-34s %8.1f MB/s %8.0f IOPS  p99 %8.2f ms  shares "
          "0.3000 0.7000  tbf drops 0 3\n" % ("raid5 2 targets 2 links seqread", 569.6, 2278.4, 8.5),
          repr(line))
    rc, span, _ = run("read-span", f, str(1 << 30))
    check("05 read-span: the least a session wrote", rc == 0 and span == str(256 << 20) + "\n", span)
    rc, span, _ = run("read-span", f, str(128 << 20))
    check("05 read-span: capped", span == str(128 << 20) + "\n", span)
    empty = os.path.join(runs, "none.json")
    open(empty, "w").close()
    rc, span, _ = run("read-span", empty, str(64 << 20))
    check("05 read-span: failed run", span == str(64 << 20) + "\n", span)
    rc, line, _ = run("run-line", empty, "failed", "0 0")
    check("05 run-line: failed run", "     0.0 MB/s        0 IOPS" in line and "shares - tbf" in line,
          repr(line))
    rc, p50, _ = run("p50", f)
    check("05 p50", p50 == "1.250\n", p50)
    rc, p50, _ = run("p50", empty)
    check("05 p50: failed run", p50 == "\n", p50)


def t06_chart():
    """the bar chart (scripts/lab/barchart.py, shared with the initiator
    report), a failed run leaving a gap rather than failing the chart"""
    if not shutil.which("gnuplot"):
        print("SKIP 06: gnuplot is not installed (scripts/deps.sh installs gnuplot-nox)")
        return

    def fail_one(fig):
        fig["raid6-1L|seqread"] = None
    runs, meta, out = lab(fail_one)
    rc, _, err = run("report", "--runs", runs, "--meta", meta, "--out", out)
    png = os.path.join(out, "results.png")
    head = open(png, "rb").read(8) if os.path.exists(png) else b""
    check("06 report with chart exit 0", rc == 0, err)
    check("06 results.png is a PNG", head == b"\x89PNG\r\n\x1a\n", repr(head))
    sys.path.insert(0, os.path.join(ROOT, "scripts", "lab"))
    import barchart
    why = barchart.draw(os.path.join(out, "bad.png"), [("x", "1", "2", None, "", "3")],
                        'a "quote" breaks the script', "s", "r")
    check("06 a gnuplot error is returned, not raised", why, repr(why))


def cleanup():
    shutil.rmtree(scratch, ignore_errors=True)


main((t01_tables, t02_checks, t03_failed_run, t04_json, t05_helpers, t06_chart), cleanup)
