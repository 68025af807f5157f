"""The MIG placement solver, checked against a brute-force enumerator; config parsing and per-GPU layouts."""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpupolicy.domain import catalog
from gpupolicy.domain.catalog import GPUModel, MigProfile
from gpupolicy.domain.mig import (
    Placement,
    Unplaceable,
    check_config,
    diagram,
    layout_devices,
    parse_config,
    parse_profile_name,
    per_node_profile_counts,
    place,
    solve,
    uniform,
    whole_gpus_per_node,
)

# --------------------------------------------------------------------------------------------------
# An independent brute-force oracle
# --------------------------------------------------------------------------------------------------


def brute_force_fits(model: GPUModel, counts: Mapping[str, int]) -> bool:
    """Try every assignment of start positions. Instances of one profile are interchangeable and can never
    share a start (each takes at least one slot), so choosing a k-subset of its starts covers every case."""
    wanted = {name: count for name, count in counts.items() if count}
    if any(name not in model.mig_profiles for name in wanted):
        return False
    profiles = {name: model.mig_profiles[name] for name in wanted}
    if any(count > profiles[name].max_count or count < 0 for name, count in wanted.items()):
        return False
    if sum(profiles[n].compute_slices * c for n, c in wanted.items()) > model.compute_slices:
        return False
    if sum(c for n, c in wanted.items() if profiles[n].media_extensions) > 1:
        return False
    choices = [itertools.combinations(profiles[name].placements, count) for name, count in wanted.items()]
    for assignment in itertools.product(*choices):
        slots: list[int] = []
        for (name, _), starts in zip(wanted.items(), assignment, strict=True):
            for start in starts:
                slots.extend(range(start, start + profiles[name].memory_slices))
        if len(slots) == len(set(slots)) and all(slot < model.memory_slots for slot in slots):
            return True
    return False


def assert_valid(model: GPUModel, counts: Mapping[str, int], placement: Placement) -> None:
    """The placement honours every rule on its own terms."""
    wanted = {name: count for name, count in counts.items() if count}
    assert {name: len(starts) for name, starts in placement.starts.items()} == wanted
    used: set[int] = set()
    for instance in placement.instances:
        profile = model.mig_profiles[instance.profile]
        assert instance.start in profile.placements
        slots = set(instance.slots)
        assert max(slots) < model.memory_slots and not (slots & used)
        used |= slots
    assert placement.compute_used <= model.compute_slices
    assert sum(model.mig_profiles[i.profile].media_extensions for i in placement.instances) <= 1


# --------------------------------------------------------------------------------------------------
# Property tests: catalog GPUs and random synthetic GPUs
# --------------------------------------------------------------------------------------------------

MIG_MODELS = catalog.mig_capable_models()


@st.composite
def catalog_case(draw: st.DrawFn) -> tuple[GPUModel, dict[str, int]]:
    model = draw(st.sampled_from(MIG_MODELS))
    names = draw(st.lists(st.sampled_from(sorted(model.mig_profiles)), min_size=1, max_size=4, unique=True))
    counts = {name: draw(st.integers(0, model.mig_profiles[name].max_count + 1)) for name in names}
    return model, counts


@st.composite
def synthetic_case(draw: st.DrawFn) -> tuple[GPUModel, dict[str, int]]:
    """A made-up GPU with arbitrary start-position sets, so geometry (not just sums) decides feasibility."""
    slots = draw(st.sampled_from([4, 8]))
    compute = draw(st.integers(slots // 2, slots))
    profiles: dict[str, MigProfile] = {}
    for index in range(draw(st.integers(1, 4))):
        width = draw(st.sampled_from([w for w in (1, 2, 3, 4) if w <= slots]))
        starts = draw(st.lists(st.integers(0, slots - width), min_size=1, max_size=slots, unique=True))
        name = f"{index + 1}g.{width}gb"
        media = draw(st.booleans())
        profiles[name] = MigProfile(
            name,
            draw(st.integers(1, 3)),
            width,
            width,
            tuple(sorted(starts)),
            media_extensions=media,
            max_count=draw(st.integers(1, 4)),
        )
    model = GPUModel(
        key="TOY",
        name="toy",
        architecture="toy",
        memory_gib=slots,
        pci_device_ids=(),
        product_labels=(),
        mig_profiles=profiles,
        min_driver="1",
        min_mig_driver="1",
        compute_capability="0.0",
        compute_slices=compute,
        memory_slots=slots,
    )
    counts = {name: draw(st.integers(0, profile.max_count + 1)) for name, profile in profiles.items()}
    return model, counts


def _agrees_with_brute_force(model: GPUModel, counts: dict[str, int]) -> None:
    result = place(model, counts)
    expected = brute_force_fits(model, counts)
    assert isinstance(result, Placement) is expected, (counts, result)
    if isinstance(result, Placement):
        assert_valid(model, counts, result)
    else:
        assert result.reason
    assert (solve(model, counts) is not None) is expected


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(catalog_case())
def test_solver_matches_brute_force_on_catalog_gpus(case: tuple[GPUModel, dict[str, int]]) -> None:
    _agrees_with_brute_force(*case)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(synthetic_case())
def test_solver_matches_brute_force_on_synthetic_gpus(case: tuple[GPUModel, dict[str, int]]) -> None:
    _agrees_with_brute_force(*case)


@settings(max_examples=150, deadline=None)
@given(catalog_case())
def test_feasibility_is_monotone(case: tuple[GPUModel, dict[str, int]]) -> None:
    """Removing an instance from a placeable layout keeps it placeable."""
    model, counts = case
    if solve(model, counts) is None:
        return
    for name, count in counts.items():
        if count:
            assert solve(model, {**counts, name: count - 1}) is not None


def test_every_combination_of_catalog_profiles_agrees_with_brute_force() -> None:
    """Exhaustive over A100-80GB and A30: every count vector up to each profile's maximum."""
    for key in ("A100-80GB", "A30"):
        model = catalog.gpu(key)
        names = sorted(model.mig_profiles)
        ranges = [range(model.mig_profiles[name].max_count + 1) for name in names]
        checked = 0
        for combo in itertools.product(*ranges):
            if sum(c * model.mig_profiles[n].compute_slices for n, c in zip(names, combo, strict=True)) > 8:
                continue
            counts = dict(zip(names, combo, strict=True))
            assert (solve(model, counts) is not None) is brute_force_fits(model, counts), counts
            checked += 1
        assert checked > 50


# --------------------------------------------------------------------------------------------------
# Reasons, geometry and diagrams
# --------------------------------------------------------------------------------------------------

A100 = catalog.gpu("A100-80GB")


@pytest.mark.parametrize(
    ("counts", "reason"),
    [
        ({"4g.40gb": 2}, "at most 1 fit"),
        ({"3g.40gb": 2, "1g.10gb": 1}, "needs 9 memory slices"),
        ({"2g.20gb": 3, "1g.10gb": 2}, "needs 8 compute slices"),
        ({"1g.10gb+me": 1, "1g.5gb": 1}, "1g.5gb is not a profile of A100-80GB"),
    ],
)
def test_reasons(counts: dict[str, int], reason: str) -> None:
    result = place(A100, counts)
    assert isinstance(result, Unplaceable) and reason in result.reason


def test_geometry_alone_can_make_a_layout_unplaceable() -> None:
    # Sums fit (2 + 2 slots of 4, compute 2 of 4) but both profiles may only start at slot 0.
    narrow = MigProfile("1g.2gb", 1, 2, 2, (0,), max_count=2)
    other = MigProfile("1g.3gb", 1, 2, 2, (0, 2), max_count=1)
    toy = GPUModel(
        key="TOY",
        name="toy",
        architecture="toy",
        memory_gib=4,
        pci_device_ids=(),
        product_labels=(),
        mig_profiles={"1g.2gb": narrow, "1g.3gb": other},
        min_driver="1",
        min_mig_driver="1",
        compute_capability="0.0",
        compute_slices=4,
        memory_slots=4,
    )
    result = place(toy, {"1g.2gb": 2})
    assert isinstance(result, Unplaceable) and "may start only at slot 0" in result.reason
    assert solve(toy, {"1g.2gb": 1, "1g.3gb": 1}).starts == {"1g.2gb": (0,), "1g.3gb": (2,)}


def test_no_mig_gpu_is_unplaceable() -> None:
    result = place(catalog.gpu("L40S"), {"1g.10gb": 1})
    assert isinstance(result, Unplaceable) and "no MIG support" in result.reason


def test_known_placements() -> None:
    assert solve(A100, {"4g.40gb": 1, "3g.40gb": 1}).starts == {"4g.40gb": (0,), "3g.40gb": (4,)}
    assert solve(A100, {"1g.20gb": 4}).starts == {"1g.20gb": (0, 2, 4, 6)}
    assert solve(A100, {"1g.10gb": 7}).starts == {"1g.10gb": tuple(range(7))}
    assert solve(A100, {}).instances == ()
    assert solve(A100, {"1g.10gb": 0, "7g.80gb": 1}).starts == {"7g.80gb": (0,)}
    # Compute instances inside a GPU instance take the GPU instance's slots.
    assert solve(A100, {"1c.3g.40gb": 2}).starts == {"1c.3g.40gb": (0, 4)}


def test_diagram() -> None:
    picture = diagram(A100, solve(A100, {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}))
    assert picture.splitlines() == [
        "profile  start  0 1 2 3 4 5 6 7",
        "2g.20gb      0  # # . . . . . .",
        "1g.10gb      2  . . # . . . . .",
        "1g.10gb      3  . . . # . . . .",
        "3g.40gb      4  . . . . # # # #",
        "compute slices 7/7, memory slices 8/8",
    ]
    a30 = catalog.gpu("A30")
    assert diagram(a30, solve(a30, {"4g.24gb": 1})).splitlines()[1] == "4g.24gb      0  # # # #"
    assert "no instances" in diagram(A100, solve(A100, {}))


# --------------------------------------------------------------------------------------------------
# Parsing and per-GPU layouts
# --------------------------------------------------------------------------------------------------

CONFIG = {
    "version": "v1",
    "mig-configs": {
        "split": [
            {"devices": [0, 1], "mig-enabled": False},
            {"devices": [2, 3], "mig-enabled": True, "mig-devices": {"1g.10gb": 7}},
            {
                "device-filter": "0x20B710DE",
                "devices": "all",
                "mig-enabled": True,
                "mig-devices": {"1g.6gb": 4},
            },
        ],
        "override": [
            {"devices": "all", "mig-enabled": True, "mig-devices": {"3g.40gb": 2}},
            {"devices": [1], "mig-enabled": True, "mig-devices": {"7g.80gb": 1}},
        ],
    },
}


def test_layout_devices_and_counts() -> None:
    config, problems = parse_config(CONFIG)
    assert not problems and config is not None
    split = config.layouts["split"]
    assert layout_devices(split, 4, A100) == {2: {"1g.10gb": 7}, 3: {"1g.10gb": 7}}
    assert per_node_profile_counts(split, 4, A100) == {"1g.10gb": 14}
    assert whole_gpus_per_node(split, 4, A100) == 2
    # On an A30 the filtered entry applies to every GPU after the others, so it wins everywhere.
    assert per_node_profile_counts(split, 4, catalog.gpu("A30")) == {"1g.6gb": 16}
    # Later entries override earlier ones for the same GPU, as mig-parted applies them in order.
    override = config.layouts["override"]
    assert layout_devices(override, 2, A100) == {0: {"3g.40gb": 2}, 1: {"7g.80gb": 1}}


def test_uniform() -> None:
    config, _ = parse_config(CONFIG)
    assert not uniform(config.layouts["split"])
    assert not uniform(config.layouts["override"])
    single, _ = parse_config(
        {
            "version": "v1",
            "mig-configs": {
                "a": [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}],
                "off": [{"devices": "all", "mig-enabled": False}],
            },
        }
    )
    assert uniform(single.layouts["a"]) and uniform(single.layouts["off"])


def test_check_config_findings() -> None:
    config, _ = parse_config(CONFIG)
    problems = check_config(config, ["A100-80GB"], strategy="single")
    kinds = sorted({(p.layout, p.kind) for p in problems if p.severity != "info"})
    assert kinds == [("override", "not-uniform"), ("override", "overlap"), ("split", "not-uniform")]
    overlap = next(p for p in problems if p.kind == "overlap")
    assert "entry 1 wins" in overlap.message and overlap.path == ("mig-configs", "override", 1, "devices")


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("1g.10gb", True),
        ("1g.10gb+me", True),
        ("1g.24gb+me.all", True),
        ("1g.24gb-me", True),
        ("1c.3g.40gb", True),
        ("1g.10gb+gfx,me", True),
        ("4c.3g.40gb", False),
        ("1g10gb", False),
        ("1g.10gb+me,me", False),
        ("1g.10gb+1me", False),
        ("1g.10gb+me-gfx", False),
        ("big", False),
    ],
)
def test_profile_grammar(name: str, valid: bool) -> None:
    assert (parse_profile_name(name) is None) is valid


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "is a mapping"),
        (
            {"version": "v2", "mig-configs": {"a": [{"devices": "all", "mig-enabled": False}]}},
            "version must be v1",
        ),
        ({"version": "v1", "mig-configs": {}}, "at least one layout"),
        ({"version": "v1", "mig-configs": {"a": []}}, "non-empty list"),
        ({"version": "v1", "mig-configs": {"a": [{"devices": "all"}]}}, "mig-enabled is required"),
        ({"version": "v1", "mig-configs": {"a": [{"devices": [], "mig-enabled": False}]}}, "devices must be"),
        (
            {
                "version": "v1",
                "mig-configs": {
                    "a": [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": -1}}]
                },
            },
            "whole number",
        ),
        (
            {
                "version": "v1",
                "mig-configs": {
                    "a": [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 0}}]
                },
            },
            "every count is 0",
        ),
        (
            {
                "version": "v1",
                "mig-configs": {"a": [{"devices": "all", "mig-enabled": False, "device-filter": "nvidia"}]},
            },
            "not a PCI device ID",
        ),
        (
            {"version": "v1", "extra": 1, "mig-configs": {"a": [{"devices": "all", "mig-enabled": False}]}},
            "unexpected field 'extra'",
        ),
    ],
)
def test_schema_problems(data: object, message: str) -> None:
    _, problems = parse_config(data)
    assert any(message in p.message and p.severity == "error" for p in problems), problems
