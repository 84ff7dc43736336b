#!/usr/bin/env python3
"""scripts/check-layers.py - the layer order of the tree, checked on the
build's own objects (make layer-check, and make check after the build).

usage: scripts/check-layers.py [--root DIR] [--graph] BUILD_DIR

The include check (scripts/check-includes.py) sees which header a file
includes; this one sees which file's code a file really calls. File A ->
file B when A's object (BUILD_DIR/A.o) uses a global symbol that B's object
defines (`nm -u` against `nm -g --defined-only`), as
../shared/tools/objgraph.py does.

The written order: the README of each module's folder (raid/README.md,
target/scsi/README.md) holds one fenced block
whose info string is `layers`, one line per layer, the BOTTOM layer first:

    ```layers
    geometry: raid/geom raid/parity
    context: raid/ioctx
    ```

Each entry is a source path from the top of the tree without ".c"; an
entry ending in "/" (target/iscsi/) is a whole folder taken as one node,
whose files may call each other freely (one protocol module). It fails,
printing one line per problem, on:
  - an object of conf/ net/ raid/ target/ that no `layers` block lists, or
    an entry that names no object (a stale table);
  - a call to a file of a higher layer of the same module ("upward call");
  - a call to another module that the module rules of
    scripts/check-includes.py (RULES) do not allow: the modules' own order,
    so raid/ never calls target/; a single-header rule there (target/scsi
    may use target/iscsi/iscsi_text.h) allows the symbols that header
    declares;
  - a source whose opening comment does not say "Layer:" and what it
    "May call";
  - any cycle among the objects (a strongly connected component), a
    whole-folder node counting as one object. Files of one layer may call
    each other, but not in a circle.
--graph prints every edge (A -> B: symbols) and exits 0.
--root DIR reads the READMEs and headers of another tree (the self-test,
tests/unit/test_check_layers.py).
"""
import importlib.util
import os
import re
import subprocess
import sys
from collections import defaultdict

TOP = ("conf", "net", "raid", "target")


def readmes(root):
    """Every README.md of conf/ net/ raid/ target/ and their folders: a
    module's order is written beside its code (target/scsi/README.md)."""
    out = []
    for top in TOP:
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            if "README.md" in files:
                out.append(os.path.relpath(os.path.join(d, "README.md"), root))
    return out
FENCE = re.compile(r"^```layers\s*$")


def rules(root):
    """check-includes.py's RULES and module_of(), the one place the modules'
    dependencies are written (a script of this tree, or of --root's)."""
    path = os.path.join(root, "scripts", "check-includes.py")
    if not os.path.exists(path):
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check-includes.py")
    spec = importlib.util.spec_from_file_location("check_includes", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def read_layers(root, errors):
    """entry -> (module, layer index, layer name, README:LINE), in the
    order written. The module is the folder of the block's entries."""
    table = {}
    for rd in readmes(root):
        path = os.path.join(root, rd)
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        i = 0
        while i < len(lines):
            if not FENCE.match(lines[i]):
                i += 1
                continue
            start, i, level, module = i + 1, i + 1, 0, None
            while i < len(lines) and not lines[i].startswith("```"):
                line = lines[i].split("#", 1)[0].strip()
                where = f"{rd}:{i + 1}"
                i += 1
                if not line:
                    continue
                name, sep, entries = line.partition(":")
                if not sep or not entries.split():
                    errors.append(f"{where}: a layer is \"name: path path ...\"")
                    continue
                for e in entries.split():
                    folder = e if e.endswith("/") else os.path.dirname(e) + "/"
                    if module is None:
                        module = folder
                    elif folder != module and not e.endswith("/"):
                        errors.append(f"{where}: {e} is not in {module} (one block per folder)")
                    if e in table:
                        errors.append(f"{where}: {e} is listed twice (also {table[e][3]})")
                    table[e] = (module, level, name.strip(), where)
                level += 1
            if i >= len(lines):
                errors.append(f"{rd}:{start}: `layers` block never closed")
            i += 1
    return table


def objects(build, root):
    """The objects of BUILD_DIR whose source is still in the tree (a file
    moved or removed leaves its old object behind until `make clean`)."""
    out = []
    for top in TOP:
        for d, dirs, files in os.walk(os.path.join(build, top)):
            dirs.sort()
            for f in sorted(files):
                rel = os.path.relpath(os.path.join(d, f), build)[:-2]
                if f.endswith(".o") and os.path.exists(os.path.join(root, rel + ".c")):
                    out.append(rel)
    return out


def nm(path, *flags):
    p = subprocess.run(["nm", *flags, path], capture_output=True, text=True, check=True)
    return {line.split()[-1] for line in p.stdout.splitlines() if line.strip()}


def node_of(table, obj):
    """The table entry an object belongs to: itself, or its folder entry."""
    if obj in table:
        return obj
    d = os.path.dirname(obj) + "/"
    return d if d in table else None


def scc(graph):
    index, low, stack, on, comps, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            c = []
            while True:
                w = stack.pop()
                on.discard(w)
                c.append(w)
                if w == v:
                    break
            if len(c) > 1:
                comps.append(sorted(c))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return comps


def opening(root, obj):
    """The text of the opening comment of @obj's source, one line."""
    try:
        with open(os.path.join(root, obj + ".c"), encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return ""
    m = re.match(r"\s*/\*(.*?)\*/", text, re.S)
    if not m:
        return ""
    return " ".join(re.sub(r"^\s*\*", "", line) for line in m.group(1).splitlines()).split()


def declared(root, header, sym):
    try:
        with open(os.path.join(root, header), encoding="utf-8") as f:
            return re.search(r"\b" + re.escape(sym) + r"\b", f.read()) is not None
    except OSError:
        return False


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    graph_only, build = False, None
    args = argv[1:]
    while args:
        a = args.pop(0)
        if a == "--root" and args:
            root = args.pop(0)
        elif a == "--graph":
            graph_only = True
        elif build is None and not a.startswith("-"):
            build = a
        else:
            build = None
            break
    if build is None:
        print("usage: scripts/check-layers.py [--root DIR] [--graph] BUILD_DIR", file=sys.stderr)
        return 2
    ci = rules(root)
    errors = []
    table = read_layers(root, errors)
    objs = objects(build, root)
    if not objs:
        print(f"check-layers: no objects under {build}/ (build first: make all)", file=sys.stderr)
        return 2
    defined = {o: nm(os.path.join(build, o + ".o"), "-g", "--defined-only") for o in objs}
    owner = {}
    for o in objs:
        for s in defined[o]:
            owner.setdefault(s, o)
    edges = defaultdict(lambda: defaultdict(set))
    for o in objs:
        for s in nm(os.path.join(build, o + ".o"), "-u"):
            t = owner.get(s)
            if t is not None and t != o:
                edges[o][t].add(s)
    if graph_only:
        for a in sorted(edges):
            for b in sorted(edges[a]):
                print(f"{a} -> {b}: {' '.join(sorted(edges[a][b]))}")
        return 0

    for o in objs:
        if node_of(table, o) is None:
            errors.append(f"{o}.c: in no `layers` block of the READMEs of {', '.join(TOP)}")
    for o in objs:
        words = " ".join(opening(root, o))
        if "Layer:" not in words or not re.search(r"[Mm]ay call", words):
            errors.append(f"{o}.c:1: the opening comment says no \"Layer:\" and what it"
                          f" \"May call\" (every file names its layer and what it may call)")
    present = {node_of(table, o) for o in objs}
    for e, (_, _, _, where) in sorted(table.items()):
        if e not in present:
            errors.append(f"{where}: {e} names no object in {build}/ (stale layer table)")

    nodes = defaultdict(set)
    for a in sorted(edges):
        for b in sorted(edges[a]):
            syms = " ".join(sorted(edges[a][b]))
            na, nb = node_of(table, a), node_of(table, b)
            if na is None or nb is None:
                continue
            if na != nb:
                nodes[na].add(nb)
            ma, mb = ci.module_of(a + ".c"), ci.module_of(b + ".c")
            if ma != mb:
                allow = ci.RULES.get(ma, [])
                ok = "*" in allow or mb in allow or all(
                    any(r.endswith(".h") and ci.module_of(r) == mb and declared(root, r, s)
                        for r in allow) for s in edges[a][b])
                if not ok:
                    may = ", ".join(allow) or "nothing of rtgt"
                    errors.append(f"{a}.c: calls {b}.c ({syms}): {ma}/ may not call {mb}/"
                                  f" (it may call: {may}; scripts/check-includes.py RULES)")
                continue
            la, lb = table[na], table[nb]
            if la[0] == lb[0] and lb[1] > la[1]:
                errors.append(f"{a}.c: upward call to {b}.c ({syms}): layer \"{la[2]}\""
                              f" ({la[3]}) is below \"{lb[2]}\" ({lb[3]})")
    for c in scc(nodes):
        errors.append("cycle: " + " ".join(c) + " (each calls the other through the others:"
                      " move what the lower one needs down, or let the upper one register"
                      " a function pointer)")

    for e in errors:
        print(e)
    sys.stdout.flush()
    if errors:
        print(f"check-layers: {len(errors)} problem(s) in {len(objs)} objects", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
