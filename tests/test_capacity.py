"""The capacity model: what each pool exposes per resource name, for every sharing mode."""

from __future__ import annotations

from gpupolicy.domain import catalog
from gpupolicy.domain.capacity import WHOLE_GPU, layout_instances_per_node, mig_resource, pool_capacity
from gpupolicy.model import Pool

H100 = catalog.gpu("H100-80GB")
A100_40GB = catalog.gpu("A100-40GB")


def make_pool(**overrides) -> Pool:
    fields = dict(
        name="p",
        path="pools/p/pool.yaml",
        gpu_model="H100-80GB",
        gpus_per_node=8,
        zones={"a": 2, "b": 1},
        access_mode="exclusive",
        node_labels={"gpupolicy.io/pool": "p"},
    )
    fields.update(overrides)
    return Pool(**fields)


def test_exclusive_pool_exposes_its_gpus() -> None:
    assert pool_capacity(make_pool()) == {"nvidia.com/gpu": 24}


def test_time_sliced_pool_multiplies_by_replicas() -> None:
    pool = make_pool(access_mode="time-sliced", time_slicing_replicas=4)
    assert pool_capacity(pool) == {"nvidia.com/gpu": 96}


def test_renamed_time_slicing_exposes_shared_resource() -> None:
    pool = make_pool(access_mode="time-sliced", time_slicing_replicas=2, rename_shared=True)
    assert pool_capacity(pool) == {"nvidia.com/gpu.shared": 48}


def test_mps_pool_multiplies_by_replicas() -> None:
    assert pool_capacity(make_pool(mps_replicas=3)) == {"nvidia.com/gpu": 72}


def test_mixed_mig_counts_each_profile_per_node() -> None:
    layout = [
        {"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}}
    ]
    pool = make_pool(access_mode="mig", mig_layout="balanced", mig_strategy="mixed")
    assert pool_capacity(pool, layout) == {
        "nvidia.com/mig-1g.10gb": 48,
        "nvidia.com/mig-2g.20gb": 24,
        "nvidia.com/mig-3g.40gb": 24,
    }


def test_single_mig_exposes_slices_as_gpus() -> None:
    layout = [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}]
    pool = make_pool(access_mode="mig", mig_layout="all-1g", mig_strategy="single")
    assert pool_capacity(pool, layout) == {"nvidia.com/gpu": 7 * 8 * 3}


def test_media_extension_profile_is_advertised_with_a_dot() -> None:
    assert mig_resource("1g.10gb+me") == "nvidia.com/mig-1g.10gb.me"
    layout = [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb+me": 1, "1g.10gb": 6}}]
    pool = make_pool(access_mode="mig", mig_layout="me", mig_strategy="mixed", zones={"a": 1})
    assert pool_capacity(pool, layout) == {"nvidia.com/mig-1g.10gb": 48, "nvidia.com/mig-1g.10gb.me": 8}


def test_mig_disabled_gpus_stay_whole_gpus_under_mixed() -> None:
    layout = [
        {"devices": [0, 1, 2, 3], "mig-enabled": True, "mig-devices": {"3g.40gb": 2}},
        {"devices": [4, 5, 6, 7], "mig-enabled": False},
    ]
    pool = make_pool(access_mode="mig", mig_layout="half", mig_strategy="mixed", zones={"a": 1})
    assert pool_capacity(pool, layout) == {"nvidia.com/gpu": 4, "nvidia.com/mig-3g.40gb": 8}


def test_gpus_the_layout_does_not_mention_stay_whole() -> None:
    layout = [{"devices": [0, 1], "mig-enabled": True, "mig-devices": {"7g.80gb": 1}}]
    counts = layout_instances_per_node(layout, 4)
    assert counts == {"7g.80gb": 2, WHOLE_GPU: 2}


def test_all_disabled_layout_exposes_whole_gpus() -> None:
    layout = [{"devices": "all", "mig-enabled": False}]
    for strategy in ("single", "mixed"):
        pool = make_pool(access_mode="mig", mig_layout="all-disabled", mig_strategy=strategy, zones={"a": 1})
        assert pool_capacity(pool, layout) == {"nvidia.com/gpu": 8}


def test_later_entry_replaces_earlier_one_for_the_same_gpu() -> None:
    layout = [
        {"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 7}},
        {"devices": [0], "mig-enabled": True, "mig-devices": {"7g.80gb": 1}},
    ]
    assert layout_instances_per_node(layout, 2) == {"1g.10gb": 7, "7g.80gb": 1}


def test_device_filter_selects_entries_for_the_pool_gpu() -> None:
    layout = [
        {
            "device-filter": [A100_40GB.pci_device_ids[0]],
            "devices": "all",
            "mig-enabled": True,
            "mig-devices": {"1g.10gb": 4},
        },
        {
            "device-filter": [H100.pci_device_ids[0].lower()],
            "devices": "all",
            "mig-enabled": True,
            "mig-devices": {"1g.10gb": 7},
        },
    ]
    assert layout_instances_per_node(layout, 1, H100) == {"1g.10gb": 7}
    assert layout_instances_per_node(layout, 1, A100_40GB) == {"1g.10gb": 4}


def test_time_slicing_on_mig_multiplies_each_profile() -> None:
    layout = [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}]
    pool = make_pool(
        access_mode="mig", mig_layout="all-1g", mig_strategy="mixed", time_slicing_replicas=2, zones={"a": 1}
    )
    assert pool_capacity(pool, layout) == {"nvidia.com/mig-1g.10gb": 112}


def test_unknown_layout_exposes_nothing() -> None:
    pool = make_pool(access_mode="mig", mig_layout="missing", mig_strategy="mixed")
    assert pool_capacity(pool, None) == {}


def test_malformed_layout_entries_are_ignored_not_fatal() -> None:
    layout = [
        "not a mapping",
        {"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": "two", "2g.20gb": True}},
    ]
    assert layout_instances_per_node(layout, 1) == {}  # MIG on, no valid instance: nothing to advertise


def test_capacity_without_a_node_and_a_zone() -> None:
    pool = make_pool()
    pool = Pool(**{**pool.__dict__, "capacity": pool_capacity(pool)})
    assert pool.capacity_without(1) == {"nvidia.com/gpu": 16}
    assert pool.capacity_without(max(pool.zones.values())) == {"nvidia.com/gpu": 8}
    assert pool.capacity_without(5) == {"nvidia.com/gpu": 0}
