"""A workload tolerates the GPU node taints without requesting a GPU.

## Why it matters
GPU nodes are tainted so that only GPU work lands on them. A CPU pod that tolerates `nvidia.com/gpu` (or every
taint, with an empty key and `operator: Exists`) takes CPU and memory on a GPU node; the GPU job that needs
the node then stays pending although the GPUs are free.

## Bad example
```yaml
tolerations:
  - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
containers:
  - name: preprocess      # no nvidia.com/gpu request
```

## Fix
Remove the toleration, or request the GPU the pod really needs.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..domain.workloads import pod_specs, requests_gpu, workloads
from ..findings import Finding, Severity, at
from ..model import Fleet

ID = "SEC007"
SEVERITY = Severity.ERROR
SUMMARY = "A GPU toleration implies a GPU request"

GPU_TAINT_PREFIXES = ("nvidia.com/", "gpupolicy.io/")


def tolerates_gpu(toleration: dict) -> bool:
    key = str(toleration.get("key") or "")
    if not key:
        return toleration.get("operator") == "Exists"  # tolerates every taint
    return key.startswith(GPU_TAINT_PREFIXES)


def check(fleet: Fleet) -> Iterator[Finding]:
    for workload in workloads(fleet):
        if not workload.in_team_namespace():
            continue
        for path, spec, _meta in pod_specs(workload):
            tolerations = spec.get("tolerations") if isinstance(spec.get("tolerations"), list) else []
            for index, toleration in enumerate(tolerations):
                if isinstance(toleration, dict) and tolerates_gpu(toleration) and not requests_gpu(spec):
                    key = toleration.get("key") or "(every taint)"
                    yield Finding(
                        rule=ID,
                        severity=SEVERITY,
                        cluster=workload.cluster.name if workload.cluster else "",
                        message=f"{workload.ref()} tolerates GPU taint {key} but requests no GPU",
                        hint="remove the toleration or request nvidia.com/gpu",
                        **at(workload.locate(fleet, *path, "tolerations", index)),
                    )
