"""GPU facts in one place: models, MIG profiles and placements, driver and CUDA minimums, operator releases.

Every rule, generator and simulator that needs a hardware or driver fact imports it from here. Each table
cites the public source it restates; facts marked "(inferred)" are our conclusion, not NVIDIA's words.

Sources (public):
  [MIG]   NVIDIA Multi-Instance GPU User Guide, "Supported MIG Profiles", "Supported GPUs" and
          "Deployment Considerations" pages (docs.nvidia.com/datacenter/tesla/mig-user-guide/, v580-v620),
          and the `nvidia-smi mig -lgipp` placement listing it documents for A100/H100.
  [PARTED] NVIDIA/mig-parted `deployments/systemd/config-default.yaml` and NVIDIA/gpu-operator
          `assets/state-mig-manager/0400_configmap.yaml` (profile names, counts, device-filter PCI IDs).
  [GFD]   NVIDIA/k8s-device-plugin `docs/gpu-feature-discovery/README.md`: `nvidia.com/gpu.product` is the
  NVML
          device name with spaces replaced by '-'; `-MIG-<profile>` (single strategy) and `-SHARED` suffixes.
  [CUDA]  CUDA Toolkit release notes, table "CUDA Toolkit and Corresponding Driver Versions". [DRV]   NVIDIA
  Data Center Drivers, "Supported Drivers and CUDA Toolkit Versions" (branch designations, EOL). [GPUOP]
  NVIDIA/gpu-operator `deployments/gpu-operator/values.yaml` per tag (default driver) and
          NVIDIA/cloud-native-docs `gpu-operator/platform-support.rst`, `life-cycle-policy.rst`.
The tables were gathered in ../shared/reference/gpu-operator.md (sections 1.9, 4, 5, 7), which names each
file.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass, field
from datetime import date
from fractions import Fraction

# --------------------------------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MigProfile:
    """A GPU-instance profile: how many compute and memory slices it takes and where it may start.

    `placements` are the allowed start positions on the GPU's memory-slice axis; the instance then
    occupies `memory_slices` consecutive slots from there ([MIG] placement tables, `-lgipp`).
    """

    name: str
    compute_slices: int
    memory_slices: int
    memory_gib: int  # the nominal size in the profile name ("1g.10gb" -> 10)
    placements: tuple[int, ...]
    media_extensions: bool = False  # "+me" / "+me.all": takes the GPU's media engines (one per GPU)
    max_count: int = 1
    attributes: tuple[str, ...] = ()  # "+me", "+gfx", "+me.all", "-me"


@dataclass(frozen=True)
class GPUModel:
    key: str  # the name pool.yaml uses in spec.gpu.model
    name: str
    architecture: str
    memory_gib: int
    pci_device_ids: tuple[str, ...]  # mig-parted form: 0x<device><vendor>, e.g. 0x233010DE
    product_labels: tuple[str, ...]  # values of the GFD label nvidia.com/gpu.product
    mig_profiles: dict[str, MigProfile] = field(hash=False)
    min_driver: str  # first driver documented for the GPU
    min_mig_driver: str | None  # None: no MIG on this GPU
    compute_capability: str
    compute_slices: int = 0  # 7 on A100/H100/H200/B200, 4 on A30/RTX PRO 6000, 0 without MIG
    memory_slots: int = 0  # 8 on 7-slice GPUs, 4 on 4-slice GPUs

    @property
    def mig_capable(self) -> bool:
        return bool(self.mig_profiles)

    def profile(self, name: str) -> MigProfile | None:
        return self.mig_profiles.get(name)


@dataclass(frozen=True)
class DriverBranch:
    name: str  # "R535"
    designation: str  # LTSB | PB | NFB
    eol: tuple[int, int] | None  # (year, month) of end of life; None when not published


@dataclass(frozen=True)
class OperatorRelease:
    version: str  # "v26.7.0"
    released: str  # ISO date, or year-month where only the month is recorded
    default_driver: str
    kubernetes: tuple[str, str] | None  # validated (min, max) minor versions; None when not recorded
    supported_drivers: tuple[str, ...] = ()


# --------------------------------------------------------------------------------------------------
# MIG profile families
# --------------------------------------------------------------------------------------------------

# Placement facts for GPUs with 7 compute slices and 8 memory slices, from [MIG] `nvidia-smi mig -lgipp` on
# A100/H100 (identical): 1g {0..6} width 1; 1g+me {0..6} width 1; 1g double-memory {0,2,4,6} width 2; 2g
# {0,2,4} width 2; 3g {0,4} width 4; 4g {0} width 4; 7g {0} width 8. Max instances per [MIG] profile tables.
_ONE_G_STARTS = (0, 1, 2, 3, 4, 5, 6)


def _seven_slice(
    one: int, double: int, two: int, three: int, four: int, seven: int, extra_one_g: tuple[int, ...] = ()
) -> dict[str, MigProfile]:
    """The profile set every 7-slice GPU shares, named by its memory sizes in GB."""
    profiles = [
        MigProfile(f"1g.{one}gb", 1, 1, one, _ONE_G_STARTS, max_count=7),
        MigProfile(
            f"1g.{one}gb+me",
            1,
            1,
            one,
            _ONE_G_STARTS,
            media_extensions=True,
            max_count=1,
            attributes=("+me",),
        ),
        MigProfile(f"1g.{double}gb", 1, 2, double, (0, 2, 4, 6), max_count=4),
        MigProfile(f"2g.{two}gb", 2, 2, two, (0, 2, 4), max_count=3),
        MigProfile(f"3g.{three}gb", 3, 4, three, (0, 4), max_count=2),
        MigProfile(f"4g.{four}gb", 4, 4, four, (0,), max_count=1),
        MigProfile(f"7g.{seven}gb", 7, 8, seven, (0,), max_count=1),
    ]
    for size in extra_one_g:  # firmware variants that name the 1g slice differently (mig-parted#227)
        profiles.append(MigProfile(f"1g.{size}gb", 1, 1, size, _ONE_G_STARTS, max_count=7))
        profiles.append(
            MigProfile(
                f"1g.{size}gb+me",
                1,
                1,
                size,
                _ONE_G_STARTS,
                media_extensions=True,
                max_count=1,
                attributes=("+me",),
            )
        )
    return {p.name: p for p in profiles}


def _a30() -> dict[str, MigProfile]:
    # [MIG] "A30 MIG Profiles": 4 compute / 4 memory slices. 1g.6gb x4, 1g.6gb+me x1 (R470+), 2g.12gb x2,
    # 2g.12gb+me x1 (R525+), 4g.24gb x1. A30 has one JPEG/OFA unit, so only one +me instance at a time.
    # Placements: 1g {0,1,2,3}, 2g {0,2}, 4g {0} (A30 -lgipp as mirrored by go-nvml's a30 mock).
    profiles = [
        MigProfile("1g.6gb", 1, 1, 6, (0, 1, 2, 3), max_count=4),
        MigProfile(
            "1g.6gb+me", 1, 1, 6, (0, 1, 2, 3), media_extensions=True, max_count=1, attributes=("+me",)
        ),
        MigProfile("2g.12gb", 2, 2, 12, (0, 2), max_count=2),
        MigProfile("2g.12gb+me", 2, 2, 12, (0, 2), media_extensions=True, max_count=1, attributes=("+me",)),
        MigProfile("4g.24gb", 4, 4, 24, (0,), max_count=1),
    ]
    return {p.name: p for p in profiles}


def _rtx_pro_6000() -> dict[str, MigProfile]:
    # [MIG] RTX PRO 6000 Blackwell (96 GB, 4 slices): 1g.24gb x4 (+me x1, +gfx x4, +me.all x1, -me x4);
    # 2g.48gb x2 (+gfx x2, +me.all x1, -me x2); 4g.96gb x1 (+gfx x1). Start positions on the 4-slot axis are
    # assumed to follow A30's (1g {0..3}, 2g {0,2}, 4g {0}) (inferred: the guide prints no -lgipp for it).
    shapes = {
        "1g.24gb": (1, 1, 24, (0, 1, 2, 3), 4),
        "2g.48gb": (2, 2, 48, (0, 2), 2),
        "4g.96gb": (4, 4, 96, (0,), 1),
    }
    variants = {
        "1g.24gb": ("", "+me", "+gfx", "+me.all", "-me"),
        "2g.48gb": ("", "+gfx", "+me.all", "-me"),
        "4g.96gb": ("", "+gfx"),
    }
    profiles: dict[str, MigProfile] = {}
    for base, (compute, memory, gib, starts, most) in shapes.items():
        for suffix in variants[base]:
            media = suffix in ("+me", "+me.all")
            profiles[base + suffix] = MigProfile(
                base + suffix,
                compute,
                memory,
                gib,
                starts,
                media_extensions=media,
                max_count=1 if media else most,
                attributes=(suffix,) if suffix else (),
            )
    return profiles


# --------------------------------------------------------------------------------------------------
# GPU models
# --------------------------------------------------------------------------------------------------


def _ids(*devices: str) -> tuple[str, ...]:
    return tuple(f"0x{d.upper()}10DE" for d in devices)


# PCI device IDs: [PARTED] device-filter groups (GA100 0x20xx = A100/A800, GH100 0x23xx = H100/H800/H200,
# GB100 0x29xx = B200/GB200) plus go-nvml mocks and NVIDIA/k8s-test-infra nvml-mock profiles (L40S 0x26B9).
# Product labels: NVML device names with spaces as '-' [GFD]; "NVIDIA-H100-80GB-HBM3" is from the
# cloud-native-docs label dump `mig-node-labels.json`; older drivers omit the "NVIDIA " prefix for A100.
_MODELS: tuple[GPUModel, ...] = (
    GPUModel(
        key="A100-40GB",
        name="NVIDIA A100 40GB (SXM4/PCIe, incl. A800-40GB)",
        architecture="ampere",
        memory_gib=40,
        pci_device_ids=_ids("20B0", "20B1", "20F1", "20F6"),
        product_labels=("NVIDIA-A100-SXM4-40GB", "NVIDIA-A100-PCIE-40GB", "A100-SXM4-40GB", "A100-PCIE-40GB"),
        # [MIG] A100-SXM4-40GB table; 1g.10gb (double memory) since R525.
        mig_profiles=_seven_slice(5, 10, 10, 20, 20, 40),
        min_driver="450.80.02",
        min_mig_driver="450.80.02",  # [MIG] Deployment Considerations: A100 R450
        compute_capability="8.0",
        compute_slices=7,
        memory_slots=8,
    ),
    GPUModel(
        key="A100-80GB",
        name="NVIDIA A100 80GB (SXM4/PCIe, incl. A800-80GB)",
        architecture="ampere",
        memory_gib=80,
        pci_device_ids=_ids("20B2", "20B5", "20F3", "20F5"),
        product_labels=("NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-80GB-PCIe", "A100-SXM4-80GB", "A100-80GB-PCIe"),
        # [MIG] "For A100-SXM4-80GB the profile names change ...: 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb,
        # 3g.40gb, 4g.40gb, 7g.80gb".
        mig_profiles=_seven_slice(10, 20, 20, 40, 40, 80),
        min_driver="450.80.02",
        min_mig_driver="450.80.02",
        compute_capability="8.0",
        compute_slices=7,
        memory_slots=8,
    ),
    GPUModel(
        key="A30",
        name="NVIDIA A30 24GB",
        architecture="ampere",
        memory_gib=24,
        pci_device_ids=_ids("20B7"),
        product_labels=("NVIDIA-A30",),
        mig_profiles=_a30(),
        min_driver="460.73.01",
        min_mig_driver="460.73.01",  # [MIG] Deployment Considerations: A30 R460
        compute_capability="8.0",
        compute_slices=4,
        memory_slots=4,
    ),
    GPUModel(
        key="H100-80GB",
        name="NVIDIA H100 80GB (SXM5/PCIe, incl. H800-80GB)",
        architecture="hopper",
        memory_gib=80,
        pci_device_ids=_ids("2330", "2331", "2322", "2324"),
        product_labels=("NVIDIA-H100-80GB-HBM3", "NVIDIA-H100-PCIe", "NVIDIA-H800"),
        # [MIG] H100 profiles: same names as A100-80GB (1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb,
        # 4g.40gb, 7g.80gb); no 1g.5gb.
        mig_profiles=_seven_slice(10, 20, 20, 40, 40, 80),
        # Hopper's first CUDA is 11.8 (min driver 520.61.05, [CUDA]); MIG needs R525 >= 525.85.12 [MIG].
        min_driver="520.61.05",
        min_mig_driver="525.85.12",
        compute_capability="9.0",
        compute_slices=7,
        memory_slots=8,
    ),
    GPUModel(
        key="H100-94GB",
        name="NVIDIA H100 NVL / H100 94GB (incl. H800 NVL)",
        architecture="hopper",
        memory_gib=94,
        pci_device_ids=_ids("2321", "233A"),
        product_labels=("NVIDIA-H100-NVL", "NVIDIA-H800-NVL"),
        mig_profiles=_seven_slice(12, 24, 24, 47, 47, 94),  # [MIG], [PARTED] all-*.47gb / 7g.94gb
        min_driver="520.61.05",
        min_mig_driver="525.85.12",
        compute_capability="9.0",
        compute_slices=7,
        memory_slots=8,
    ),
    GPUModel(
        key="H100-96GB",
        name="NVIDIA H100 96GB (GH200 96GB, H20, H100 96GB)",
        architecture="hopper",
        memory_gib=96,
        pci_device_ids=_ids("2342", "233D", "2329"),
        product_labels=("NVIDIA-GH200-480GB", "NVIDIA-H20"),
        # PG506-96GB (0x20B6) shares these profile names in [PARTED] but is a GA100 board: left out.
        mig_profiles=_seven_slice(12, 24, 24, 48, 48, 96),  # [PARTED] all-3g.48gb, all-4g.48gb, all-7g.96gb
        # H20 needs R535 >= 535.161.07 for MIG [MIG]; we hold the whole group to it (the strictest member).
        min_driver="520.61.05",
        min_mig_driver="535.161.07",
        compute_capability="9.0",
        compute_slices=7,
        memory_slots=8,
    ),
    GPUModel(
        key="H200-141GB",
        name="NVIDIA H200 141GB (SXM5, NVL)",
        architecture="hopper",
        memory_gib=141,
        pci_device_ids=_ids("2335", "233B"),
        product_labels=("NVIDIA-H200", "NVIDIA-H200-NVL"),
        mig_profiles=_seven_slice(18, 35, 35, 71, 71, 141),  # [MIG], [PARTED] H200-141GB group
        # [MIG] Deployment Considerations: H200 R550 >= 550.90.07; taken as the general minimum too (inferred:
        # no earlier driver is documented for H200).
        min_driver="550.90.07",
        min_mig_driver="550.90.07",
        compute_capability="9.0",
        compute_slices=7,
        memory_slots=8,
    ),
    GPUModel(
        key="B200",
        name="NVIDIA B200 180GB",
        architecture="blackwell",
        memory_gib=180,
        pci_device_ids=_ids("2901"),
        product_labels=("NVIDIA-B200",),
        # [MIG] B200 profiles; placements not printed for Blackwell, Hopper's are assumed (inferred: same
        # profile IDs and counts).
        mig_profiles=_seven_slice(23, 45, 45, 90, 90, 180),
        # [MIG] B200/GB200 R570 >= 570.133.20; the GPU Operator needs that driver for HGX B200 too.
        min_driver="570.133.20",
        min_mig_driver="570.133.20",
        compute_capability="10.0",
        compute_slices=7,
        memory_slots=8,
    ),
    GPUModel(
        key="GB200",
        name="NVIDIA GB200 (186GB per GPU)",
        architecture="blackwell",
        memory_gib=186,
        pci_device_ids=_ids("2941"),
        product_labels=("NVIDIA-GB200",),
        # [PARTED] GB200 group; some firmware names the 1g slice 1g.24gb instead of 1g.23gb (mig-parted#227).
        mig_profiles=_seven_slice(23, 47, 47, 93, 93, 186, extra_one_g=(24,)),
        min_driver="570.133.20",
        min_mig_driver="570.133.20",
        compute_capability="10.0",
        compute_slices=7,
        memory_slots=8,
    ),
    GPUModel(
        key="RTX-PRO-6000",
        name="NVIDIA RTX PRO 6000 Blackwell 96GB (Server/Workstation)",
        architecture="blackwell",
        memory_gib=96,
        pci_device_ids=_ids("2BB5"),
        product_labels=("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition",),
        mig_profiles=_rtx_pro_6000(),
        min_driver="575.51.03",
        min_mig_driver="575.51.03",  # [MIG] Deployment Considerations: R575
        compute_capability="12.0",
        compute_slices=4,
        memory_slots=4,
    ),
    GPUModel(
        key="L4",
        name="NVIDIA L4 24GB",
        architecture="ada-lovelace",
        memory_gib=24,
        pci_device_ids=_ids("27B8"),
        product_labels=("NVIDIA-L4",),
        mig_profiles={},
        # Ada's first CUDA is 11.8 ([CUDA]: 520.61.05); no MIG ([MIG] Supported GPUs lists none of Ada).
        min_driver="520.61.05",
        min_mig_driver=None,
        compute_capability="8.9",
    ),
    GPUModel(
        key="L40S",
        name="NVIDIA L40S 48GB",
        architecture="ada-lovelace",
        memory_gib=48,
        pci_device_ids=_ids("26B9"),
        product_labels=("NVIDIA-L40S",),
        mig_profiles={},
        min_driver="520.61.05",
        min_mig_driver=None,
        compute_capability="8.9",
    ),
)

GPUS: dict[str, GPUModel] = {model.key: model for model in _MODELS}


def gpu(key: str) -> GPUModel:
    """The catalog model for a pool.yaml `spec.gpu.model` key; KeyError names the known keys."""
    try:
        return GPUS[key]
    except KeyError:
        raise KeyError(f"unknown GPU model {key!r}; known: {', '.join(GPUS)}") from None


def mig_capable_models() -> list[GPUModel]:
    return [model for model in GPUS.values() if model.mig_capable]


_LABEL_SUFFIX = re.compile(r"(-MIG-.*|-SHARED)$", re.IGNORECASE)


def gpu_by_product_label(label: str) -> GPUModel | None:
    """The model a node's `nvidia.com/gpu.product` label names, ignoring the -MIG-<profile> / -SHARED
    suffixes."""
    wanted = _LABEL_SUFFIX.sub("", label.strip()).lower()
    for model in GPUS.values():
        if any(product.lower() == wanted for product in model.product_labels):
            return model
    return None


_PCI_ID = re.compile(r"^(?:0x)?(?:10de:)?([0-9a-f]{4})(?:10de)?(?::(?:0x)?[0-9a-f]+)?$", re.IGNORECASE)


def normalize_pci_id(pci_id: str) -> str | None:
    """`0x2330`, `2330`, `10de:2330`, `0x233010DE` or `0x233010DE:<subsys>` -> `0x233010DE`; None if not
    one."""
    match = _PCI_ID.match(pci_id.strip())
    return f"0x{match.group(1).upper()}10DE" if match else None


def gpu_by_pci_id(pci_id: str) -> GPUModel | None:
    wanted = normalize_pci_id(pci_id)
    if wanted is None:
        return None
    return next((model for model in GPUS.values() if wanted in model.pci_device_ids), None)


def resource_name(profile: MigProfile | str, strategy: str) -> str:
    """The extended resource a MIG instance is advertised as: per-profile under `mixed`, plain GPU under
    `single`."""
    name = profile.name if isinstance(profile, MigProfile) else profile
    # the device plugin cannot use '+' in a resource name: 1g.10gb+me -> mig-1g.10gb.me
    if strategy == "mixed":
        return f"nvidia.com/mig-{name.replace('+', '.')}"
    if strategy in ("single", "none"):
        return "nvidia.com/gpu"
    raise ValueError(f"unknown MIG strategy {strategy!r} (single, mixed or none)")


_RESOURCE_PROFILE = re.compile(r"^(?:nvidia\.com/)?(?:mig-)?(?P<base>\d+g\.\d+gb)(?P<rest>.*)$")


def profile_name(name: str) -> str:
    """The catalog's spelling of a MIG profile named as a profile or as the resource the device plugin
    advertises: `3g.40gb`, `mig-3g.40gb` and `nvidia.com/mig-3g.40gb` -> `3g.40gb`;
    `nvidia.com/mig-1g.10gb.me` -> `1g.10gb+me` (the mixed strategy writes `+` as `.`, see `resource_name`).
    Other text is returned unchanged."""
    match = _RESOURCE_PROFILE.match(name.strip())
    if not match:
        return name
    rest = match["rest"]
    return match["base"] + ("+" + rest[1:] if rest.startswith(".") else rest)


def card_fraction(profile: MigProfile | str, model: GPUModel | str) -> Fraction:
    """The share of one `model` card a MIG instance of `profile` takes: its compute slices over the card's
    ([MIG]: 3g.40gb is 3/7 of an A100 80GB, 2g.12gb is 2/4 of an A30). The profile may be named as its
    resource (`nvidia.com/mig-3g.40gb`). KeyError for an unknown model, ValueError for a profile the model
    does not offer."""
    card = model if isinstance(model, GPUModel) else gpu(model)
    name = profile.name if isinstance(profile, MigProfile) else profile_name(profile)
    found = card.profile(name)
    if found is None or not card.compute_slices:
        offered = ", ".join(card.mig_profiles) or "none, it has no MIG"
        raise ValueError(f"{card.key} has no MIG profile {name!r} (its profiles: {offered})")
    return Fraction(found.compute_slices, card.compute_slices)


def largest_card_fraction(profile: str) -> Fraction:
    """The share of a card a MIG profile takes when the GPU is not known (a trace job, a pod not yet on a
    node): its `card_fraction` on the catalog GPUs that offer it, the largest where they differ (1g.24gb is
    1/7 of an H100 NVL but 1/4 of an RTX PRO 6000), so an estimate never shrinks a request. ValueError when no
    catalog
    GPU offers the profile."""
    name = profile_name(profile)
    shares = [card_fraction(name, model) for model in GPUS.values() if model.profile(name)]
    if not shares:
        raise ValueError(f"not a MIG profile: {profile!r} (no GPU in the catalog offers it; e.g. 1g.10gb)")
    return max(shares)


def share_of_card(profile: str, model: str = "") -> Fraction:
    """A MIG profile's (or `nvidia.com/mig-*` resource's) share of one card of GPU `model`: its
    `card_fraction` when the catalog knows the model and it offers the profile, else `largest_card_fraction`
    (the GPU is unknown
    or does not say). ValueError when no catalog GPU offers the profile."""
    card = GPUS.get(model)
    if card is not None and card.profile(profile_name(profile)):
        return card_fraction(profile, card)
    return largest_card_fraction(profile)


def profile_sizes(model: GPUModel) -> tuple[int, ...]:
    """The compute-slice counts the model's MIG profiles come in, smallest first: (1, 2, 3, 4, 7) on a 7-slice
    GPU, (1, 2, 4) on A30 and RTX PRO 6000; () without MIG."""
    return tuple(sorted({profile.compute_slices for profile in model.mig_profiles.values()}))


# --------------------------------------------------------------------------------------------------
# Drivers and CUDA
# --------------------------------------------------------------------------------------------------


def parse_version(version: str) -> tuple[int, ...]:
    """'535.104.05' -> (535, 104, 5); 'R535' -> (535,); leading 'v' allowed. ValueError when not numeric."""
    text = version.strip().lstrip("vVrR")
    if not re.fullmatch(r"\d+(\.\d+)*", text):
        raise ValueError(f"not a version number: {version!r}")
    return tuple(int(part) for part in text.split("."))


def compare_versions(left: str, right: str) -> int:
    """-1, 0 or 1, comparing numerically part by part (missing parts count as 0)."""
    a, b = parse_version(left), parse_version(right)
    width = max(len(a), len(b))
    a, b = a + (0,) * (width - len(a)), b + (0,) * (width - len(b))
    return (a > b) - (a < b)


def driver_at_least(version: str, minimum: str) -> bool:
    return compare_versions(version, minimum) >= 0


# [CUDA] "CUDA Toolkit and Corresponding Driver Versions", Linux x86_64 minimum per toolkit release.
# Keys are toolkit versions (Update N = patch N); 11.8 GA is 520.61.05.
CUDA_MIN_DRIVER: dict[str, str] = {
    "11.8.0": "520.61.05",
    "12.0.0": "525.60.13",
    "12.0.1": "525.85.12",
    "12.1.0": "530.30.02",
    "12.1.1": "530.30.02",
    "12.2.0": "535.54.03",
    "12.2.1": "535.86.09",
    "12.2.2": "535.104.05",
    "12.3.0": "545.23.06",
    "12.3.1": "545.23.08",
    "12.4.0": "550.54.14",
    "12.4.1": "550.54.15",
    "12.5.0": "555.42.02",
    "12.5.1": "555.42.06",
    "12.6.0": "560.28.03",
    "12.6.1": "560.35.03",
    "12.6.2": "560.35.03",
    "12.6.3": "560.35.05",
    "12.8.0": "570.26",
    "12.8.1": "570.124.06",
    "12.9.0": "575.51.03",
    "12.9.1": "575.57.08",
    "13.0.0": "580.65.06",
    "13.0.1": "580.82.07",
    "13.0.2": "580.95.05",
    "13.1.0": "590.44.01",
    "13.1.1": "590.48.01",
    "13.2.0": "595.45.04",
    "13.2.1": "595.58.03",
    "13.2.2": "595.71.05",
}

# [CUDA] minor version compatibility: any toolkit of a major version runs (with limited features) on this
# driver.
CUDA_MAJOR_MIN_DRIVER: dict[int, str] = {11: "450.80.02", 12: "525.60.13", 13: "580.65.06"}


def min_driver_for_cuda(cuda: str, minor_version_compatibility: bool = False) -> str | None:
    """Minimum Linux driver for a CUDA toolkit ('12.4', '12.4.1'); None when the release is not in the table.

    A patch release not listed takes the newest listed patch before it of the same major.minor. With
    `minor_version_compatibility` the major version's floor is returned instead ([CUDA] compatibility
    section).
    """
    parts = parse_version(cuda)
    if minor_version_compatibility:
        return CUDA_MAJOR_MIN_DRIVER.get(parts[0])
    wanted = (parts + (0, 0, 0))[:3]
    known = [(parse_version(key), driver) for key, driver in CUDA_MIN_DRIVER.items()]
    same_minor = [
        (release, driver) for release, driver in known if release[:2] == wanted[:2] and release <= wanted
    ]
    return max(same_minor)[1] if same_minor else None


# [DRV] branch designations and end of life (month), per the 615 and 620 editions of the support matrix.
# R550 and R570 were production branches, now superseded; their EOL month is not in the pages we cite.
DRIVER_BRANCHES: dict[str, DriverBranch] = {
    b.name: b
    for b in (
        DriverBranch("R535", "LTSB", (2026, 6)),
        DriverBranch("R550", "PB", None),
        DriverBranch("R570", "PB", None),
        DriverBranch("R580", "LTSB", (2028, 6)),
        DriverBranch("R590", "NFB", None),
        DriverBranch("R595", "PB", (2027, 3)),
        DriverBranch("R610", "NFB", (2026, 8)),
        DriverBranch("R620", "LTSB", (2029, 9)),
    )
}


def branch_of(driver_version: str) -> str:
    """'535.104.05' -> 'R535'."""
    return f"R{parse_version(driver_version)[0]}"


def branch_eol(branch: str) -> date | None:
    """Last day of the branch's end-of-life month, or None when unknown. Accepts 'R535', '535' or a full
    version."""
    name = branch if branch.upper().startswith("R") else branch_of(branch)
    known = DRIVER_BRANCHES.get(name.upper())
    if known is None or known.eol is None:
        return None
    year, month = known.eol
    return date(year, month, calendar.monthrange(year, month)[1])


# [GPUOP] default driver per release (values.yaml at each tag); Kubernetes range validated per
# platform-support.rst (Ubuntu rows); supported drivers per life-cycle-policy.rst where recorded.
OPERATOR_RELEASES: dict[str, OperatorRelease] = {
    r.version: r
    for r in (
        OperatorRelease("v23.9.0", "2023-10-20", "535.104.12", None),
        OperatorRelease("v23.9.2", "2024-03-06", "550.54.14", None),
        OperatorRelease("v24.3.0", "2024-04-29", "550.54.15", None),
        OperatorRelease("v24.6.0", "2024-07-29", "550.90.07", None),
        OperatorRelease("v24.9.0", "2024-10-31", "550.127.05", None),
        OperatorRelease(
            "v24.9.2",
            "2025-01-24",
            "550.144.03",
            ("1.24", "1.31"),
            ("535.216.03", "535.230.02", "550.127.08", "550.144.03", "560.35.03", "565.57.01", "570.86.15"),
        ),
        OperatorRelease("v25.3.0", "2025-03-26", "570.124.06", None, ("570.124.06", "570.86.15")),
        OperatorRelease(
            "v25.3.3",
            "2025-09",
            "580.82.07",
            ("1.29", "1.33"),
            (
                "580.82.07",
                "580.65.06",
                "575.57.08",
                "570.172.08",
                "570.158.01",
                "570.148.08",
                "550.163.01",
                "535.261.03",
                "535.247.01",
            ),
        ),
        OperatorRelease(
            "v25.10.0",
            "2025-10-22",
            "580.95.05",
            None,
            ("580.95.05", "580.82.07", "575.57.08", "570.195.03", "550.163.01", "535.274.02"),
        ),
        OperatorRelease(
            "v25.10.1",
            "2025-12-03",
            "580.105.08",
            ("1.30", "1.34"),
            ("580.105.08", "580.95.05", "580.82.07", "575.57.08", "570.195.03", "550.163.01", "535.274.02"),
        ),
        OperatorRelease(
            "v26.3.3",
            "2026-06",
            "580.126.20",
            ("1.32", "1.36"),
            (
                "595.71.05",
                "595.58.03",
                "590.48.01",
                "580.159.04",
                "580.159.03",
                "580.126.20",
                "570.211.01",
                "535.309.01",
                "535.288.01",
            ),
        ),
        OperatorRelease(
            "v26.7.0",
            "2026-08-20",
            "595.91.07",
            ("1.33", "1.36"),
            ("610.57.04", "595.91.07", "580.173.02", "535.309.01"),
        ),
    )
}


def operator_release(version: str) -> OperatorRelease | None:
    wanted = version if version.startswith("v") else f"v{version}"
    return OPERATOR_RELEASES.get(wanted)


def operator_major(version: str) -> str:
    """'v26.7.0' -> '26.7': NVIDIA's life-cycle policy calls the year.month pair a major release."""
    return ".".join(str(part) for part in parse_version(version.lstrip("v"))[:2])


def operator_upgrade_supported(from_version: str, to_version: str) -> bool | None:
    """[GPUOP] life-cycle-policy.rst: "upgrades are supported within a major release or to the next major
    release" (e.g. 26.3 -> 26.7). True within a major or to the next one in the catalog, False when it skips
    one, None when either release is not in the catalog. A downgrade is judged the same way (it reverses an
    upgrade)."""
    majors = sorted(
        {operator_major(version) for version in OPERATOR_RELEASES}, key=lambda major: parse_version(major)
    )
    if operator_release(from_version) is None or operator_release(to_version) is None:
        return None
    steps = abs(majors.index(operator_major(to_version)) - majors.index(operator_major(from_version)))
    return steps <= 1


def operator_supports_kubernetes(operator_version: str, kubernetes_version: str) -> bool | None:
    """Whether the release was validated on that Kubernetes minor; None when we hold no range for it."""
    release = operator_release(operator_version)
    if release is None or release.kubernetes is None:
        return None
    low, high = release.kubernetes
    minor = ".".join(str(part) for part in parse_version(kubernetes_version)[:2])
    return compare_versions(minor, low) >= 0 and compare_versions(minor, high) <= 0
