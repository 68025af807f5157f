"""Property tests (hypothesis) that complement the example tests of the capacity model, the quantity parser
and
the strict loader. (The MIG solver's properties live in tests/test_mig_solver.py.)"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

import pytest
import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gpupolicy.domain.capacity import WHOLE_GPU, layout_instances_per_node, mig_resource, pool_capacity
from gpupolicy.domain.quantity import (
    INT64_LIMIT,
    QuantityError,
    QuantityRangeError,
    parse_count,
    parse_quantity,
)
from gpupolicy.infra.yamlload import MAX_ALIASES, load_rendered, load_text
from gpupolicy.model import GPU_RESOURCE, Pool

PROFILES = ("1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")

zones = st.dictionaries(st.sampled_from(["a", "b", "c"]), st.integers(1, 40), min_size=1, max_size=3)
mig_devices = st.dictionaries(st.sampled_from(PROFILES), st.integers(0, 7), min_size=1, max_size=3)


@st.composite
def layouts(draw, gpus_per_node: int) -> list[dict]:
    """A mig-parted layout: entries for "all" or some GPU indices, MIG on or off."""
    entries = []
    for _ in range(draw(st.integers(1, 3))):
        devices = draw(
            st.one_of(
                st.just("all"),
                st.lists(st.integers(0, gpus_per_node - 1), min_size=1, max_size=gpus_per_node, unique=True),
            )
        )
        enabled = draw(st.booleans())
        entry = {"devices": devices, "mig-enabled": enabled}
        if enabled:
            entry["mig-devices"] = draw(mig_devices)
        entries.append(entry)
    return entries


MODES = ("exclusive", "time-sliced", "mps", "mig-mixed", "mig-single")


@st.composite
def pools(draw, modes: tuple[str, ...] = MODES) -> tuple[Pool, list[dict] | None]:
    """A pool of one of `modes`, and the MIG layout it uses (None when it is not a MIG pool). MIG-only
    properties draw MIG pools directly rather than filter: filtering four in five away is slow and flaky."""
    per_node = draw(st.sampled_from([1, 2, 4, 8]))
    mode = draw(st.sampled_from(modes))
    fields = dict(
        name="p",
        path="pools/p/pool.yaml",
        gpu_model="H100-80GB",
        gpus_per_node=per_node,
        zones=draw(zones),
        access_mode="exclusive",
        node_labels={"gpupolicy.io/pool": "p"},
    )
    layout = None
    if mode == "time-sliced":
        fields.update(
            access_mode="time-sliced",
            time_slicing_replicas=draw(st.integers(2, 16)),
            rename_shared=draw(st.booleans()),
        )
    elif mode == "mps":
        fields.update(mps_replicas=draw(st.integers(2, 16)))
    elif mode.startswith("mig"):
        fields.update(access_mode="mig", mig_layout="l", mig_strategy=mode.split("-")[1])
        layout = draw(layouts(per_node))
    return Pool(**fields), layout


# --- the capacity model -------------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(pools(), st.integers(1, 10))
def test_capacity_scales_linearly_with_nodes(case: tuple[Pool, list | None], factor: int) -> None:
    pool, layout = case
    bigger = replace(pool, zones={zone: count * factor for zone, count in pool.zones.items()})
    expected = {name: amount * factor for name, amount in pool_capacity(pool, layout).items()}
    assert pool_capacity(bigger, layout) == expected


@settings(max_examples=300, deadline=None)
@given(pools(modes=("mig-mixed",)))
def test_mixed_mig_capacity_is_per_node_counts_times_nodes(case: tuple[Pool, list | None]) -> None:
    pool, layout = case
    assert layout is not None and pool.mig_strategy == "mixed"
    per_node = layout_instances_per_node(layout, pool.gpus_per_node)
    expected = {
        mig_resource(profile): count * pool.nodes
        for profile, count in per_node.items()
        if profile != WHOLE_GPU and count
    }
    if per_node.get(WHOLE_GPU):
        expected[GPU_RESOURCE] = per_node[WHOLE_GPU] * pool.nodes
    assert pool_capacity(pool, layout) == expected


@settings(max_examples=300, deadline=None)
@given(pools(modes=("mig-mixed", "mig-single")))
def test_single_strategy_advertises_every_instance_as_a_gpu(case: tuple[Pool, list | None]) -> None:
    """Single and mixed strategies expose the same number of devices; single names them all nvidia.com/gpu."""
    pool, layout = case
    assert layout is not None
    single = pool_capacity(replace(pool, mig_strategy="single"), layout)
    mixed = pool_capacity(replace(pool, mig_strategy="mixed"), layout)
    assert set(single) <= {GPU_RESOURCE}
    assert sum(single.values()) == sum(mixed.values())


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([1, 2, 4, 8]), st.data())
def test_every_gpu_of_a_node_is_counted_once(per_node: int, data: st.DataObject) -> None:
    """A GPU is either whole or MIG-enabled: whole GPUs + GPUs with an enabled entry = GPUs per node."""
    layout = data.draw(layouts(per_node))
    counts = layout_instances_per_node(layout, per_node)
    enabled = set()
    for entry in layout:  # the last entry covering a GPU decides it
        indices = range(per_node) if entry["devices"] == "all" else entry["devices"]
        for index in indices:
            (enabled.add if entry["mig-enabled"] else enabled.discard)(index)
    assert counts.get(WHOLE_GPU, 0) == per_node - len(enabled)


@settings(max_examples=300, deadline=None)
@given(pools(modes=("exclusive", "mig-mixed", "mig-single")), st.integers(1, 4))
def test_time_slicing_multiplies_every_resource(case: tuple[Pool, list | None], replicas: int) -> None:
    pool, layout = case
    assert pool.time_slicing_replicas is None and pool.mps_replicas is None
    plain = pool_capacity(pool, layout)
    sliced = pool_capacity(replace(pool, time_slicing_replicas=replicas + 1), layout)
    assert sliced == {name: amount * (replicas + 1) for name, amount in plain.items()}


@settings(max_examples=300, deadline=None)
@given(pools(), st.integers(0, 200), st.integers(0, 200))
def test_capacity_without_is_monotone_and_bounded(
    case: tuple[Pool, list | None], lost: int, more: int
) -> None:
    pool, layout = case
    pool = replace(pool, capacity=pool_capacity(pool, layout))
    assert pool.capacity_without(0) == pool.capacity
    assert all(amount == 0 for amount in pool.capacity_without(pool.nodes).values())
    fewer, fewer_still = pool.capacity_without(lost), pool.capacity_without(lost + more)
    for name, amount in pool.capacity.items():
        assert 0 <= fewer_still[name] <= fewer[name] <= amount


@settings(max_examples=200, deadline=None)
@given(pools(), st.data())
def test_losing_nodes_removes_whole_nodes_of_capacity(
    case: tuple[Pool, list | None], data: st.DataObject
) -> None:
    """Every node exposes the same devices, so losing k nodes leaves exactly (nodes - k) nodes' worth."""
    pool, layout = case
    pool = replace(pool, capacity=pool_capacity(pool, layout))
    lost = data.draw(st.integers(0, pool.nodes))
    left = replace(pool, zones={"z": pool.nodes - lost}) if lost < pool.nodes else None
    expected = pool_capacity(left, layout) if left else {name: 0 for name in pool.capacity}
    assert pool.capacity_without(lost) == {name: expected.get(name, 0) for name in pool.capacity}


# --- quantities
# ------------------------------------------------------------------------------------------------

SUFFIX_VALUES = {
    "": 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "m": Decimal("0.001"),
}


@given(st.integers(0, 10**9), st.sampled_from(sorted(SUFFIX_VALUES)))
def test_suffixed_integers_scale_by_their_suffix(number: int, suffix: str) -> None:
    value = number * Decimal(SUFFIX_VALUES[suffix])
    if value >= INT64_LIMIT:  # Kubernetes holds no quantity this large: refused, never silently kept
        with pytest.raises(QuantityRangeError):
            parse_quantity(f"{number}{suffix}")
    else:
        assert parse_quantity(f"{number}{suffix}") == value


@given(st.integers(-(10**12), 10**12), st.integers(-(10**12), 10**12))
def test_parsing_preserves_order(a: int, b: int) -> None:
    assert (parse_quantity(str(a)) < parse_quantity(str(b))) == (a < b)


@given(st.decimals(min_value=-(10**6), max_value=10**6, allow_nan=False, allow_infinity=False, places=3))
def test_decimal_text_parses_exactly(value: Decimal) -> None:
    assert parse_quantity(format(value, "f")) == value


@given(st.integers(1, 10**6))
def test_counts_reject_negatives_and_fractions(number: int) -> None:
    assert parse_count(str(number)) == number
    for bad in (f"-{number}", f"{number}.5", f"{number}500m" if number % 2 else f"{number}1m"):
        try:
            parse_count(bad)
        except QuantityError:
            continue
        raise AssertionError(f"{bad!r} accepted as a device count")


@given(st.integers(1, 10**6))
def test_binary_suffix_is_larger_than_decimal(number: int) -> None:
    assert parse_quantity(f"{number}Ki") > parse_quantity(f"{number}k")


# --- the strict loader
# -------------------------------------------------------------------------------------------

keys = st.from_regex(r"[a-z][a-z0-9]{0,7}", fullmatch=True)
scalars = st.one_of(
    st.integers(-1000, 1000),
    st.text(st.characters(whitelist_categories=("Ll", "Nd")), max_size=8),
    st.booleans(),
)
manifests = st.dictionaries(
    keys,
    st.one_of(scalars, st.lists(scalars, max_size=3), st.dictionaries(keys, scalars, max_size=3)),
    min_size=1,
    max_size=6,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(manifests, min_size=1, max_size=5))
def test_multi_document_files_keep_every_document_and_its_start_line(docs: list[dict]) -> None:
    text = yaml.safe_dump_all(docs, explicit_start=True, sort_keys=False)
    result = load_text(text, "multi.yaml")
    assert not result.findings
    assert [d.data for d in result.documents] == docs
    starts = [number + 1 for number, line in enumerate(text.splitlines()) if line.startswith("---")]
    for doc, start in zip(result.documents, starts, strict=True):
        assert doc.line in (start, start + 1)  # the `---` line or the first key after it


@settings(max_examples=200, deadline=None)
@given(manifests)
def test_every_top_level_key_is_mapped_to_its_own_line(doc: dict) -> None:
    text = yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, width=10**6)
    loaded = load_text(text, "keys.yaml").documents[0]
    lines = text.splitlines()
    for key in doc:
        line = loaded.line_of((key,))
        assert lines[line - 1].lstrip("'").startswith(f"{key}:") or lines[line - 1].startswith(f"'{key}':")


@settings(max_examples=100, deadline=None)
@given(st.lists(manifests, min_size=1, max_size=4))
def test_rendered_fast_path_agrees_with_the_strict_loader(docs: list[dict]) -> None:
    text = yaml.safe_dump_all(docs, explicit_start=True)
    assert load_rendered(text) == [d.data for d in load_text(text, "r.yaml").documents]


@settings(max_examples=60, deadline=None)
@given(st.integers(1, MAX_ALIASES + 20))
def test_alias_budget_is_exact(aliases: int) -> None:
    text = "base: &b {x: 1}\n" + "".join(f"k{i}: *b\n" for i in range(aliases))
    rules = {f.rule for f in load_text(text, "aliases.yaml").findings}
    assert rules == ({"YAML007"} if aliases > MAX_ALIASES else set())


@settings(max_examples=100, deadline=None)
@given(manifests, st.sampled_from(sorted(PROFILES)))
def test_a_repeated_key_anywhere_is_reported_at_its_second_line(doc: dict, key: str) -> None:
    assume(key not in doc)
    body = yaml.safe_dump(doc, sort_keys=False, default_flow_style=False)
    text = f"{key}: 1\n{body}{key}: 2\n"
    result = load_text(text, "dup.yaml")
    assert [f.rule for f in result.findings] == ["YAML002"]
    assert result.findings[0].line == len(text.splitlines())
