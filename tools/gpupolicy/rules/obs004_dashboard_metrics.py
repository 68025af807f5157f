"""A Grafana dashboard panel queries a metric that no exporter in the repository provides.

## Why it matters
A panel on a metric nobody exports shows "No data", and on-call reads that as "nothing is wrong". It happens
when a DCGM field is not enabled in the counters file, when a Kueue metric needs an option that is off, or
after a typo or a metric rename upstream. The metrics that exist are: the DCGM fields enabled in ConfigMap
`gpu-operator/dcgm-metrics`, the documented kube-state-metrics, Kueue, GPU Operator and Prometheus metrics
(`DOCUMENTED_METRICS` in `gpupolicy.domain.observability`) and the cluster's recording rules.

## Bad example
```json
{"title": "Memory used", "targets": [{"expr": "DCGM_FI_DEV_FB_USED / DCGM_FI_DEV_FB_TOTAL"}]}
```
`DCGM_FI_DEV_FB_TOTAL` is not in the counters file: the panel is always empty.

## Fix
Query metrics that are provided (`DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)`), or
enable the field in `policies/gpu-operator/dcgm-metrics.csv`, or add the exporter's metric to
`DOCUMENTED_METRICS`.
"""

from collections.abc import Iterator

from ..domain.observability import (
    Dashboard,
    cluster_catalog,
    dashboard_queries,
    dashboards_of,
    locate,
    lookup,
    metric_names,
)
from ..findings import Finding, Severity, at
from ..model import Cluster, Fleet

ID = "OBS004"
SEVERITY = Severity.ERROR
SUMMARY = "Dashboard panel queries use only metrics some exporter in the repository provides"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        dashboards = dashboards_of(cluster)
        if dashboards:
            yield from _check_cluster(fleet, cluster, dashboards)


def _check_cluster(fleet: Fleet, cluster: Cluster, dashboards: list[Dashboard]) -> Iterator[Finding]:
    catalog = cluster_catalog(cluster)
    for dashboard in dashboards:
        where = locate(fleet, dashboard.obj, "data", dashboard.key)
        name = f"dashboard {dashboard.key} (ConfigMap {dashboard.obj.namespace}/{dashboard.obj.name})"
        if dashboard.data is None:
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster.name,
                **at(where),
                message=f"{name} is {dashboard.error}",
                hint="export the dashboard JSON from Grafana again",
            )
            continue
        for query in dashboard_queries(dashboard.data):
            unknown = [m for m in metric_names(query.expr) if lookup(catalog, m) is None]
            for metric in unknown:
                yield Finding(
                    rule=ID,
                    severity=SEVERITY,
                    cluster=cluster.name,
                    **at(where),
                    message=f"{name}, panel {query.panel!r}: no exporter provides {metric}; the "
                    "panel "
                    "shows no data",
                    hint="enable it in dcgm-metrics.csv (DCGM), fix the name, or document its "
                    "exporter in gpupolicy.domain.observability.DOCUMENTED_METRICS",
                )
