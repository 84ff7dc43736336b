#!/usr/bin/env python3
"""Merges an initiator's benchmark results with rtgtd's own record into the
lab's table, beside the published figures, and draws the lab's chart.

usage: report.py (--fio DIR | --diskspd DIR) [--stats FILE] [--config KEY]
                 [--label TEXT] [--out DIR] [--no-chart] [--clock-offset S]

  --fio DIR      run-fio.sh's output (seqwrite-1m.json, seqread-1m.json,
                 randrw70-4k.json: fio --output-format=json)
  --diskspd DIR  diskspd.ps1's output (results.csv)
  --stats FILE   `rtgtctl stats --watch 1 --json` recorded on the target
                 during the run (one object per line): each job's window
                 gives the target-side MB/s and every portal's share
  --config KEY   which published row to put beside: raid5-1L, raid5-2L,
                 raid6-1L, raid6-2L, raid10-1L, raid10-2L, 2xraid1-2L
                 (../shared/lab/seed-results.md section 1; scripts/lab.sh)
  --out DIR      report.md, report.json, report.png (default: the input DIR)

MB/s are 10^6 bytes per second, as in rtgt-bench, fio's bw_bytes and the lab.
"""
import argparse
import csv
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lab"))
import barchart  # noqa: E402  (scripts/lab/barchart.py, the lab's chart)

JOBS = ("seqwrite-1m", "seqread-1m", "randrw70-4k")
# seed-results.md section 1, as scripts/lab.sh has them: (number for the
# chart or None, text)
PUB = {
    "raid5-1L": {"seqwrite-1m": (290, "~290 MB/s (link bound)"), "seqread-1m": (290, "~290 MB/s (link bound)"),
                 "randrw70-4k": (None, "2nd (RAID10 > RAID5 > RAID6)")},
    "raid6-1L": {"seqwrite-1m": (None, "slightly below RAID5"), "seqread-1m": (None, "-"),
                 "randrw70-4k": (None, "3rd")},
    "raid10-1L": {"seqwrite-1m": (290, "~290 MB/s (link bound)"), "seqread-1m": (290, "~290 MB/s (link bound)"),
                  "randrw70-4k": (None, "1st")},
    "2xraid1-2L": {"seqwrite-1m": (522, "522 MB/s"), "seqread-1m": (572, "572 MB/s"),
                   "randrw70-4k": (None, "-")},
}
for lvl in ("raid5", "raid6", "raid10"):
    PUB[lvl + "-2L"] = {"seqwrite-1m": (375, "350-400 MB/s"), "seqread-1m": (375, "350-400 MB/s"),
                        "randrw70-4k": (None, "-")}
LABEL = {"raid5-1L": "RAID5, 1 target, 1 link", "raid5-2L": "RAID5, 2 targets on 1 pool, 2 links",
         "raid6-1L": "RAID6, 1 target, 1 link", "raid6-2L": "RAID6, 2 targets on 1 pool, 2 links",
         "raid10-1L": "RAID10, 1 target, 1 link", "raid10-2L": "RAID10, 2 targets on 1 pool, 2 links",
         "2xraid1-2L": "2 x RAID1, 1 target each, 2 links"}


def die(msg):
    print(f"report.py: {msg}", file=sys.stderr)
    sys.exit(2)


def from_fio(d):
    """job -> {read_mbps, write_mbps, iops, p50_ms, p99_ms, start, end}"""
    out = {}
    for job in JOBS:
        p = os.path.join(d, job + ".json")
        if not os.path.exists(p):
            continue
        try:
            r = json.load(open(p))
            j = r["jobs"][0]
        except (ValueError, KeyError, IndexError) as e:
            die(f"{p}: not fio JSON output ({e})")
        rd, wr = j["read"], j["write"]
        lat = (rd if rd["iops"] >= wr["iops"] else wr).get("clat_ns", {}).get("percentile", {})
        end = float(r["timestamp"])
        out[job] = {"read_mbps": rd["bw_bytes"] / 1e6, "write_mbps": wr["bw_bytes"] / 1e6,
                    "iops": rd["iops"] + wr["iops"],
                    "p50_ms": lat.get("50.000000", 0) / 1e6, "p99_ms": lat.get("99.000000", 0) / 1e6,
                    "start": end - j["job_runtime"] / 1000.0, "end": end}
    return out


def from_diskspd(d):
    p = os.path.join(d, "results.csv")
    if not os.path.exists(p):
        die(f"{p} missing (diskspd.ps1 writes it)")
    out = {}
    for row in csv.DictReader(open(p)):
        if row["job"] not in JOBS:
            continue
        end = float(row["end_unix"])
        out[row["job"]] = {"read_mbps": float(row["read_mbps"]), "write_mbps": float(row["write_mbps"]),
                           "iops": float(row["iops"]), "p50_ms": float(row["p50_ms"]),
                           "p99_ms": float(row["p99_ms"]), "start": end - float(row["seconds"]), "end": end}
    return out


def target_side(records, start, end):
    """the target's view of [start, end]: MB/s and each portal's share"""
    inside = [r for r in records if start < r.get("wall", 0) <= end + 0.5]
    if not inside:
        return None
    per = {}
    tot = []
    for r in inside:
        for p in r.get("portals", []):
            per[p["name"]] = per.get(p["name"], 0.0) + p.get("mbps", 0.0)
        tot.append(r.get("total", {}).get("mbps", sum(p.get("mbps", 0.0) for p in r.get("portals", []))))
    s = sum(per.values())
    shares = {k: v / s for k, v in per.items() if s > 0 and v / s >= 0.005}
    return {"mbps": sum(tot) / len(tot), "shares": shares, "intervals": len(inside)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--fio")
    g.add_argument("--diskspd")
    ap.add_argument("--stats")
    ap.add_argument("--config", default="")
    ap.add_argument("--label")
    ap.add_argument("--out")
    ap.add_argument("--no-chart", action="store_true")
    ap.add_argument("--clock-offset", type=float, default=0.0,
                    help="seconds to add to the initiator's times to get the target's "
                         "(when their clocks differ)")
    a = ap.parse_args()
    if a.config and a.config not in PUB:
        die(f"--config {a.config}: one of {', '.join(sorted(PUB))}")
    src = a.fio or a.diskspd
    res = from_fio(src) if a.fio else from_diskspd(src)
    if not res:
        die(f"no results in {src}")
    records = []
    if a.stats:
        for n, line in enumerate(open(a.stats), 1):
            line = line.strip()
            if not line:
                continue
            try:
                records.append(json.loads(line))
            except ValueError:
                die(f"{a.stats}:{n}: not a JSON object (rtgtctl stats --watch 1 --json output)")
    out = a.out or src
    os.makedirs(out, exist_ok=True)
    label = a.label or LABEL.get(a.config, a.config or "this run")
    pub = PUB.get(a.config, {})
    for job, r in res.items():
        r["target"] = (target_side(records, r["start"] + a.clock_offset, r["end"] + a.clock_offset)
                       if records else None)

    def mb(job, key):
        return f"{res[job][key]:.1f}" if job in res else "-"

    def pubtxt(job):
        return pub.get(job, (None, "-"))[1]

    def shares(job):
        t = res.get(job, {}).get("target")
        if not t or not t["shares"]:
            return None
        return " / ".join(f"{k} {100 * v:.0f}%" for k, v in sorted(t["shares"].items()))

    sh = [f"{w} {shares(j)}" for w, j in (("write", "seqwrite-1m"), ("read", "seqread-1m"),
                                          ("randrw", "randrw70-4k")) if shares(j)]
    iops = f"{res['randrw70-4k']['iops']:.0f}" if "randrw70-4k" in res else "-"
    lines = [
        "| configuration | seq write MB/s | published | seq read MB/s | published | random 70/30 IOPS | published | path shares |",
        "|---|---|---|---|---|---|---|---|",
        f"| {label} | {mb('seqwrite-1m', 'write_mbps')} | {pubtxt('seqwrite-1m')} | {mb('seqread-1m', 'read_mbps')} "
        f"| {pubtxt('seqread-1m')} | {iops} | {pubtxt('randrw70-4k')} | {'; '.join(sh) or '-'} |",
        "",
        "| job | initiator MB/s read / write | IOPS | p50 ms | p99 ms | target MB/s (rtgtctl stats) |",
        "|---|---|---|---|---|---|",
    ]
    for job in JOBS:
        if job not in res:
            continue
        r = res[job]
        t = r["target"]
        tside = f"{t['mbps']:.1f} ({t['intervals']} intervals)" if t else "-"
        lines.append(f"| {job} | {r['read_mbps']:.1f} / {r['write_mbps']:.1f} | {r['iops']:.0f} | {r['p50_ms']:.2f} "
                     f"| {r['p99_ms']:.2f} | {tside} |")
    md = "\n".join(lines) + "\n"
    open(os.path.join(out, "report.md"), "w").write(md)
    json.dump({"config": a.config, "label": label, "results": res,
               "published": {k: {"mbps": v[0], "text": v[1]} for k, v in pub.items()}},
              open(os.path.join(out, "report.json"), "w"), indent=1)
    sys.stdout.write(md)
    if not a.no_chart:
        chart(out, label, res, pub)


def chart(out, label, res, pub):
    if not shutil.which("gnuplot"):
        print("report.py: gnuplot not found: no PNG chart (apt-get install gnuplot-nox)", file=sys.stderr)
        return

    def v(x):
        return None if x is None else f"{x:.1f}"
    png = os.path.join(out, "report.png")
    why = barchart.draw(
        png, [(label, v(res.get("seqwrite-1m", {}).get("write_mbps")),
               v(res.get("seqread-1m", {}).get("read_mbps")), v(pub.get("seqwrite-1m", (None,))[0]),
               v(pub.get("seqread-1m", (None,))[0]), v(res.get("randrw70-4k", {}).get("iops")))],
        f"rtgt from a real initiator: {label}",
        "1 MiB sequential, qd 8 per path (published: seed-results.md; 350-400 shown as 375)",
        "4 KiB random 70% read, qd 32 per path")
    if why:
        print(f"report.py: gnuplot failed: {why.strip()[:300]}", file=sys.stderr)
    else:
        print(f"report.py: chart {png}", file=sys.stderr)


if __name__ == "__main__":
    main()
