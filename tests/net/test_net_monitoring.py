#!/usr/bin/env python3
"""tests/net/test_net_monitoring.py - every metric the Grafana dashboard and
the Prometheus rules of target/daemon/monitoring/ read is one a running
rtgtd exports. The daemon: a raid1 pool of two members and a file spare,
a thick and a thin LUN, daemon.metrics on a free loopback port. The
members are loop devices where losetup can attach them, with the smartctl
stand-in of tests/data/smartctl (an ATA disk with pending sectors, an NVMe
one) so that the SMART families have samples; else files, and those
families count as ABSENT (the reason printed). While rtgt-bench holds a
session doing I/O, GET /metrics. 01 the scrape answers 200 with the
session's series (and, on loop devices, the SMART ones) in it; 02 each
rtgt_ name read (tests/lib/promql_names.py) is the name of a sample in the
scrape, except those listed in ABSENT with the reason they cannot appear
here, which must at least be declared (# TYPE of their family); each other
name is in FOREIGN (who exports it); 03 rtgtd stops with 0.
Prints "N%: Checks: N, Failures: N" like the Check programs; exit 1 on any
failure.
"""
import atexit
import os
import re
import shutil
import subprocess
import sys
import time
import tempfile
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
from ckpy import check, main  # noqa: E402
from ckdaemon import Daemon, RTGTD  # noqa: E402
import promql_names as pn  # noqa: E402

BENCH = os.path.join(os.path.dirname(RTGTD), "rtgt-bench")
IQN = "iqn.2026-11.org.rtgt:mon"
CONF = """daemon = { workers = 1; control = "rtgtd.sock"; state_dir = "state";
           metrics = "127.0.0.1:METRICS"; SMART };
pools = ( { name = "tank"; level = "raid1"; chunk = "64K";
            members = ( MEMBERS ); spares = ( "s0.img" ); create_size = "40M"; } );
portals = ( { name = "lo"; listen = "127.0.0.1:PORT"; } );
targets = ( { iqn = "%s"; portals = ( "lo" );
              luns = ( { lun = 0; pool = "tank"; volume = "v0"; size = "8M"; },
                       { lun = 1; pool = "tank"; volume = "t1"; size = "8M"; thin = true; } );
              allow = ( "ALL" ); } );
""" % IQN
DATA = os.path.join(ROOT, "tests", "data", "smartctl")
loops = []


def detach():
    for dev in loops:
        subprocess.run(["losetup", "-d", dev], capture_output=True)
    loops.clear()


def loop_members(imgdir):
    """Two loop devices over 40 MiB files in @imgdir, or (None, why)."""
    if not shutil.which("losetup"):
        return None, "no losetup"
    for i in range(2):
        img = os.path.join(imgdir, "loop%d.img" % i)
        with open(img, "wb") as f:
            f.truncate(40 << 20)
        p = subprocess.run(["losetup", "-f", "--show", img], capture_output=True, text=True)
        if p.returncode:
            detach()
            return None, "losetup -f failed (%d): %s" % (p.returncode, p.stderr.strip())
        loops.append(p.stdout.strip())
    return list(loops), ""


# rtgt_ names that no scrape here can show, and why; their families are
# declared all the same (filled in when no loop device could be attached)
SMART = ("only for block-device members with SMART (files have no health entry) and no loop "
         "device could be attached here (%s); tests/unit/test_metrics.c checks its samples "
         "from a snapshot with health")
SMART_NAMES = {
    "rtgt_member_health": SMART,
    "rtgt_member_temperature_celsius": SMART,
    "rtgt_member_reallocated_sectors": SMART,
    "rtgt_member_pending_sectors": SMART,
    "rtgt_member_media_errors": SMART,
}
ABSENT = {}
# names read that rtgtd does not export
FOREIGN = {
    "up": "Prometheus itself, per scrape target (RtgtDown)",
    "node_netstat_Tcp_RetransSegs": "node_exporter (RtgtHostTcpRetransmits: rtgtd has no per-path TCP counters)",
    "node_netstat_Tcp_OutSegs": "node_exporter (RtgtHostTcpRetransmits)",
}
state = {}


def scrape(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
        return r.status, r.read().decode()


def family_of(name):
    return re.sub(r"_(bucket|sum|count)$", "", name)


def t01_scrape_with_a_session():
    imgdir = tempfile.mkdtemp(prefix="rtgt-mon.")
    atexit.register(shutil.rmtree, imgdir, True)
    atexit.register(detach)
    members, why = loop_members(imgdir)
    if members:
        body = CONF.replace("MEMBERS", ", ".join('"%s"' % m for m in members))
        body = body.replace("SMART", 'smartctl = "smartctl"; health_interval = 1;')
    else:
        print("01 members are files, the SMART families have no samples: " + why)
        for n, reason in SMART_NAMES.items():
            ABSENT[n] = reason % why
        body = CONF.replace("MEMBERS", '"d0.img", "d1.img"').replace("SMART", "")
    d = Daemon(body, metrics=True)
    state["d"] = d
    if members:
        # the stand-in answers per device name (tests/data/smartctl/README.md)
        shutil.copy(os.path.join(DATA, "standin.sh"), os.path.join(d.dir, "smartctl"))
        for dev, sample in zip(members, ("ata-pending.json", "nvme-passed.json")):
            shutil.copy(os.path.join(DATA, sample),
                        os.path.join(d.dir, os.path.basename(dev) + ".json"))
    d.start()
    bench = subprocess.Popen([BENCH, "--url", "iscsi://127.0.0.1:%d/%s/0" % (d.port, IQN),
                              "--pattern", "randrw", "--bs", "4K", "--qd", "2", "--time", "6",
                              "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    text = ""
    status = None
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        status, text = scrape(d.metrics_port)
        if (re.search(r"^rtgt_session_read_ops_total\{", text, re.M) and
                (not members or re.search(r"^rtgt_member_media_errors\{", text, re.M))):
            break
        time.sleep(0.2)
    state["text"] = text
    out, _ = bench.communicate(timeout=60)
    check("01 GET /metrics answers 200", status == 200, status)
    check("01 the scrape holds the session's series",
          re.search(r"^rtgt_session_read_ops_total\{", text, re.M), d.tail())
    check("01 rtgt-bench ran clean", bench.returncode == 0, out)
    if members:
        for n in SMART_NAMES:
            check("01 %s has samples (loop devices, the smartctl stand-in)" % n,
                  re.search(r"^%s\{" % n, text, re.M), d.tail())


def t02_every_name_exported():
    text = state.get("text", "")
    samples = {m.group(1) for m in re.finditer(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]", text, re.M)}
    declared = {m.group(1) for m in re.finditer(r"^# TYPE (\S+) ", text, re.M)}
    used = {}
    for where, e in pn.dashboard_queries() + pn.rule_queries():
        for n in pn.names(e):
            used.setdefault(n, where)
    for n, where in sorted(used.items()):
        if not n.startswith("rtgt_"):
            check("02 %s (%s): exported by someone named in FOREIGN" % (n, where), n in FOREIGN, "")
        elif n in ABSENT:
            check("02 %s (%s): its family declared" % (n, where), family_of(n) in declared,
                  "no # TYPE %s" % family_of(n))
            print("02 %s: accepted without a sample: %s" % (n, ABSENT[n]))
        else:
            check("02 %s (%s) exported" % (n, where), n in samples, "not in the scrape")
    print("02 %d names read: %d exported with samples, %d declared only (ABSENT), %d from "
          "others (FOREIGN)" % (len(used), len([n for n in used if n in samples]),
                                len([n for n in used if n in ABSENT]),
                                len([n for n in used if n in FOREIGN])))


def t03_stop():
    d = state.get("d")
    check("03 rtgtd stops with 0", d and d.stop() == 0, d and d.tail())


if __name__ == "__main__":
    try:
        import yaml  # noqa: F401
    except ImportError:
        print("0%: Checks: 0, SKIPPED: PyYAML (python3-yaml) not installed")
        sys.exit(0)
    main([t01_scrape_with_a_session, t02_every_name_exported, t03_stop])
