#!/usr/bin/env python3
"""tests/unit/test_check_includes.py - scripts/check-includes.py: green on
the tree as it is, and failing, with FILE:LINE, on each kind of bad include
in a scratch tree (a folder including what its README does not allow, a
private header from another folder, a header that does not exist, a quoted
include that names no folder, a stem cycle in raid/, an #include cycle).
Prints "N%: Checks: N, Failures: N" like the Check programs; exit 1 on any
failure.
"""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
from ckpy import check, main  # noqa: E402
SCRIPT = os.path.join(ROOT, "scripts", "check-includes.py")
scratch = []



def run(*args):
    p = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                       timeout=60)
    return p.returncode, p.stdout


def tree(files):
    """A scratch tree: the five top folders and @files (path -> text)."""
    d = tempfile.mkdtemp(prefix="rtgt-inc.")
    scratch.append(d)
    for top in ("conf", "net", "raid", "target", "tests"):
        os.makedirs(os.path.join(d, top), exist_ok=True)
    base = {
        "conf/conf.h": "",
        "conf/conf_int.h": '#include "conf/conf.h"\n',
        "net/net.h": "",
        "raid/raid.h": '#include "conf/conf.h"\n',
        "raid/raid_int.h": '#include "raid/raid.h"\n',
        "raid/io.c": '#include <stdio.h>\n#include "raid/raid_int.h"\n',
        "target/scsi/scsi.h": "",
        "target/scsi/lu.c": '#include "raid/raid.h"\n#include "target/scsi/scsi.h"\n',
        "target/iscsi/iscsi.h": '#include "target/scsi/scsi.h"\n',
        "tests/unit/test_io.c": '#include "raid/raid_int.h"\n',
    }
    base.update(files)
    for path, text in base.items():
        full = os.path.join(d, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)
    return d


def t01_tree_is_green():
    rc, out = run()
    check("01 today's tree passes", rc == 0, out)


def t02_scratch_tree_is_green():
    rc, out = run("--root", tree({}))
    check("02 scratch tree passes", rc == 0, out)


def t03_folder_rule():
    rc, out = run("--root", tree({"raid/vol.c": '#include "raid/raid_int.h"\n'
                                                '#include "target/scsi/scsi.h"\n'}))
    check("03 raid/ including target/scsi fails", rc == 1, out)
    check("03 FILE:LINE", "raid/vol.c:2: raid/ may not include target/scsi/scsi.h" in out, out)


def t04_private_header():
    rc, out = run("--root", tree({"net/ev.c": '#include "conf/conf_int.h"\n'}))
    check("04 another folder's private header fails", rc == 1, out)
    check("04 says private", "net/ev.c:1: conf/conf_int.h is private to conf/" in out, out)


def t05_missing_and_unrooted():
    rc, out = run("--root", tree({"conf/load.c": '#include "conf/nope.h"\n#include "conf.h"\n'}))
    check("05 fails", rc == 1, out)
    check("05 missing header", "conf/load.c:1: conf/nope.h does not exist" in out, out)
    check("05 unrooted include", "conf/load.c:2: names no module" in out, out)


def t06_raid_cycle():
    rc, out = run("--root", tree({
        "raid/io_int.h": '#include "raid/raid_int.h"\n',
        "raid/pool_int.h": '#include "raid/raid_int.h"\n',
        "raid/io.c": '#include "raid/io_int.h"\n#include "raid/pool_int.h"\n',
        "raid/pool.c": '#include "raid/pool_int.h"\n#include "raid/io_int.h"\n',
    }))
    check("06 stem cycle fails", rc == 1, out)
    check("06 names it", "raid/: include cycle io -> pool -> io" in out, out)
    rc, out = run("--root", tree({
        "raid/io_int.h": '#include "raid/raid_int.h"\n',
        "raid/pool.c": '#include "raid/io_int.h"\n',
    }))
    check("06 one-way use passes", rc == 0, out)
    # equal file names in two folders are two nodes, not one
    rc, out = run("--root", tree({
        "raid/io_int.h": '#include "raid/raid_int.h"\n',
        "raid/hdd_int.h": '#include "raid/raid_int.h"\n',
        "raid/io.c": '#include "raid/hdd_int.h"\n',
        "raid/member/hdd.c": '#include "raid/io_int.h"\n',
    }))
    check("06 same name in a subfolder is no cycle", rc == 0, out)


def t07_header_cycle():
    rc, out = run("--root", tree({"target/scsi/a.h": '#include "target/scsi/b.h"\n',
                                  "target/scsi/b.h": '#include "target/scsi/a.h"\n'}))
    check("07 #include cycle fails", rc == 1, out)
    check("07 names it", "#include cycle target/scsi/a.h -> target/scsi/b.h -> target/scsi/a.h"
          in out, out)


def t08_graph():
    # every raid/*.c of the tree is a node with at least one edge; which
    # headers it uses changes as raid/ does, so no edge is named here
    rc, out = run("--graph")
    lines = out.split("\n")
    stems = sorted(f[:-2] for f in os.listdir(os.path.join(ROOT, "raid")) if f.endswith(".c"))
    missing = [s for s in stems if not any(l.startswith(s + " -> ") for l in lines)]
    check("08 graph", rc == 0 and stems and not missing, "no edge for %s in:\n%s" % (missing, out))


def cleanup():
    for d in scratch:
        shutil.rmtree(d, ignore_errors=True)


main((t01_tree_is_green, t02_scratch_tree_is_green, t03_folder_rule, t04_private_header,
      t05_missing_and_unrooted, t06_raid_cycle, t07_header_cycle, t08_graph), cleanup)
