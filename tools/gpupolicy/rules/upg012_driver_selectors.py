'''Two NVIDIADriver objects select the same nodes, or more than one claims to be the default.

## Why it matters
The GPU Operator gives each GPU node to exactly one NVIDIADriver. When two non-default objects select the same
node, 26.7 fails closed: both go `notReady` with condition `ConflictingNodeSelector` ("multiple NVIDIADrivers
match the same node") and neither is reconciled — a driver upgrade then silently does nothing, or an older
operator refuses the second object. An object without `nodeSelector` selects every GPU node
(`nvidia.com/gpu.present=true`); the operator accepts one default (`default: true`) that yields to specific
objects, and more than one default fails with `ReconcileFailed`. Overlap is evaluated on the node labels the
pools declare, and identical selectors always conflict.

## Bad example
```yaml
kind: NVIDIADriver
metadata: {name: h100}
spec:
  nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}   # also selects the canary pool's nodes
---
kind: NVIDIADriver
metadata: {name: us-h100-canary}
spec:
  nodeSelector: {gpupolicy.io/pool: us-h100-canary}
```

## Fix
Select nodes by pool (`nodeSelector: {gpupolicy.io/pool: <pool>}`), one NVIDIADriver per pool, and keep at
most one catch-all driver (`default: true`, no selector).
'''

from collections.abc import Iterator
from itertools import combinations

from ..findings import Finding, Severity
from ..model import Cluster, Fleet, NvidiaDriver
from ..upgrade.plans import is_default, selects

ID = "UPG012"
SEVERITY = Severity.ERROR
SUMMARY = "NVIDIADriver selectors overlap (ConflictingNodeSelector) or more than one default"


def check(fleet: Fleet) -> Iterator[Finding]:
    for name, cluster in sorted(fleet.clusters.items()):
        yield from _defaults(fleet, name, cluster)
        yield from _overlaps(fleet, name, cluster)


def _catch_all(driver: NvidiaDriver) -> bool:
    return is_default(driver) or not driver.node_selector


def _defaults(fleet: Fleet, name: str, cluster: Cluster) -> Iterator[Finding]:
    catch_all = [d for d in cluster.nvidia_drivers if _catch_all(d)]
    for driver in catch_all[1:]:
        location = (
            fleet.locate(driver.obj, "spec", "default")
            if is_default(driver)
            else fleet.locate(driver.obj, "spec")
        )
        yield _finding(
            location,
            name,
            f"NVIDIADriver {driver.name} is a second default/catch-all driver "
            f"(with {catch_all[0].name}): the operator fails with ReconcileFailed",
            "keep one default (default: true, no nodeSelector); give the others a pool nodeSelector",
        )


def _overlaps(fleet: Fleet, name: str, cluster: Cluster) -> Iterator[Finding]:
    specific = [d for d in cluster.nvidia_drivers if not is_default(d)]
    for first, second in combinations(specific, 2):
        shared = [pool.name for pool in cluster.pools if selects(first, pool) and selects(second, pool)]
        identical = first.node_selector == second.node_selector
        if not shared and not identical:
            continue
        where = (
            f"both select the nodes of pool(s) {', '.join(shared)}"
            if shared
            else ("have identical nodeSelectors")
        )
        location = fleet.locate(second.obj, "spec", "nodeSelector")
        yield _finding(
            location,
            name,
            f"NVIDIADriver {first.name} and {second.name} {where}: "
            "the operator marks both notReady (ConflictingNodeSelector)",
            "select each pool by its label gpupolicy.io/pool, one NVIDIADriver per pool",
        )


def _finding(location, cluster: str, message: str, hint: str) -> Finding:
    return Finding(
        rule=ID,
        severity=SEVERITY,
        path=location.path if location else "",
        line=location.line if location else 0,
        cluster=cluster,
        message=message,
        hint=hint,
    )
