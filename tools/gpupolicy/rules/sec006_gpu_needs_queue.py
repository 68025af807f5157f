"""A workload requests GPUs but names no Kueue queue.

## Why it matters
Kueue only manages workloads labelled `kueue.x-k8s.io/queue-name`. A GPU job without the label is invisible to
the team's quota, is never preempted by the ladder and takes GPUs that Kueue has already promised to someone
else; the admission policies deny it in the cluster, so the example or manifest simply fails there.

## Bad example
```yaml
apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: team-a}
spec:
  template:
    spec:
      containers:
        - name: train
          resources: {limits: {nvidia.com/gpu: 8}}
```

## Fix
Add `kueue.x-k8s.io/queue-name: <local queue>` to the workload's labels and to its pod template's labels.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..domain.workloads import pod_specs, requests_gpu, workloads
from ..findings import Finding, Severity, at
from ..model import QUEUE_LABEL, Fleet

ID = "SEC006"
SEVERITY = Severity.ERROR
SUMMARY = "A GPU request implies a kueue.x-k8s.io/queue-name label"


def check(fleet: Fleet) -> Iterator[Finding]:
    for workload in workloads(fleet):
        if not workload.in_team_namespace():
            continue
        own = str(workload.labels.get(QUEUE_LABEL, "")).strip()
        for _path, spec, metadata in pod_specs(workload):
            template_queue = str((metadata.get("labels") or {}).get(QUEUE_LABEL, "")).strip()
            if requests_gpu(spec) and not own and not template_queue:
                yield Finding(
                    rule=ID,
                    severity=SEVERITY,
                    cluster=workload.cluster.name if workload.cluster else "",
                    message=f"{workload.ref()} requests NVIDIA GPUs but has no non-empty {QUEUE_LABEL} label",
                    hint=f"add {QUEUE_LABEL}: <local queue> to its labels and its pod template",
                    **at(workload.locate(fleet, "metadata", "labels")),
                )
                break
