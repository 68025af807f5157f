"""A training queue draws from a time-sliced, MPS or MIG flavor.

## Why it matters
Training needs whole GPUs: full memory, all SMs, NVLink, and a predictable step time for data-parallel peers.
On a time-sliced GPU it shares memory and compute with strangers; on a MIG slice it gets a fraction and no
NVLink. Jobs run, slowly or out of memory, and nobody notices until the bill. A training queue
(`gpupolicy.io/workload: training`) may draw from shared flavors only when explicitly allowed with
`gpupolicy.io/allow-shared-gpus: "true"` (small fine-tuning, tests).

## Bad example
```yaml
kind: ClusterQueue
metadata:
  name: vision-train
  labels: {gpupolicy.io/workload: training}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/mig-3g.40gb]
    flavors:
    - name: mig-a100
      resources: [{name: nvidia.com/mig-3g.40gb, nominalQuota: 8}]
```

## Fix
Give training queues exclusive pools, or label the queue `gpupolicy.io/allow-shared-gpus: "true"` when sharing
is intended. A flavor with zero quota and no borrowing is not reported.
"""

from collections.abc import Iterator

from ..domain.queues import SHARED_MODES
from ..domain.quotas import shared_draws
from ..findings import Finding, Severity, at
from ..model import ALLOW_SHARED_GPUS, WORKLOAD_LABEL, Fleet

ID = "SHARE008"
SEVERITY = Severity.ERROR
SUMMARY = "Training queue draws from a shared (time-sliced, MPS or MIG) flavor"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for name, queue in sorted(cluster.cluster_queues.items()):
            if queue.workload != "training" or queue.labels.get(ALLOW_SHARED_GPUS) == "true":
                continue
            for entry, pool in shared_draws(cluster, queue, SHARED_MODES):
                yield Finding(
                    rule=ID,
                    severity=SEVERITY,
                    cluster=cluster.name,
                    message=f"training ClusterQueue {name} ({WORKLOAD_LABEL}=training) draws "
                    f"{entry.quota.name} from flavor {entry.flavor} on {pool.sharing} pool "
                    f"{pool.name}; training needs whole GPUs",
                    hint=f"use an exclusive pool, or label the queue {ALLOW_SHARED_GPUS}: \"true\"",
                    **at(fleet.locate(entry.obj, *entry.path[:5], "name")),
                )
