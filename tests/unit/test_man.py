#!/usr/bin/env python3
"""tests/unit/test_man.py - the manual pages and the key reference:

- conf/README.md and conf/rtgt.conf.5 hold exactly the keys of the key
  table (`rtgtd --list-keys`, conf/conf_keys.c), as scripts/conf-keys.py
  writes them: a key in the code but not in a file, or in a file but not in
  the code, fails; so does a stale row;
- every key name the parser's files (conf/*.c) look up is in the table;
- every command of rtgtctl (its command table and its --help) and every
  option of rtgtctl, rtgtd and rtgt-bench is in its page;
- `mandoc -Tlint` has nothing to say about the four pages (mandoc looks for
  the pages they refer to only under the system's /usr/share/man, so
  "referenced manual not found" for one of these four is not counted:
  they are installed together);
- and each check fails on a page or README broken on purpose.

Prints "N%: Checks: N, Failures: N" like the Check programs; exit 1 on any
failure. Needs bin/rtgtd and bin/rtgtctl ($RTGTD, $RTGTCTL).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
from ckpy import check, main  # noqa: E402

RTGTD = os.environ.get("RTGTD", os.path.join(ROOT, "bin", "rtgtd"))
RTGTCTL = os.environ.get("RTGTCTL", os.path.join(ROOT, "bin", "rtgtctl"))
GEN = os.path.join(ROOT, "scripts", "conf-keys.py")
README = os.path.join(ROOT, "conf", "README.md")
PAGES = {
    ("rtgtd", "8"): "target/daemon/rtgtd.8",
    ("rtgtctl", "8"): "target/tools/rtgtctl.8",
    ("rtgt.conf", "5"): "conf/rtgt.conf.5",
    ("rtgt-bench", "1"): "target/tools/rtgt-bench.1",
}
scratch = []


def read(rel):
    with open(os.path.join(ROOT, rel)) as f:
        return f.read()


def table_keys():
    out = subprocess.run([RTGTD, "--list-keys"], capture_output=True, text=True,
                         timeout=30, check=True).stdout
    return {(c[0] or "top", c[1]) for c in (line.split("\t") for line in out.splitlines())}


def gen_check(readme=README, page=os.path.join(ROOT, "conf", "rtgt.conf.5")):
    p = subprocess.run([sys.executable, GEN, "--rtgtd", RTGTD, "--check", "--readme", readme,
                        "--page", page], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout + p.stderr


def keys_in_readme(text):
    """(section, key) of every row between the README's key markers."""
    found, sect = set(), None
    for line in text.splitlines():
        m = re.match(r"^<!-- keys: (\S+) -->$", line)
        if m:
            sect = m.group(1)
        elif line == "<!-- /keys -->":
            sect = None
        elif sect:
            m = re.match(r"^\| `([^`]+)` \|", line)
            if m:
                found.add((sect, m.group(1)))
    return found


def keys_in_page(text):
    """(section, key) of every .It Cm entry between the page's markers."""
    found, sect = set(), None
    for line in text.splitlines():
        m = re.match(r'^\.\\" keys: (\S+)$', line)
        if m:
            sect = m.group(1)
        elif line == '.\\" /keys':
            sect = None
        elif sect:
            m = re.match(r"^\.It Cm (\S+)", line)
            if m:
                found.add((sect, m.group(1)))
    return found


def page_items(text):
    """Every .It Cm NAME of a page (its command and key entries)."""
    return set(re.findall(r"^\.It Cm (\S+)", text, re.M))


def page_long_options(text):
    """Every "Fl Fl NAME" of a page."""
    return set(re.findall(r"Fl Fl ([a-z][a-z-]*)", text))


def rtgtctl_commands():
    """The commands of rtgtctl: its command table and its --help."""
    src = read("target/tools/rtgtctl.c")
    table = src[src.index("static const struct command commands[]"):]
    table = table[:table.index("\n};")]
    names = set(re.findall(r'^\t\{ "([a-z-]+)", \d+, \d+,', table, re.M))
    out = subprocess.run([RTGTCTL, "--help"], capture_output=True, text=True, timeout=30).stdout
    body = out[out.index("commands:"):out.index("options:")]
    for m in re.finditer(r"^  ([a-z][a-z-]+)\b", body, re.M):
        names.add(m.group(1))
    return names


def rtgtctl_options():
    src = read("target/tools/rtgtctl.c")
    opts = set(re.findall(r'opt_value\(argc, argv, &i, \'.\', "([a-z-]+)"', src))
    opts |= set(re.findall(r'strcmp\(a, "--([a-z-]+)"\) == 0', src))
    return opts


def getopt_long_names(rel):
    src = read(rel)
    return set(re.findall(r'\{ "([a-z-]+)", (?:no|required)_argument,', src))


# ---- the key reference ----

def t01_generated_files_fresh():
    rc, out = gen_check()
    check("01 README and rtgt.conf.5 match the key table (run make man)", rc == 0, out[-3000:])


def t02_every_key_documented_both_ways():
    keys = table_keys()
    check("02 the key table is not empty", len(keys) > 50, f"{len(keys)} keys")
    for name, found in (("conf/README.md", keys_in_readme(read("conf/README.md"))),
                        ("conf/rtgt.conf.5", keys_in_page(read("conf/rtgt.conf.5")))):
        missing, extra = keys - found, found - keys
        check(f"02 every key of the code is in {name}", not missing, sorted(missing))
        check(f"02 every key of {name} is in the code", not extra, sorted(extra))


def t03_parser_lookups_in_table():
    """Each key name the parser's files look up must be in the table (the
    unknown-key check would refuse any other, so such a lookup could never
    find anything)."""
    names = {k for _, k in table_keys()}
    pat = re.compile(r'(?:config_setting_get_member|config_setting_lookup_\w+|conf_get_\w+)'
                     r'\(\s*[^,]+,\s*[^,]+?,\s*"([a-z_]+)"|'
                     r'config_setting_get_member\(\s*\w+,\s*"([a-z_]+)"\)')
    looked = set()
    for f in sorted(os.listdir(os.path.join(ROOT, "conf"))):
        if f.startswith("conf") and f.endswith(".c"):
            for m in pat.finditer(read("conf/" + f)):
                looked.add(m.group(1) or m.group(2))
    check("03 the parser's lookups were found", len(looked) > 30, sorted(looked))
    check("03 every key the parser looks up is in the table", looked <= names,
          sorted(looked - names))


def t04_checks_fail_on_broken_files():
    """The checks above, on copies broken on purpose: a row missing from
    the README, a key missing from the page, a key in the page that the
    table lacks."""
    d = tempfile.mkdtemp(prefix="rtgt-man.")
    scratch.append(d)
    readme, page = os.path.join(d, "README.md"), os.path.join(d, "rtgt.conf.5")
    text = read("conf/README.md")
    with open(readme, "w") as f:
        f.write(re.sub(r"^\| `nop_timeout` \|.*\n", "", text, count=1, flags=re.M))
    shutil.copy(os.path.join(ROOT, "conf", "rtgt.conf.5"), page)
    rc, out = gen_check(readme, page)
    check("04 a README row missing fails the generator's check", rc == 1 and "nop_timeout" in out,
          out[-800:])
    check("04 a README row missing fails the cross-check",
          ("daemon", "nop_timeout") in table_keys() - keys_in_readme(open(readme).read()))
    ptext = read("conf/rtgt.conf.5")
    broken = ptext.replace(".It Cm queue_depth", ".It Cm queue_dpth", 1)
    check("04 a key renamed in the page is found both ways",
          ("daemon", "queue_depth") in table_keys() - keys_in_page(broken)
          and ("daemon", "queue_dpth") in keys_in_page(broken) - table_keys())
    with open(readme, "w") as f:
        f.write(text.replace("<!-- keys: chap -->\n", "", 1))
    rc, out = gen_check(readme, page)
    check("04 a section without its marker fails the generator", rc != 0 and "chap" in out,
          out[-800:])
    cmds = rtgtctl_commands()
    page_cut = read(PAGES[("rtgtctl", "8")]).replace(".It Cm reload\n", ".It Cm relaod\n")
    check("04 a command missing from rtgtctl.8 is found", "reload" in cmds - page_items(page_cut))


# ---- the pages ----

def t05_rtgtctl_page_has_every_command_and_option():
    text = read(PAGES[("rtgtctl", "8")])
    cmds = rtgtctl_commands()
    check("05 rtgtctl's commands were found", len(cmds) >= 15, sorted(cmds))
    check("05 every rtgtctl command is in rtgtctl.8", cmds <= page_items(text),
          sorted(cmds - page_items(text)))
    opts = rtgtctl_options()
    check("05 rtgtctl's options were found", len(opts) >= 9, sorted(opts))
    check("05 every rtgtctl option is in rtgtctl.8", opts <= page_long_options(text),
          sorted(opts - page_long_options(text)))
    for word in ("EXIT STATUS", "EXAMPLES", "RTGT_SOCKET"):
        check(f"05 rtgtctl.8 has {word}", word in text)
    for code in ("0", "1", "2", "3"):
        check(f"05 rtgtctl.8 gives exit status {code}",
              re.search(rf"^\.Sh EXIT STATUS[\s\S]*?^\.It {code}$", text, re.M) is not None)


def t06_rtgtd_and_bench_pages_have_every_option():
    for (prog, sec), src in ((("rtgtd", "8"), "target/daemon/main.c"),
                             (("rtgt-bench", "1"), "target/tools/rtgt-bench.c")):
        text = read(PAGES[(prog, sec)])
        opts = getopt_long_names(src)
        check(f"06 {prog}'s options were found", len(opts) >= 4, sorted(opts))
        check(f"06 every {prog} option is in {prog}.{sec}", opts <= page_long_options(text),
              sorted(opts - page_long_options(text)))
        check(f"06 {prog}.{sec} has EXIT STATUS and EXAMPLES",
              ".Sh EXIT STATUS" in text and ".Sh EXAMPLES" in text)


def t07_mandoc_lint():
    if not shutil.which("mandoc"):
        print("SKIP 07: mandoc is not installed (scripts/deps.sh installs it)")
        return
    ours = {f"{n}({s})" for n, s in PAGES}
    for (name, sec), rel in PAGES.items():
        p = subprocess.run(["mandoc", "-Tlint", os.path.join(ROOT, rel)], capture_output=True,
                           text=True, timeout=60)
        msgs = []
        for line in (p.stdout + p.stderr).splitlines():
            m = re.search(r"referenced manual not found: Xr (\S+) (\S+)", line)
            if m and f"{m.group(1)}({m.group(2)})" in ours:
                continue
            msgs.append(line)
        check(f"07 mandoc -Tlint {rel} is clean", not msgs, "\n".join(msgs))
    # and the filter keeps real problems: a page with a bad macro
    d = tempfile.mkdtemp(prefix="rtgt-man.")
    scratch.append(d)
    bad = os.path.join(d, "bad.8")
    with open(bad, "w") as f:
        f.write(read(PAGES[("rtgtd", "8")]).replace(".Sh EXIT STATUS", ".Sh EXIT STATUS\n.Xyz"))
    p = subprocess.run(["mandoc", "-Tlint", bad], capture_output=True, text=True, timeout=60)
    check("07 mandoc -Tlint reports a broken page", "Xyz" in p.stdout + p.stderr,
          p.stdout + p.stderr)


def cleanup():
    for d in scratch:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main([t01_generated_files_fresh, t02_every_key_documented_both_ways,
          t03_parser_lookups_in_table, t04_checks_fail_on_broken_files,
          t05_rtgtctl_page_has_every_command_and_option,
          t06_rtgtd_and_bench_pages_have_every_option, t07_mandoc_lint], cleanup)
