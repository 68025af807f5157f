"""A workload manifest sets NVIDIA_VISIBLE_DEVICES.

## Why it matters
`NVIDIA_VISIBLE_DEVICES` tells the NVIDIA runtime which GPUs to mount. Set by hand (`all`, `0,1`) it takes
GPUs the scheduler never allocated to the pod: other tenants' jobs crash with out-of-memory errors or silently
share a card. Examples in `docs/examples/` are copied by teams, so a bad example spreads. Only `void` and
`none` (no GPU) are harmless.

## Bad example
```yaml
containers:
  - name: train
    env:
      - name: NVIDIA_VISIBLE_DEVICES
        value: all
```

## Fix
Remove the variable and request GPUs with `resources.limits: {nvidia.com/gpu: N}`.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..domain.workloads import (
    HARMLESS_VISIBLE_DEVICES,
    VISIBLE_DEVICES,
    containers,
    env_list,
    pod_specs,
    workloads,
)
from ..findings import Finding, Severity, at
from ..model import Fleet

ID = "SEC004"
SEVERITY = Severity.ERROR
SUMMARY = "Workloads do not set NVIDIA_VISIBLE_DEVICES"


def check(fleet: Fleet) -> Iterator[Finding]:
    for workload in workloads(fleet):
        if workload.cluster is not None and not workload.in_team_namespace():
            continue  # GPU Operator operands and monitoring agents need it
        for path, spec, _meta in pod_specs(workload):
            for field, index, container in containers(spec):
                for position, item in enumerate(env_list(container)):
                    if item.get("name") != VISIBLE_DEVICES:
                        continue
                    value = item.get("value")
                    if value in HARMLESS_VISIBLE_DEVICES and "valueFrom" not in item:
                        continue
                    shown = f"'{value}'" if "valueFrom" not in item else "a valueFrom reference"
                    yield Finding(
                        rule=ID,
                        severity=SEVERITY,
                        cluster=workload.cluster.name if workload.cluster else "",
                        message=f"{workload.ref()} container {container.get('name', index)} sets "
                        f"{VISIBLE_DEVICES} to {shown}",
                        hint="remove it and request nvidia.com/gpu; only void or none are allowed",
                        **at(workload.locate(fleet, *path, field, index, "env", position)),
                    )
