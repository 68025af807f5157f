"""MPS is combined with MIG.

## Why it matters
The device plugin refuses MPS with the mixed MIG strategy ("using --mig-strategy=mixed is not supported with
MPS") and does not start. MPS is not supported on MIG devices at all: on a MIG pool the MPS daemon skips the
instances, so the declared MPS replicas never appear.

## Bad example
```yaml
version: v1
flags: {migStrategy: mixed}
sharing:
  mps:
    resources: [{name: nvidia.com/gpu, replicas: 4}]
```

## Fix
Use MPS only on whole-GPU pools (`exclusive` hardware, no `mig` block); on MIG pools share by time-slicing, or
give each client its own MIG instance.
"""

from collections.abc import Iterator

from ..domain.gpu_operator import plugin_config_location, pool_config, pool_config_key, section
from ..findings import Finding, Severity, at
from ..model import DEVICE_PLUGIN_CONFIG_LABEL, Fleet
from .share_common import configs, uses

ID = "SHARE003"
SEVERITY = Severity.ERROR
SUMMARY = "MPS combined with MIG"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for entry in configs(cluster):
            if uses(entry, "mps") and section(entry.data, "flags", "migStrategy") == "mixed":
                yield Finding(
                    rule=ID,
                    severity=SEVERITY,
                    cluster=cluster.name,
                    message=f"device-plugin config {entry.key} uses MPS with migStrategy mixed; "
                    "the "
                    "device plugin rejects this combination and does not start",
                    hint="use MPS only in configs for whole-GPU pools",
                    **at(plugin_config_location(fleet, entry, "sharing", "mps")),
                )
        for pool in cluster.pools:
            if not pool.mig_layout:
                continue
            entry = pool_config(cluster, pool)
            if pool.mps_replicas or (entry is not None and uses(entry, "mps")):
                source = (
                    "declares mps"
                    if pool.mps_replicas
                    else (f"selects MPS config {pool_config_key(cluster, pool)}")
                )
                yield Finding(
                    rule=ID,
                    severity=SEVERITY,
                    cluster=cluster.name,
                    message=f"MIG pool {pool.name} (layout {pool.mig_layout}) {source}; MPS does "
                    "not "
                    "run on MIG instances",
                    hint="remove MPS from this pool, or take the pool out of MIG",
                    **at(_pool_location(fleet, pool)),
                )


def _pool_location(fleet: Fleet, pool):
    if pool.mps_replicas:
        return fleet.locate_file(pool.path, "spec", "mps")
    return fleet.locate_file(pool.path, "spec", "nodeLabels", DEVICE_PLUGIN_CONFIG_LABEL)
