"""A time-slicing or MPS replica count is below 2.

## Why it matters
The device plugin refuses a sharing resource with `replicas` below 2 ("number of replicas must be >= 2") and
fails to start on every node that selects the config: the nodes stop advertising GPUs. `replicas: 1` is not a
way to switch sharing off; remove the sharing block instead. A pool declaring `timeSlicing.replicas: 1` in
pool.yaml describes a configuration that cannot exist.

## Bad example
```yaml
version: v1
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 1
```

## Fix
Use `replicas: 2` or more, or drop the `sharing` block (and declare the pool `exclusive`).
"""

from collections.abc import Iterator

from ..domain.gpu_operator import plugin_config_location
from ..findings import Finding, Severity, at
from ..model import Fleet
from .share_common import SHARING_KINDS, configs, shared_resources

ID = "SHARE001"
SEVERITY = Severity.ERROR
SUMMARY = "Time-slicing or MPS replicas below 2"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for entry in configs(cluster):
            for kind in SHARING_KINDS:
                for resource in shared_resources(entry, kind):
                    if _valid(resource.replicas):
                        continue
                    yield Finding(
                        rule=ID,
                        severity=SEVERITY,
                        cluster=cluster.name,
                        message=f"device-plugin config {entry.key}: {kind} resource "
                        f"{resource.name} has replicas {resource.replicas!r}; the device plugin requires at "
                        "least 2 "
                        "and fails to start on the nodes that select this config",
                        hint="set replicas to 2 or more, or remove the sharing block",
                        **at(plugin_config_location(fleet, entry, *resource.path, "replicas")),
                    )
        for pool in cluster.pools:
            for field, value in (("timeSlicing", pool.time_slicing_replicas), ("mps", pool.mps_replicas)):
                if value is not None and value < 2:
                    yield Finding(
                        rule=ID,
                        severity=SEVERITY,
                        cluster=cluster.name,
                        message=f"pool {pool.name} declares {field}.replicas {value}; sharing "
                        "needs at "
                        "least 2 replicas (declare the pool exclusive instead)",
                        hint=f"set {field}.replicas to 2 or more, or remove {field}",
                        **at(fleet.locate_file(pool.path, "spec", field, "replicas")),
                    )


def _valid(replicas: object) -> bool:
    return isinstance(replicas, int) and not isinstance(replicas, bool) and replicas >= 2
