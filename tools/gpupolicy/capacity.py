"""What a pool exposes to the scheduler, per resource name, from its declared hardware and sharing mode.

exclusive: GPUs; time-sliced (and MPS): GPUs x replicas (as `nvidia.com/gpu`, or `nvidia.com/gpu.shared` when
renamed); MIG mixed: per-profile instance counts of the layout x nodes, as `nvidia.com/mig-<profile>` (with `+`
written as `.`), and every GPU the layout leaves MIG-disabled as `nvidia.com/gpu`; MIG single: all instances (and
any MIG-disabled GPU) as `nvidia.com/gpu`. Time-slicing on a MIG pool multiplies every MIG resource by the replicas.

Sources (facts restated, see ../shared/reference/gpu-operator.md section 3.2): the device plugin advertises MIG
devices per profile under the mixed strategy with `+` replaced by `.`, MIG-disabled GPUs stay `nvidia.com/gpu`,
and time-slicing applies to `nvidia.com/gpu` and to the `nvidia.com/mig-*` resources of the mixed strategy.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from . import catalog
from .model import GPU_RESOURCE

WHOLE_GPU = ""  # key of a MIG-disabled GPU in a layout's per-node counts


def layout_instances_per_node(entries: Any, gpus_per_node: int, gpu_pci_ids: tuple[str, ...] = ()) -> Counter:
    """MIG instances per node for one mig-parted layout (a list of entries), by profile name.

    GPUs the layout leaves MIG-disabled (or does not mention: mig-parted leaves them alone, and a GPU out of the
    box has MIG off) are counted under the key `WHOLE_GPU`. Entries with a `device-filter` apply only to GPUs
    whose PCI device ID it names; a later entry that covers the same GPU index replaces an earlier one, as
    mig-parted applies them in order.
    """
    per_gpu: dict[int, dict[str, int] | None] = {index: None for index in range(gpus_per_node)}
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict) or not _filter_matches(entry.get("device-filter"), gpu_pci_ids):
            continue
        devices = entry.get("devices", "all")
        indices = range(gpus_per_node) if devices == "all" else [i for i in devices or [] if isinstance(i, int)]
        for index in indices:
            if 0 <= index < gpus_per_node:
                per_gpu[index] = _mig_devices(entry)
    total: Counter = Counter()
    for counts in per_gpu.values():
        if counts is None:
            total[WHOLE_GPU] += 1
        else:
            total.update(counts)
    return total


def _mig_devices(entry: dict) -> dict[str, int] | None:
    """Profile -> count on one GPU of this entry; None when the entry leaves MIG disabled."""
    if entry.get("mig-enabled") is not True:
        return None
    devices = entry.get("mig-devices")
    if not isinstance(devices, dict):
        return {}
    return {str(p): c for p, c in devices.items() if isinstance(c, int) and not isinstance(c, bool) and c > 0}


def _filter_matches(device_filter: Any, gpu_pci_ids: tuple[str, ...]) -> bool:
    if not device_filter:
        return True
    wanted = [device_filter] if isinstance(device_filter, str) else list(device_filter)
    known = {pci.lower() for pci in gpu_pci_ids}
    return not known or any(str(f).lower() in known for f in wanted)


def mig_resource(profile: str) -> str:
    """The extended resource the device plugin advertises a MIG profile as under the mixed strategy."""
    return catalog.resource_name(profile, "mixed")


def pool_capacity(pool: Any, mig_layout_entries: Any = None, gpu_pci_ids: tuple[str, ...] = ()) -> dict[str, int]:
    """Resource name -> devices the whole pool exposes; {} for a MIG pool whose layout is unknown."""
    if pool.mig_layout:
        per_node = _mig_capacity_per_node(pool, mig_layout_entries, gpu_pci_ids)
        exposed = {name: count * pool.nodes for name, count in per_node.items()}
        return _time_sliced(exposed, pool.time_slicing_replicas, pool.rename_shared)
    replicas = pool.time_slicing_replicas or pool.mps_replicas
    return _time_sliced({GPU_RESOURCE: pool.gpus}, replicas, pool.rename_shared)


def _mig_capacity_per_node(pool: Any, entries: Any, gpu_pci_ids: tuple[str, ...]) -> dict[str, int]:
    if not isinstance(entries, list):
        return {}
    instances = layout_instances_per_node(entries, pool.gpus_per_node, gpu_pci_ids)
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
