"""The single MIG strategy runs on a node whose layout is not one profile on every GPU.

## Why it matters
Under `mig.strategy: single` the device plugin advertises every MIG instance as a plain `nvidia.com/gpu`, so
it insists that a node be uniform: every GPU MIG-enabled (or every GPU MIG-disabled), each MIG-enabled GPU
with at least one instance, and one profile type across the node. On a node cut `2x1g.10gb + 1x2g.20gb +
1x3g.40gb`, or with half its GPUs left whole, the plugin fails with "more than one MIG device type present on
node" and the node advertises no GPU at all (NVIDIA/gpu-operator#460). The strategy is the ClusterPolicy's
`mig.strategy` (the chart default is `single`) or the pool's declared `mig.strategy`; either one set to
`single` is enough to break the node, and the layout is evaluated on the pool's GPUs per node (device-filters
applied).

## Bad example
```yaml
# pools/a100-mig/pool.yaml
spec:
  gpu: {model: A100-80GB, perNode: 8}
  mig:
    layout: all-balanced    # 1g.10gb, 2g.20gb and 3g.40gb on every GPU
    strategy: single
```

## Fix
Use `mig.strategy: mixed` in the GPU Operator values and in pool.yaml (quotas then name per-profile resources
such as `nvidia.com/mig-1g.10gb`), or give the pool a uniform layout such as `all-1g.10gb`.
"""

from collections.abc import Iterator

from ..domain.mig import layout_devices
from ..findings import Finding, Severity, at
from ..model import Cluster, Fleet, Pool
from .mig_common import effective_strategy, mig_pools, model_of, pool_layout, pool_location

ID = "MIG003"
SEVERITY = Severity.ERROR
SUMMARY = "Single MIG strategy on a node with more than one profile type or mixed MIG modes"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for pool in mig_pools(cluster):
            finding = _check_pool(fleet, cluster, pool)
            if finding is not None:
                yield finding


def _check_pool(fleet: Fleet, cluster: Cluster, pool: Pool) -> Finding | None:
    model = model_of(pool)
    layout = pool_layout(cluster, pool)
    if model is None or not model.mig_capable or layout is None:
        return None
    declared = pool.mig_strategy == "single"
    operated = effective_strategy(fleet, cluster, pool)
    if not declared and operated.value != "single":
        return None
    wrong = _not_uniform(layout[1], pool.gpus_per_node, model)
    if not wrong:
        return None
    sources = ([f"declared in {pool.path}"] if declared else []) + (
        [operated.origin] if operated.value == "single" else []
    )
    source = " and ".join(sources)
    return Finding(
        rule=ID,
        severity=SEVERITY,
        cluster=cluster.name,
        message=f"pool {pool.name} runs the single MIG strategy ({source}) but layout {pool.mig_layout} on "
        f"{pool.gpus_per_node} x {model.key} per node {wrong}; the device plugin refuses such a node",
        hint="use mig.strategy mixed (GPU Operator values and pool.yaml), or a layout with one profile on "
        "every GPU",
        **at(pool_location(fleet, pool, "mig", "strategy" if declared else "layout")),
    )


def _not_uniform(entries, gpus_per_node: int, model) -> str:
    """What breaks the single strategy on one node ("" when nothing does)."""
    devices = layout_devices(entries, gpus_per_node, model)
    if not devices:
        return ""  # every GPU whole: single advertises them as nvidia.com/gpu
    profiles = sorted({name for counts in devices.values() for name in counts})
    if len(profiles) > 1:
        return f"mixes {', '.join(profiles)}"
    whole = gpus_per_node - len(devices)
    if whole:
        return f"leaves {whole} GPU(s) MIG-disabled next to {len(devices)} MIG-enabled"
    empty = sorted(index for index, counts in devices.items() if not counts)
    if empty:
        return f"enables MIG on GPU {', '.join(map(str, empty))} without creating an instance"
    return ""
