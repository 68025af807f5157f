"""The GPU Operator's DCGM exporter ignores the repository's counters file, or is scraped twice.

## Why it matters
ConfigMap `gpu-operator/dcgm-metrics` only takes effect when the ClusterPolicy names it in
`dcgmExporter.config.name` (Helm value `dcgmExporter.config.name`). Without that, dcgm-exporter keeps its
built-in counters, which leave out the ECC counters and clock event reasons our alerts read: those alerts
never fire, and OBS002 — which checks the file — cannot see it.

The repository also ships its own ServiceMonitor for the exporter (`policies/observability/servicemonitors/`,
with metric relabelings that turn the exporter's `exported_pod`/`exported_namespace` back into
`pod`/`namespace` of the workload holding the GPU, and a `node` label; WL003 explains why not `honorLabels:
true`). If the operator's ServiceMonitor (`dcgmExporter.serviceMonitor.enabled`) is on as well, every GPU
series is scraped by two jobs: duplicate samples, doubled counts in `count()` panels, and the workload labels
left as `exported_pod`.

## Bad example
```yaml
# policies/gpu-operator/values.yaml
dcgmExporter:
  enabled: true        # no config.name: the dcgm-metrics ConfigMap is ignored
  serviceMonitor:
    enabled: true      # and a second scrape of the same targets
```

## Fix
```yaml
dcgmExporter:
  config:
    name: dcgm-metrics
  serviceMonitor:
    enabled: false     # policies/observability/servicemonitors/dcgm-exporter.yaml scrapes it
```
"""

from collections.abc import Iterator
from typing import Any

from ..domain.gpu_operator import policy_location, section
from ..domain.observability import DCGM_CONFIGMAP_NAME, dcgm_configmap, locate
from ..findings import Finding, Severity, at
from ..model import Cluster, Fleet
from ..model.selectors import labels_match

ID = "OBS006"
SEVERITY = Severity.WARNING
SUMMARY = "The DCGM exporter reads the shipped dcgm-metrics ConfigMap and is scraped by one ServiceMonitor"
EXPORTER_APP_LABEL = {"app": "nvidia-dcgm-exporter"}  # the label of the operator's exporter Service


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        if cluster.cluster_policy is None:
            continue
        exporter = section(cluster.cluster_policy.spec, "dcgmExporter")
        if isinstance(exporter, dict) and exporter.get("enabled") is False:
            continue
        yield from _config_not_read(fleet, cluster, exporter)
        yield from _scraped_twice(fleet, cluster, exporter)


def _config_not_read(fleet: Fleet, cluster: Cluster, exporter: Any) -> Iterator[Finding]:
    configmap = dcgm_configmap(cluster)
    if configmap is not None:
        named = section(exporter, "config", "name")
        if named == configmap.name:
            return
        where = policy_location(fleet, cluster, "dcgmExporter", "config", "name", nearest=False) or locate(
            fleet, configmap, "data"
        )
        state = f"names {named!r}" if named else "names no ConfigMap"
        yield Finding(
            rule=ID,
            severity=SEVERITY,
            cluster=cluster.name,
            **at(where),
            message=f"cluster {cluster.name} ships ConfigMap gpu-operator/{configmap.name}, but "
            f"the ClusterPolicy's dcgmExporter.config.name {state}: the exporter ignores the counters "
            "file",
            hint=f"set dcgmExporter.config.name: {DCGM_CONFIGMAP_NAME} in the GPU Operator values",
        )


def _scraped_twice(fleet: Fleet, cluster: Cluster, exporter: Any) -> Iterator[Finding]:
    if section(exporter, "serviceMonitor", "enabled") is not True:
        return
    ours = [obj for obj in cluster.of_kind("ServiceMonitor") if _selects_exporter(obj.spec)]
    if not ours:
        return
    where = policy_location(
        fleet, cluster, "dcgmExporter", "serviceMonitor", "enabled", nearest=False
    ) or locate(fleet, ours[0])
    yield Finding(
        rule=ID,
        severity=SEVERITY,
        cluster=cluster.name,
        **at(where),
        message=f"cluster {cluster.name} enables the GPU Operator's dcgm-exporter ServiceMonitor "
        f"and also ships ServiceMonitor {ours[0].namespace}/{ours[0].name} for the same Service: every GPU "
        "series is scraped twice",
        hint="set dcgmExporter.serviceMonitor.enabled: false in the GPU Operator values",
    )


def _selects_exporter(spec: dict) -> bool:
    labels = section(spec, "selector", "matchLabels")
    return isinstance(labels, dict) and labels_match(EXPORTER_APP_LABEL, labels)
