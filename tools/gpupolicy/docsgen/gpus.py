"""The GPU catalog page: every model `pool.yaml` may name, with what a new pool needs to know before its first
pull request (memory, MIG profiles and their slot geometry, PCI IDs, product labels, driver minimums, how the
card can be shared). Generated from `catalog.py`, the one home of these facts, which cites their sources."""

from __future__ import annotations

from fractions import Fraction

from ..domain import catalog
from ..domain.catalog import GPUModel, MigProfile
from . import Context, table

# What the device plugin offers on any GPU it serves (NVIDIA/k8s-device-plugin config: `sharing.timeSlicing`,
# `sharing.mps`; MPS is refused together with the mixed MIG strategy).
EVERY_GPU_SHARING = "time-slicing or MPS"


def pages(context: Context) -> dict[str, str]:
    text = context.header("GPU catalog")
    text += (
        "The GPU models a pool can declare in `pool.yaml` (`spec.gpu.model`), from the toolkit's "
        "catalog (`tools/gpupolicy/domain/catalog.py`, where each fact cites its public source). A model "
        "missing here is added to the catalog first ([how](../development/architecture.md#how-to-add)).\n\n"
    )
    text += table(
        ["model (`gpu.model`)", "architecture", "memory", "driver at least", "MIG", "pools"],
        [_summary_row(context, model) for model in catalog.GPUS.values()],
    )
    text += (
        f"\nSharing: every GPU can run exclusively (one pod per card) or be shared by the device "
        f"plugin's {EVERY_GPU_SHARING}; MIG only where the model offers it, from the driver in the *MIG* "
        "column. "
        "MPS does not combine with the `mixed` MIG strategy.\n"
    )
    for model in catalog.GPUS.values():
        text += _model_section(model)
    return {"gpus.md": text}


def _summary_row(context: Context, model: GPUModel) -> list[str]:
    mig = f"{model.compute_slices} slices, driver ≥ {model.min_mig_driver}" if model.min_mig_driver else "no"
    pools = sorted(pool.name for pool in context.fleet.pools.values() if pool.gpu_model == model.key)
    return [
        f"[{model.key}](#{_anchor(model)})",
        model.architecture,
        f"{model.memory_gib} GiB",
        model.min_driver,
        mig,
        ", ".join(pools) or "-",
    ]


def _anchor(model: GPUModel) -> str:
    return "gpu-" + model.key.lower().replace(".", "-")


def _model_section(model: GPUModel) -> str:
    text = (
        f"\n## {model.key} {{ #{_anchor(model)} }}\n\n{model.name}: {model.architecture}, "
        f"{model.memory_gib} GiB, compute capability {model.compute_capability}.\n\n"
    )
    text += table(
        ["fact", "value"],
        [
            [
                "node label `nvidia.com/gpu.product`",
                ", ".join(f"`{label}`" for label in model.product_labels),
            ],
            [
                "PCI device IDs (mig-parted `device-filter` form)",
                ", ".join(f"`{pci}`" for pci in model.pci_device_ids),
            ],
            ["driver at least", model.min_driver],
            ["driver for MIG at least", model.min_mig_driver or "no MIG"],
        ],
    )
    if not model.mig_profiles:
        return text
    text += (
        f"\nMIG profiles: the card has {model.compute_slices} compute slices and {model.memory_slots} "
        "memory "
        "slots; an instance starts at one of its placements (a memory slot) and covers its memory "
        "slices from there; the profile name gives its memory (`1g.10gb`: 10 GB). *At most*: instances of "
        "the profile one GPU holds. The resource is what the device plugin exposes with the `mixed` "
        "strategy.\n\n"
    )
    rows = [_profile_row(model, profile) for profile in model.mig_profiles.values()]
    return text + table(
        [
            "profile",
            "resource (mixed)",
            "slices: compute / memory",
            "placements",
            "at most",
            "share of a card",
        ],
        rows,
    )


def _profile_row(model: GPUModel, profile: MigProfile) -> list[str]:
    share = Fraction(profile.compute_slices, model.compute_slices)
    return [
        f"`{profile.name}`",
        f"`{catalog.resource_name(profile, 'mixed')}`",
        f"{profile.compute_slices} / {profile.memory_slices}",
        " ".join(map(str, profile.placements)),
        profile.max_count,
        str(share),
    ]
