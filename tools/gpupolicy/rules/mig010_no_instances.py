"""A MIG pool's layout creates no MIG instance on the pool's GPUs.

## Why it matters
mig-parted applies a layout entry only to GPUs whose PCI device ID its `device-filter` names, and leaves every
other GPU as it is. A layout written for A100s (`0x20B210DE`) selected by an H200 pool, a layout that keeps
MIG disabled (`all-disabled`), or one that enables MIG without creating instances (`all-enabled`) gives the
pool no slice at all: its flavor's quotas on `nvidia.com/mig-*` resources can never be used, and the device
plugin advertises whole GPUs (or nothing) instead. The layout is evaluated per node of the pool (`gpu.perNode`
GPUs of `gpu.model`), with mig-parted's entry order and device-filters.

## Bad example
```yaml
# pools/h200-mig/pool.yaml: gpu.model H200-141GB, mig.layout all-1g.10gb
mig-configs:
  all-1g.10gb:
    - device-filter: ["0x20B210DE", "0x233010DE"]   # A100 80GB and H100 80GB only
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 7
```

## Fix
Select a layout with an entry for the pool's GPU (add one with its PCI ID to the layout, with that GPU's
profile names: `1g.18gb: 7` on an H200), or make the pool an exclusive pool if it is not meant to be
partitioned.
"""

from collections.abc import Iterator

from ..domain.catalog import GPUModel
from ..domain.mig import LayoutEntry, layout_devices
from ..findings import Finding, Severity, at
from ..model import Fleet, Pool
from .mig_common import mig_pools, model_of, pool_layout, pool_location

ID = "MIG010"
SEVERITY = Severity.ERROR
SUMMARY = "MIG pool's layout creates no MIG instance on its GPUs"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for pool in mig_pools(cluster):
            model = model_of(pool)
            layout = pool_layout(cluster, pool)
            if model is None or not model.mig_capable or layout is None or not layout[1]:
                # unknown or MIG-less GPU (MIG006), missing layout (MIG004), unparsable layout (MIG009)
                continue
            why = _why_nothing(layout[1], pool, model)
            if why:
                yield Finding(
                    rule=ID,
                    severity=SEVERITY,
                    cluster=cluster.name,
                    message=f"pool {pool.name} selects MIG layout {pool.mig_layout}, but {why}",
                    hint="select a layout with an entry for the pool's GPU, or drop MIG from the pool",
                    **at(pool_location(fleet, pool, "mig", "layout")),
                )


def _why_nothing(entries: tuple[LayoutEntry, ...], pool: Pool, model: GPUModel) -> str:
    """Why no GPU of a node gets a MIG instance ("" when at least one does)."""
    applicable = [entry for entry in entries if entry.applies_to(model)]
    if not applicable:
        filters = sorted({raw for entry in entries for raw in entry.raw_filter})
        return (
            f"its device-filter ({', '.join(filters)}) names no {model.key} PCI ID "
            f"({', '.join(model.pci_device_ids)}); mig-parted leaves the pool's GPUs as they are"
        )
    if not any(entry.covers(index) for entry in applicable for index in range(pool.gpus_per_node)):
        return f"its entries name only GPU indices a {pool.gpus_per_node}-GPU node does not have"
    devices = layout_devices(entries, pool.gpus_per_node, model)
    if not devices:
        return f"it leaves MIG disabled on every GPU of a {pool.gpus_per_node}-GPU node"
    if not any(devices.values()):
        return "it enables MIG without creating any instance"
    return ""
