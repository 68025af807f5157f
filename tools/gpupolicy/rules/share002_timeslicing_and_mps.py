"""Time-slicing and MPS are configured together.

## Why it matters
The device plugin supports one sharing strategy per node: a config with both `sharing.timeSlicing` and
`sharing.mps` is rejected and the plugin does not start, so the nodes advertise no GPUs. A pool declaring both
in pool.yaml has no consistent capacity.

## Bad example
```yaml
sharing:
  timeSlicing:
    resources: [{name: nvidia.com/gpu, replicas: 4}]
  mps:
    resources: [{name: nvidia.com/gpu, replicas: 4}]
```

## Fix
Choose one: time-slicing (no memory or fault isolation, any GPU) or MPS (memory limits per client, full GPUs
only). Put pools with different needs in different device-plugin configs.
"""

from collections.abc import Iterator

from ..domain.gpu_operator import plugin_config_location
from ..findings import Finding, Severity, at
from ..model import Fleet
from .share_common import configs, uses

ID = "SHARE002"
SEVERITY = Severity.ERROR
SUMMARY = "Time-slicing and MPS configured together"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for entry in configs(cluster):
            if uses(entry, "timeSlicing") and uses(entry, "mps"):
                yield Finding(
                    rule=ID,
                    severity=SEVERITY,
                    cluster=cluster.name,
                    message=f"device-plugin config {entry.key} sets both sharing.timeSlicing and "
                    "sharing.mps; the device plugin accepts only one and fails to start",
                    hint="keep one sharing strategy per config",
                    **at(plugin_config_location(fleet, entry, "sharing", "mps")),
                )
        for pool in cluster.pools:
            if pool.time_slicing_replicas and pool.mps_replicas:
                yield Finding(
                    rule=ID,
                    severity=SEVERITY,
                    cluster=cluster.name,
                    message=f"pool {pool.name} declares both timeSlicing and mps; a node runs one "
                    "sharing strategy",
                    hint="declare one of timeSlicing or mps in pool.yaml",
                    **at(fleet.locate_file(pool.path, "spec", "mps")),
                )
