"""The CPU flavor reaches GPUs: it selects a GPU pool, tolerates a GPU pool's taint, or carries GPU quota.

## Why it matters
The ResourceFlavor labelled `gpupolicy.io/node-class: cpu` is what Kueue gives pod sets that request no GPU
(decision 0029): it is first in every team ClusterQueue's resource group and has no node labels and no
tolerations, so Kueue injects nothing and the GPU pools' taints keep those pods on CPU nodes. If it selects a
GPU pool's labels or tolerates a GPU taint, CPU-only pods land on (and hold) GPU nodes, or are denied by the
admission policy that keeps pods without a GPU request off them. If a queue gives it GPU quota, GPU pod sets
stop at it — it is tried first — and land nowhere, since no CPU node exposes a GPU.

## Bad example
```yaml
kind: ResourceFlavor
metadata:
  name: cpu
  labels: {gpupolicy.io/node-class: cpu}
spec:
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
```

## Fix
Keep the CPU flavor without GPU node labels and GPU tolerations, and give it `nominalQuota: 0` for every GPU
resource in every queue and cohort.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..domain.gpu_resources import is_nvidia_resource
from ..domain.quotas import quota_entries
from ..domain.tolerations import BLOCKING_EFFECTS, show, tolerates
from ..findings import Finding, Severity, at
from ..model import Cluster, Flavor, Fleet

ID = "WL013"
SEVERITY = Severity.ERROR
SUMMARY = "The CPU flavor selects GPU nodes, tolerates a GPU taint or carries GPU quota"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for flavor in (f for f in cluster.flavors.values() if f.is_cpu):
            yield from _placement(fleet, cluster, flavor)
            for entry in quota_entries(cluster):
                if (
                    entry.flavor == flavor.name
                    and is_nvidia_resource(entry.quota.name)
                    and entry.quota.nominal > 0
                ):
                    yield Finding(
                        rule=ID,
                        severity=SEVERITY,
                        cluster=cluster.name,
                        message=f"{entry.kind} {entry.label} gives the CPU flavor {flavor.name} "
                        f"{entry.quota.nominal} {entry.quota.name}: GPU pod sets stop at this first flavor "
                        "and wait "
                        "for CPU nodes that expose no GPU",
                        hint="set its nominalQuota to 0 (GPU quota belongs to the pools' flavors)",
                        **at(entry.locate(fleet, "nominalQuota")),
                    )


def _placement(fleet: Fleet, cluster: Cluster, flavor: Flavor) -> Iterator[Finding]:
    where = fleet.locate(flavor.obj, "spec")
    for pool in cluster.pools_of_flavor(flavor):
        yield Finding(
            rule=ID,
            severity=SEVERITY,
            cluster=cluster.name,
            message=f"CPU flavor {flavor.name}'s nodeLabels select GPU pool {pool.name}: Kueue "
            "pins "
            "CPU-only pods to GPU nodes",
            hint="remove the nodeLabels (or label only CPU nodes with them)",
            **at(fleet.locate(flavor.obj, "spec", "nodeLabels")),
        )
    for pool in cluster.pools:
        tolerated = [
            show(t)
            for t in pool.taints
            if t.effect in BLOCKING_EFFECTS and any(tolerates(x, t) for x in flavor.tolerations)
        ]
        if tolerated:
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster.name,
                message=f"CPU flavor {flavor.name} tolerates GPU pool {pool.name}'s taint "
                f"{', '.join(tolerated)}: Kueue adds it to CPU-only pods, which the "
                "admission "
                "policy then denies (a pod without a GPU request may not tolerate GPU "
                "taints)",
                hint="remove the toleration from the CPU flavor",
                **at(where),
            )
            return
