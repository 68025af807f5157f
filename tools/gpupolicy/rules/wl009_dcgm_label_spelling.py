"""An alert or dashboard names the node label of DCGM series with a spelling the exporter does not emit.

## Why it matters
dcgm-exporter names the node of every series in one label, and the label's spelling changed: up to release
4.5.3-4.8.2 it is `Hostname` (NVIDIA/dcgm-exporter tag `4.5.3-4.8.2`,
`internal/pkg/rendermetrics/render_metrics.go` line 47: `{{if $metric.Hostname }},Hostname="..."{{end}}`), and
commit d5e5f51 "Rename Hostname label to hostname (#655)", on `main` right after that release, writes
`hostname` in every template of that file (and `internal/pkg/integration_test/collector_test.go` asserts
`"hostname"`). The GPU Operator pins the exporter image in its chart (`deployments/gpu-operator/values.yaml`,
`dcgmExporter.version`), so the operator version in `clusters/<name>/cluster.yaml` decides the spelling:

| GPU Operator | dcgm-exporter (`dcgmExporter.version` at the operator's tag) | node label |
|---|---|---|
| v24.3.0 – v26.3.3 | 3.3.5-3.4.1 – 4.5.3-4.8.2 | `Hostname` |
| v26.7.0 | 4.6.0-4.8.3 | `hostname` |

(NVIDIA/gpu-operator, `deployments/gpu-operator/values.yaml` at each tag; v26.7.0 pins
`4.6.0-4.8.3-distroless`, commit f0c422e "Update nvcr.io/nvidia/k8s/dcgm-exporter Docker tag to
v4.6.0-4.8.3-distroless", 2026-07-14. Every 4.x release tag of dcgm-exporter is cut from `main`, and
4.6.0-4.8.3 came after the rename.) A selector, `by (...)`, `on (...)`, `label_values(..., label)` or legend
that uses the other spelling matches nothing: the alert never fires, the panel is empty, the node variable
offers no node. Prometheus label names are case sensitive.

A ServiceMonitor (or PodMonitor) of the exporter can fold one spelling into the other with metric relabelings
(a `replace` from one to the other, then a `labeldrop` of the first); this rule applies those relabelings, in
order, to the spelling the pinned exporter emits, and reports every use of a spelling that does not reach
Prometheus. Only expressions that read a DCGM metric are checked; quoted strings are ignored. An operator
version missing from the table is not checked.

## Bad example
```yaml
# cluster.yaml: gpuOperatorVersion: v26.7.0 (exporter 4.6.0-4.8.3 emits `hostname`), no normalising monitor
expr: count by (Hostname) (DCGM_FI_DEV_GPU_TEMP)
```

## Fix
Use the spelling the pinned exporter emits, or (robust to an operator upgrade or rollback) normalise it in the
exporter's ServiceMonitor and use the normalised name everywhere:
```yaml
      metricRelabelings:
        - {sourceLabels: [Hostname], targetLabel: hostname, regex: (.+), replacement: $1, action: replace}
        - {regex: Hostname, action: labeldrop}
```
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..domain.observability import (
    alerts_of_cluster,
    dashboard_location,
    dashboard_queries,
    dashboards_of,
    is_dcgm_metric,
    locate,
    metric_names,
)
from ..findings import Finding, Severity, at
from ..model import Cluster, Fleet
from .wl003_exporter_label_handling import ENDPOINTS_FIELD, selected_exporter

ID = "WL009"
SEVERITY = Severity.ERROR
SUMMARY = "An alert or dashboard uses the DCGM node label spelling the pinned dcgm-exporter does not emit"

SPELLINGS = ("Hostname", "hostname")
# The first GPU Operator release whose dcgm-exporter emits `hostname` (table in the docstring); releases from
# OLDEST_KNOWN up to it emit `Hostname`.
OLDEST_KNOWN = (24, 3, 0)
FIRST_LOWERCASE = (26, 7, 0)
NEWEST_KNOWN = (26, 7, 0)

_VERSION = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')


def emitted_spelling(operator_version: str) -> str | None:
    """`Hostname` or `hostname`, from the GPU Operator version; None for a release outside the table."""
    match = _VERSION.fullmatch(operator_version.strip())
    if not match:
        return None
    version = tuple(int(part) for part in match.groups())
    if version < OLDEST_KNOWN or version > NEWEST_KNOWN:
        return None
    return "hostname" if version >= FIRST_LOWERCASE else "Hostname"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        emitted = emitted_spelling(cluster.facts.gpu_operator_version)
        if emitted is None:
            continue
        present = spellings_after_relabeling(cluster, emitted)
        if not present:
            continue
        absent = [s for s in SPELLINGS if s not in present]
        yield from _check_alerts(fleet, cluster, emitted, present, absent)
        yield from _check_dashboards(fleet, cluster, emitted, present, absent)


def spellings_after_relabeling(cluster: Cluster, emitted: str) -> set[str]:
    """The node label spellings Prometheus stores: the exporter's, through the monitors' metric relabelings.

    With several monitors (or endpoints) of the exporter, only spellings every one of them stores count.
    """
    results = []
    for kind, field in ENDPOINTS_FIELD.items():
        for obj in cluster.of_kind(kind, "monitoring.coreos.com"):
            if selected_exporter(obj.spec.get("selector")) is None:
                continue
            endpoints = obj.spec.get(field)
            for endpoint in endpoints if isinstance(endpoints, list) else []:
                if isinstance(endpoint, dict):
                    results.append(_relabel({emitted}, endpoint.get("metricRelabelings")))
    if not results:
        return {emitted}
    return set.intersection(*results)


def _relabel(labels: set[str], configs: Any) -> set[str]:
    labels = set(labels)
    for config in configs if isinstance(configs, list) else []:
        if not isinstance(config, dict):
            continue
        action = str(config.get("action") or "replace").lower()
        # prometheus/prometheus model/relabel/relabel.go `Config.UnmarshalYAML`: an absent regex keeps the
        # default "(.*)"; one the YAML leaves nil (null) becomes the empty regex, which matches only "".
        regex = "(.*)" if "regex" not in config else "" if config["regex"] is None else str(config["regex"])
        if action == "labeldrop":
            labels = {label for label in labels if not _full_match(regex, label)}
        elif action == "labelkeep":
            labels = {label for label in labels if _full_match(regex, label)}
        elif action == "replace":
            sources = config.get("sourceLabels") or []
            target = str(config.get("targetLabel") or "")
            if (
                target in SPELLINGS
                and len(sources) == 1
                and str(sources[0]) in labels
                and regex in ("(.+)", "(.*)", ".+", ".*")
            ):
                labels.add(target)
    return labels


def _full_match(regex: str, label: str) -> bool:
    try:
        return re.fullmatch(regex, label) is not None
    except re.error:
        return False


def uses(text: str, spelling: str) -> bool:
    """Whether PromQL or a legend uses the label `spelling` outside quoted strings."""
    bare = _STRING.sub('""', text)
    return re.search(rf"(?<![A-Za-z0-9_:]){spelling}(?![A-Za-z0-9_:])", bare) is not None


def _why(emitted: str, present: set[str], wrong: str) -> str:
    stored = " and ".join(f"`{s}`" for s in sorted(present))
    normalised = "" if present == {emitted} else f" and the exporter's ServiceMonitor stores it as {stored}"
    return f"the pinned dcgm-exporter emits `{emitted}`{normalised}, so `{wrong}` matches no series"


def _check_alerts(
    fleet: Fleet, cluster: Cluster, emitted: str, present: set[str], absent: list[str]
) -> Iterator[Finding]:
    for alert in alerts_of_cluster(cluster):
        if not any(is_dcgm_metric(m) for m in metric_names(alert.expr)):
            continue
        for wrong in absent:
            if uses(alert.expr, wrong):
                yield Finding(
                    rule=ID,
                    severity=SEVERITY,
                    cluster=cluster.name,
                    **at(locate(fleet, alert.obj, *alert.path, "expr")),
                    message=f"alert {alert.name} uses label `{wrong}` on DCGM series: "
                    f"{_why(emitted, present, wrong)} (GPU Operator "
                    f"{cluster.facts.gpu_operator_version})",
                    hint=f"write `{_target(present)}`, or normalise both spellings in the "
                    "exporter's "
                    "ServiceMonitor metricRelabelings",
                )


def _check_dashboards(
    fleet: Fleet, cluster: Cluster, emitted: str, present: set[str], absent: list[str]
) -> Iterator[Finding]:
    for dashboard in dashboards_of(cluster):
        if dashboard.data is None:
            continue
        for query in dashboard_queries(dashboard.data):
            if not any(is_dcgm_metric(m) for m in metric_names(query.expr)):
                continue
            texts = [_raw(dashboard.data, query.path)]
            if query.path[-1] == "expr":
                texts.append(_raw(dashboard.data, query.path[:-1] + ("legendFormat",)))
            for wrong in absent:
                if any(uses(text, wrong) for text in texts):
                    yield Finding(
                        rule=ID,
                        severity=SEVERITY,
                        cluster=cluster.name,
                        **at(dashboard_location(fleet, dashboard.obj, dashboard.key, query.path)),
                        message=f"dashboard {dashboard.key}, panel {query.panel!r} uses label "
                        f"`{wrong}` on DCGM series: {_why(emitted, present, wrong)} (GPU Operator "
                        f"{cluster.facts.gpu_operator_version})",
                        hint=f"write `{_target(present)}` in the query and legend",
                    )


def _target(present: set[str]) -> str:
    return "hostname" if "hostname" in present else sorted(present)[0]


def _raw(data: Any, path: tuple) -> str:
    """The text at `path` of a dashboard (a variable's `query` may be a string or `{query: ...}`)."""
    value = data
    for part in path:
        if isinstance(value, dict) and isinstance(part, str):
            value = value.get(part)
        elif isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value):
            value = value[part]
        else:
            return ""
    if isinstance(value, dict):
        value = value.get("query")
    return value if isinstance(value, str) else ""
