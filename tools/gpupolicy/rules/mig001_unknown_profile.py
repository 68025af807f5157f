"""A MIG layout names a profile the pool's GPU model does not have.

## Why it matters
MIG profile names carry the slice's memory, so they differ between GPU models: `1g.5gb` exists on an A100 40GB
but not on an H100 (whose smallest slice is `1g.10gb`), and an H200's is `1g.18gb`. mig-parted refuses a
profile the GPU does not list, the MIG manager marks the node `nvidia.com/mig.config.state=failed`, and the
pool exposes none of the slices its quotas promise. The layout is checked on the GPU model of every pool that
selects it (`spec.mig.layout` or the `nvidia.com/mig.config` label) and on every model its `device-filter` PCI
IDs name; entries whose `device-filter` excludes a model are not applied to it and not checked for it. A pool
whose GPU has no MIG at all (L4, L40S) is reported by MIG006.

## Bad example
```yaml
# pools/h100-mig/pool.yaml: gpu.model H100-80GB, mig.layout all-1g.5gb
mig-configs:
  all-1g.5gb:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.5gb": 7
```

## Fix
Use the profile names of the pool's GPU (`gpupolicy mig check FILE --gpu H100-80GB` lists them): on an
H100 80GB, `1g.10gb: 7`. When one layout serves several GPU models, give each model its own entry with a
`device-filter`.
"""

from collections.abc import Iterator

from ..findings import Finding, Severity, at
from ..model import Fleet
from .mig_common import config_location, layout_problems, used_by

ID = "MIG001"
SEVERITY = Severity.ERROR
SUMMARY = "MIG layout names a profile the pool's GPU does not have"


def check(fleet: Fleet) -> Iterator[Finding]:
    for item in layout_problems(fleet, ("unknown-profile", "no-mig")):
        yield Finding(
            rule=ID,
            severity=SEVERITY,
            cluster=item.cluster,
            message=item.problem.message,
            hint=f"layout {item.problem.layout} is {used_by(item)}; use the profile names of "
            f"{item.problem.gpu} (gpupolicy mig check --gpu {item.problem.gpu})",
            **at(config_location(fleet, item.entry, *item.problem.path)),
        )
