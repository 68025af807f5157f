"""Observability facts shared by the OBS rules, the promtool tests and the docs generator.

What lives here: where runbooks are and what a runbook page must contain; how to read alerts out of
`PrometheusRule` objects; which metric names a PromQL expression reads (a small tokenizer, not a parser);
the DCGM exporter counters file; Grafana dashboards packaged as ConfigMaps; and the metric catalog — which
exporter provides which metric (DCGM from the counters file, everything else from the documented list below).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ...findings import Location
from ...infra.siteconfig import runbook_base
from ...model import Cluster, Fleet, K8sObject
from ..kustomization import KUSTOMIZATION_NAMES

# Alert X links to <site_url>runbooks/X/ (siteconfig: mkdocs.yml site_url), rendered from docs/runbooks/X.md.
RUNBOOK_DIR = "docs/runbooks"
RUNBOOK_SECTIONS = ("Meaning", "Impact", "Diagnosis", "Mitigation")  # prometheus-operator/runbooks template
SEVERITIES = ("critical", "warning", "info")  # critical pages, warning opens a ticket, info is not routed
REQUIRED_ANNOTATIONS = ("summary", "description")

DCGM_CONFIGMAP_NAMESPACE = "gpu-operator"
DCGM_CONFIGMAP_NAME = "dcgm-metrics"
DCGM_CSV_KEY = "dcgm-metrics.csv"
DCGM_PREFIXES = ("DCGM_FI_", "DCGM_EXP_")
DCGM_TYPES = ("gauge", "counter", "label")  # what dcgm-exporter's collectors file accepts
GRAFANA_DASHBOARD_LABEL = "grafana_dashboard"
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


# --- runbooks -------------------------------------------------------------------------------------------


def runbook_url(site_url: str, alert_name: str) -> str:
    return f"{runbook_base(site_url)}{alert_name}/"


def runbook_page_for_url(site_url: str, url: str) -> str | None:
    """The repo-relative page a runbook URL is rendered from, or None when the URL is not on our site."""
    base = runbook_base(site_url)
    if not site_url or not url.startswith(base):
        return None
    name = url[len(base) :].split("#", 1)[0].strip("/")
    if not name or "/" in name or name.startswith("."):
        return None
    return f"{RUNBOOK_DIR}/{name}.md"


@dataclass(frozen=True)
class RunbookPage:
    title: str
    sections: tuple[str, ...]  # the `## ` headings, in order

    def missing_sections(self) -> list[str]:
        return [name for name in RUNBOOK_SECTIONS if name not in self.sections]


_FENCE = re.compile(r"^\s*(```|~~~)")


def parse_runbook(text: str) -> RunbookPage:
    """Title (first `# ` heading) and `## ` section headings, ignoring headings inside code fences."""
    title = ""
    sections: list[str] = []
    in_fence = False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        if line.startswith("# ") and not title:
            title = line[2:].strip()
        elif line.startswith("## "):
            sections.append(line[3:].strip())
    return RunbookPage(title=title, sections=tuple(sections))


# --- alerts ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Alert:
    """One alerting rule of a PrometheusRule, and the field path of it inside the object."""

    name: str
    expr: str
    for_: str
    labels: dict[str, str]
    annotations: dict[str, str]
    group: str
    path: tuple  # ("spec", "groups", g, "rules", r)
    obj: K8sObject | None = field(default=None, compare=False, repr=False)

    @property
    def severity(self) -> str:
        return str(self.labels.get("severity", ""))

    @property
    def summary(self) -> str:
        return str(self.annotations.get("summary", ""))

    @property
    def description(self) -> str:
        return str(self.annotations.get("description", ""))

    @property
    def runbook_url(self) -> str:
        return str(self.annotations.get("runbook_url", ""))


def rule_groups(body: dict) -> list[dict]:
    """The `spec.groups` of a PrometheusRule body, keeping only well-formed group mappings."""
    spec = body.get("spec") if isinstance(body, dict) else None
    groups = spec.get("groups") if isinstance(spec, dict) else None
    return [g for g in groups if isinstance(g, dict)] if isinstance(groups, list) else []


def _rules_of(body: dict) -> Iterator[tuple[int, dict, int, dict]]:
    spec = body.get("spec") if isinstance(body, dict) else None
    groups = spec.get("groups") if isinstance(spec, dict) else None
    for g_index, group in enumerate(groups if isinstance(groups, list) else []):
        if not isinstance(group, dict) or not isinstance(group.get("rules"), list):
            continue
        for r_index, rule in enumerate(group["rules"]):
            if isinstance(rule, dict):
                yield g_index, group, r_index, rule


def _str_map(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): "" if v is None else str(v) for k, v in value.items()}


def alerts_in(body: dict, obj: K8sObject | None = None) -> list[Alert]:
    """Every `alert:` rule of a PrometheusRule body (recording rules are skipped)."""
    alerts = []
    for g_index, group, r_index, rule in _rules_of(body):
        if "alert" not in rule:
            continue
        alerts.append(
            Alert(
                name=str(rule.get("alert") or ""),
                expr=str(rule.get("expr") or ""),
                for_=str(rule.get("for") or ""),
                labels=_str_map(rule.get("labels")),
                annotations=_str_map(rule.get("annotations")),
                group=str(group.get("name") or ""),
                path=("spec", "groups", g_index, "rules", r_index),
                obj=obj,
            )
        )
    return alerts


def recorded_metrics(body: dict) -> list[str]:
    """Names that `record:` rules of a PrometheusRule body create."""
    return [str(rule["record"]) for _, _, _, rule in _rules_of(body) if rule.get("record")]


def promtool_rule_file(body: dict, keep_annotations: bool = True) -> dict:
    """The plain Prometheus rule file promtool reads (`groups:`), from a PrometheusRule body.

    Unit tests drop annotations: they test when an alert fires, and promtool would otherwise compare every
    rendered description; `promtool check rules` still parses the annotation templates.
    """
    groups = []
    for group in rule_groups(body):
        copy = dict(group)
        if not keep_annotations and isinstance(group.get("rules"), list):
            copy["rules"] = [
                {k: v for k, v in rule.items() if k != "annotations"} if isinstance(rule, dict) else rule
                for rule in group["rules"]
            ]
        groups.append(copy)
    return {"groups": groups}


def locate(fleet: Fleet, obj: K8sObject | None, *path: Any) -> Location:
    """File and line of a field of a rendered object; the object's source file when no line is known."""
    return fleet.locate(obj, *path) or Location(obj.origin if obj else "", 0)


# --- where a dashboard query is written -------------------------------------------------------------------


def dashboard_location(fleet: Fleet, obj: K8sObject, key: str, path: tuple) -> Location:
    """The line of `path` in the file a generated ConfigMap's `key` comes from; else the key in the
    manifest."""
    source = generated_file(fleet, obj, key)
    if source:
        return fleet.locate_file(source, *path)
    return locate(fleet, obj, "data", key)


def generated_file(fleet: Fleet, obj: K8sObject, key: str) -> str | None:
    """Repository path of the file a configMapGenerator turned into `key` of `obj`, when there is one."""
    if fleet.locator is None or not obj.origin.endswith(KUSTOMIZATION_NAMES):
        return None
    docs = fleet.locator.docs(obj.origin)
    data = docs[0].data if docs else None
    entries = data.get("configMapGenerator") if isinstance(data, dict) else None
    folder = obj.origin.rsplit("/", 1)[0] if "/" in obj.origin else ""
    for entry in entries if isinstance(entries, list) else []:
        name = str(entry.get("name", "")) if isinstance(entry, dict) else ""
        if not name or not (obj.name == name or obj.name.startswith(name + "-")):
            continue
        for item in entry.get("files") or []:
            item = str(item)
            item_key, _, file = item.partition("=") if "=" in item else (item.rsplit("/", 1)[-1], "", item)
            if item_key == key and ".." not in file.split("/") and not file.startswith("/"):
                return f"{folder}/{file}" if folder else file
    return None


def alerts_of_cluster(cluster: Cluster) -> list[Alert]:
    return [alert for obj in cluster.of_kind("PrometheusRule") for alert in alerts_in(obj.body, obj)]


# --- PromQL: which metrics does an expression read? ---------------------------------------------------

# Words the PromQL lexer treats as keywords; the first group is followed by a label list in parentheses.
_LABEL_LIST_KEYWORDS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right"})
_KEYWORDS = _LABEL_LIST_KEYWORDS | {"and", "or", "unless", "offset", "bool", "atan2", "inf", "nan"}
_AGGREGATIONS = frozenset(
    {
        "sum",
        "min",
        "max",
        "avg",
        "group",
        "stddev",
        "stdvar",
        "count",
        "count_values",
        "bottomk",
        "topk",
        "quantile",
        "limitk",
        "limit_ratio",
    }
)
_IDENT = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_NUMBER = re.compile(r"[0-9.][0-9A-Za-z_.]*")  # numbers, hex, durations such as 1h30m
_NAME_MATCHER = re.compile(r"""__name__\s*=\s*(["'`])([A-Za-z_:][A-Za-z0-9_:]*)\1""")


def _skip_string(text: str, start: int) -> int:
    """Index just past the string literal starting at `start` (backslash escapes honoured, except in
    `raw`)."""
    quote = text[start]
    i = start + 1
    while i < len(text):
        if text[i] == "\\" and quote != "`":
            i += 2
            continue
        if text[i] == quote:
            return i + 1
        i += 1
    return len(text)


def _skip_until(text: str, start: int, closing: str) -> int:
    """Index just past the `closing` character that ends the group opened at `start`, strings skipped."""
    i = start + 1
    while i < len(text):
        char = text[i]
        if char in "\"'`":
            i = _skip_string(text, i)
            continue
        if char == closing:
            return i + 1
        i += 1
    return len(text)


def _next_significant(text: str, start: int) -> str:
    i = start
    while i < len(text) and text[i].isspace():
        i += 1
    return text[i] if i < len(text) else ""


def _word_at(text: str, start: int) -> str:
    i = start
    while i < len(text) and text[i].isspace():
        i += 1
    match = _IDENT.match(text, i)
    return match.group(0) if match else ""


def metric_names(expr: str) -> list[str]:
    """Metric names a PromQL expression reads, in order of first use, each once.

    An identifier is a metric unless it is a keyword, is followed by `(` (a function or aggregation), or sits
    inside a label list (`by (...)`, `on (...)`, `group_left (...)`), label matchers (`{...}`), a range or
    subquery (`[...]`) or a string. `{__name__="x"}` selectors count as metric `x`. Grafana variables
    (`$node`, `${node}`) are skipped.
    """
    names: list[str] = []
    i = 0
    while i < len(expr):
        char = expr[i]
        if char in "\"'`":
            i = _skip_string(expr, i)
        elif char == "#":
            newline = expr.find("\n", i)
            i = len(expr) if newline < 0 else newline + 1
        elif char == "{":
            end = _skip_until(expr, i, "}")
            match = _NAME_MATCHER.search(expr, i, end)
            if match and match.group(2) not in names:
                names.append(match.group(2))
            i = end
        elif char == "[":
            i = _skip_until(expr, i, "]")
        elif char == "$":
            i += 1
            if i < len(expr) and expr[i] == "{":
                i = _skip_until(expr, i, "}")
            else:
                ident = _IDENT.match(expr, i)
                i = ident.end() if ident else i
        elif char.isdigit() or (char == "." and i + 1 < len(expr) and expr[i + 1].isdigit()):
            i = _NUMBER.match(expr, i).end()
        elif _IDENT.match(expr, i):
            i = _identifier(expr, i, names)
        else:
            i += 1
    return names


def _identifier(expr: str, start: int, names: list[str]) -> int:
    match = _IDENT.match(expr, start)
    word, end = match.group(0), match.end()
    following = _next_significant(expr, end)
    lowered = word.lower()
    if lowered in _LABEL_LIST_KEYWORDS and following == "(":
        return _skip_until(expr, expr.index("(", end), ")")
    if lowered in _KEYWORDS or following == "(":
        return end
    if lowered in _AGGREGATIONS and _word_at(expr, end).lower() in ("by", "without"):
        return end  # `sum by (x) (...)`: the aggregation, not a metric called "sum"
    if word not in names:
        names.append(word)
    return end


# --- the DCGM exporter counters file --------------------------------------------------------------------


@dataclass(frozen=True)
class DcgmCounter:
    field: str
    prom_type: str  # gauge | counter | label
    help: str
    line: int


@dataclass
class DcgmConfig:
    counters: list[DcgmCounter] = field(default_factory=list)
    problems: list[tuple[int, str]] = field(default_factory=list)  # (line, message)

    @property
    def metrics(self) -> set[str]:
        """Metric names the exporter will serve (label-type fields become labels, not metrics)."""
        return {c.field for c in self.counters if c.prom_type != "label"}

    def get(self, name: str) -> DcgmCounter | None:
        return next((c for c in self.counters if c.field == name), None)


def parse_dcgm_csv(text: str) -> DcgmConfig:
    """Parse a dcgm-exporter collectors file: `DCGM field, Prometheus type, help`; `#` starts a comment
    line."""
    config = DcgmConfig()
    seen: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = [part.strip() for part in line.split(",", 2)]
        if len(parts) < 2:
            config.problems.append((number, f"expected 'DCGM field, type, help', got {line!r}"))
            continue
        name, prom_type = parts[0], parts[1].lower()
        if not name.startswith(DCGM_PREFIXES):
            config.problems.append(
                (number, f"{name!r} is not a DCGM field (DCGM_FI_...) or exporter field (DCGM_EXP_...)")
            )
            continue
        if prom_type not in DCGM_TYPES:
            config.problems.append(
                (number, f"{name}: type {parts[1]!r} is not one of {', '.join(DCGM_TYPES)}")
            )
            continue
        if name in seen:
            config.problems.append((number, f"{name} is listed twice (first on line {seen[name]})"))
            continue
        seen[name] = number
        config.counters.append(DcgmCounter(name, prom_type, parts[2] if len(parts) > 2 else "", number))
    return config


def is_dcgm_metric(name: str) -> bool:
    return name.startswith(DCGM_PREFIXES)


def dcgm_configmap(cluster: Cluster) -> K8sObject | None:
    """ConfigMap gpu-operator/dcgm-metrics (a kustomize name-hash suffix is tolerated)."""
    pattern = re.compile(rf"{re.escape(DCGM_CONFIGMAP_NAME)}(-[a-z0-9]{{10}})?")
    for obj in cluster.of_kind("ConfigMap"):
        if obj.namespace == DCGM_CONFIGMAP_NAMESPACE and pattern.fullmatch(obj.name):
            return obj
    return None


def dcgm_config_of(cluster: Cluster) -> DcgmConfig | None:
    """The cluster's DCGM counters, or None when it ships no dcgm-metrics ConfigMap with the CSV key."""
    obj = dcgm_configmap(cluster)
    data = (obj.body.get("data") or {}) if obj else {}
    text = data.get(DCGM_CSV_KEY) if isinstance(data, dict) else None
    return parse_dcgm_csv(text) if isinstance(text, str) else None


# --- Grafana dashboards ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PanelQuery:
    panel: str  # panel title, or "variable <name>" for a templating query
    expr: str
    path: tuple  # JSON path inside the dashboard


@dataclass(frozen=True)
class Dashboard:
    obj: K8sObject
    key: str  # ConfigMap data key (the file name)
    data: dict | None
    error: str = ""  # why it did not parse


def dashboards_of(cluster: Cluster) -> list[Dashboard]:
    """Every dashboard the Grafana sidecar would load: ConfigMaps labelled grafana_dashboard, key by key."""
    found = []
    for obj in cluster.of_kind("ConfigMap"):
        if GRAFANA_DASHBOARD_LABEL not in obj.labels:
            continue
        data = obj.body.get("data") or {}
        for key, text in sorted(data.items() if isinstance(data, dict) else []):
            found.append(_dashboard(obj, str(key), text))
    return found


# Bounds on a dashboard, checked before anything walks it: the API server's limit on a ConfigMap's data (1
# MiB, core.MaxSecretSize), and a nesting depth far above Grafana's own (dashboard > rows > panels > targets
# is about 8 levels) that keeps every walk of it well inside Python's recursion limit.
MAX_DASHBOARD_BYTES = 1024 * 1024
MAX_DASHBOARD_DEPTH = 64


def _dashboard(obj: K8sObject, key: str, text: Any) -> Dashboard:
    if not isinstance(text, str):
        return Dashboard(obj, key, None, "value is not a string")
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_DASHBOARD_BYTES:
        return Dashboard(
            obj, key, None, f"{size:,} bytes, more than a ConfigMap holds ({MAX_DASHBOARD_BYTES:,})"
        )
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return Dashboard(obj, key, None, f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})")
    except (RecursionError, ValueError) as exc:  # nesting past Python's stack; an integer of 5,000 digits
        return Dashboard(obj, key, None, f"not readable JSON ({_json_problem(exc)})")
    if not isinstance(data, dict):
        return Dashboard(obj, key, None, "not a JSON object")
    if _depth_exceeds(data, MAX_DASHBOARD_DEPTH):
        return Dashboard(obj, key, None, f"nested more than {MAX_DASHBOARD_DEPTH} levels deep")
    return Dashboard(obj, key, data)


def _json_problem(exc: Exception) -> str:
    if isinstance(exc, RecursionError):
        return f"nested more than {MAX_DASHBOARD_DEPTH} levels deep"
    return str(exc).split(";")[0]


def _depth_exceeds(data: Any, limit: int) -> bool:
    """Whether lists and objects nest deeper than `limit` (a stack, so the check itself cannot overflow)."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        for child in children:
            if isinstance(child, dict | list):
                if depth + 1 > limit:
                    return True
                stack.append((child, depth + 1))
    return False


def dashboard_queries(dashboard: dict) -> list[PanelQuery]:
    """PromQL of every panel target (rows and nested panels included) and of every query variable."""
    queries = list(_panel_queries(dashboard.get("panels"), ("panels",)))
    templating = dashboard.get("templating") if isinstance(dashboard.get("templating"), dict) else {}
    for index, variable in enumerate(templating.get("list") or []):
        if isinstance(variable, dict) and variable.get("type") == "query":
            query = variable.get("query")
            text = query.get("query") if isinstance(query, dict) else query
            if isinstance(text, str) and text.strip():
                queries.append(
                    PanelQuery(
                        f"variable {variable.get('name', index)}",
                        _variable_expr(text),
                        ("templating", "list", index, "query"),
                    )
                )
    return queries


def dashboard_panels(panels: Any, path: tuple = ("panels",)) -> Iterator[tuple[tuple, dict]]:
    """(JSON path, panel) of every panel, rows' nested panels included."""
    for index, panel in enumerate(panels if isinstance(panels, list) else []):
        if isinstance(panel, dict):
            yield path + (index,), panel
            yield from dashboard_panels(panel.get("panels"), path + (index, "panels"))


def panel_exprs(panel: dict) -> Iterator[tuple[int, str]]:
    """(target index, PromQL) of each of a panel's targets that has a query."""
    for t_index, target in enumerate(panel.get("targets") or []):
        if isinstance(target, dict) and isinstance(target.get("expr"), str) and target["expr"].strip():
            yield t_index, target["expr"]


def _panel_queries(panels: Any, path: tuple) -> Iterator[PanelQuery]:
    for panel_path, panel in dashboard_panels(panels, path):
        title = str(panel.get("title") or f"panel {panel_path[-1]}")
        for t_index, expr in panel_exprs(panel):
            yield PanelQuery(title, expr, panel_path + ("targets", t_index, "expr"))


_LABEL_VALUES = re.compile(r"^\s*label_values\((.*)\)\s*$", re.S)
_QUERY_RESULT = re.compile(r"^\s*query_result\((.*)\)\s*$", re.S)


def _variable_expr(query: str) -> str:
    """The PromQL inside a Grafana variable query (`label_values(expr, label)`, `query_result(expr)`)."""
    match = _LABEL_VALUES.match(query)
    if match:
        inner = match.group(1)
        return inner.rsplit(",", 1)[0] if "," in inner else ""  # label_values(label) reads no metric
    match = _QUERY_RESULT.match(query)
    if match:
        return match.group(1)
    if re.match(r"^\s*(metrics|label_names)\(", query):
        return ""
    return query


# --- the metric catalog ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricSource:
    name: str
    exporter: str
    type: str  # gauge | counter | histogram
    help: str
    note: str = ""


_KSM = "kube-state-metrics"
_KUEUE = "kueue"
_PROM = "prometheus"
_OPERATOR = "gpu-operator"
_CQ_RESOURCES = "needs Kueue metrics.enableClusterQueueResources: true"

# Non-DCGM metrics the repository may use, and who provides them. Sources: kube-state-metrics
# docs/metrics/*, Kueue site/content/en/docs/reference/metrics.md, GPU Operator internal/metrics, Prometheus
# (`up` is synthesised per scrape target). Add a row here before an alert or dashboard uses a new metric.
DOCUMENTED_METRICS: tuple[MetricSource, ...] = (
    MetricSource("up", _PROM, "gauge", "1 when the last scrape of a target succeeded, 0 when it failed"),
    MetricSource("scrape_duration_seconds", _PROM, "gauge", "how long the last scrape of a target took"),
    MetricSource(
        "kube_node_labels",
        _KSM,
        "gauge",
        "node labels as label_<key>; only allowlisted keys",
        "needs --metric-labels-allowlist=nodes=[...]",
    ),
    MetricSource("kube_node_info", _KSM, "gauge", "node facts (kernel, kubelet version)"),
    MetricSource("kube_node_status_condition", _KSM, "gauge", "1 for the node condition's current status"),
    MetricSource("kube_node_status_capacity", _KSM, "gauge", "node capacity per resource"),
    MetricSource("kube_node_status_allocatable", _KSM, "gauge", "node allocatable per resource"),
    MetricSource("kube_node_spec_unschedulable", _KSM, "gauge", "1 when the node is cordoned"),
    MetricSource("kube_node_spec_taint", _KSM, "gauge", "node taints"),
    MetricSource("kube_daemonset_status_desired_number_scheduled", _KSM, "gauge", "pods the DaemonSet wants"),
    MetricSource("kube_daemonset_status_current_number_scheduled", _KSM, "gauge", "pods scheduled"),
    MetricSource("kube_daemonset_status_number_ready", _KSM, "gauge", "pods ready"),
    MetricSource("kube_daemonset_status_number_available", _KSM, "gauge", "pods available"),
    MetricSource(
        "kube_daemonset_status_number_unavailable", _KSM, "gauge", "pods that should run and do not"
    ),
    MetricSource("kube_pod_info", _KSM, "gauge", "pod facts including its node"),
    MetricSource(
        "kube_pod_init_container_status_terminated_reason",
        _KSM,
        "gauge",
        "1 for the reason an init container is terminated now (Completed, Error, OOMKilled, ...)",
    ),
    MetricSource(
        "kube_pod_init_container_status_last_terminated_reason",
        _KSM,
        "gauge",
        "1 for the reason of an init container's previous termination",
    ),
    MetricSource(
        "kube_pod_init_container_status_ready",
        _KSM,
        "gauge",
        "1 when an init container has completed successfully",
    ),
    MetricSource("kube_pod_status_phase", _KSM, "gauge", "1 for the pod's phase"),
    MetricSource("kube_pod_container_resource_requests", _KSM, "gauge", "container requests per resource"),
    MetricSource("kube_pod_container_resource_limits", _KSM, "gauge", "container limits per resource"),
    MetricSource("kueue_pending_workloads", _KUEUE, "gauge", "pending workloads per ClusterQueue and status"),
    MetricSource("kueue_admission_wait_time_seconds", _KUEUE, "histogram", "created or requeued to admitted"),
    MetricSource("kueue_quota_reserved_wait_time_seconds", _KUEUE, "histogram", "created to quota reserved"),
    MetricSource("kueue_admission_checks_wait_time_seconds", _KUEUE, "histogram", "reserved to admitted"),
    MetricSource("kueue_admitted_workloads_total", _KUEUE, "counter", "workloads admitted"),
    MetricSource("kueue_quota_reserved_workloads_total", _KUEUE, "counter", "workloads that reserved quota"),
    MetricSource("kueue_admitted_active_workloads", _KUEUE, "gauge", "admitted workloads still running"),
    MetricSource("kueue_reserving_active_workloads", _KUEUE, "gauge", "workloads holding quota"),
    MetricSource("kueue_evicted_workloads_total", _KUEUE, "counter", "evictions per ClusterQueue and reason"),
    MetricSource("kueue_preempted_workloads_total", _KUEUE, "counter", "preemptions per preempting queue"),
    MetricSource("kueue_cluster_queue_status", _KUEUE, "gauge", "1 for the ClusterQueue's current status"),
    MetricSource("kueue_cluster_queue_info", _KUEUE, "gauge", "ClusterQueue to cohort hierarchy"),
    MetricSource("kueue_cohort_info", _KUEUE, "gauge", "cohort hierarchy"),
    MetricSource(
        "kueue_cluster_queue_resource_pending", _KUEUE, "gauge", "resources pending workloads ask for"
    ),
    MetricSource("kueue_admission_attempts_total", _KUEUE, "counter", "scheduling attempts by result"),
    MetricSource(
        "kueue_admission_attempt_duration_seconds", _KUEUE, "histogram", "scheduling attempt latency"
    ),
    MetricSource(
        "kueue_cluster_queue_resource_usage",
        _KUEUE,
        "gauge",
        "admitted usage per flavor and resource",
        _CQ_RESOURCES,
    ),
    MetricSource(
        "kueue_cluster_queue_resource_reservation",
        _KUEUE,
        "gauge",
        "reserved quota per flavor",
        _CQ_RESOURCES,
    ),
    MetricSource(
        "kueue_cluster_queue_nominal_quota",
        _KUEUE,
        "gauge",
        "nominal quota per flavor and resource",
        _CQ_RESOURCES,
    ),
    MetricSource(
        "kueue_cluster_queue_borrowing_limit",
        _KUEUE,
        "gauge",
        "borrowing limit (+Inf when unset)",
        _CQ_RESOURCES,
    ),
    MetricSource("kueue_cluster_queue_lending_limit", _KUEUE, "gauge", "lending limit", _CQ_RESOURCES),
    MetricSource("kueue_cluster_queue_weighted_share", _KUEUE, "gauge", "fair-sharing share of the queue"),
    MetricSource("kueue_local_queue_pending_workloads", _KUEUE, "gauge", "pending workloads per LocalQueue"),
    MetricSource("gpu_operator_gpu_nodes_total", _OPERATOR, "gauge", "nodes the operator sees as GPU nodes"),
    MetricSource(
        "gpu_operator_reconciliation_status",
        _OPERATOR,
        "gauge",
        "1 success, 0 operands not ready, -1 ClusterPolicy unavailable, -2 operator error",
    ),
    MetricSource(
        "gpu_operator_reconciliation_last_success_ts_seconds",
        _OPERATOR,
        "gauge",
        "time of the last successful reconciliation",
    ),
)


def metric_catalog(dcgm: DcgmConfig | None = None, recorded: Iterable[str] = ()) -> dict[str, MetricSource]:
    """Every metric some exporter provides: the documented list, the enabled DCGM counters, recording
    rules."""
    catalog = {source.name: source for source in DOCUMENTED_METRICS}
    for counter in dcgm.counters if dcgm else []:
        if counter.prom_type != "label":
            catalog[counter.field] = MetricSource(
                counter.field, "dcgm-exporter", counter.prom_type, counter.help
            )
    for name in recorded:
        catalog.setdefault(
            name, MetricSource(name, "recording rule", "gauge", "recorded by a PrometheusRule")
        )
    return catalog


def lookup(catalog: dict[str, MetricSource], metric: str) -> MetricSource | None:
    """The source of a metric, reading histogram series (`_bucket`, `_sum`, `_count`) as their histogram."""
    if metric in catalog:
        return catalog[metric]
    for suffix in HISTOGRAM_SUFFIXES:
        base = metric[: -len(suffix)] if metric.endswith(suffix) else ""
        if base and catalog.get(base) and catalog[base].type == "histogram":
            return catalog[base]
    return None


def cluster_catalog(cluster: Cluster) -> dict[str, MetricSource]:
    """The metric catalog of one cluster: its DCGM counters and its recording rules included."""
    recorded = [name for obj in cluster.of_kind("PrometheusRule") for name in recorded_metrics(obj.body)]
    return metric_catalog(dcgm_config_of(cluster), recorded)
