#!/usr/bin/env python3
"""tests/unit/test_initiator_matrix.py - the Windows DiskSpd script runs the
same benchmark matrix as the Linux fio job set (scripts/initiator/).

DiskSpd cannot run on the project's machines, so its command lines are
checked here against the fio jobs: the same workloads, block sizes, queue
depth per path, read/write mix, sequential or random, unbuffered I/O; and
the report script's merge of a fio result with a stats --watch record.
Prints "N%: Checks: N, Failures: N" like the Check programs; exit 1 on any
failure.
"""
import configparser
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
from ckpy import check, main  # noqa: E402
INI = os.path.join(ROOT, "scripts", "initiator")



def size(s):
    m = re.fullmatch(r"(\d+)([kKmMgG]?)", s)
    return int(m.group(1)) * {"": 1, "k": 1024, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]


def fio_jobs():
    """name -> {bs, write_pct, random, qd_var, direct}"""
    out = {}
    for f in sorted(os.listdir(os.path.join(INI, "fio"))):
        cp = configparser.ConfigParser(comment_prefixes=(";", "#"), interpolation=None)
        cp.read(os.path.join(INI, "fio", f))
        g = cp["global"]
        for sec in cp.sections():
            if sec == "global":
                continue
            j = {**dict(g), **dict(cp[sec])}
            rw = j["rw"]
            if rw in ("write", "read"):
                wp = 100 if rw == "write" else 0
            else:
                wp = 100 - int(j["rwmixread"])
            out[sec] = {"bs": size(j["bs"]), "write_pct": wp, "random": rw.startswith("rand"),
                        "qd_var": j["iodepth"], "direct": j.get("direct") == "1",
                        "span": j.get("size")}
    return out


def per_path_qd():
    txt = open(os.path.join(INI, "run-fio.sh")).read()
    return {"${QD_SEQ}": int(re.search(r"^PER_PATH_QD_SEQ=(\d+)$", txt, re.M).group(1)),
            "${QD_RAND}": int(re.search(r"^PER_PATH_QD_RAND=(\d+)$", txt, re.M).group(1))}


def diskspd_jobs():
    txt = open(os.path.join(INI, "diskspd.ps1")).read()
    block = re.search(r"\$Jobs = \[ordered\]@\{(.*?)\n\}", txt, re.S).group(1)
    out = {}
    for name, args in re.findall(r"'([\w-]+)'\s*=\s*'([^']*)'", block):
        a = args.split()
        d = {"args": a}
        for x in a:
            if x.startswith("-b"):
                d["bs"] = size(x[2:])
            elif x.startswith("-o"):
                d["qd"] = int(x[2:])
            elif x.startswith("-w"):
                d["write_pct"] = int(x[2:])
        d["random"] = "-r" in a
        d["unbuffered"] = "-Sh" in a
        d["one_stream"] = "-si" in a
        out[name] = d
    # the line every job runs with: threads = paths, span, raw disk
    d_line = re.search(r'\$line = "([^"]*)"', txt).group(1)
    return out, d_line


def t01_same_workloads():
    f, (d, _) = fio_jobs(), diskspd_jobs()
    check("01 same job names", sorted(f) == sorted(d), f"fio {sorted(f)} diskspd {sorted(d)}")


def t02_same_parameters():
    f, (d, _) = fio_jobs(), diskspd_jobs()
    qd = per_path_qd()
    for name in sorted(set(f) & set(d)):
        a, b = f[name], d[name]
        check(f"02 {name} block size", a["bs"] == b.get("bs"), f"fio {a['bs']} diskspd {b.get('bs')}")
        check(f"02 {name} write %", a["write_pct"] == b.get("write_pct"),
              f"fio {a['write_pct']} diskspd {b.get('write_pct')}")
        check(f"02 {name} random", a["random"] == b["random"], f"fio {a['random']} diskspd {b['random']}")
        check(f"02 {name} queue depth per path", qd.get(a["qd_var"]) == b.get("qd"),
              f"fio {a['qd_var']}={qd.get(a['qd_var'])} diskspd -o{b.get('qd')}")
        check(f"02 {name} unbuffered", a["direct"] and b["unbuffered"], "direct=1 / -Sh")
        check(f"02 {name} sequential is one stream", a["random"] or b["one_stream"], "-si")
        check(f"02 {name} over the span", a["span"] == "${SPAN}", a["span"])


def t03_matrix_values():
    """the published matrix itself: 1 MiB at 8 per path, 4 KiB 70/30 at 32"""
    f = fio_jobs()
    qd = per_path_qd()
    want = {"seqwrite-1m": (1 << 20, 100, False, 8), "seqread-1m": (1 << 20, 0, False, 8),
            "randrw70-4k": (4096, 30, True, 32), "fill": (1 << 20, 100, False, 8)}
    for name, (bs, wp, rnd, q) in want.items():
        j = f.get(name)
        check(f"03 {name} present", j is not None, "missing")
        if j:
            check(f"03 {name} values", (j["bs"], j["write_pct"], j["random"], qd[j["qd_var"]]) == (bs, wp, rnd, q),
                  str(j))


def t04_diskspd_line():
    _, line = diskspd_jobs()
    for want in ("-t$Paths", "-L", "-Rxml", "-f$($spanMB)M", "#$Disk"):
        check(f"04 diskspd line has {want}", want in line, line)


def t05_report_merges():
    """report.py: a fio result and a stats record -> table row with shares"""
    with tempfile.TemporaryDirectory() as d:
        end = 1_800_000_000
        for job, kind, bw in (("seqwrite-1m", "write", 300e6), ("seqread-1m", "read", 280e6),
                              ("randrw70-4k", "read", 4e6)):
            jr = {"read": {"bw_bytes": 0, "iops": 0, "clat_ns": {"percentile": {"50.000000": 1e6, "99.000000": 2e6}}},
                  "write": {"bw_bytes": 0, "iops": 0, "clat_ns": {"percentile": {"50.000000": 1e6, "99.000000": 2e6}}},
                  "job_runtime": 10000, "jobname": job}
            jr[kind]["bw_bytes"] = bw
            jr[kind]["iops"] = bw / (1 << 20) if job != "randrw70-4k" else 700
            if job == "randrw70-4k":
                jr["write"]["iops"] = 300
            json.dump({"timestamp": end, "jobs": [jr]}, open(os.path.join(d, job + ".json"), "w"))
            end += 20
        with open(os.path.join(d, "watch.jsonl"), "w") as w:
            for t in range(1_800_000_000 - 12, 1_800_000_000 + 45):
                w.write(json.dumps({"wall": t, "interval_s": 1, "portals": [
                    {"name": "nic1", "share": 0.48, "mbps": 10}, {"name": "nic2", "share": 0.52, "mbps": 11}]}) + "\n")
        r = subprocess.run([sys.executable, os.path.join(INI, "report.py"), "--fio", d, "--stats",
                            os.path.join(d, "watch.jsonl"), "--config", "raid5-2L", "--out", d, "--no-chart"],
                           capture_output=True, text=True)
        check("05 report exit 0", r.returncode == 0, r.stderr)
        md = open(os.path.join(d, "report.md")).read() if os.path.exists(os.path.join(d, "report.md")) else ""
        check("05 row with MB/s", "| 300.0 |" in md and "| 280.0 |" in md, md)
        check("05 published beside", "350-400 MB/s" in md, md)
        check("05 random IOPS", "| 1000 |" in md, md)
        check("05 path shares", "nic1 48% / nic2 52%" in md, md)


main((t01_same_workloads, t02_same_parameters, t03_matrix_values, t04_diskspd_line, t05_report_merges))
