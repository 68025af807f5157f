"""`recommend`'s MIG layout knob: the choices per pool, the converted candidate, and the files --apply
writes."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
import yaml
from support import cli_on, fleet_repo

from gpupolicy import docsgen
from gpupolicy.domain import catalog, mig, quotas
from gpupolicy.errors import ToolError
from gpupolicy.model import ResourceQuota
from gpupolicy.pipeline import load_fleet
from gpupolicy.recommend import edits, layouts, search, space

# The tests' own rich fleet (tests/fixtures/fleet), not whatever fleet this repository holds (decision 0085).
REPO = fleet_repo()
A100 = catalog.gpu("A100-80GB")
CONFIG = "policies/gpu-operator/mig-parted-config.yaml"


@pytest.fixture(scope="module")
def fleet():
    return load_fleet(REPO, ["prod-us", "prod-eu", "test-us"])


def _pool(cluster, name):
    return next(p for p in cluster.pools if p.name == name)


def _layout_knob(cluster):
    [knob] = [k for k in space.knobs(cluster) if k.kind == layouts.LAYOUT]
    return knob


def test_every_mig_pool_of_the_fleet_gets_the_solver_accepted_layouts(fleet):
    seen = {}
    for name, cluster in sorted(fleet.clusters.items()):
        knob = _layout_knob(cluster)
        seen[(name, knob.pool)] = knob
        print(
            f"{name} {knob.pool} (today {knob.current}): {len(knob.choices)} choices: "
            f"{', '.join(knob.choices)}"
        )
    assert {(c, k.pool, k.current) for (c, _), k in seen.items()} == {
        ("prod-us", "us-a100-mig-1g", "all-1g.10gb"),
        ("prod-eu", "eu-a100-mig-balanced", "all-balanced"),
        ("test-us", "test-a100-mig", "all-balanced"),
    }
    choices = seen[("prod-eu", "eu-a100-mig-balanced")].choices
    assert all(k.choices == choices for k in seen.values())  # the same GPU, the same config
    assert list(choices) == sorted(choices) and len(choices) == 28
    # the config's layouts that cut every GPU keep their names; all-disabled and all-enabled (no instance) are
    # out
    assert {"all-1g.10gb", "all-3g.40gb", "all-balanced"} <= set(choices)
    assert not {"all-disabled", "all-enabled", "all-7x1g.10gb", "all-2x1g.10gb-1x2g.20gb-1x3g.40gb"} & set(
        choices
    )
    assert {"all-1x7g.80gb", "all-3x1g.10gb-2x2g.20gb", "all-1x3g.40gb-1x4g.40gb"} <= set(choices)
    assert all(layouts.valid_label_value(name) and "+" not in name for name in choices)


def test_generated_combinations_are_maximal_and_placed_by_the_solver():
    plain = [p.name for p in layouts.plain_profiles(A100)]
    assert plain == ["1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"]  # no +me variant
    found = [dict(pairs) for pairs in layouts.maximal_combinations("A100-80GB")]
    assert len(found) == 28 and {"1g.10gb": 7} in found and {"7g.80gb": 1} in found
    for counts in found:
        assert mig.solve(A100, counts) is not None
        assert all(mig.solve(A100, counts | {p: counts.get(p, 0) + 1}) is None for p in plain), counts
    assert {"1g.10gb": 6} not in found  # a seventh slice still fits
    assert {"4g.40gb": 1, "3g.40gb": 1} in found and {"3g.40gb": 1, "4g.40gb": 1, "1g.10gb": 1} not in found
    a30 = [dict(pairs) for pairs in layouts.maximal_combinations("A30")]
    assert {"1g.6gb": 4} in a30 and {"4g.24gb": 1} in a30 and all("+me" not in p for c in a30 for p in c)


def test_layout_names_are_label_values():
    assert (
        layouts.generated_name({"3g.40gb": 1, "1g.10gb": 2, "2g.20gb": 1}, A100)
        == "all-2x1g.10gb-1x2g.20gb-1x3g.40gb"
    )  # catalog order, whatever the mapping's
    assert layouts.valid_label_value("all-2x1g.10gb-1x2g.20gb-1x3g.40gb")
    assert not layouts.valid_label_value("a" * 64) and not layouts.valid_label_value("-all")
    assert not layouts.valid_label_value("all/../x") and not layouts.valid_label_value("all-1g.10gb+me")


def test_config_layouts_must_cut_every_gpu_and_apply_to_it(fleet):
    cluster = fleet.clusters["prod-eu"]
    pool = _pool(cluster, "eu-a100-mig-balanced")
    half = [{"devices": [0, 1, 2, 3], "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}]
    h200 = [
        {
            "device-filter": ["0x233510DE"],
            "devices": "all",
            "mig-enabled": True,
            "mig-devices": {"1g.18gb": 7},
        }
    ]
    unplaceable = [
        {"devices": "all", "mig-enabled": True, "mig-devices": {"3g.40gb": 1, "4g.40gb": 1, "1g.10gb": 1}}
    ]
    assert layouts.accepted_per_card("half", half, pool, A100) is None  # GPUs 4-7 stay whole
    assert layouts.accepted_per_card("h200", h200, pool, A100) is None  # not for this GPU
    assert layouts.accepted_per_card("bad", unplaceable, pool, A100) is None
    assert layouts.accepted_per_card(
        "all-balanced", cluster.mig_configs["all-balanced"].data, pool, A100
    ) == {i: {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1} for i in range(8)}


def test_single_strategy_and_unconvertible_pools_get_no_layout_knob(fleet):
    cluster = fleet.clusters["prod-us"]
    single = dataclasses.replace(
        cluster,
        pools=[
            dataclasses.replace(p, mig_strategy="single") if p.name == "us-a100-mig-1g" else p
            for p in cluster.pools
        ],
        derived={},
    )
    assert not [k for k in space.knobs(single) if k.kind == layouts.LAYOUT]
    # research sets a borrowing limit on mig-1g.10gb; one more mig-* resource without it leaves no share to
    # keep
    research = cluster.cluster_queues["research"]
    groups = tuple(
        dataclasses.replace(
            g,
            flavors=tuple(
                dataclasses.replace(fq, resources=(*fq.resources, ResourceQuota("nvidia.com/mig-3g.40gb", 0)))
                if fq.flavor == "us-a100-mig-1g"
                else fq
                for fq in g.flavors
            ),
        )
        for g in research.resource_groups
    )
    mixed = dataclasses.replace(
        cluster,
        cluster_queues={
            **cluster.cluster_queues,
            "research": dataclasses.replace(research, resource_groups=groups),
        },
        derived={},
    )
    assert not layouts.convertible(mixed, "us-a100-mig-1g") and layouts.convertible(cluster, "us-a100-mig-1g")


def test_a_searched_pool_has_no_mig_quota_knobs_of_its_own(fleet):
    cluster = fleet.clusters["prod-us"]
    knob_list = space.knobs(cluster)
    assert not [k for k in knob_list if k.flavor == "us-a100-mig-1g"]
    assert "research/us-l40s-shared/nvidia.com/gpu/borrow" in {k.name for k in knob_list}
    layout = _layout_knob(cluster)
    distribution = search.distributions(knob_list)[layout.name]
    assert tuple(distribution.choices) == layout.choices  # a categorical parameter, in the knob's order


def _flavor(owner, flavor):
    return next(fq for g in owner.resource_groups for fq in g.flavors if fq.flavor == flavor)


def _amounts(owner, flavor, field="nominal"):
    return {
        q.name: getattr(q, field)
        for q in _flavor(owner, flavor).resources
        if q.name.startswith("nvidia.com/mig-")
    }


def _cards_held(cluster, owner, flavor, field="nominal"):
    """The cards an owner's quota (or limit) on a MIG flavor stands for, summed over its profiles."""
    pool = quotas.pool_of(cluster, flavor)
    return sum(
        (getattr(q, field) or 0) * quotas.cards(pool, q.name)
        for q in _flavor(owner, flavor).resources
        if q.name.startswith("nvidia.com/mig-")
    )


def test_with_layout_keeps_each_owners_share_of_the_cards(fleet):
    # the expected figures follow the fleet (the pool's size and the queues' quotas), not numbers copied
    # from it
    cluster = fleet.clusters["prod-eu"]
    flavor = "eu-a100-mig-balanced"
    after = layouts.with_layout(cluster, flavor, "all-1g.10gb")
    pool = _pool(after, flavor)
    assert pool.mig_layout == "all-1g.10gb" and pool.node_labels["nvidia.com/mig.config"] == "all-1g.10gb"
    slices = A100.compute_slices  # all-1g.10gb: one 1g.10gb instance per compute slice
    assert pool.capacity == {"nvidia.com/mig-1g.10gb": _pool(cluster, flavor).gpus * slices}
    assert _pool(cluster, flavor).mig_layout == "all-balanced"  # the model is not mutated
    # each owner keeps the cards its 1g + 2g + 3g quota stood for, now in 1g.10gb slices (rounded down)
    for name in ("research", "serving", "vision"):
        before_q, after_q = cluster.cluster_queues[name], after.cluster_queues[name]
        for field in ("nominal", "borrowing_limit"):
            held = _cards_held(cluster, before_q, flavor, field)
            slices_now = _amounts(after_q, flavor, field)["nvidia.com/mig-1g.10gb"]
            assert slices_now == int(held * slices), (name, field)
        assert _amounts(after_q, flavor)["nvidia.com/mig-2g.20gb"] == 0
    research = after.cluster_queues["research"]
    if all(q.lending_limit is None for q in _flavor(cluster.cluster_queues["research"], flavor).resources):
        lending = _amounts(research, flavor, "lending_limit")["nvidia.com/mig-1g.10gb"]
        assert lending is None  # unset stays unset
    serving_before = cluster.cluster_queues["serving"]  # production: the same cards in the new unit (CAP005)
    lent = _cards_held(cluster, serving_before, flavor, "lending_limit")
    serving_after = after.cluster_queues["serving"]
    serving_lends = _amounts(serving_after, flavor, "lending_limit")["nvidia.com/mig-1g.10gb"]
    assert serving_lends == int(lent * slices)
    # decision 0069
    assert {q.name for q in _flavor(research, flavor).resources}.isdisjoint({"cpu", "memory"})
    cpu = {q.name: q.nominal for q in _flavor(research, "cpu").resources}
    assert cpu == {q.name: q.nominal for q in _flavor(cluster.cluster_queues["research"], "cpu").resources}
    assert cpu["cpu"] > 0  # cpu and memory stay: the same cards


def _over_capacity(cluster) -> list[str]:
    return [
        f"{pool} {resource}"
        for (pool, resource), entries in quotas.nominal_per_pool(cluster).items()
        if sum(e.quota.nominal for e in entries)
        > quotas.pool_of(cluster, entries[0].flavor).capacity.get(resource, 0)
    ]


def test_every_layout_keeps_quotas_within_capacity_and_groups_kueue_valid(fleet):
    for cluster in fleet.clusters.values():
        knob = _layout_knob(cluster)
        for choice in knob.choices:
            after = space.with_params(cluster, [knob], {knob.name: choice})
            assert _over_capacity(after) == [], (cluster.name, choice)  # CAP001, by rounding down
            for owner in [*after.cluster_queues.values(), *after.cohorts.values()]:
                for group in owner.resource_groups:
                    for fq in group.flavors:  # Kueue: every flavor lists the covered resources, in order
                        assert tuple(q.name for q in fq.resources) == group.covered_resources, (
                            owner.name,
                            choice,
                        )
                        for q in fq.resources:
                            assert q.lending_limit is None or q.lending_limit <= q.nominal  # CAP010
            exposed = layouts.new_mig_resources(_pool(after, knob.pool).capacity)
            serving = _flavor(after.cluster_queues["serving"], knob.pool)
            assert set(exposed) <= {q.name for q in serving.resources}


def test_a_generated_layout_carries_its_mig_parted_entry(fleet):
    cluster = fleet.clusters["prod-us"]
    after = layouts.with_layout(cluster, "us-a100-mig-1g", "all-3x1g.10gb-2x2g.20gb")
    entry = after.mig_configs["all-3x1g.10gb-2x2g.20gb"]
    assert "all-3x1g.10gb-2x2g.20gb" not in cluster.mig_configs  # a copy of the dict
    assert entry.data == [
        {
            "device-filter": list(A100.pci_device_ids),
            "devices": "all",
            "mig-enabled": True,
            "mig-devices": {"1g.10gb": 3, "2g.20gb": 2},
        }
    ]
    gpus = _pool(cluster, "us-a100-mig-1g").gpus  # the pool's size follows the fleet
    assert _pool(after, "us-a100-mig-1g").capacity == {
        "nvidia.com/mig-1g.10gb": 3 * gpus,
        "nvidia.com/mig-2g.20gb": 2 * gpus,
    }


# --- --apply
# ---------------------------------------------------------------------------------------------------


def _copy(tmp_path: Path) -> Path:
    return edits.copy_repository(REPO, tmp_path)


def _edited(root: Path, cluster_name: str, layout: str):
    cluster = load_fleet(root, [cluster_name]).clusters[cluster_name]
    knob_list = space.knobs(cluster)
    knob = next(k for k in knob_list if k.kind == layouts.LAYOUT)
    return edits.edited_files(root, cluster_name, knob_list, {knob.name: layout})


def _clean(root: Path) -> None:
    validate = cli_on(root, "validate")
    assert validate.returncode == 0, validate.stdout + validate.stderr
    assert "ok: 0 error(s), 0 warning(s)" in validate.stdout, validate.stdout


def test_apply_a_generated_layout_writes_every_file_and_validate_stays_clean(tmp_path):
    root = _copy(tmp_path)
    texts, errors = _edited(root, "prod-eu", "all-3x1g.10gb-2x2g.20gb")
    assert errors == []
    # the figures follow the fleet: the pool's cards, and the cards each queue's quota stands for, cut
    # 3x1g + 2x2g
    cluster = load_fleet(REPO, ["prod-eu"]).clusters["prod-eu"]
    gpus = _pool(cluster, "eu-a100-mig-balanced").gpus
    research_q, serving_q = cluster.cluster_queues["research"], cluster.cluster_queues["serving"]
    held, borrow = (
        int(_cards_held(cluster, research_q, "eu-a100-mig-balanced", f))
        for f in ("nominal", "borrowing_limit")
    )
    lent = int(_cards_held(cluster, serving_q, "eu-a100-mig-balanced", "lending_limit"))
    serves = int(
        _cards_held(cluster, serving_q, "eu-a100-mig-balanced")
        + _cards_held(cluster, serving_q, "eu-a100-mig-balanced", "borrowing_limit")
    )
    assert set(texts) == {
        "pools/eu-a100-mig-balanced/pool.yaml",
        CONFIG,
        "clusters/prod-eu/team-quotas.yaml",
        *(f"clusters/prod-eu/queues/{q}.yaml" for q in ("research", "serving", "vision")),
    }
    pool = texts["pools/eu-a100-mig-balanced/pool.yaml"]
    assert "    layout: all-3x1g.10gb-2x2g.20gb\n" in pool
    assert '    nvidia.com/mig.config: "all-3x1g.10gb-2x2g.20gb"\n' in pool
    assert "exposes nvidia.com/mig" not in pool and "# MIG layout" not in pool  # no counts in comments (0090)
    assert 'description: "Mixed-size MIG pool: every A100 cut 3x1g.10gb + 2x2g.20gb."' in pool
    assert "# Pool eu-a100-mig-balanced: Mixed-size MIG pool: every A100 cut 3x1g.10gb + 2x2g.20gb.\n" in pool
    assert "# One node: p4de.24xlarge" in pool  # comments kept
    config = texts[CONFIG]
    assert config.count("all-3x1g.10gb-2x2g.20gb:") == 1
    assert config.startswith((REPO / CONFIG).read_text())  # appended; the fleet's layouts untouched
    assert (
        '\n\n  # 3x1g.10gb + 2x2g.20gb = 7 of 7 compute slices, 7 of 8 memory slices on A100-80GB' in config
    )
    assert (
        '  all-3x1g.10gb-2x2g.20gb:\n    - device-filter: ["0x20B210DE", "0x20B510DE", "0x20F310DE", '
        '"0x20F510DE"]\n      devices: all\n      mig-enabled: true\n      mig-devices:\n        "1g.10gb": '
        '3\n        "2g.20gb": 2\n'
    ) in config
    research = texts["clusters/prod-eu/queues/research.yaml"]
    assert (
        f"eu-a100-mig-balanced (mig): mig-1g.10gb {3 * held} of {3 * gpus}, borrow up to {3 * borrow}; "
        f"mig-2g.20gb {2 * held} of {2 * gpus}, borrow up to {2 * borrow}.\n"
    ) in research
    mig_part = research[
        research.index("- name: eu-a100-mig-balanced") : research.index("- name: eu-h200-train")
    ]
    assert (
        f"- name: nvidia.com/mig-1g.10gb\n              nominalQuota: {3 * held}\n"
        f"              borrowingLimit: {3 * borrow}\n"
        f"            - name: nvidia.com/mig-2g.20gb\n              nominalQuota: {2 * held}\n"
        f"              borrowingLimit: {2 * borrow}\n"
        "            - name: nvidia.com/mig-3g.40gb\n              nominalQuota: 0\n              "
        "borrowingLimit: 0\n"
    ) in mig_part
    assert f"lend at most {3 * lent}" in texts["clusters/prod-eu/queues/serving.yaml"]
    team = texts["clusters/prod-eu/team-quotas.yaml"]
    # serving admits its nominal plus borrowing in slices of 1g and 2g; 3g, which the layout drops, comes
    # down to 0
    serving = team[team.index("namespace: serving") :]
    assert f'requests.nvidia.com/mig-1g.10gb: "{3 * serves}"' in serving
    assert f'requests.nvidia.com/mig-2g.20gb: "{2 * serves}"' in serving
    assert 'requests.nvidia.com/mig-3g.40gb: "0"' in serving
    edits.apply_to_repository(root, texts)
    docsgen.refresh(root)  # as `recommend --apply` does
    _clean(root)
    # a path of the copy, not of the working directory
    check = cli_on(root, "mig", "check", str(root / CONFIG))
    assert check.returncode == 0, check.stdout + check.stderr
    assert (
        "layout all-3x1g.10gb-2x2g.20gb" in check.stdout
        and ("6 layout(s) checked: 0 error(s), 0 warning(s)") in check.stdout
    )
    parsed = yaml.safe_load((root / CONFIG).read_text())
    assert parsed["mig-configs"]["all-3x1g.10gb-2x2g.20gb"][0]["mig-devices"] == {"1g.10gb": 3, "2g.20gb": 2}


def test_apply_a_config_layout_adds_the_profiles_to_every_flavor_and_namespace(tmp_path):
    root = _copy(tmp_path)
    # vision's namespace quota lists no 2g/3g keys at all: they must be added where its queue now admits them
    for rel in ("clusters/prod-us/team-quotas.yaml", "policies/teams/vision/resourcequota.yaml"):
        path = root / rel
        text = path.read_text()
        if rel.startswith("clusters"):
            start = text.index("namespace: vision")
            head, tail = text[:start], text[start:]
            tail = re.sub(r'    requests.nvidia.com/mig-(2g.20gb|3g.40gb): "\d+"\n', "", tail, count=2)
            text = head + tail
        else:
            text = re.sub(r'    requests.nvidia.com/mig-(2g.20gb|3g.40gb): "\d+"\n', "", text)
        path.write_text(text)
    texts, errors = _edited(root, "prod-us", "all-balanced")
    assert errors == []
    assert CONFIG not in texts  # the layout is already in the mig-parted config
    vision = texts["clusters/prod-us/queues/vision.yaml"]
    assert (
        "        - nvidia.com/mig-1g.10gb\n        - nvidia.com/mig-2g.20gb\n        - "
        "nvidia.com/mig-3g.40gb\n      flavors:"
    ) in vision
    # every flavor of the GPU group (the fleet's: training pools, the MIG pool, ...); not the cpu flavor,
    # whose
    # group covers cpu/memory only (0069)
    cluster = load_fleet(REPO, ["prod-us"]).clusters["prod-us"]
    vision_q = cluster.cluster_queues["vision"]
    gpu_flavors = next(
        len(g.flavors) for g in vision_q.resource_groups if "nvidia.com/mig-1g.10gb" in g.covered_resources
    )
    assert vision.count("- name: nvidia.com/mig-2g.20gb") == gpu_flavors
    start = vision.index("- coveredResources:\n        - cpu")
    cpu_group = vision[start : vision.index("- coveredResources:", start + 1)]
    assert "mig-" not in cpu_group
    # all-balanced cuts a card 2x1g + 1x2g + 1x3g: vision keeps the cards its quota stood for
    gpus = _pool(cluster, "us-a100-mig-1g").gpus
    held, borrow, lent = (
        int(_cards_held(cluster, vision_q, "us-a100-mig-1g", f))
        for f in ("nominal", "borrowing_limit", "lending_limit")
    )
    assert (
        f"mig-1g.10gb {2 * held} of {2 * gpus}, borrow up to {2 * borrow}, lend at most {2 * lent}; "
        f"mig-2g.20gb {held} of {gpus}"
    ) in vision
    pool = texts["pools/us-a100-mig-1g/pool.yaml"]
    assert 'description: "Dense inference pool: every A100 cut 2x1g.10gb + 1x2g.20gb + 1x3g.40gb."' in pool
    team = texts["clusters/prod-us/team-quotas.yaml"]
    vision_quota = team[team.index("namespace: vision") :].split("---")[0]
    admits = held + borrow  # nominal + borrowing, in cards, per profile of the layout
    assert (
        f'requests.nvidia.com/mig-1g.10gb: "{2 * admits}"\n'
        f'    requests.nvidia.com/mig-2g.20gb: "{admits}"\n'
        f'    requests.nvidia.com/mig-3g.40gb: "{admits}"\n'
    ) in vision_quota
    edits.apply_to_repository(root, texts)
    docsgen.refresh(root)  # as `recommend --apply` does
    _clean(root)


def test_a_test_pool_description_names_the_new_layout(tmp_path):
    root = _copy(tmp_path)
    texts, errors = _edited(root, "test-us", "all-1g.10gb")
    assert errors == []
    assert (
        "Test-cluster MIG pool: exercises mig-manager and the all-1g.10gb layout before production."
        in texts["pools/test-a100-mig/pool.yaml"]
    )


def test_a_layout_without_the_examples_profile_fails_the_rule_check(tmp_path):
    # docs/examples/inference-deployment-mig.yaml asks for nvidia.com/mig-1g.10gb: a layout without that
    # profile is refused on the copy (the command then walks to the next candidate); the example is not
    # rewritten
    root = _copy(tmp_path)
    texts, errors = _edited(root, "prod-us", "all-1x3g.40gb-1x4g.40gb")
    assert errors and all(e.startswith("WL011 ") for e in errors)
    assert "docs/examples/inference-deployment-mig.yaml" in errors[0] and "mig-1g.10gb" in errors[0]
    assert not any(rel.startswith("docs/") for rel in texts)


def test_a_layout_that_is_not_a_choice_is_refused(fleet):
    cluster = fleet.clusters["prod-us"]
    editor = edits.CandidateEditor(REPO)
    knob = _layout_knob(cluster)
    with pytest.raises(ToolError, match="not a layout the solver accepts"):
        editor.apply(fleet, cluster, [knob], {knob.name: "all-disabled"})
    assert editor.changed() == []


@pytest.fixture(scope="module")
def whole_fleet():
    # every cluster: examples under docs/examples/ are read only by a whole-fleet load
    return load_fleet(REPO)


def test_with_the_fleet_a_layout_keeps_the_profiles_the_examples_ask_for(whole_fleet):
    for name, cluster in sorted(whole_fleet.clusters.items()):
        # the embeddings example
        assert layouts.requested_profiles(whole_fleet, cluster) == {"nvidia.com/mig-1g.10gb"}
        [knob] = [k for k in space.knobs(cluster, whole_fleet) if k.kind == layouts.LAYOUT]
        everything = _layout_knob(cluster).choices
        kept = [c for c in everything if "1g.10gb" in c.replace("balanced", "1g.10gb")]
        assert knob.choices == tuple(kept) and len(kept) == 16 < len(everything), name
        assert "all-1x7g.80gb" not in knob.choices and knob.current in knob.choices


def test_a_profile_the_pool_does_not_make_today_does_not_narrow_its_choices(whole_fleet):
    cluster = whole_fleet.clusters["prod-us"]
    pools = layouts.searchable_pools(cluster, frozenset({"nvidia.com/mig-3g.40gb"}))  # all-1g.10gb makes none
    assert len(dict((p.name, c) for p, c in pools)["us-a100-mig-1g"]) == 28


def test_the_simulated_candidate_places_pods_on_the_new_layouts_instances(fleet):
    """The layout knob reaches the replay (decision 0059): pods needing 2 of 7 slices find no instance under
    all-1g.10gb and take 2g.20gb instances under all-balanced."""
    from gpupolicy.simulate import replay
    from gpupolicy.simulate.jobs import Job

    cluster = fleet.clusters["prod-us"]
    knob_list = space.knobs(cluster)
    jobs = [
        Job(f"s{i}", 0, 3600, share=0.25, queue="serving", tier="production", workload="inference")
        for i in range(48)
    ]
    taken = {}
    for layout in ("all-1g.10gb", "all-balanced"):
        result = replay(space.candidate_policy(cluster, knob_list, {"us-a100-mig-1g/layout": layout}), jobs)
        assert all(run.finished > 0 for run in result.runs)
        taken[layout] = sorted(
            {run.shape.profile for run in result.runs if run.flavor.pool == "us-a100-mig-1g"}
        )
    assert taken == {"all-1g.10gb": [], "all-balanced": ["2g.20gb"]}


def test_a_layout_and_a_lending_entry_on_one_queue_write_together_and_validate_clean(tmp_path):
    # the lending knob adds the lender's flavor to the group the layout converts: the entry must carry
    # the converted group's covered resources (a candidate of a prod-us search once stopped the command)
    root = _copy(tmp_path)
    cluster = load_fleet(root, ["prod-eu"]).clusters["prod-eu"]
    knob_list = space.knobs(cluster)
    layout = next(k for k in knob_list if k.kind == layouts.LAYOUT)
    lend = next(k for k in knob_list if k.grid)
    params = {layout.name: "all-3x1g.10gb-2x2g.20gb", lend.name: max(lend.grid)}
    texts, errors = edits.edited_files(root, "prod-eu", knob_list, params)
    assert errors == []
    queue = yaml.safe_load(texts[f"clusters/prod-eu/queues/{lend.queue}.yaml"])
    [group] = [
        g for g in queue["spec"]["resourceGroups"] if any(f["name"] == lend.flavor for f in g["flavors"])
    ]
    assert "nvidia.com/mig-2g.20gb" in group["coveredResources"]
    [entry] = [f for f in group["flavors"] if f["name"] == lend.flavor]
    assert [r["name"] for r in entry["resources"]] == list(group["coveredResources"])
    gpu = next(r for r in entry["resources"] if r["name"] == "nvidia.com/gpu")
    assert (gpu["nominalQuota"], gpu["borrowingLimit"]) == (0, max(lend.grid))
