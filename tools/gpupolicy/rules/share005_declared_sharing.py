"""A pool's declared sharing does not match the device-plugin config its nodes run.

## Why it matters
Capacity, quotas and the training-queue checks all trust `pool.yaml`: `timeSlicing.replicas: 4` means the pool
exposes four times its GPUs. The nodes, however, do what their device-plugin config says (the key named by
`nvidia.com/device-plugin.config`, or the ClusterPolicy default). When the two disagree, Kueue hands out quota
for devices that do not exist, or a pool believed exclusive is in fact shared.

## Bad example
```yaml
# pools/shared-l4/pool.yaml
spec:
  accessMode: time-sliced
  timeSlicing: {replicas: 4}
  nodeLabels: {nvidia.com/device-plugin.config: shared-l4}
---
# pools/shared-l4/device-plugin.yaml (key shared-l4)
sharing:
  timeSlicing:
    resources: [{name: nvidia.com/gpu, replicas: 2}]
```

## Fix
Make pool.yaml and the selected config say the same thing: the same replicas, the same `renameByDefault`, and
no sharing block in the config of a pool declared without sharing.
"""

from collections.abc import Iterator

from ..domain.gpu_operator import plugin_config_location, pool_config, pool_config_key
from ..findings import Finding, Severity, at
from ..model import GPU_RESOURCE, Cluster, ConfigEntry, Fleet, Pool
from .share_common import SHARING_KINDS, shared_resources, sharing

ID = "SHARE005"
SEVERITY = Severity.ERROR
SUMMARY = "Pool's declared sharing differs from its device-plugin config"
DECLARED = {"timeSlicing": "time_slicing_replicas", "mps": "mps_replicas"}


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for pool in cluster.pools:
            key = pool_config_key(cluster, pool)
            entry = pool_config(cluster, pool)
            if key and entry is None:
                continue  # SHARE004: the key does not exist
            for kind in SHARING_KINDS:
                yield from _compare(fleet, cluster, pool, kind, entry)


def base_resources(pool: Pool) -> set[str]:
    """Resource names the pool's devices have before sharing (what a sharing config may name)."""
    suffix = ".shared"
    names = {name[: -len(suffix)] if name.endswith(suffix) else name for name in pool.capacity}
    return names or {GPU_RESOURCE}


def _normalized(name: str) -> str:
    return name if "/" in name else f"nvidia.com/{name}"  # the plugin adds the prefix


def _compare(
    fleet: Fleet, cluster: Cluster, pool: Pool, kind: str, entry: ConfigEntry | None
) -> Iterator[Finding]:
    declared = getattr(pool, DECLARED[kind])
    applied = (
        [r for r in shared_resources(entry, kind) if _normalized(r.name) in base_resources(pool)]
        if entry is not None
        else []
    )
    where = f"device-plugin config {entry.key}" if entry else "no device-plugin config (no label, no default)"
    if declared and not applied:
        yield _finding(
            cluster,
            f"pool {pool.name} declares {kind} x{declared}, but its nodes run {where}, "
            f"which does not share {', '.join(sorted(base_resources(pool)))} by {kind}",
            fleet.locate_file(pool.path, "spec", kind),
        )
        return
    effective = [r for r in applied if isinstance(r.replicas, int) and r.replicas >= 2]  # SHARE001: below 2
    if not declared:
        if effective:
            resource = effective[0]
            yield _finding(
                cluster,
                f"pool {pool.name} declares no {kind}, but {where} shares "
                f"{resource.name} {resource.replicas} ways: the pool exposes more devices than pool.yaml "
                "says",
                plugin_config_location(fleet, entry, *resource.path, "replicas"),
            )
        return
    for resource in applied:
        if resource.replicas != declared:
            yield _finding(
                cluster,
                f"pool {pool.name} declares {kind}.replicas {declared}, but {where} "
                f"gives {resource.name} replicas {resource.replicas}",
                plugin_config_location(fleet, entry, *resource.path, "replicas"),
            )
    if kind == "timeSlicing" and applied:
        renamed = bool((sharing(entry, kind) or {}).get("renameByDefault"))
        if renamed != pool.rename_shared:
            yield _finding(
                cluster,
                f"pool {pool.name} declares renameByDefault "
                f"{str(pool.rename_shared).lower()} but {where} sets it {str(renamed).lower()}: the resource "
                f"name ({GPU_RESOURCE} vs {GPU_RESOURCE}.shared) differs from what queues "
                "quote",
                plugin_config_location(fleet, entry, "sharing", kind, "renameByDefault"),
            )


def _finding(cluster: Cluster, message: str, location) -> Finding:
    return Finding(
        rule=ID,
        severity=SEVERITY,
        cluster=cluster.name,
        message=message,
        hint="make pool.yaml and the device-plugin config it selects agree",
        **at(location),
    )
