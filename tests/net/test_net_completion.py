#!/usr/bin/env python3
"""tests/net/test_net_completion.py - the bash completion of rtgtctl
(target/tools/rtgtctl.bash), sourced into a bash that is asked for
completions as readline asks: COMP_WORDS, COMP_CWORD (split at colons as
COMP_WORDBREAKS splits them), then _rtgtctl, whose COMPREPLY is read back.
01 the commands and options without a daemon; 02 no daemon (no socket,
and a socket that never answers): no names, nothing on stderr, within
2 s (3 s for the hung one: the completion waits 1 s); 03 with a running
rtgtd (raid1 of two files and a spare, a target with two LUNs): pools, members by state (fail, replace, remove), targets
(completed across bash's colon split), LUN numbers, levels and files, the
socket taken from -s, --socket=, -c CONFIG and $RTGT_SOCKET; each of those
completions timed (the slowest printed, under 2 s on a loaded machine).
Prints "N%: Checks: N, Failures: N" like the Check programs; exit 1 on any
failure.
"""
import os
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
from ckpy import check, main  # noqa: E402
from ckdaemon import Daemon, RTGTCTL  # noqa: E402

COMPLETION = os.path.join(ROOT, "target", "tools", "rtgtctl.bash")
COMMANDS = {"status", "stats", "sessions", "top", "paths", "events", "reload", "fail",
            "add-spare", "replace", "remove", "grow", "convert", "scrub", "resize", "volume",
            "snapshot", "clone", "rollback", "check"}
IQN = "iqn.2026-11.org.rtgt:comp"
CONF = """daemon = { workers = 1; control = "rtgtd.sock"; state_dir = "state"; };
pools = ( { name = "tank"; level = "raid1"; chunk = "64K";
            members = ( "d0.img", "d1.img" ); spares = ( "s0.img" ); create_size = "32M"; } );
portals = ( { name = "lo"; listen = "127.0.0.1:PORT"; } );
targets = ( { iqn = "%s"; portals = ( "lo" );
              luns = ( { lun = 0; pool = "tank"; volume = "v0"; size = "8M"; },
                       { lun = 1; pool = "tank"; volume = "th"; size = "8M"; thin = true; },
                       { lun = 3; pool = "tank"; volume = "v3"; size = "8M"; } );
              allow = ( "ALL" ); } );
""" % IQN
slowest = [0.0]


def split_words(line):
    """@line as readline hands it over: words at blanks, ':' a word apart."""
    words = []
    for w in line.split(" "):
        parts = w.split(":")
        if parts[0] or len(parts) == 1:
            words.append(parts[0])
        for p in parts[1:]:
            words.append(":")
            if p:
                words.append(p)
    return words


def complete(line, cwd=None, env=None):
    """COMPREPLY for the cursor at the end of @line (words of @line, the
    last one the one completed), stderr, seconds taken."""
    words = split_words(line)
    script = ('source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); '
              '_rtgtctl; printf "%s\\n" "${COMPREPLY[@]}"')
    e = dict(os.environ)
    e.pop("RTGT_SOCKET", None)
    e.update(env or {})
    t0 = time.monotonic()
    p = subprocess.run(["bash", "-c", script, "bash", COMPLETION, *words], capture_output=True,
                       text=True, cwd=cwd, env=e, timeout=30)
    dt = time.monotonic() - t0
    return [w for w in p.stdout.split("\n") if w], p.stderr, dt


def t01_commands_and_options():
    got, err, _ = complete("rtgtctl ")
    check("01 rtgtctl <Tab>: every command", set(got) == COMMANDS, got)
    check("01 no stderr", err == "", err)
    got, _, _ = complete("rtgtctl st")
    check("01 st<Tab>: status stats", sorted(got) == ["stats", "status"], got)
    got, _, _ = complete("rtgtctl -")
    check("01 -<Tab>: the global options",
          set(got) == {"-s", "--socket", "-c", "--config", "--json", "-h", "--help"}, got)
    got, _, _ = complete("rtgtctl stats --")
    check("01 stats --<Tab>: --watch --count",
          {"--watch", "--count", "--json"} <= set(got) and "--repair" not in got, got)
    got, _, _ = complete("rtgtctl scrub tank --r")
    check("01 scrub --r<Tab>: --repair", got == ["--repair"], got)
    got, _, _ = complete("rtgtctl grow tank --a")
    check("01 grow --a<Tab>: --add", got == ["--add"], got)
    got, _, _ = complete("rtgtctl events --f")
    check("01 events --f<Tab>: --follow", got == ["--follow"], got)
    got, _, _ = complete("rtgtctl top --i")
    check("01 top --i<Tab>: --interval", got == ["--interval"], got)
    got, _, _ = complete("rtgtctl --json ")
    check("01 an option first, then the commands", set(got) == COMMANDS, got)
    got, _, _ = complete("rtgtctl stats --watch ")
    check("01 no guess for a number", got == [], got)
    got, _, _ = complete("rtgtctl status ")
    check("01 status takes no argument", got == [], got)


def t02_no_daemon():
    d = tempfile.mkdtemp(prefix="rtgt-comp.")
    for line in ("rtgtctl -s %s/none.sock fail " % d, "rtgtctl -s %s/none.sock resize " % d,
                 "rtgtctl -c %s/none.conf scrub " % d):
        got, err, dt = complete(RTGTCTL + line[len("rtgtctl"):])
        check("02 no daemon: no names for '%s'" % line, got == [], got)
        check("02 no daemon: silent for '%s'" % line, err == "", err)
        check("02 no daemon: quick for '%s'" % line, dt < 2, "%.2f s" % dt)
    # a socket that accepts and never answers (a hung daemon)
    path = os.path.join(d, "hung.sock")
    s = socket.socket(socket.AF_UNIX)
    s.bind(path)
    s.listen(8)
    got, err, dt = complete(RTGTCTL + " -s %s fail " % path)
    s.close()
    print("02 a socket that never answers: completion gave up after %.2f s" % dt)
    check("02 hung daemon: no names", got == [], got)
    check("02 hung daemon: silent", err == "", err)
    # the completion gives the daemon 1 s; the rest is starting processes
    # on a loaded machine
    check("02 hung daemon: given up within 3 s", dt < 3, "%.2f s" % dt)
    os.unlink(path)
    os.rmdir(d)


def t03_with_daemon():
    dmn = Daemon(CONF)
    dmn.start()
    ctl = RTGTCTL + " -s " + dmn.sock

    def comp(rest, what, want, **kw):
        got, err, dt = complete(ctl + " " + rest, **kw)
        slowest[0] = max(slowest[0], dt)
        check("03 %s" % what, sorted(got) == sorted(want), "got %s, want %s" % (got, want))
        check("03 %s: silent" % what, err == "", err)
        return got

    comp("fail ", "fail <Tab>: the pool", ["tank"])
    comp("scrub t", "scrub t<Tab>: the pool", ["tank"])
    comp("grow ", "grow <Tab>: the pool", ["tank"])
    comp("fail tank ", "fail tank <Tab>: the active members", ["d0.img", "d1.img"])
    comp("replace tank d", "replace tank d<Tab>: active members", ["d0.img", "d1.img"])
    comp("remove tank ", "remove tank <Tab>: the spare", ["s0.img"])
    comp("fail nosuch ", "fail of an unknown pool: nothing", [])
    comp("convert tank ", "convert tank <Tab>: the levels", ["raid5", "raid6"])
    comp("resize ", "resize <Tab>: the target", [IQN])
    # "iqn.2026-11.org.rtgt:co": bash completes "co", the part after the colon
    comp("resize iqn.2026-11.org.rtgt:co", "resize IQN-prefix:co<Tab>: the rest after the colon",
         ["comp"])
    comp("resize %s " % IQN, "resize IQN <Tab>: its LUNs", ["0", "1", "3"])
    comp("resize %s 3 " % IQN, "resize IQN LUN <Tab>: no guess for a size", [])
    # volumes, snapshots and clones, from `volume list POOL`
    for args in (["snapshot", "tank", "th", "s1"], ["clone", "tank", "th@s1", "c1"]):
        rc = subprocess.run([RTGTCTL, "-s", dmn.sock] + args, capture_output=True, text=True)
        check("03 rtgtctl %s" % " ".join(args), rc.returncode == 0, rc.stdout + rc.stderr)
    comp("volume ", "volume <Tab>: its sub-commands", ["list", "create", "delete", "inflate"])
    comp("volume delete ", "volume delete <Tab>: the pool", ["tank"])
    comp("volume delete tank ", "volume delete tank <Tab>: its volumes",
         ["v0", "v3", "th", "c1"])
    comp("volume inflate tank ", "volume inflate tank <Tab>: its clones", ["c1"])
    comp("snapshot ", "snapshot <Tab>: the pool or delete", ["tank", "delete"])
    comp("snapshot tank ", "snapshot tank <Tab>: its thin volumes", ["th", "c1"])
    comp("snapshot tank th ", "snapshot tank th <Tab>: no guess for a name", [])
    comp("snapshot delete tank ", "snapshot delete tank <Tab>: its snapshots", ["th@s1"])
    comp("clone tank ", "clone tank <Tab>: its snapshots", ["th@s1"])
    comp("rollback tank th", "rollback tank th<Tab>: its snapshots", ["th@s1"])
    comp("rollback tank th@s1 -", "rollback options", ["-s", "--socket", "-c", "--config",
                                                        "--json", "-h", "--help", "--force"])
    comp("check ", "check <Tab>: the pool", ["tank"])
    # add-spare's path: files of the current directory
    files = tempfile.mkdtemp(prefix="rtgt-comp.")
    open(os.path.join(files, "spare-a.img"), "w").close()
    comp("add-spare tank spare-", "add-spare tank <Tab>: files", ["spare-a.img"], cwd=files)
    os.unlink(os.path.join(files, "spare-a.img"))
    os.rmdir(files)

    # the socket from the other places rtgtctl takes it from
    got, _, _ = complete(RTGTCTL + " --socket=%s fail " % dmn.sock)
    check("03 --socket=SOCK", got == ["tank"], got)
    got, _, _ = complete(RTGTCTL + " -c %s fail " % dmn.conf, cwd=dmn.dir)
    check("03 -c CONFIG (its daemon.control)", got == ["tank"], got)
    got, _, _ = complete(RTGTCTL + " fail ", env={"RTGT_SOCKET": dmn.sock})
    check("03 $RTGT_SOCKET", got == ["tank"], got)
    got, _, _ = complete(RTGTCTL + " fail tank --json ", env={"RTGT_SOCKET": dmn.sock})
    check("03 an option between the arguments", sorted(got) == ["d0.img", "d1.img"], got)
    print("03 the slowest completion asking the daemon took %.3f s" % slowest[0])
    check("03 names within 2 s", slowest[0] < 2.0, "%.3f s" % slowest[0])
    rc = dmn.stop()
    check("03 rtgtd stopped with 0", rc == 0, rc)


if __name__ == "__main__":
    main([t01_commands_and_options, t02_no_daemon, t03_with_daemon])
