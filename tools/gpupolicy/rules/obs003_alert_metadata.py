"""An alert lacks a routable severity, a summary or a description.

## Why it matters
Alertmanager routes on the `severity` label: `critical` pages the on-call engineer, `warning` opens a ticket,
`info` is not routed. Any other value (or none) falls through every route, so the alert reaches nobody or the
wrong people. `summary` is the one line a pager shows; `description` says which GPU, node or queue is
affected.

## Bad example
```yaml
- alert: GPUTemperatureHigh
  expr: max by (hostname, gpu) (DCGM_FI_DEV_GPU_TEMP) >= 85
  labels:
    severity: high          # not a severity Alertmanager routes
  annotations:
    summary: GPU hot        # no description
```

## Fix
Use `severity: critical | warning | info`, and give every alert both a `summary` (one sentence) and a
templated `description` naming what is affected (`{{ $labels.hostname }}`, `{{ $labels.cluster_queue }}`,
...).
"""

from collections.abc import Iterator

from ..domain.observability import REQUIRED_ANNOTATIONS, SEVERITIES, Alert, alerts_of_cluster, locate
from ..findings import Finding, Severity, at
from ..model import Fleet

ID = "OBS003"
SEVERITY = Severity.ERROR
SUMMARY = "Every alert has severity critical, warning or info, a summary and a description"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for alert in alerts_of_cluster(cluster):
            for field_path, message, hint in _problems(alert):
                where = locate(fleet, alert.obj, *alert.path, *field_path)
                yield Finding(
                    rule=ID, severity=SEVERITY, message=message, cluster=cluster.name, hint=hint, **at(where)
                )


def _problems(alert: Alert) -> Iterator[tuple[tuple, str, str]]:
    allowed = ", ".join(SEVERITIES)
    if not alert.severity:
        yield (
            ("labels",),
            f"alert {alert.name} has no severity label",
            (f"set labels.severity to one of {allowed}"),
        )
    elif alert.severity not in SEVERITIES:
        yield (
            ("labels", "severity"),
            f"alert {alert.name} has severity {alert.severity!r}, which no route handles",
            f"use one of {allowed}",
        )
    for name in REQUIRED_ANNOTATIONS:
        if not alert.annotations.get(name, "").strip():
            yield (
                ("annotations",),
                f"alert {alert.name} has no {name} annotation",
                "summary: one sentence; description: what is affected, with $labels",
            )
