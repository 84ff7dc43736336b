#!/usr/bin/env python3
"""scripts/check-includes.py - the dependency rules of the tree, checked on
its #include lines (make include-check, and make check before the tests).

Reads every .c and .h under conf/ net/ raid/ target/ tests/ and prints one
`FILE:LINE: message` per include a file may not have, then one line per
include cycle among the storage files (raid/); exits 1 if it printed any.

The rules are the "May call" lines of the folder READMEs (README.md,
"Layout" has them all in one table). A folder is a module; a file belongs
to the longest module path it lies under, so a subfolder of raid/ is raid/.
A file may include:
  - any header of its own module, private ones (*_int.h) included;
  - the public headers (not *_int.h) of the modules listed for it below;
  - the single headers listed for it below, private or not.
Every project header is included by its path from the top of the tree
("raid/raid.h"), so a quoted include that names no module is an error too.

Cycles: among raid/, a file's node is its stem (io.c, io.h and io_int.h are
"io"; raid/member/file.c is "member/file"); an include from one stem's file of another stem's header is an edge.
A cycle means two parts of the storage engine each need the other's
declarations: the tangle the one shared raid_int.h hides today, which a
split into per-file headers must not bring back. Real #include cycles
between headers of any module are reported as well.

--graph prints raid/'s stem graph (one "A -> B" a line) and exits.
--root DIR checks another tree (the self-test, tests/unit/test_check_includes.py).
"""
import os
import re
import sys

# module -> what it may include besides itself: module paths (their public
# headers) and single header paths (exactly that header)
RULES = {
    "conf": [],
    "net": ["conf"],
    "raid": ["conf"],
    "target/scsi": ["raid", "conf"],
    "target/iscsi": ["net", "target/scsi", "conf"],
    "target/daemon": ["conf", "net", "raid", "target/scsi", "target/iscsi"],
    # rtgtctl: conf_load() for daemon.control, and the control protocol
    "target/tools": ["conf", "target/daemon/ctl.h"],
    # shared test code: public headers (raid/ioctx.h: raid_ioctx_wait())
    "tests/lib": ["conf", "net", "raid", "target/scsi", "target/iscsi", "target/daemon"],
    # network tests drive a real rtgtd: the test library only
    "tests/net": ["tests/lib"],
    # unit tests and fuzz targets are white-box: any header, private ones too
    "tests/unit": ["*"],
    "tests/fuzz": ["*"],
}
TOP = ("conf", "net", "raid", "target", "tests")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def module_of(path):
    best = None
    for m in RULES:
        if (path == m or path.startswith(m + "/")) and (best is None or len(m) > len(best)):
            best = m
    return best


def private(header):
    return header.endswith("_int.h")


def allowed(src, header):
    """None if @src may include @header, else why not."""
    sm, hm = module_of(src), module_of(header)
    if sm is None:
        return "is in no module of the dependency rules (scripts/check-includes.py)"
    if hm is None:
        return "names no module: include project headers by their path from the top of the tree"
    if sm == hm:
        return None
    rules = RULES[sm]
    if "*" in rules or header in rules:
        return None
    if hm in rules:
        if private(header):
            return f"{header} is private to {hm}/ ({sm}/ may include its public headers only)"
        return None
    may = ", ".join(r + ("" if r.endswith(".h") else "/") for r in rules) or "nothing of rtgt"
    return f"{sm}/ may not include {header} ({sm}/ may include: {may})"


def sources(root):
    for top in TOP:
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(d, f), root)


def includes(root, rel):
    """(line number, header) of every quoted include of @rel."""
    out = []
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m and m.group(1) == '"':
                out.append((n, m.group(2)))
    return out


def stem(path):
    """raid/io.c, raid/io.h, raid/io_int.h -> "io"; a subfolder stays in
    the name (raid/member/file.c -> "member/file"), so equal file names in
    two folders are two nodes."""
    base = path.rsplit(".", 1)[0]
    base = base[:-4] if base.endswith("_int") else base
    return base[len("raid/"):] if base.startswith("raid/") else base


def cycles(edges):
    """Each elementary cycle once, as a list of nodes, in a stable order."""
    found, seen = [], set()
    nodes = sorted(edges)

    def walk(start, node, path, on_path):
        for nxt in sorted(edges.get(node, ())):
            if nxt == start:
                cyc = path[:]
                key = frozenset(cyc), len(cyc)
                if key not in seen:
                    seen.add(key)
                    found.append(cyc)
            elif nxt not in on_path and nxt > start:
                on_path.add(nxt)
                walk(start, nxt, path + [nxt], on_path)
                on_path.discard(nxt)

    for s in nodes:
        walk(s, s, [s], {s})
    return found


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    graph = False
    args = argv[1:]
    while args:
        a = args.pop(0)
        if a == "--root" and args:
            root = args.pop(0)
        elif a == "--graph":
            graph = True
        else:
            print("usage: scripts/check-includes.py [--root DIR] [--graph]", file=sys.stderr)
            return 2
    errors = []
    files = list(sources(root))
    known = set(files)
    inc = {f: includes(root, f) for f in files}

    for f in files:
        for n, h in inc[f]:
            if h.split("/", 1)[0] in TOP and h not in known:
                errors.append(f"{f}:{n}: {h} does not exist")
                continue
            why = allowed(f, h)
            if why:
                errors.append(f"{f}:{n}: {why}")

    # raid/: the stem graph
    edges = {}
    for f in files:
        if module_of(f) != "raid":
            continue
        edges.setdefault(stem(f), set())
        for _, h in inc[f]:
            if module_of(h) == "raid" and h in known and stem(h) != stem(f):
                edges[stem(f)].add(stem(h))
    if graph:
        for a in sorted(edges):
            for b in sorted(edges[a]):
                print(f"{a} -> {b}")
        return 0
    for cyc in cycles(edges):
        errors.append("raid/: include cycle " + " -> ".join(cyc + [cyc[0]]) +
                      " (each part needs the other's declarations: move what both need into a"
                      " header of its own)")

    # #include cycles between headers, any module
    hdr = {f: {h for _, h in inc[f] if h in known and h.endswith(".h")}
           for f in files if f.endswith(".h")}
    for cyc in cycles(hdr):
        errors.append(f"{cyc[0]}: #include cycle " + " -> ".join(cyc + [cyc[0]]))

    for e in errors:
        print(e)
    if errors:
        print(f"check-includes: {len(errors)} problem(s) in {len(files)} files", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
