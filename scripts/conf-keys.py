#!/usr/bin/env python3
"""scripts/conf-keys.py - writes the generated key tables of conf/README.md
and conf/rtgt.conf.5 from the one key table (conf/conf_keys.c), read as
`rtgtd --list-keys` prints it.

    scripts/conf-keys.py [--rtgtd BIN] --write   regenerate both files in place
    scripts/conf-keys.py [--rtgtd BIN] --check   exit 1, with a diff, when either
                                                 file differs from what the table
                                                 gives (tests/unit/test_man.py)
    --readme FILE, --page FILE                   other copies than conf/'s (tests)

Each file marks where a section's keys go; everything between the markers
is replaced, everything else is written by hand:

    README.md:     <!-- keys: SECTION -->  ...  <!-- /keys -->
    rtgt.conf.5:   .\\" keys: SECTION       ...  .\\" /keys

SECTION is the table's path ("top", "daemon", "pools[]", "chap", ...). A
section of the table that no marker names, or a marker naming no section,
is an error: every key must appear in both files.
"""
import argparse
import difflib
import os
import re
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "conf", "README.md")
PAGE = os.path.join(ROOT, "conf", "rtgt.conf.5")
FIELDS = ("section", "key", "type", "range", "default", "reload", "desc")
RELOAD_WORDS = {
    "live": "live",
    "new connections": "new connections",
    "restart": "restart",
    "pool open": "pool open",
    "per key": "per key",
}


def read_keys(rtgtd):
    out = subprocess.run([rtgtd, "--list-keys"], capture_output=True, text=True, check=True,
                         timeout=30).stdout
    keys = []
    for n, line in enumerate(out.splitlines(), 1):
        cols = line.split("\t")
        if len(cols) != len(FIELDS):
            raise SystemExit(f"conf-keys: --list-keys line {n}: {len(cols)} fields, "
                             f"want {len(FIELDS)}: {line!r}")
        k = dict(zip(FIELDS, cols))
        k["section"] = k["section"] or "top"
        if k["reload"] not in RELOAD_WORDS:
            raise SystemExit(f"conf-keys: {k['key']}: unknown reload '{k['reload']}'")
        keys.append(k)
    if not keys:
        raise SystemExit("conf-keys: rtgtd --list-keys printed nothing")
    return keys


# ---- Markdown ----

def md_cell(s):
    return s.replace("|", "\\|")


def md_section(keys):
    rows = ["| key | type | range | default | reload | meaning |",
            "|---|---|---|---|---|---|"]
    for k in keys:
        rows.append("| `{}` | {} | {} | {} | {} | {} |".format(
            k["key"], md_cell(k["type"]), md_cell(k["range"]), md_cell(k["default"]),
            k["reload"], md_cell(k["desc"])))
    return "\n".join(rows) + "\n"


# ---- mdoc ----

def roff_text(s):
    """Plain words on a text line: no roff escapes, no control char first."""
    s = s.replace("\\", "\\e")
    return s


def mdoc_arg(s):
    """One macro argument: quoted when it has blanks, "" for a quote, and
    \\& after a last punctuation mark that mdoc would take as a delimiter."""
    s = s.replace("\\", "\\e")
    if s[-1:] in ".,;:?!)]":
        s += "\\&"
    if re.search(r'[\s"]', s) or s == "":
        return '"' + s.replace('"', '""') + '"'
    return s


def mdoc_lines(text):
    """@text with `code` spans as .Ql lines, the punctuation that touches a
    span given as the macro's delimiters, as mdoc wants it."""
    lines = []
    parts = re.split(r"`([^`]*)`", text)
    pending_open = ""
    for i, part in enumerate(parts):
        if i % 2 == 0:
            if i > 0:
                # closing punctuation right after a code span goes on its line
                m = re.match(r"^([.,;:)?!]+)(\s|$)", part)
                if m:
                    lines[-1] += " " + " ".join(m.group(1))
                    part = part[len(m.group(1)):]
            part = part.strip()
            if i + 1 < len(parts):
                m = re.search(r"(^|\s)(\()$", part)
                if m:
                    pending_open = "("
                    part = part[:-1].rstrip()
            if part:
                lines.append(roff_text(part))
        else:
            lines.append(".Ql " + (pending_open + " " if pending_open else "") + mdoc_arg(part))
            pending_open = ""
    out = []
    for ln in lines:
        if ln.startswith(".Ql "):
            out.append(ln)
            continue
        # text lines of at most 80 bytes, none starting like a request
        for w in textwrap.wrap(ln, 78, break_long_words=False, break_on_hyphens=False):
            out.append("\\&" + w if w[:1] in (".", "'") else w)
    return out


def mdoc_section(keys):
    out = [".Bl -tag -width Ds"]
    for k in keys:
        out.append(".It Cm " + mdoc_arg(k["key"]) + " Pq " + mdoc_arg(k["type"]))
        facts = []
        if k["range"] != "-":
            facts.append("range: " + k["range"])
        facts.append("default: " + k["default"])
        facts.append("reload: " + k["reload"])
        out.extend(mdoc_lines("; ".join(facts) + "."))
        out.append(".br")
        desc = k["desc"]
        if not desc.endswith("."):
            desc += "."
        out.extend(mdoc_lines(desc))
    out.append(".El")
    return "\n".join(out) + "\n"


# ---- the files ----

def render(path, text, keys, begin_re, end_mark, section_fn):
    by_sect = {}
    for k in keys:
        by_sect.setdefault(k["section"], []).append(k)
    used = set()
    out = []
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        m = re.match(begin_re, lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        sect = m.group(1)
        if sect not in by_sect:
            raise SystemExit(f"conf-keys: {path}:{i + 1}: no section '{sect}' in the key table")
        if sect in used:
            raise SystemExit(f"conf-keys: {path}:{i + 1}: section '{sect}' marked twice")
        used.add(sect)
        out.append(lines[i])
        j = i + 1
        while j < len(lines) and lines[j].rstrip("\n") != end_mark:
            j += 1
        if j == len(lines):
            raise SystemExit(f"conf-keys: {path}:{i + 1}: no '{end_mark}' after the marker")
        out.append(section_fn(by_sect[sect]))
        out.append(lines[j])
        i = j + 1
    missing = [s for s in by_sect if s not in used]
    if missing:
        raise SystemExit(f"conf-keys: {path}: no marker for section(s) {', '.join(missing)}: "
                         "every key must be documented")
    return "".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rtgtd", default=os.environ.get("RTGTD", os.path.join(ROOT, "bin", "rtgtd")))
    ap.add_argument("--readme", default=README, help="the README to write or check")
    ap.add_argument("--page", default=PAGE, help="the rtgt.conf(5) source to write or check")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", action="store_true")
    g.add_argument("--check", action="store_true")
    a = ap.parse_args()
    keys = read_keys(a.rtgtd)
    jobs = ((a.readme, r"^<!-- keys: (\S+) -->$", "<!-- /keys -->", md_section),
            (a.page, r'^\.\\" keys: (\S+)$', '.\\" /keys', mdoc_section))
    stale = 0
    for path, begin, end, fn in jobs:
        with open(path) as f:
            old = f.read()
        new = render(os.path.relpath(path, ROOT), old, keys, begin, end, fn)
        if a.write:
            if new != old:
                with open(path, "w") as f:
                    f.write(new)
                print(f"conf-keys: wrote {os.path.relpath(path, ROOT)}")
        elif new != old:
            stale += 1
            sys.stdout.writelines(difflib.unified_diff(
                old.splitlines(keepends=True), new.splitlines(keepends=True),
                os.path.relpath(path, ROOT), "from the key table"))
    if stale:
        print(f"conf-keys: {stale} file(s) differ from the key table: run make man",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
