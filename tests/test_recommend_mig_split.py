"""`recommend`'s MIG-split knob (`<mig pool>/split`, recommend/mig_split.py): where it is offered, its range,
the candidate cluster, the files --apply writes, and how it composes with the layout knob.

The fixture is the tests' own fleet (tests/fixtures/fleet) with a whole-card A100 pool added beside prod-us's
MIG pool by `gpupolicy new pool`, as a user would split a pool; its name says nothing of "whole"."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from support import REPO, cli_on, copy_repo, fleet_repo, run_gpupolicy

from gpupolicy import docsgen
from gpupolicy.model import GPU_RESOURCE
from gpupolicy.pipeline import load_fleet
from gpupolicy.recommend import edits, layouts, mig_split, search, space
from gpupolicy.rules import cap001_quota_over_capacity as cap001
from gpupolicy.rules import cap005_production_reserve as cap005
from gpupolicy.rules import cap010_lending_over_nominal as cap010

CLUSTER = "prod-us"
MIG = "us-a100-mig-1g"  # the fixture fleet's MIG pool in prod-us: 4 nodes, us-west-2a 2 and us-west-2b 2
SIBLING = "fx-a100-cards"
SIBLING_ZONES = {"us-west-2a": 1, "us-west-2b": 2}


@pytest.fixture(scope="module")
def split_repo(tmp_path_factory) -> Path:
    """The fixture fleet with SIBLING added (3 nodes of the MIG pool's hardware; serving, production, holds 8
    cards of it, what survives losing us-west-2b)."""
    repo = copy_repo(fleet_repo(), tmp_path_factory.mktemp("split") / "repo")
    zones = [word for zone, nodes in SIBLING_ZONES.items() for word in ("--zone", f"{zone}={nodes}")]
    done = run_gpupolicy(
        "new", "pool", SIBLING, "--cluster", CLUSTER, "--gpu", "A100-80GB", "--per-node", "8", *zones,
        "--access", "exclusive", "--node-cpu", "96", "--node-memory", "1152Gi",
        "--description", "Whole A100s beside the MIG pool.",
        "--quota", "serving=8", "--quota", "research=8", "--repo", str(repo),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return repo


@pytest.fixture(scope="module")
def fleet(split_repo):
    return load_fleet(split_repo, [CLUSTER, "prod-eu", "test-us"])


@pytest.fixture(scope="module")
def cluster(fleet):
    return fleet.clusters[CLUSTER]


def _pool(cluster, name):
    return next(p for p in cluster.pools if p.name == name)


def _split_knob(knob_list):
    [knob] = [k for k in knob_list if k.kind == mig_split.SPLIT]
    return knob


def _findings(fleet, candidate, *rules):
    """The findings of `rules` on the fleet with `candidate` in place of its cluster."""
    changed = dataclasses.replace(fleet, clusters={**fleet.clusters, candidate.name: candidate}, derived={})
    return [f"{f.rule}: {f.message}" for rule in rules for f in rule.check(changed)]


def test_the_knob_is_offered_only_to_a_mig_pool_with_one_whole_card_sibling(fleet, cluster):
    plain = load_fleet(fleet_repo(), None)
    assert all(not space.split_knobs(c) for c in plain.clusters.values())  # no sibling: no knob
    assert {name: [k.name for k in space.split_knobs(c)] for name, c in sorted(fleet.clusters.items())} == {
        "prod-eu": [],
        "prod-us": [f"{MIG}/split"],
        "test-us": [],
    }
    knob = _split_knob(space.knobs(cluster, fleet))
    assert (knob.pool, knob.sibling, knob.current) == (MIG, SIBLING, 4)
    # other hardware is no sibling: another node shape, another card count per node
    for change in ({"node_cpu": 192.0}, {"gpus_per_node": 4}):
        pools = [dataclasses.replace(p, **change) if p.name == SIBLING else p for p in cluster.pools]
        assert mig_split.siblings(dataclasses.replace(cluster, pools=pools, derived={})) == []
    # a second whole-card pool of the same hardware makes the pairing a guess: no knob
    twin = dataclasses.replace(_pool(cluster, SIBLING), name="fx-twin")
    pools = [*cluster.pools, twin]
    flavors = {**cluster.flavors, "fx-twin": cluster.flavors[SIBLING]}
    assert mig_split.siblings(dataclasses.replace(cluster, pools=pools, flavors=flavors, derived={})) == []


def test_the_range_keeps_a_node_on_each_side_and_leaves_out_counts_that_break_the_reserve(fleet, cluster):
    knob = _split_knob(space.knobs(cluster, fleet))
    total = _pool(cluster, MIG).nodes + _pool(cluster, SIBLING).nodes
    assert set(knob.grid) <= set(range(1, total)) and knob.current in knob.grid
    assert (knob.low, knob.high) == (min(knob.grid), max(knob.grid))
    assert search.distributions([knob])[knob.name].choices == knob.grid  # sampled over those counts
    left_out = []
    for nodes in range(1, total):
        candidate = mig_split.with_split(cluster, MIG, SIBLING, nodes)
        broken = _findings(fleet, candidate, cap005)
        assert (nodes in knob.grid) == (not broken), (nodes, broken)
        if broken:
            left_out.append(nodes)
    # serving, production, holds half of the MIG pool (4 nodes, 2 + 2 by zone) and 8 of the sibling's 24
    # cards (1 + 2): on 1 MIG node a node loss leaves nothing; on 3 (1 + 2) and 5 (2 + 3) losing the larger
    # zone leaves a third and two fifths of the half; on 6 the sibling's one node is all its reserve
    assert knob.grid == (2, 4) and left_out == [1, 3, 5, 6]


def test_the_candidate_moves_whole_nodes_and_scales_capacity_and_every_quota(fleet, cluster):
    knob = _split_knob(space.knobs(cluster, fleet))
    mig, whole = _pool(cluster, MIG), _pool(cluster, SIBLING)
    zones = {z: mig.zones.get(z, 0) + whole.zones.get(z, 0) for z in {*mig.zones, *whole.zones}}
    for nodes in knob.grid:
        candidate = space.with_params(cluster, [knob], {knob.name: nodes})
        new_mig, new_whole = _pool(candidate, MIG), _pool(candidate, SIBLING)
        assert (new_mig.nodes, new_whole.nodes) == (nodes, mig.nodes + whole.nodes - nodes)
        together = {z: new_mig.zones.get(z, 0) + new_whole.zones.get(z, 0) for z in zones}
        assert together == zones and 0 not in new_mig.zones.values()  # a node keeps its zone
        for old, new in ((mig, new_mig), (whole, new_whole)):
            assert new.capacity == {r: n // old.nodes * new.nodes for r, n in old.capacity.items()}
            assert new.mig_layout == old.mig_layout and new.access_mode == old.access_mode
        for name, cq in cluster.cluster_queues.items():
            for (flavor, before), (_, after) in zip(
                cq.quotas(), candidate.cluster_queues[name].quotas(), strict=True
            ):
                pool = {MIG: (mig, new_mig), SIBLING: (whole, new_whole)}.get(flavor)
                if pool is None or not before.name.startswith("nvidia.com/"):
                    assert after == before
                    continue
                old, new = pool
                for field in ("nominal", "borrowing_limit", "lending_limit"):
                    value = getattr(before, field)
                    expected = None if value is None else int(value) * new.nodes // old.nodes
                    assert getattr(after, field) == expected, (nodes, name, flavor, field)
        assert _findings(fleet, candidate, cap001, cap005, cap010) == [], nodes  # by construction


def test_nodes_move_within_the_zones_the_receiver_has_first_largest_zone_of_the_giver_first():
    giver, receiver = {"a": 1, "b": 3, "c": 2}, {"c": 1}
    assert mig_split.moved_zones(giver, receiver, 1) == ({"a": 1, "b": 3, "c": 1}, {"c": 2})
    # the receiver's zone emptied: the giver's largest zone next, then the largest again (ties by name)
    assert mig_split.moved_zones(giver, receiver, 3) == ({"a": 1, "b": 2}, {"c": 3, "b": 1})
    assert mig_split.moved_zones(giver, receiver, 5) == ({"a": 1}, {"c": 3, "b": 3})
    # a receiver with no node: the first node opens a zone, the next stays in it
    assert mig_split.moved_zones({"a": 2, "b": 2}, {}, 2) == ({"b": 2}, {"a": 2})


def test_todays_count_changes_nothing(split_repo, cluster):
    knob_list = space.knobs(cluster)
    knob = _split_knob(knob_list)
    assert mig_split.with_split(cluster, MIG, SIBLING, knob.current) is cluster
    assert space.changes(knob_list, {knob.name: knob.current}) == []
    assert space.with_params(cluster, knob_list, {knob.name: knob.current}).pools == cluster.pools
    assert edits.edited_files(split_repo, CLUSTER, knob_list, {knob.name: knob.current}) == ({}, [])
    # `search.simplify` takes a change back by setting the knob to its current value: nothing else moves
    other = space.resolved(knob_list, {knob.name: max(n for n in knob.grid if n != knob.current)})
    back = other | {knob.name: knob.current}
    assert space.resolved(knob_list, back) == back and space.changes(knob_list, back) == []


# a queue header's line per flavor (domain/queue_header.py): generated, so it restates the new counts
HEADER_LINE = re.compile(r"^#\s+[\w.-]+ \([\w-]+\): ")


def _comments(text: str) -> list[str]:
    lines = (line.strip() for line in text.splitlines())
    return [line for line in lines if line.startswith("#") and not HEADER_LINE.match(line)]


def test_apply_writes_both_pools_and_the_quotas_and_validate_stays_clean(split_repo, cluster, tmp_path):
    root = copy_repo(split_repo, tmp_path / "repo")
    knob_list = space.knobs(cluster)
    knob = _split_knob(knob_list)
    nodes = max(n for n in knob.grid if n != knob.current)
    expected = space.with_params(cluster, knob_list, {knob.name: nodes})
    texts, errors = edits.edited_files(root, CLUSTER, knob_list, {knob.name: nodes})
    assert errors == []
    mig_yaml, whole_yaml = f"pools/{MIG}/pool.yaml", f"pools/{SIBLING}/pool.yaml"
    assert {mig_yaml, whole_yaml, f"clusters/{CLUSTER}/team-quotas.yaml"} <= texts.keys()
    assert {f"clusters/{CLUSTER}/queues/{q}.yaml" for q in ("serving", "research", "vision")} <= texts.keys()
    for rel in texts:  # every comment is kept (the queue headers' flavor lines are regenerated)
        assert _comments(texts[rel]) == _comments((root / rel).read_text()), rel
    edits.apply_to_repository(root, texts)
    docsgen.refresh(root)  # as `recommend --apply` does
    validate = cli_on(root, "validate")
    assert validate.returncode == 0, validate.stdout + validate.stderr
    assert "ok: 0 error(s), 0 warning(s)" in validate.stdout, validate.stdout
    # the files say what the simulator replayed: zones and every GPU quota of the re-loaded repository
    reloaded = load_fleet(root, [CLUSTER]).clusters[CLUSTER]
    for name in (MIG, SIBLING):
        assert _pool(reloaded, name).zones == _pool(expected, name).zones
        assert _pool(reloaded, name).capacity == _pool(expected, name).capacity
    for name, cq in expected.cluster_queues.items():
        gpu = [(f, q) for f, q in cq.quotas() if q.name.startswith("nvidia.com/")]
        assert gpu == [
            (f, q) for f, q in reloaded.cluster_queues[name].quotas() if q.name.startswith("nvidia.com/")
        ]
    # serving's production quota on the sibling follows its nodes (8 cards on 3 nodes today)
    quotas = reloaded.cluster_queues["serving"].quotas()
    [serving] = [q for f, q in quotas if f == SIBLING and q.name == GPU_RESOURCE]
    assert serving.nominal == 8 * _pool(expected, SIBLING).nodes // 3 != 8


def test_the_split_composes_with_the_layout_knob(split_repo, cluster, tmp_path):
    knob_list = space.knobs(cluster)
    split = _split_knob(knob_list)
    layout = next(k for k in knob_list if k.kind == layouts.LAYOUT and k.pool == MIG)
    nodes = max(n for n in split.grid if n != split.current)
    params = {split.name: nodes, layout.name: "all-balanced"}
    laid = layouts.with_layout(cluster, MIG, "all-balanced")
    both = space.with_params(cluster, knob_list, params)
    assert _pool(both, MIG).mig_layout == "all-balanced" and _pool(both, MIG).nodes == nodes
    per_node = {r: n // split.current for r, n in _pool(laid, MIG).capacity.items()}
    assert _pool(both, MIG).capacity == {r: n * nodes for r, n in per_node.items()}
    research = dict((f"{f} {q.name}", q) for f, q in laid.cluster_queues["research"].quotas())
    for flavor, quota in both.cluster_queues["research"].quotas():
        if flavor == MIG and quota.name.startswith("nvidia.com/mig-"):
            assert quota.nominal == research[f"{flavor} {quota.name}"].nominal * nodes // split.current
    root = copy_repo(split_repo, tmp_path / "repo")
    texts, errors = edits.edited_files(root, CLUSTER, knob_list, params)
    assert errors == []
    assert "layout: all-balanced" in texts[f"pools/{MIG}/pool.yaml"]


@pytest.mark.reference_fleet
def test_the_reference_fleet_offers_the_split_on_its_split_pools():
    """Decision 0071 split each production cluster's A100s into a MIG pool and a whole-card pool by hand."""
    fleet = load_fleet(REPO, None)
    offered = {
        name: {(k.pool, k.sibling, k.current) for k in space.split_knobs(c)}
        for name, c in sorted(fleet.clusters.items())
    }
    assert offered == {
        "prod-eu": {("eu-a100-mig-balanced", "eu-a100-whole", 1)},
        "prod-us": {("us-a100-mig-1g", "us-a100-whole", 1)},
        "test-us": set(),
    }
