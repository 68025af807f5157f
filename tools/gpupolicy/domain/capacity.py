"""What a pool exposes to the scheduler, per resource name, from its declared hardware and sharing mode.

exclusive: GPUs; time-sliced (and MPS): GPUs x replicas (as `nvidia.com/gpu`, or `nvidia.com/gpu.shared` when
renamed); MIG mixed: per-profile instance counts of the layout x nodes, as `nvidia.com/mig-<profile>` (with
`+` written as `.`), and every GPU the layout leaves MIG-disabled as `nvidia.com/gpu`; MIG single: all
instances (and any MIG-disabled GPU) as `nvidia.com/gpu`. Time-slicing on a MIG pool multiplies every MIG
resource by the replicas.

Sources (facts restated, see ../shared/reference/gpu-operator.md section 3.2): the device plugin advertises
MIG devices per profile under the mixed strategy with `+` replaced by `.`, MIG-disabled GPUs stay
`nvidia.com/gpu`, and time-slicing applies to `nvidia.com/gpu` and to the `nvidia.com/mig-*` resources of the
mixed strategy.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..model import GPU_RESOURCE
from . import catalog, mig

WHOLE_GPU = ""  # key of a MIG-disabled GPU in a layout's per-node counts


def layout_instances_per_node(
    entries: Any, gpus_per_node: int, model: catalog.GPUModel | None = None
) -> Counter:
    """MIG instances per node for one mig-parted layout (a list of entries), by profile name.

    GPUs the layout leaves MIG-disabled (or does not mention: mig-parted leaves them alone, and a GPU out of
    the box has MIG off) are counted under the key `WHOLE_GPU`. Entries are read as mig-parted reads them (see
    mig.py): later entries win for the same GPU, and an entry with a `device-filter` applies only when it
    names `model`'s PCI device ID. Malformed entries are left out here; MIG009 reports them.
    """
    per_gpu = layout_per_gpu(entries, gpus_per_node, model)
    total: Counter = Counter()
    for counts in per_gpu.values():
        total.update({profile: count for profile, count in counts.items() if count > 0})
    whole = gpus_per_node - len(per_gpu)
    if whole:
        total[WHOLE_GPU] = whole
    return total


def layout_per_gpu(
    entries: Any, gpus_per_node: int, model: catalog.GPUModel | None = None
) -> dict[int, dict[str, int]]:
    """MIG instances per GPU index of a node for one mig-parted layout (a list of entries), read as
    `layout_instances_per_node` reads it; GPUs left MIG-disabled are absent."""
    config, _ = mig.parse_config({"version": "v1", "mig-configs": {"layout": entries}})
    parsed = config.layouts.get("layout", ()) if config else ()
    return mig.layout_devices(parsed, gpus_per_node, model)


def mig_resource(profile: str) -> str:
    """The extended resource the device plugin advertises a MIG profile as under the mixed strategy."""
    return catalog.resource_name(profile, "mixed")


def pool_capacity(
    pool: Any, mig_layout_entries: Any = None, model: catalog.GPUModel | None = None
) -> dict[str, int]:
    """Resource name -> devices the whole pool exposes; {} for a MIG pool whose layout is unknown."""
    if pool.mig_layout:
        per_node = _mig_capacity_per_node(pool, mig_layout_entries, model)
        exposed = {name: count * pool.nodes for name, count in per_node.items()}
        return _time_sliced(exposed, pool.time_slicing_replicas, pool.rename_shared)
    replicas = pool.time_slicing_replicas or pool.mps_replicas
    return _time_sliced({GPU_RESOURCE: pool.gpus}, replicas, pool.rename_shared)


def _mig_capacity_per_node(pool: Any, entries: Any, model: catalog.GPUModel | None) -> dict[str, int]:
    if not isinstance(entries, list):
        return {}
    instances = layout_instances_per_node(entries, pool.gpus_per_node, model)
    whole_gpus = instances.pop(WHOLE_GPU, 0)
    exposed: Counter = Counter()
    if pool.mig_strategy == "single":
        exposed[GPU_RESOURCE] = sum(instances.values()) + whole_gpus
    else:
        exposed.update({mig_resource(profile): count for profile, count in instances.items()})
        exposed[GPU_RESOURCE] += whole_gpus
    return {name: count for name, count in sorted(exposed.items()) if count}


def _time_sliced(exposed: dict[str, int], replicas: int | None, renamed: bool) -> dict[str, int]:
    """Every shared resource advertised `replicas` times (and as `<name>.shared` when renamed)."""
    if not replicas or replicas < 2:
        return exposed
    suffix = ".shared" if renamed else ""
    return {f"{name}{suffix}": count * replicas for name, count in exposed.items()}
