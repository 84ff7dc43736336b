"""tests/lib/promql_names.py - the queries of rtgt's Grafana dashboard and
Prometheus rules (target/daemon/monitoring/) and the metric names each one
reads, for tests/unit/test_monitoring.py and
tests/net/test_net_monitoring.py. A name is an identifier of the query
that is not a function (followed by "("), a keyword, a label (inside {},
by/without/on/ignoring/group_left/group_right lists) or a number or
duration; label_values(NAME, LABEL) of a template variable reads NAME.
Needs PyYAML for the rules (python3-yaml)."""
import json
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MON = os.path.join(ROOT, "target", "daemon", "monitoring")
DASHBOARD = os.path.join(MON, "rtgt-dashboard.json")
RULES = os.path.join(MON, "rtgt-alerts.yml")
RULE_TESTS = os.path.join(MON, "rtgt-alerts.test.yml")

KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring",
            "group_left", "group_right", "inf", "nan", "atan2"}


def names(expr):
    """The metric names @expr reads."""
    m = re.fullmatch(r"\s*label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*\w+\s*\)\s*", expr)
    if m:
        return {m.group(1)}
    e = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', '""', expr)
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    e = re.sub(r"\$\{?\w+\}?", " ", e)
    e = re.sub(r"\b\d+(\.\d+)?([eE][+-]?\d+)?(ms|s|m|h|d|w|y)?\b", " ", e)
    found = set()
    for m in re.finditer(r"[a-zA-Z_:][a-zA-Z0-9_:]*", e):
        ident = m.group(0)
        if ident.lower() in KEYWORDS or re.match(r"\s*\(", e[m.end():]):
            continue
        found.add(ident)
    return found


def dashboard_queries():
    """(where, expr) of every panel target and query variable."""
    with open(DASHBOARD) as f:
        d = json.load(f)
    out = []
    for p in d["panels"]:
        for t in p.get("targets", []):
            out.append(("panel %d %r %s" % (p["id"], p["title"], t["refId"]), t["expr"]))
    for v in d["templating"]["list"]:
        if v["type"] == "query":
            q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
            out.append(("variable " + v["name"], q))
    return out


def rules():
    import yaml
    with open(RULES) as f:
        return [r for g in yaml.safe_load(f)["groups"] for r in g["rules"]]


def rule_queries():
    return [("alert " + r.get("alert", r.get("record", "?")), r["expr"]) for r in rules()]
