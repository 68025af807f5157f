"""An alert reads a metric that no exporter in the repository provides.

## Why it matters
An alert on a metric that does not exist never fires: a typo (`kube_node_status_conditions`), a metric renamed
upstream, or a Kueue metric that needs an option turned on. Prometheus accepts the rule without complaint, so
the gap shows only when the incident it should have caught happens. DCGM metrics are checked against the
counters file by OBS002; this rule covers every other metric, against the documented exporters
(`DOCUMENTED_METRICS` in `gpupolicy.domain.observability`) and the cluster's recording rules.

## Bad example
```yaml
- alert: GPUNodeNotReady
  expr: kube_node_status_conditions{condition="Ready", status!="true"} == 1
```

## Fix
Use the exporter's real metric name (`kube_node_status_condition`). If the metric comes from an exporter the
toolkit does not know yet, add it to `DOCUMENTED_METRICS` with its exporter and type.
"""

from collections.abc import Iterator

from ..domain.observability import (
    alerts_of_cluster,
    cluster_catalog,
    is_dcgm_metric,
    locate,
    lookup,
    metric_names,
)
from ..findings import Finding, Severity, at
from ..model import Fleet

ID = "OBS005"
SEVERITY = Severity.WARNING
SUMMARY = "Every non-DCGM metric an alert reads is provided by a known exporter or a recording rule"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        catalog = cluster_catalog(cluster)
        for alert in alerts_of_cluster(cluster):
            for metric in metric_names(alert.expr):
                if is_dcgm_metric(metric) or lookup(catalog, metric) is not None:
                    continue
                where = locate(fleet, alert.obj, *alert.path, "expr")
                message = f"alert {alert.name} reads {metric}, which no known exporter provides"
                yield Finding(
                    rule=ID,
                    severity=SEVERITY,
                    cluster=cluster.name,
                    message=message,
                    **at(where),
                    hint="check the name against the exporter's documentation, or document the "
                    "metric in gpupolicy.domain.observability.DOCUMENTED_METRICS",
                )
