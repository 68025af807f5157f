"""A production queue draws from a time-sliced flavor.

## Why it matters
A time-sliced replica isolates neither memory nor faults: the device plugin hands the same card to up to
`replicas` pods, and each sees all of its memory (NVIDIA GPU Operator, "Time-Slicing GPUs in Kubernetes":
unlike MIG, no memory or fault isolation between replicas). Kueue admits a pod there on quota alone, counting
replicas. A production pod sized for a card then either crashes when a neighbour holds its memory, or, with
the startup check, waits for a card nobody else uses, gives its quota back after `waitForPodsReady`'s timeout
and is admitted to the same flavor again. Replayed on the reference fleet, that cycle alone made serving's p95
wait 23-31 minutes where its target is 15 (decision 0095). A production queue (`gpupolicy.io/tier:
production`) may draw from a time-sliced flavor only when sharing is intended, with
`gpupolicy.io/allow-shared-gpus: "true"`. MIG slices are isolated and not reported.

## Bad example
```yaml
kind: ClusterQueue
metadata:
  name: serving
  labels: {gpupolicy.io/tier: production}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: l40s-shared        # a time-sliced pool
      resources: [{name: nvidia.com/gpu, nominalQuota: 16}]
```

## Fix
Give production queues exclusive, isolated or MIG flavors and hand the time-sliced pool's quota to the queues
of notebooks and experiments; or label the queue `gpupolicy.io/allow-shared-gpus: "true"` when its pods are
known to fit a replica's share. A flavor with zero quota and no borrowing is not reported.
"""

from collections.abc import Iterator

from ..domain.quotas import shared_draws
from ..findings import Finding, Severity, at
from ..model import ALLOW_SHARED_GPUS, TIER_LABEL, Fleet

ID = "SHARE009"
SEVERITY = Severity.ERROR
SUMMARY = "Production queue draws from a time-sliced flavor"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for name, queue in sorted(cluster.cluster_queues.items()):
            if queue.tier != "production" or queue.labels.get(ALLOW_SHARED_GPUS) == "true":
                continue
            for entry, pool in shared_draws(cluster, queue, ("time-sliced",)):
                yield Finding(
                    rule=ID,
                    severity=SEVERITY,
                    cluster=cluster.name,
                    message=f"production ClusterQueue {name} ({TIER_LABEL}=production) draws "
                    f"{entry.quota.name} from flavor {entry.flavor} on time-sliced pool {pool.name}; "
                    "a replica isolates no memory, so a production pod there crashes on a busy card or "
                    "waits for an idle one",
                    hint="give the queue exclusive, isolated or MIG flavors, or label it "
                    f"{ALLOW_SHARED_GPUS}: \"true\" when its pods fit a replica's share",
                    **at(fleet.locate(entry.obj, *entry.path[:5], "name")),
                )
