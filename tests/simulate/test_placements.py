"""The placement registry (issue 30): one table of scores by name, one default, and the command line offering
exactly the table's names."""

from __future__ import annotations

import argparse
import random

import pytest

from gpupolicy.commands import recommend as recommend_command
from gpupolicy.commands import simulate as simulate_command
from gpupolicy.simulate.jobs import MILLI, Shape
from gpupolicy.simulate.nodeclasses import OWN_POLICY, POLICIES, SCORES, Cluster, NodeType, Pod
from gpupolicy.simulate.placement import (
    BASELINE_PLACEMENT,
    DEFAULT_PLACEMENT,
    PLACEMENTS,
    BestFit,
    FragAware,
    PoolState,
)
from gpupolicy.simulate.policy import SimPolicy


def _policy_choices(command) -> list[str]:
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    action = next(a for a in parser._actions if "--policy" in a.option_strings)
    assert action.default == DEFAULT_PLACEMENT
    return list(action.choices)


@pytest.mark.parametrize("command", [simulate_command, recommend_command], ids=["simulate", "recommend"])
def test_the_command_line_offers_the_registry(command) -> None:
    assert _policy_choices(command) == sorted(PLACEMENTS) == ["best-fit", "frag-aware"]


def test_the_defaults_are_registered_and_a_bare_policy_takes_the_baselines() -> None:
    assert {DEFAULT_PLACEMENT, BASELINE_PLACEMENT} <= set(PLACEMENTS)
    assert SimPolicy("p", {}, {}).placement == BASELINE_PLACEMENT
    assert isinstance(PLACEMENTS[DEFAULT_PLACEMENT], FragAware)
    assert type(PLACEMENTS[BASELINE_PLACEMENT]) is BestFit


def test_an_unknown_placement_is_refused_with_the_names_it_could_be() -> None:
    with pytest.raises(ValueError, match="unknown placement 'tightest': one of best-fit, frag-aware"):
        PoolState("p", 1, 8, "tightest")


def test_frag_aware_without_typical_sizes_places_as_best_fit() -> None:
    shapes = [Shape(1, 1, MILLI // 4), Shape(1, 2, MILLI), Shape(1, 1, MILLI // 2), Shape(2, 1, MILLI)]
    placed = {}
    for name in PLACEMENTS:
        pool = PoolState("p", 3, 4, name)
        placed[name] = [pool.place(shape) for shape in shapes]
    assert placed["frag-aware"] == placed["best-fit"]
    assert all(placed["best-fit"])


def test_frag_aware_keeps_a_card_usable_for_the_typical_pod_where_best_fit_packs_it() -> None:
    """Half-card pods are the workload: best-fit puts a quarter-card pod on the half-used card (its 250 left
    serve no typical pod); frag-aware puts it on a free card, which keeps 750."""
    typical = [((1, MILLI // 2), 1.0)]
    spots = {}
    for name in PLACEMENTS:
        pool = PoolState("p", 2, 4, name, typical)
        assert pool.place(Shape(1, 1, MILLI // 2)) == [(0, 0, MILLI // 2, 0)]
        spots[name] = pool.place(Shape(1, 1, MILLI // 4))
    assert spots == {"best-fit": [(0, 0, MILLI // 4, 0)], "frag-aware": [(0, 1, MILLI // 4, 0)]}


def test_the_node_class_pool_scores_every_policy_of_the_experiment_and_refuses_others() -> None:
    assert set(SCORES) == {*POLICIES, OWN_POLICY} and OWN_POLICY == DEFAULT_PLACEMENT
    nodes = [NodeType("V100", 64_000, 256_000, 8)] * 2
    for policy in SCORES:
        typical = [(Pod(1000, 0, 1, MILLI, frozenset()), 1.0)]
        cluster = Cluster(nodes, typical, random.Random(0), policy=policy, own_typical=[(1, MILLI, 1.0)])
        assert cluster.place(Shape(1, 1, MILLI // 2, demand=(1000, 0, frozenset()))) is not None
    with pytest.raises(ValueError, match="unknown node-class policy 'tightest'"):
        Cluster(nodes, [], random.Random(0), policy="tightest")
