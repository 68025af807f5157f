"""What a pool exposes to the scheduler, per resource name, from its declared hardware and sharing mode.

exclusive: GPUs; time-sliced (and MPS): GPUs x replicas (as `nvidia.com/gpu`, or `nvidia.com/gpu.shared` when
renamed); MIG mixed: per-profile instance counts of the layout x nodes, as `nvidia.com/mig-<profile>`;
MIG single: all instances as `nvidia.com/gpu`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .model import GPU_RESOURCE, MIG_RESOURCE_PREFIX


def layout_instances_per_node(entries: Any, gpus_per_node: int, gpu_pci_ids: tuple[str, ...] = ()) -> Counter:
    """MIG instances per node for one mig-parted layout (a list of entries), by profile name.

    Entries with a `device-filter` apply only to GPUs whose PCI device ID it names; a later entry that covers
    the same GPU index replaces an earlier one, as mig-parted applies them in order.
    """
    per_gpu: dict[int, dict[str, int]] = {}
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict) or not _filter_matches(entry.get("device-filter"), gpu_pci_ids):
            continue
        devices = entry.get("devices", "all")
        indices = range(gpus_per_node) if devices == "all" else [i for i in devices or [] if isinstance(i, int)]
        mig_devices = entry.get("mig-devices") or {} if entry.get("mig-enabled") else {}
        for index in indices:
            if 0 <= index < gpus_per_node:
                per_gpu[index] = {str(p): int(c) for p, c in mig_devices.items() if isinstance(c, int)}
    total: Counter = Counter()
    for counts in per_gpu.values():
        total.update(counts)
    return total


def _filter_matches(device_filter: Any, gpu_pci_ids: tuple[str, ...]) -> bool:
    if not device_filter:
        return True
    wanted = [device_filter] if isinstance(device_filter, str) else list(device_filter)
    known = {pci.lower() for pci in gpu_pci_ids}
    return not known or any(str(f).lower() in known for f in wanted)


def pool_capacity(pool: Any, mig_layout_entries: Any = None, gpu_pci_ids: tuple[str, ...] = ()) -> dict[str, int]:
    """Resource name -> devices the whole pool exposes."""
    if pool.mig_layout:
        instances = layout_instances_per_node(mig_layout_entries, pool.gpus_per_node, gpu_pci_ids)
        if pool.mig_strategy == "single":
            return {GPU_RESOURCE: sum(instances.values()) * pool.nodes} if instances else {}
        return {f"{MIG_RESOURCE_PREFIX}{profile}": count * pool.nodes for profile, count in sorted(instances.items())}
    replicas = pool.time_slicing_replicas or pool.mps_replicas
    if replicas:
        name = f"{GPU_RESOURCE}.shared" if pool.rename_shared else GPU_RESOURCE
        return {name: pool.gpus * replicas}
    return {GPU_RESOURCE: pool.gpus}
