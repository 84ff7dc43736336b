#!/usr/bin/env python3
"""scripts/lab/report.py - the NAS lab's figures, checks and results
(scripts/lab.sh builds the namespace, links, qdiscs and daemons, runs
rtgt-bench --json and hands its output files here).

  report.py run-line RUN.json LABEL DROPS   one progress line of a run
  report.py read-span RUN.json SPAN         bytes the sequential read of the
                                            sessions may cover: the least any
                                            session wrote (MiB-aligned), or
                                            SPAN when that is not sensible
  report.py p50 RUN.json                    the run's total p50 (ms), or ""
  report.py report --runs DIR --meta FILE --out DIR [--no-chart]
        OUT/results.md (tables beside the published figures, the issue's
        requirement checks, session shares, p99), OUT/results.json (the
        same plus every rtgt-bench JSON), OUT/results.png (gnuplot), and
        results.md again on stdout. Exit 0; 3 when only the chart failed.

A run is DIR/CONFIG.WORKLOAD.json (rtgt-bench --json; empty or unparsable:
the run failed). FILE holds KEY=VALUE lines written by lab.sh (below, in
Meta), one "config=KEY|LABEL|LINKS|TARGETS" line per configuration in run
order. Numbers are kept as rtgt-bench printed them, so results.json repeats
its figures digit for digit.
"""
import datetime
import json
import os
import shutil
import sys

import barchart

WORKLOADS = ("seqwrite", "seqread", "randrw")
WL_NAME = {"seqwrite": "1M seq write qd8", "seqread": "1M seq read qd8",
           "randrw": "4K random 70/30 qd32"}

# seed-results.md section 1: numeric value (checks, chart) and text
PUB = {}


def _pub(key, num, text):
    PUB[key] = (num, text)


_pub("raid5-1L|seqwrite", "290", "~290 MB/s (link bound)")
_pub("raid5-1L|seqread", "290", "~290 MB/s (link bound)")
_pub("raid5-1L|randrw", "", "2nd (RAID10 > RAID5 > RAID6)")
_pub("raid6-1L|seqwrite", "", "slightly below RAID5")
_pub("raid6-1L|seqread", "", "-")
_pub("raid6-1L|randrw", "", "3rd")
_pub("raid10-1L|seqwrite", "290", "~290 MB/s (link bound)")
_pub("raid10-1L|seqread", "290", "~290 MB/s (link bound)")
_pub("raid10-1L|randrw", "", "1st")
for _l in ("raid5", "raid6", "raid10"):
    _pub(f"{_l}-2L|seqwrite", "375", "350-400 MB/s")
    _pub(f"{_l}-2L|seqread", "375", "350-400 MB/s")
    _pub(f"{_l}-2L|randrw", "", "-")
_pub("2xraid1-2L|seqwrite", "522", "522 MB/s")
_pub("2xraid1-2L|seqread", "572", "572 MB/s")
_pub("2xraid1-2L|randrw", "", "-")


class Num(float):
    """A number with the text it was read from."""

    def __new__(cls, text):
        n = float.__new__(cls, text)
        n.text = text
        return n


class Run:
    """One rtgt-bench --json result; every figure None when the run failed."""

    def __init__(self, path):
        self.doc = None
        try:
            with open(path) as f:
                self.doc = json.loads(f.read(), parse_float=Num, parse_int=Num)
        except (OSError, ValueError):
            self.doc = None
        if not isinstance(self.doc, dict):
            self.doc = None
        sessions = (self.doc or {}).get("sessions") or []
        total = (self.doc or {}).get("total") or {}
        self.mbps = total.get("mbps")
        self.iops = total.get("iops")
        lat = total.get("lat_ms") or {}
        self.p99 = lat.get("p99")
        self.p50 = lat.get("p50")
        self.session_mbps = [s["mbps"] for s in sessions if "mbps" in s]
        self.shares = [s["share"] for s in sessions if "share" in s]
        self.bytes = [s["bytes"] for s in sessions if "bytes" in s]


# ---------------------------------------------------------------- formatting

def txt(x):
    """A figure as rtgt-bench printed it."""
    return x.text if isinstance(x, Num) else repr(x) if isinstance(x, float) else str(x)


def num(x):
    return "-" if x is None or x == "" else "%.1f" % float(x)


def awk(x):
    """What awk's print makes of a computed number (OFMT %.6g)."""
    return float("%.6g" % x)


def ge(a, b):
    """a >= b for two measured figures; one not measured (None, or a failed
    run's 0) never passes."""
    if a is None or b is None or a == "" or b == "":
        return False
    a, b = float(a), float(b)
    return a > 0 and b > 0 and a >= b


def yn(c):
    return "yes" if c else "no"


def margin(a, b):
    a, b = float(a or 0), float(b or 0)
    return "%+.0f%%" % (100 * (a / b - 1)) if a > 0 and b > 0 else "-"


def jdump(v):
    """JSON text; numbers read from a run keep their digits."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, Num):
        return v.text
    if isinstance(v, (int, float)):
        return json.dumps(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ",".join(jdump(x) for x in v) + "]"
    return "{" + ",".join(json.dumps(k) + ":" + jdump(x) for k, x in v.items()) + "}"


def raw_num(s):
    """A number lab.sh measured (text) for JSON: as is, or null."""
    if s is None or s == "":
        return None
    try:
        float(s)
    except ValueError:
        return None
    return Num(s)


# ---------------------------------------------------------------- the report

def read_meta(path):
    meta, configs = {}, []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if "=" not in line:
                continue
            k, v = line.split("=", 1)
            if k == "config":
                key, label, links, targets = v.split("|", 3)
                configs.append({"key": key, "label": label, "links": int(links),
                                "targets": int(targets)})
            else:
                meta[k] = v
    return meta, configs


class Lab:
    def __init__(self, runs_dir, meta, configs):
        self.m = meta
        self.configs = configs
        self.runs = {}
        for name in os.listdir(runs_dir):
            if name.endswith(".json"):
                key = name[:-5].replace(".", "|", 1)
                self.runs[key] = Run(os.path.join(runs_dir, name))

    def run(self, key):
        return self.runs.get(key) or Run("/nonexistent")

    def mbps(self, key):
        return self.run(key).mbps

    def have(self, key):
        return self.mbps(key) is not None

    def checks(self):
        out = []   # (name, required, measured, met: "yes"|"no"|other)

        def add(*c):
            out.append(c)

        if self.have("2xraid1-2L|seqwrite"):
            v = self.mbps("2xraid1-2L|seqwrite")
            add("2 x RAID1, 2 links, seq write", ">= 480 MB/s", f"{num(v)} MB/s", yn(ge(v, 480)))
            v = self.mbps("2xraid1-2L|seqread")
            add("2 x RAID1, 2 links, seq read", ">= 530 MB/s", f"{num(v)} MB/s", yn(ge(v, 530)))
        for w in ("seqwrite", "seqread"):
            v = self.mbps(f"raid5-1L|{w}")
            add(f"RAID5, 1 link, {WL_NAME[w]}", ">= 265 MB/s", f"{num(v)} MB/s", yn(ge(v, 265)))
        # within 1%: two link-bound runs differ by noise
        r5w, r6w = self.mbps("raid5-1L|seqwrite"), self.mbps("raid6-1L|seqwrite")
        add("RAID6 seq write not above RAID5's (1 link)", "RAID6 <= RAID5 (+1% noise)",
            f"{num(r6w)} vs {num(r5w)} MB/s", yn(ge(awk(float(r5w or 0) * 1.01), r6w)))
        # a clear order: each ahead of the next by more than the noise (the
        # same level differs by about 1% between full runs on a quiet
        # machine, so 2% is twice that)
        i10, i5, i6 = (self.run(f"{l}-1L|randrw").iops for l in ("raid10", "raid5", "raid6"))
        add("mixed random order (1 link)", "RAID10 > RAID5 > RAID6, each >= 2% ahead",
            f"{num(i10)} > {num(i5)} > {num(i6)} IOPS ({margin(i10, i5)}, {margin(i5, i6)})",
            yn(ge(i10, awk(float(i5 or 0) * 1.02)) and ge(i5, awk(float(i6 or 0) * 1.02))))
        if self.have("2xraid1-2L|seqwrite"):
            for w in ("seqwrite", "seqread"):
                ref = self.mbps(f"2xraid1-2L|{w}")
                ref90 = awk(float(ref or 0) * 0.9)
                for l in ("raid5", "raid10", "raid6"):
                    v = self.mbps(f"{l}-2L|{w}")
                    r = float(ref or 0)
                    share = "%.0f%%" % (100 * float(v or 0) / r) if r > 0 else "-"
                    add(f"{l.upper()} 2 targets on 1 pool, 2 links, {WL_NAME[w]} (beyond the box)",
                        f">= 90% of 2 x RAID1 ({num(ref90)} MB/s)", f"{num(v)} MB/s ({share})",
                        "n.a. (not required)" if l == "raid6" else yn(ge(v, ref90)))
        # fairness: no session below 80% of an even share, in every
        # multi-session run
        unfair, nmulti = "", 0
        for c in self.configs:
            for w in WORKLOADS:
                s = self.run(f"{c['key']}|{w}").shares
                if len(s) < 2:
                    continue
                nmulti += 1
                low = "".join(txt(x) + " " for x in s if float(x) < 0.8 / len(s))
                if low:
                    unfair += f" {c['key']}/{w}:{low}"
        if nmulti:
            add(f"fairness: every session >= 80% of an even share ({nmulti} two-session runs)",
                ">= 0.40 each", f"below:{unfair}" if unfair else "all >= 0.40", yn(not unfair))
        return out

    def shares_txt(self, cfg):
        out = []
        for w in WORKLOADS:
            s = self.run(f"{cfg}|{w}").shares
            if len(s) < 2:
                continue
            out.append(w.replace("seq", "", 1) + " " + "/".join("%.0f" % (float(x) * 100) for x in s)
                       + "%")
        return ", ".join(out) or "-"

    def markdown(self, checks, when):
        m = self.m
        hdd = m.get("hdd", "")
        cmd = "scripts/lab.sh" + (" " + m["args"] if m.get("args") else "")
        probe = m.get("hdd_probe_ms", "")
        L = ["# rtgt NAS lab results", "",
             f"Command: `{cmd}`  ",
             f"rtgt {m['rev']} on {m['host']}, {when.strftime('%Y-%m-%d %H:%M UTC')}, "
             f"{m['seconds']} s in all; load average {m['load_start']} at the start, "
             f"{m['load_end']} at the end (other work on the machine skews the figures).  ",
             f"Links: {m['links']} x veth, tc tbf {m['rate']} each direction (burst "
             f"{m['tbf_burst']} B, latency {m['tbf_latency']} ms). Members: 4 x "
             f"{m['member_size']} sparse files in {m['dir']}, direct_io = false, HDD model "
             f"{hdd or 'off'} (mbps:seek_ms:rpm)"
             + (f", disk write cache {m['write_cache']}" if hdd else "")
             + f", active in this build: **{m['hdd_active']}**"
             + (f" (4K random read p50 {probe} ms)" if probe else "") + ".  ",
             f"Runs: {m['time']} s each; sequential runs 1 MiB qd 8 per session over the first "
             f"{m['span']} of each LUN (reads over what the write covered); random runs 4 KiB 70% "
             "read qd 32 per session over "
             + ("the whole LUN" if m["rand_span"] == "lun" else
                f"the first {m['rand_span']} of each LUN (the same test data on every level)")
             + f". rtgtd and rtgt-bench ran at nice {m['nice']}.",
             "",
             "Link calibration (memory-backed RAID0, no HDD model; the ceiling of the shaped links "
             "plus the target):",
             "",
             "| path | seq write MB/s | seq read MB/s |",
             "|---|---|---|",
             f"| link 1, raw TCP (one stream, no iSCSI) | {num(raw_num(m.get('raw_w')))} | "
             f"{num(raw_num(m.get('raw_r')))} |",
             f"| link 1 | {num(self.mbps('cal1|seqwrite'))} | {num(self.mbps('cal1|seqread'))} |"]
        if m["links"] == "2":
            L.append(f"| links 1+2 together | {num(self.mbps('cal2|seqwrite'))} | "
                     f"{num(self.mbps('cal2|seqread'))} |")
        L += ["",
              "| configuration | seq write MB/s | published | seq read MB/s | published | "
              "random 70/30 IOPS | published | session shares |",
              "|---|---|---|---|---|---|---|---|"]
        for c in self.configs:
            k = c["key"]
            iops = self.run(f"{k}|randrw").iops
            L.append(f"| {c['label']} | {num(self.mbps(k + '|seqwrite'))} | "
                     f"{PUB.get(k + '|seqwrite', ('', ''))[1]} | "
                     f"{num(self.mbps(k + '|seqread'))} | {PUB.get(k + '|seqread', ('', ''))[1]} | "
                     f"{'-' if iops is None else '%.0f' % float(iops)} | "
                     f"{PUB.get(k + '|randrw', ('', ''))[1]} | {self.shares_txt(k)} |")
        L += ["", 'Requirements (issue 4, "What it must show"):', "",
              "| check | required | measured | met |", "|---|---|---|---|"]
        L += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in checks]
        if m["hdd_active"] != "yes":
            L += ["",
                  "**The HDD model was not active in this run**: members ran at memory speed, so the",
                  "figures show the links and the target, not spinning disks, and the disk-bound checks",
                  "(RAID6 below RAID5, the random order, two streams on one pool) say nothing yet."]
        p99 = "".join(f"{c['key']} {w} {num(self.run(c['key'] + '|' + w).p99)}; "
                      for c in self.configs for w in WORKLOADS)
        L += ["", f"p99 latency (ms): {p99}"]
        return "\n".join(L) + "\n"

    def json_text(self, checks, when):
        m = self.m
        hdd = None
        if m.get("hdd"):
            hdd = {"mbps": raw_num(m["hdd_mbps"]), "avg_seek_ms": raw_num(m["hdd_seek"]),
                   "rpm": raw_num(m["hdd_rpm"]), "write_cache": m["write_cache"] == "on"}
        cal = {"raw_tcp_link1": {"to_nas_mbps": raw_num(m.get("raw_w")),
                                 "from_nas_mbps": raw_num(m.get("raw_r"))},
               "link1": {"write_mbps": self.mbps("cal1|seqwrite"),
                         "read_mbps": self.mbps("cal1|seqread")}}
        if m["links"] == "2":
            cal["links12"] = {"write_mbps": self.mbps("cal2|seqwrite"),
                              "read_mbps": self.mbps("cal2|seqread")}
        lab = {"command": "scripts/lab.sh" + (" " + m["args"] if m.get("args") else ""),
               "rev": m["rev"], "date": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
               "seconds": raw_num(m["seconds"]), "links": raw_num(m["links"]), "rate": m["rate"],
               "rate_bps": raw_num(m["rate_bps"]), "tbf_burst": raw_num(m["tbf_burst"]),
               "tbf_latency_ms": raw_num(m["tbf_latency"]), "quick": m["quick"] == "1",
               "time": raw_num(m["time"]), "loadavg_start": m["load_start"],
               "loadavg_end": m["load_end"], "members": 4,
               "member_bytes": raw_num(m["member_bytes"]), "member_dir": m["dir"],
               "span_bytes": raw_num(m["span_bytes"]), "rand_span": m["rand_span"], "hdd": hdd,
               "hdd_active": m["hdd_active"], "hdd_probe_p50_ms": raw_num(m.get("hdd_probe_ms")),
               "calibration": cal}
        results = []
        for c in self.configs:
            for w in WORKLOADS:
                k = f"{c['key']}|{w}"
                r = self.run(k)
                pnum, ptext = PUB.get(k, ("", ""))
                results.append({"config": c["key"], "label": c["label"], "links": c["links"],
                                "targets": c["targets"], "workload": w, "mbps": r.mbps,
                                "iops": r.iops, "p99_ms": r.p99, "session_mbps": r.session_mbps,
                                "shares": r.shares,
                                "published": {"mbps": raw_num(pnum), "text": ptext},
                                "bench": r.doc})
        met = {"yes": True, "no": False}
        cj = [{"check": a, "required": b, "measured": c, "met": met.get(d)} for a, b, c, d in checks]
        return ('{"lab":' + jdump(lab) + ',\n"results":[' + ",\n".join(jdump(r) for r in results)
                + '],\n"checks":[' + ",\n".join(jdump(c) for c in cj) + "]}\n")

    def chart(self, out_png):
        """gnuplot's bar chart; None or what went wrong."""
        m = self.m
        def q(x):
            return None if x is None or x == "" else txt(x)
        rows = []
        for c in self.configs:
            k = c["key"]
            rows.append((k, q(self.mbps(k + "|seqwrite")), q(self.mbps(k + "|seqread")),
                         q(PUB.get(k + "|seqwrite", ("", ""))[0]),
                         q(PUB.get(k + "|seqread", ("", ""))[0]),
                         q(self.run(k + "|randrw").iops)))
        return barchart.draw(
            out_png, rows,
            f"rtgt NAS lab: {m['links']} x {m['rate']} links, 4 members, HDD model "
            f"{m.get('hdd') or 'off'} (active: {m['hdd_active']}), {m['time']} s runs",
            "1 MiB sequential, qd 8 per session (published: seed-results.md; 350-400 shown as 375)",
            "4 KiB random 70% read, qd 32 per session (published order: RAID10 > RAID5 > RAID6)",
            xtics="rotate by -20 noenhanced")


def report(argv):
    runs = meta = out = None
    chart = True
    while argv:
        a = argv.pop(0)
        if a in ("--runs", "--meta", "--out") and argv:
            v = argv.pop(0)
            if a == "--runs":
                runs = v
            elif a == "--meta":
                meta = v
            else:
                out = v
        elif a == "--no-chart":
            chart = False
        else:
            return usage()
    if not (runs and meta and out):
        return usage()
    m, configs = read_meta(meta)
    lab = Lab(runs, m, configs)
    when = datetime.datetime.now(datetime.timezone.utc)
    checks = lab.checks()
    md = lab.markdown(checks, when)
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write(md)
    with open(os.path.join(out, "results.json"), "w") as f:
        f.write(lab.json_text(checks, when))
    rc = 0
    if chart and shutil.which("gnuplot"):
        why = lab.chart(os.path.join(out, "results.png"))
        if why is not None:
            print(f"lab.sh: gnuplot failed: {why}", file=sys.stderr)
            rc = 3
    sys.stdout.write(md)
    return rc


def usage():
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


def main(argv):
    if len(argv) >= 2 and argv[1] == "report":
        return report(argv[2:])
    if len(argv) == 5 and argv[1] == "run-line":
        r = Run(argv[2])
        shares = "".join(txt(s) + " " for s in r.shares) or "-"
        print("  %-34s %8.1f MB/s %8.0f IOPS  p99 %8.2f ms  shares %s tbf drops %s" % (
            argv[3], float(r.mbps or 0), float(r.iops or 0), float(r.p99 or 0), shares, argv[4]))
        return 0
    if len(argv) == 4 and argv[1] == "read-span":
        r, span = Run(argv[2]), int(argv[3])
        least = int(min((float(b) for b in r.bytes), default=0))
        least = (least >> 20) << 20
        print(span if least < (16 << 20) or least > span else least)
        return 0
    if len(argv) == 3 and argv[1] == "p50":
        r = Run(argv[2])
        print("" if r.p50 is None else txt(r.p50))
        return 0
    return usage()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
