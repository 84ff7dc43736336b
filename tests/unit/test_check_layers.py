#!/usr/bin/env python3
"""tests/unit/test_check_layers.py - scripts/check-layers.py: green on the
build of this tree, and failing, naming the files, on each kind of bad call
in a scratch tree whose small C files are compiled for the purpose (a call
up the written order, a cycle inside one layer, a call into a folder the
module rules forbid, an object no layer lists, a stale entry, a source
whose opening comment names no layer), while a whole-folder node (target/iscsi/) may call itself freely.
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
SCRIPT = os.path.join(ROOT, "scripts", "check-layers.py")
CC = os.environ.get("CC", "cc")
scratch = []

# The scratch tree's layer tables: raid/ with three layers, target/iscsi/
# as one whole-folder node, target/scsi with two layers.
LAYERS = {
    "raid/README.md": "# raid\n\n```layers\nlow: raid/a raid/b\nmid: raid/c\n"
                      "high: raid/d\n```\n",
    "target/README.md": "```layers\nlow: target/scsi/s1\nhigh: target/scsi/s2\n```\n\n"
                        "```layers\nprotocol: target/iscsi/\n```\n",
}
# A clean call graph: every call goes down or stays in its layer without a
# circle; iscsi's two files call each other and call down into scsi.
BASE = {
    "raid/a.c": "int ra(void); int ra(void) { return 1; }\n",
    "raid/b.c": "int ra(void); int rb(void); int rb(void) { return ra(); }\n",
    "raid/c.c": "int rb(void); int rc(void); int rc(void) { return rb(); }\n",
    "raid/d.c": "int rc(void); int ra(void); int rd(void); int rd(void) { return rc() + ra(); }\n",
    "target/scsi/s1.c": "int rd(void); int s1(void); int s1(void) { return rd(); }\n",
    "target/scsi/s2.c": "int s1(void); int s2(void); int s2(void) { return s1(); }\n",
    "target/iscsi/i1.c": "int i2(void); int s2(void); int i1(int n);\n"
                         "int i1(int n) { return n ? i2() : s2(); }\n",
    "target/iscsi/i2.c": "int i1(int n); int i2(void); int i2(void) { return i1(0); }\n",
}

# What every source's opening comment says (given to each scratch source
# that has no comment of its own; "//" marks a source meant to lack it).
OPENING = "/*\n * scratch source.\n *\n * Layer: its table's. May\n * call: below.\n */\n"


def run(*args):
    p = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                       timeout=120)
    return p.returncode, p.stdout + p.stderr


def tree(sources=None, readmes=None):
    """A scratch tree (READMEs) and its build dir (objects of @sources,
    path -> C text, merged over BASE; a None text drops the file)."""
    d = tempfile.mkdtemp(prefix="rtgt-layers.")
    scratch.append(d)
    files = dict(LAYERS)
    files.update(readmes or {})
    srcs = dict(BASE)
    srcs.update(sources or {})
    for path, text in files.items():
        full = os.path.join(d, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)
    build = os.path.join(d, "build")
    for path, text in srcs.items():
        if text is None:
            continue
        if not text.startswith("/*") and not text.startswith("//"):
            text = OPENING + text
        c = os.path.join(d, path)
        os.makedirs(os.path.dirname(c), exist_ok=True)
        with open(c, "w") as f:
            f.write(text)
        o = os.path.join(build, path[:-2] + ".o")
        os.makedirs(os.path.dirname(o), exist_ok=True)
        subprocess.run([CC, "-c", "-o", o, c], check=True, timeout=60)
    return d, build


def t01_tree_is_green():
    build = os.path.join(ROOT, "build")
    if not os.path.isdir(os.path.join(build, "raid")):
        print("01 skipped: no build/ objects (make all first; make check builds them)")
        return
    rc, out = run(build)
    check("01 this tree's build passes", rc == 0, out)


def t02_scratch_is_green():
    d, b = tree()
    rc, out = run("--root", d, b)
    check("02 scratch tree passes", rc == 0, out)


def t03_upward_call():
    # raid/a (layer low) calls raid/c (layer mid): up the order, no cycle
    d, b = tree({"raid/a.c": "int rc(void); int ra(void); int ra(void) { return 1; }\n"
                             "int ra2(void); int ra2(void) { return rc(); }\n",
                 "raid/c.c": "int rc(void); int rc(void) { return 3; }\n"})
    rc, out = run("--root", d, b)
    check("03 upward call fails", rc == 1, out)
    check("03 names it", "raid/a.c: upward call to raid/c.c (rc): layer \"low\"" in out, out)
    check("03 no cycle reported", "cycle:" not in out, out)


def t04_cycle_in_one_layer():
    d, b = tree({"raid/a.c": "int rb(void); int ra(void); int ra(void) { return rb(); }\n",
                 "raid/b.c": "int ra(void); int rb(void); int rb(void) { return 2; }\n"
                             "int rb2(void); int rb2(void) { return ra(); }\n"})
    rc, out = run("--root", d, b)
    check("04 cycle fails", rc == 1, out)
    check("04 names it", "cycle: raid/a raid/b" in out, out)
    check("04 not an upward call", "upward" not in out, out)


def t05_forbidden_module():
    # raid/ calling target/scsi: check-includes.py's RULES forbid it
    d, b = tree({"raid/a.c": "int s1(void); int ra(void); int ra(void) { return s1(); }\n"})
    rc, out = run("--root", d, b)
    check("05 raid calling target fails", rc == 1, out)
    check("05 names it", "raid/a.c: calls target/scsi/s1.c (s1): raid/ may not call target/scsi/"
          in out, out)


def t06_unlisted_and_stale():
    d, b = tree({"raid/e.c": "int re(void); int re(void) { return 5; }\n",
                 "raid/d.c": None,
                 "target/scsi/s1.c": "int s1(void); int s1(void) { return 1; }\n"})
    rc, out = run("--root", d, b)
    check("06 fails", rc == 1, out)
    check("06 unlisted object", "raid/e.c: in no `layers` block" in out, out)
    check("06 stale entry", "raid/README.md:6: raid/d names no object" in out, out)


def t07_folder_node():
    # the iscsi pair calls each other (BASE): allowed inside a folder node,
    # but a call from scsi up into it closes a cycle through the node
    d, b = tree({"target/scsi/s1.c": "int i2(void); int rd(void); int s1(void);\n"
                                     "int s1(void) { return rd() + i2(); }\n"})
    rc, out = run("--root", d, b)
    check("07 cycle through a folder node fails", rc == 1, out)
    check("07 names it", "cycle: target/iscsi/ target/scsi/s1 target/scsi/s2" in out, out)


def t08_usage():
    rc, out = run()
    check("08 no build dir is a usage error", rc == 2, out)
    d, b = tree()
    rc, out = run("--root", d, "--graph", b)
    check("08 --graph lists edges", rc == 0 and "raid/b -> raid/a: ra" in out, out)


def t09_leftover_object():
    # a file moved away leaves its old object in the build until make clean:
    # it is no object of the tree, neither unlisted nor a call
    d, b = tree({"raid/old.c": "int rd(void); int old(void); int old(void) { return rd(); }\n"})
    os.remove(os.path.join(d, "raid", "old.c"))
    rc, out = run("--root", d, b)
    check("09 an object without its source is passed over", rc == 0, out)


def t10_readme_of_the_folder():
    # a module's block may stand in its own folder's README
    d, b = tree(readmes={"target/README.md": "```layers\nprotocol: target/iscsi/\n```\n",
                         "target/scsi/README.md": "```layers\nlow: target/scsi/s1\n"
                                                  "high: target/scsi/s2\n```\n"})
    rc, out = run("--root", d, b)
    check("10 blocks read from target/scsi/README.md", rc == 0, out)


def t11_opening_comment():
    # a file whose opening comment names no layer fails, named by FILE:1;
    # "May call" may be broken over two comment lines
    d, b = tree({"raid/c.c": "// no opening comment\nint rb(void); int rc(void);"
                             " int rc(void) { return rb(); }\n",
                 "raid/d.c": "/* raid/d.c - Layer: high. */\nint rc(void); int rd(void);"
                             " int rd(void) { return rc(); }\n"})
    rc, out = run("--root", d, b)
    check("11 a missing opening comment fails", rc == 1 and "raid/c.c:1: the opening comment"
          in out and "raid/d.c:1: the opening comment" in out, out)
    check("11 only those two", "target/scsi/s1.c:1" not in out and out.count(":1: the opening") == 2,
          out)


def cleanup():
    for d in scratch:
        shutil.rmtree(d, ignore_errors=True)


main((t01_tree_is_green, t02_scratch_is_green, t03_upward_call, t04_cycle_in_one_layer,
      t05_forbidden_module, t06_unlisted_and_stale, t07_folder_node, t08_usage,
      t09_leftover_object, t10_readme_of_the_folder, t11_opening_comment), cleanup)
