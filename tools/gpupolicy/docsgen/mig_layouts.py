"""MIG layouts drawn as pictures of the GPU's memory slots, for every pool that runs one."""

from __future__ import annotations

import html

from ..domain import catalog, mig
from ..model import Cluster, Pool
from . import Context

_COLOURS = ("#76b900", "#1a73e8", "#e8710a", "#9334e6", "#d01884", "#12b5cb", "#f9ab00", "#5f6368")


def pages(context: Context) -> dict[str, str]:
    text = context.header("MIG layouts", _inputs(context))
    text += (
        "Each picture is one GPU: the columns are its memory slots, each block a MIG instance at the "
        "start slot the placement solver found. The device plugin exposes each instance as "
        "`nvidia.com/mig-<profile>` (mixed strategy) or `nvidia.com/gpu` (single).\n\n"
    )
    drawn = False
    for cluster in context.fleet.clusters.values():
        for pool in cluster.pools:
            if pool.mig_layout:
                text += _pool_section(cluster, pool)
                drawn = True
    if not drawn:
        text += "No pool runs MIG.\n"
    return {"mig-layouts.md": text}


def _inputs(context: Context) -> set[str]:
    """The MIG pools' declarations and the files their layouts come from."""
    found: set[str] = set()
    for cluster in context.fleet.clusters.values():
        for pool in cluster.pools:
            entry = cluster.mig_configs.get(pool.mig_layout) if pool.mig_layout else None
            if pool.mig_layout:
                found |= {pool.path, *([entry.source.path] if entry else [])}
    return found


def _pool_section(cluster: Cluster, pool: Pool) -> str:
    header = (
        f"## {pool.name} ({cluster.name})\n\n{pool.nodes} node{'s' if pool.nodes != 1 else ''} x "
        f"{pool.gpus_per_node} {pool.gpu_model}, layout `{pool.mig_layout}`, strategy "
        f"`{pool.mig_strategy}`. Exposes: "
        + (", ".join(f"`{k}` {v}" for k, v in pool.capacity.items()) or "nothing")
        + ".\n\n"
    )
    try:
        model = catalog.gpu(pool.gpu_model)
    except KeyError:
        return header + f"GPU model `{pool.gpu_model}` is not in the catalog.\n\n"
    entry = cluster.mig_configs.get(pool.mig_layout)
    config, _ = mig.parse_config(
        {"version": "v1", "mig-configs": {pool.mig_layout: entry.data if entry else []}}
    )
    entries = config.layouts.get(pool.mig_layout, ()) if config else ()
    per_gpu = mig.layout_devices(entries, pool.gpus_per_node, model)
    if not per_gpu:
        return header + "No GPU of this pool is in MIG mode under this layout.\n\n"
    pictures: dict[tuple, list[int]] = {}
    for index, counts in per_gpu.items():
        pictures.setdefault(tuple(sorted(counts.items())), []).append(index)
    text = header
    for counts, indices in pictures.items():
        placement = mig.place(model, dict(counts))
        label = "GPUs " + ", ".join(str(i) for i in indices)
        if isinstance(placement, mig.Unplaceable):
            text += f"**{label}**: cannot be placed: {placement.reason}\n\n"
            continue
        text += f"**{label}** ({placement.compute_used} of {model.compute_slices} compute slices):\n\n"
        text += _picture(model, placement) + "\n\n"
    return text


def _picture(model: catalog.GPUModel, placement: mig.Placement) -> str:
    slots = model.memory_slots or 8
    cells = [f'<div class="mig-slot" style="grid-column:{i + 1}">{i}</div>' for i in range(slots)]
    for number, instance in enumerate(sorted(placement.instances, key=lambda i: i.start)):
        colour = _COLOURS[number % len(_COLOURS)]
        cells.append(
            f'<div class="mig-instance" style="grid-column:{instance.start + 1} / span '
            f'{instance.memory_slices};background:{colour}" title="{html.escape(instance.profile)} '
            f'at slot {instance.start}">{html.escape(instance.profile)}</div>'
        )
    return (
        f'<div class="mig-gpu" style="grid-template-columns:repeat({slots}, 1fr)" role="img" '
        f'aria-label="MIG layout on {html.escape(model.name)}">' + "".join(cells) + "</div>"
    )
