#!/usr/bin/env python3
"""tests/unit/test_monitoring.py - the Grafana dashboard and the Prometheus
rules of target/daemon/monitoring/, without a daemon:
01 `promtool check rules` on the rules; 02 `promtool test rules` on
rtgt-alerts.test.yml, and every alert of the rules expected to fire in at
least one of its cases; 03 the alerts the issue asks for exist (a pool
degraded or failed, a member slow or failing its health check, a rebuild
stalled, thin space over its threshold, a path down or retransmitting),
each with a severity, a summary and a description; 04 the dashboard:
unique panel ids, panels inside 24 columns and not overlapping, every
query through the ${datasource} variable, every rtgt selector narrowed to
$instance; 05 the views the issue asks for (per portal and per session
throughput and latency, per member busy share and latency, pool state,
rebuild progress, thin space); 06 every dashboard query is PromQL
promtool accepts (as a recording rule); 07 the name extraction of
tests/lib/promql_names.py itself, and no name but rtgt's and the few
listed in tests/net/test_net_monitoring.py.
SKIPPED (exit 0, with the reason) without promtool or PyYAML.
Prints "N%: Checks: N, Failures: N" like the Check programs; exit 1 on any
failure.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
from ckpy import check, main  # noqa: E402
import promql_names as pn  # noqa: E402

# names read that rtgtd does not export, and who does
FOREIGN = {"up", "node_netstat_Tcp_RetransSegs", "node_netstat_Tcp_OutSegs"}


def promtool(*args, cwd=None):
    p = subprocess.run(["promtool", *args], capture_output=True, text=True, cwd=cwd, timeout=120)
    return p.returncode, p.stdout + p.stderr


def t01_check_rules():
    rc, out = promtool("check", "rules", pn.RULES)
    print("01 promtool check rules: " + " ".join(out.split()))
    check("01 promtool check rules passes", rc == 0 and "SUCCESS" in out, out)
    n = len(pn.rules())
    check("01 every rule counted", ("%d rules found" % n) in out, out)


def t02_test_rules():
    import yaml
    rc, out = promtool("test", "rules", os.path.basename(pn.RULE_TESTS), cwd=pn.MON)
    print("02 promtool test rules: " + " ".join(out.split()))
    check("02 promtool test rules passes", rc == 0 and "SUCCESS" in out, out)
    with open(pn.RULE_TESTS) as f:
        tests = yaml.safe_load(f)["tests"]
    fired = {t["alertname"] for g in tests for t in g.get("alert_rule_test", [])
             if t.get("exp_alerts")}
    quiet = {t["alertname"] for g in tests for t in g.get("alert_rule_test", [])
             if not t.get("exp_alerts")}
    for r in pn.rules():
        if "alert" in r:
            check("02 %s expected to fire in a case" % r["alert"], r["alert"] in fired,
                  "no case expects it")
    print("02 %d alerts expected to fire, %d also expected silent in some case" %
          (len(fired), len(quiet)))


def t03_required_alerts():
    by_name = {r["alert"]: r for r in pn.rules() if "alert" in r}
    want = {
        "pool failed": ("RtgtPoolFailed", "rtgt_pool_state"),
        "pool degraded": ("RtgtPoolDegraded", "rtgt_pool_state"),
        "member slow": ("RtgtMemberSlow", "rtgt_member_slow"),
        "member failing its health check": ("RtgtMemberHealthFailing", "rtgt_member_health"),
        "member faulty": ("RtgtMemberFaulty", "rtgt_member_state"),
        "rebuild stalled": ("RtgtRebuildStalled", "rtgt_rebuild_progress_ratio"),
        "thin space over its threshold": ("RtgtThinSpaceHigh", "rtgt_pool_thin_used_bytes"),
        "path down": ("RtgtPathDown", "rtgt_session_read_ops_total"),
        "path retransmitting": ("RtgtHostTcpRetransmits", "node_netstat_Tcp_RetransSegs"),
    }
    for what, (alert, metric) in want.items():
        r = by_name.get(alert)
        check("03 %s: alert %s" % (what, alert), r is not None, "missing")
        if not r:
            continue
        check("03 %s reads %s" % (alert, metric), metric in pn.names(r["expr"]), r["expr"])
    for name, r in by_name.items():
        check("03 %s has a severity" % name,
              r.get("labels", {}).get("severity") in ("warning", "critical"), r.get("labels"))
        a = r.get("annotations", {})
        check("03 %s has a summary and a description" % name,
              a.get("summary") and a.get("description"), a)


def t04_dashboard_shape():
    with open(pn.DASHBOARD) as f:
        d = json.load(f)
    ids = [p["id"] for p in d["panels"]]
    check("04 panel ids unique", len(ids) == len(set(ids)), ids)
    cells = {}
    for p in d["panels"]:
        g = p["gridPos"]
        check("04 panel %d inside 24 columns" % p["id"], g["x"] >= 0 and g["x"] + g["w"] <= 24, g)
        for y in range(g["y"], g["y"] + g["h"]):
            for x in range(g["x"], g["x"] + g["w"]):
                other = cells.setdefault((x, y), p["id"])
                if other != p["id"]:
                    check("04 panel %d overlaps panel %d" % (p["id"], other), False, g)
                    break
        if p["type"] == "row":
            continue
        check("04 panel %d %r has queries" % (p["id"], p["title"]), p.get("targets"), p)
        for t in p.get("targets", []):
            check("04 panel %d %s through ${datasource}" % (p["id"], t["refId"]),
                  t.get("datasource", {}).get("uid") == "${datasource}", t.get("datasource"))
            for m in re.finditer(r"\b(rtgt_[a-z0-9_]+)(\{[^}]*\})?", t["expr"]):
                check("04 panel %d %s: %s narrowed to $instance" % (p["id"], t["refId"], m.group(1)),
                      m.group(2) and 'instance=~"$instance"' in m.group(2), t["expr"])
    var = {v["name"]: v for v in d["templating"]["list"]}
    check("04 a datasource variable", var.get("datasource", {}).get("type") == "datasource", var)
    check("04 an instance variable", var.get("instance", {}).get("type") == "query", var)


def t05_required_views():
    q = [e for _, e in pn.dashboard_queries()]

    def has(what, pattern):
        check("05 the dashboard shows %s" % what, any(re.search(pattern, e) for e in q), pattern)

    has("throughput per portal", r"sum by \(portal\) \(rate\(rtgt_session_(read|write)_bytes_total")
    has("latency per portal", r"histogram_quantile\(0\.99, sum by \(portal, le\) \(rate\(rtgt_session_latency_seconds_bucket")
    has("throughput per session", r"sum by \(initiator, isid, portal\) \(rate\(rtgt_session_read_bytes_total")
    has("latency per session", r"sum by \(initiator, isid, portal, le\) \(rate\(rtgt_session_latency_seconds_bucket")
    has("busy share per member", r"rate\(rtgt_member_busy_seconds_total")
    has("latency per member", r"sum by \(pool, member, op, le\) \(rate\(rtgt_member_latency_seconds_bucket")
    has("pool state", r"rtgt_pool_state\{")
    has("rebuild progress", r"rtgt_rebuild_progress_ratio\{")
    has("thin space", r"rtgt_pool_thin_used_bytes\{[^}]*\} / rtgt_pool_thin_space_bytes")


def t06_dashboard_promql():
    import yaml
    d = tempfile.mkdtemp(prefix="rtgt-mon.")
    rules = []
    for i, (where, e) in enumerate(pn.dashboard_queries()):
        if e.startswith("label_values("):
            continue
        rules.append({"record": "dashboard:q%d" % i,
                      "expr": e.replace("$__rate_interval", "5m").replace("$instance", ".*")})
    path = os.path.join(d, "dashboard-rules.yml")
    with open(path, "w") as f:
        yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}, f)
    rc, out = promtool("check", "rules", path)
    check("06 all %d dashboard queries are valid PromQL" % len(rules), rc == 0, out)
    print("06 %d dashboard queries checked by promtool" % len(rules))
    shutil.rmtree(d)


def t07_names():
    got = pn.names('histogram_quantile(0.99, sum by (portal, le) (rate(a_bucket{x="b c"}[5m]))) '
                   '> 1e6 and on (pool) changes(b[15m]) == 0 offset 5m or c:rec')
    check("07 the extractor finds metrics, not functions, labels or numbers",
          got == {"a_bucket", "b", "c:rec"}, got)
    check("07 label_values reads its metric",
          pn.names("label_values(rtgt_pool_state, instance)") == {"rtgt_pool_state"})
    used = set()
    for where, e in pn.dashboard_queries() + pn.rule_queries():
        n = pn.names(e)
        check("07 %s reads a metric" % where, n, e)
        used |= n
    other = {n for n in used if not n.startswith("rtgt_")} - FOREIGN
    check("07 no metric but rtgt's and the listed ones", not other, sorted(other))
    print("07 %d names read, %d of them rtgt's" % (len(used), len([n for n in used if n.startswith("rtgt_")])))


if __name__ == "__main__":
    missing = [w for w, ok in (("promtool (Debian package prometheus; scripts/deps.sh installs it)",
                                shutil.which("promtool")),
                               ("PyYAML (python3-yaml)", __import__("importlib").util.find_spec("yaml")))
               if not ok]
    if missing:
        print("0%%: Checks: 0, SKIPPED: %s not installed" % ", ".join(missing))
        sys.exit(0)
    main([t01_check_rules, t02_test_rules, t03_required_alerts, t04_dashboard_shape,
          t05_required_views, t06_dashboard_promql, t07_names])
