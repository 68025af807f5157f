"""Time-slicing is used without failRequestsGreaterThanOne.

## Why it matters
With time-slicing, one "GPU" is a replica: a pod asking for `nvidia.com/gpu: 2` gets two replicas, possibly of
the same physical GPU, and believes it has two GPUs (twice the memory, twice the compute). It then runs out of
memory or runs at half speed with no error telling anyone why. `failRequestsGreaterThanOne: true` makes the
plugin refuse such requests, so the mistake is visible at once. (MPS forces this on by itself.)

## Bad example
```yaml
sharing:
  timeSlicing:
    resources: [{name: nvidia.com/gpu, replicas: 4}]
```

## Fix
```yaml
sharing:
  timeSlicing:
    failRequestsGreaterThanOne: true
    resources: [{name: nvidia.com/gpu, replicas: 4}]
```
"""

from collections.abc import Iterator

from ..domain.gpu_operator import plugin_config_location
from ..findings import Finding, Severity, at
from ..model import Fleet
from .share_common import configs, sharing

ID = "SHARE006"
SEVERITY = Severity.WARNING
SUMMARY = "Time-slicing without failRequestsGreaterThanOne"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for entry in configs(cluster):
            block = sharing(entry, "timeSlicing")
            if block is None or block.get("failRequestsGreaterThanOne") is True:
                continue
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster.name,
                message=f"device-plugin config {entry.key} time-slices GPUs without "
                "failRequestsGreaterThanOne: true; a pod requesting 2 replicas believes "
                "it has 2 GPUs",
                hint="set sharing.timeSlicing.failRequestsGreaterThanOne: true",
                **at(
                    plugin_config_location(
                        fleet, entry, "sharing", "timeSlicing", "failRequestsGreaterThanOne"
                    )
                ),
            )
