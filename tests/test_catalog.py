"""The GPU catalog: internal consistency, and facts the MIG user guide states outright."""

from __future__ import annotations

from datetime import date
from fractions import Fraction

import pytest

from gpupolicy.domain import catalog
from gpupolicy.domain.mig import solve

MIG_MODELS = catalog.mig_capable_models()


def test_required_models_are_present() -> None:
    for key in (
        "A100-40GB",
        "A100-80GB",
        "H100-80GB",
        "H100-94GB",
        "H200-141GB",
        "B200",
        "L4",
        "L40S",
        "A30",
    ):
        assert catalog.gpu(key).key == key


def test_unknown_model_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="H100-80GB"):
        catalog.gpu("H100")


@pytest.mark.parametrize("key", ["L4", "L40S"])
def test_ada_cards_have_no_mig(key: str) -> None:
    model = catalog.gpu(key)
    assert not model.mig_capable and model.min_mig_driver is None and model.compute_slices == 0


@pytest.mark.parametrize("model", MIG_MODELS, ids=lambda m: m.key)
def test_profiles_fit_their_gpu(model: catalog.GPUModel) -> None:
    assert model.min_mig_driver and catalog.driver_at_least(model.min_mig_driver, model.min_driver)
    for profile in model.mig_profiles.values():
        assert profile.placements == tuple(sorted(set(profile.placements)))
        for start in profile.placements:
            assert 0 <= start and start + profile.memory_slices <= model.memory_slots, profile.name
        assert 1 <= profile.compute_slices <= model.compute_slices
        assert profile.max_count * profile.memory_slices <= model.memory_slots
        assert profile.max_count * profile.compute_slices <= model.compute_slices
        # The name carries the shape: "<g>g.<gb>gb[+attr]".
        assert profile.name.startswith(f"{profile.compute_slices}g.{profile.memory_gib}gb")
        assert profile.memory_gib <= model.memory_gib
        assert profile.media_extensions == any(a in ("+me", "+me.all") for a in profile.attributes)


@pytest.mark.parametrize("model", MIG_MODELS, ids=lambda m: m.key)
def test_memory_in_names_is_proportional_to_slices(model: catalog.GPUModel) -> None:
    # A slice's nominal GB is about total/slots per memory slice (names round up, e.g. 7g.141gb on 141 GB).
    per_slot = model.memory_gib / model.memory_slots
    for profile in model.mig_profiles.values():
        assert profile.memory_gib == pytest.approx(per_slot * profile.memory_slices, rel=0.3), profile.name


@pytest.mark.parametrize("model", MIG_MODELS, ids=lambda m: m.key)
def test_every_profile_alone_at_its_maximum_count_is_placeable(model: catalog.GPUModel) -> None:
    for profile in model.mig_profiles.values():
        assert solve(model, {profile.name: profile.max_count}) is not None, profile.name
        assert solve(model, {profile.name: profile.max_count + 1}) is None, profile.name


@pytest.mark.parametrize("model", MIG_MODELS, ids=lambda m: m.key)
def test_all_smallest_and_whole_gpu_layouts_exist(model: catalog.GPUModel) -> None:
    smallest = min(
        (p for p in model.mig_profiles.values() if not p.attributes),
        key=lambda p: (p.compute_slices, p.memory_slices),
    )
    whole = [
        p
        for p in model.mig_profiles.values()
        if p.compute_slices == model.compute_slices and not p.attributes
    ]
    assert smallest.max_count == model.compute_slices
    assert solve(model, {smallest.name: model.compute_slices}) is not None
    assert len(whole) == 1 and solve(model, {whole[0].name: 1}) is not None


def test_guide_facts_about_a100_and_h100() -> None:
    a100, h100 = catalog.gpu("A100-80GB"), catalog.gpu("H100-80GB")
    assert solve(a100, {"1g.10gb": 7}) is not None
    assert "1g.5gb" not in h100.mig_profiles and "1g.5gb" in catalog.gpu("A100-40GB").mig_profiles
    assert solve(a100, {"3g.40gb": 1, "4g.40gb": 1}) is not None
    assert solve(a100, {"4g.40gb": 2}) is None
    for name in ("1g.10gb+me", "1g.20gb", "2g.20gb"):
        assert name in h100.mig_profiles
    assert h100.mig_profiles["1g.20gb"].placements == (0, 2, 4, 6)
    assert h100.mig_profiles["3g.40gb"].placements == (0, 4)
    assert h100.mig_profiles["7g.80gb"].memory_slices == 8


def test_gfx_variants_on_rtx_pro_6000() -> None:
    profiles = catalog.gpu("RTX-PRO-6000").mig_profiles
    assert {"1g.24gb+gfx", "2g.48gb+gfx", "4g.96gb+gfx", "1g.24gb-me", "1g.24gb+me.all"} <= set(profiles)
    assert profiles["1g.24gb+me.all"].media_extensions and not profiles["1g.24gb-me"].media_extensions


def test_lookups_by_pci_id_and_product_label() -> None:
    assert catalog.gpu_by_pci_id("0x233010DE").key == "H100-80GB"
    assert catalog.gpu_by_pci_id("10de:2330").key == "H100-80GB"
    assert catalog.gpu_by_pci_id("0x20b2").key == "A100-80GB"
    assert catalog.gpu_by_pci_id("0x20B710DE:0x1234").key == "A30"
    assert catalog.gpu_by_pci_id("0xFFFF10DE") is None and catalog.gpu_by_pci_id("not-an-id") is None
    assert catalog.gpu_by_product_label("NVIDIA-H100-80GB-HBM3").key == "H100-80GB"
    assert catalog.gpu_by_product_label("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb").key == "A100-40GB"
    assert catalog.gpu_by_product_label("NVIDIA-L4-SHARED").key == "L4"
    assert catalog.gpu_by_product_label("Tesla-T4") is None


def test_pci_ids_and_labels_name_one_model_each() -> None:
    ids = [pci for model in catalog.GPUS.values() for pci in model.pci_device_ids]
    labels = [label.lower() for model in catalog.GPUS.values() for label in model.product_labels]
    assert len(ids) == len(set(ids)) and len(labels) == len(set(labels))


def test_resource_names() -> None:
    profile = catalog.gpu("A100-80GB").mig_profiles["1g.10gb"]
    assert catalog.resource_name(profile, "mixed") == "nvidia.com/mig-1g.10gb"
    assert catalog.resource_name("3g.40gb", "single") == "nvidia.com/gpu"
    with pytest.raises(ValueError):
        catalog.resource_name(profile, "both")


@pytest.mark.parametrize(
    ("version", "minimum", "expected"),
    [
        ("535.104.05", "535.54.03", True),
        ("535.54.03", "535.104.05", False),  # 54 < 104 numerically, though "5" > "1" as text
        ("570.26", "570.26.0", True),
        ("580.65.06", "R580", True),
        ("575.57.08", "580", False),
        ("1000.1", "999.999.999", True),
    ],
)
def test_driver_versions_compare_numerically(version: str, minimum: str, expected: bool) -> None:
    assert catalog.driver_at_least(version, minimum) is expected


def test_bad_version_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        catalog.driver_at_least("latest", "535")


def test_cuda_minimums() -> None:
    assert catalog.min_driver_for_cuda("12.4") == "550.54.14"
    assert catalog.min_driver_for_cuda("12.4.1") == "550.54.15"
    assert catalog.min_driver_for_cuda("12.2.9") == "535.104.05"  # newest listed update before it
    assert catalog.min_driver_for_cuda("13.0") == "580.65.06"
    assert catalog.min_driver_for_cuda("12.7") is None  # there was no 12.7 toolkit
    assert catalog.min_driver_for_cuda("12.9", minor_version_compatibility=True) == "525.60.13"
    ordered = sorted(catalog.CUDA_MIN_DRIVER, key=catalog.parse_version)
    drivers = [catalog.CUDA_MIN_DRIVER[cuda] for cuda in ordered]
    for older, newer in zip(drivers, drivers[1:], strict=False):
        assert catalog.driver_at_least(newer, older), (older, newer)


def test_branches_and_eol() -> None:
    assert catalog.branch_of("535.104.05") == "R535"
    assert catalog.branch_eol("R535") == date(2026, 6, 30)
    assert catalog.branch_eol("580.95.05") == date(2028, 6, 30)
    assert catalog.branch_eol("R570") is None
    assert catalog.branch_eol("R999") is None


def test_operator_releases() -> None:
    release = catalog.operator_release("26.7.0")
    assert release is not None and release.default_driver == "595.91.07"
    assert release.default_driver in release.supported_drivers
    assert catalog.operator_supports_kubernetes("v26.7.0", "1.33.4") is True
    assert catalog.operator_supports_kubernetes("v26.7.0", "1.32") is False
    assert catalog.operator_supports_kubernetes("v24.6.0", "1.30") is None
    for item in catalog.OPERATOR_RELEASES.values():
        assert catalog.branch_of(item.default_driver) in catalog.DRIVER_BRANCHES


@pytest.mark.parametrize(
    "profile, model, share",
    [
        ("3g.40gb", "A100-80GB", Fraction(3, 7)),
        ("2g.12gb", "A30", Fraction(2, 4)),
        ("nvidia.com/mig-3g.40gb", "H100-80GB", Fraction(3, 7)),  # named as the mixed-strategy resource
        ("mig-1g.24gb.me", "RTX-PRO-6000", Fraction(1, 4)),  # '+' written as '.' in the resource name
        ("4g.96gb", "RTX-PRO-6000", Fraction(1)),
    ],
)
def test_card_fraction(profile: str, model: str, share: Fraction) -> None:
    assert catalog.card_fraction(profile, model) == share
    assert catalog.card_fraction(profile, catalog.gpu(model)) == share


@pytest.mark.parametrize("profile, model", [("7z", "A100-80GB"), ("3g.40gb", "A30"), ("1g.10gb", "L4")])
def test_card_fraction_of_a_profile_the_model_lacks_is_an_error(profile: str, model: str) -> None:
    with pytest.raises(ValueError, match="no MIG profile"):
        catalog.card_fraction(profile, model)


def test_card_fraction_of_an_unknown_model_is_an_error() -> None:
    with pytest.raises(KeyError, match="unknown GPU model"):
        catalog.card_fraction("1g.10gb", "H100")


def test_largest_card_fraction_without_a_model() -> None:
    assert catalog.largest_card_fraction("3g.40gb") == Fraction(3, 7)
    assert catalog.largest_card_fraction("nvidia.com/mig-2g.12gb") == Fraction(1, 2)
    assert catalog.largest_card_fraction("1g.24gb") == Fraction(1, 4)  # 1/7 on H100 NVL, 1/4 on RTX PRO 6000
    with pytest.raises(ValueError, match="not a MIG profile"):
        catalog.largest_card_fraction("5g.99gb")


@pytest.mark.parametrize("model", MIG_MODELS, ids=lambda m: m.key)
def test_profile_sizes_end_at_the_whole_card(model: catalog.GPUModel) -> None:
    sizes = catalog.profile_sizes(model)
    assert sizes[0] == 1 and sizes[-1] == model.compute_slices
