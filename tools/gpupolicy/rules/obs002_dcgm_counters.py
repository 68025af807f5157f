"""An alert reads a DCGM metric that the cluster's DCGM exporter does not collect.

## Why it matters
dcgm-exporter only serves the fields listed in its counters file (ConfigMap `gpu-operator/dcgm-metrics`, key
`dcgm-metrics.csv`). Many useful fields — the ECC counters, clock event reasons, throttle-time counters — are
commented out upstream. An alert on a field that is not collected never fires, and nothing tells you: the
expression simply returns no series. The same applies when the cluster ships no counters file at all, or a
file the exporter cannot read.

## Bad example
```yaml
- alert: GPUEccDoubleBitErrors
  expr: increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[15m]) > 0
```
with `policies/gpu-operator/dcgm-metrics.csv` still carrying the upstream line
`# DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, counter, Total number of double-bit volatile ECC errors.`

## Fix
Enable the field in `policies/gpu-operator/dcgm-metrics.csv` (`DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, counter, ...`),
or change the alert to a metric the exporter collects.
"""

from collections.abc import Iterator

from ..domain.observability import (
    DCGM_CONFIGMAP_NAME,
    DCGM_CONFIGMAP_NAMESPACE,
    DCGM_CSV_KEY,
    alerts_of_cluster,
    dcgm_config_of,
    dcgm_configmap,
    is_dcgm_metric,
    locate,
    metric_names,
)
from ..findings import Finding, Severity, at
from ..model import Cluster, Fleet

ID = "OBS002"
SEVERITY = Severity.ERROR
SUMMARY = "Every DCGM metric an alert uses must be enabled in the dcgm-metrics counters file"

_CONFIGMAP = f"ConfigMap {DCGM_CONFIGMAP_NAMESPACE}/{DCGM_CONFIGMAP_NAME}"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        yield from _check_cluster(fleet, cluster)


def _check_cluster(fleet: Fleet, cluster: Cluster) -> Iterator[Finding]:
    config = dcgm_config_of(cluster)
    if config is not None:
        where = locate(fleet, dcgm_configmap(cluster), "data", DCGM_CSV_KEY)
        for line, problem in config.problems:
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster.name,
                hint="dcgm-exporter stops on a bad line",
                message=f"{_CONFIGMAP} {DCGM_CSV_KEY} line {line}: {problem}",
                **at(where),
            )
    enabled = config.metrics if config else set()
    missing_file_reported = False
    for alert in alerts_of_cluster(cluster):
        dcgm_metrics = [m for m in metric_names(alert.expr) if is_dcgm_metric(m)]
        where = locate(fleet, alert.obj, *alert.path, "expr")
        if dcgm_metrics and config is None and not missing_file_reported:
            missing_file_reported = True
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster.name,
                **at(where),
                message=f"alert {alert.name} reads DCGM metrics but cluster {cluster.name} has no "
                f"{_CONFIGMAP} with key {DCGM_CSV_KEY}",
                hint="generate it from policies/gpu-operator/dcgm-metrics.csv and point the "
                "ClusterPolicy's dcgmExporter.config.name at it",
            )
        for metric in dcgm_metrics if config is not None else []:
            if metric in enabled:
                continue
            counter = config.get(metric)
            why = "is a label field, not a metric" if counter else "is not enabled"
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster.name,
                **at(where),
                message=f"alert {alert.name} reads {metric}, which {why} in {_CONFIGMAP} "
                f"{DCGM_CSV_KEY}; the alert can never fire",
                hint=f"add '{metric}, gauge|counter, <help>' to policies/gpu-operator/dcgm-metrics.csv",
            )
