"""The FGD simulator's workload protocol as engine options, and fidelity.py as a driver of the engine."""

from __future__ import annotations

import random

from gpupolicy.simulate import fidelity
from gpupolicy.simulate.engine import NOT_QUEUED_REASON, Engine
from gpupolicy.simulate.jobs import Job
from gpupolicy.simulate.policy import FlavorQuota, SimPolicy, SimPool, SimQueue


def _one_node_policy() -> SimPolicy:
    pool = SimPool("p", 1, 2, "exclusive")
    return SimPolicy("p", {"p": pool}, {"q": SimQueue("q", (FlavorQuota("p", "p", 2000),))})


def test_without_queueing_a_job_that_does_not_fit_on_arrival_is_dropped():
    jobs = [Job("a", 0, 100, gpus=2), Job("b", 10, 100, gpus=1)]
    result = Engine(_one_node_policy(), jobs, ["q", "q"], queueing=False).run()
    assert result.runs[0].first_start == 0
    assert result.runs[1].first_start < 0 and result.runs[1].never_reason == NOT_QUEUED_REASON
    queued = Engine(_one_node_policy(), jobs, ["q", "q"]).run()
    assert queued.runs[1].first_start == 100  # the default: it waits for the cards


def test_without_departures_a_started_job_keeps_its_cards():
    jobs = [Job("a", 0, 100, gpus=1), Job("b", 500, 100, gpus=1), Job("c", 900, 100, gpus=1)]
    result = Engine(_one_node_policy(), jobs, ["q"] * 3, departures=False, queueing=False).run()
    assert [run.first_start for run in result.runs] == [0, 500, -1]
    assert [milli for _, milli, _ in result.timeline] == [1000, 2000]  # and never back down


def _direct_curve(nodes, pods, policy: str, seed: int) -> list[float]:
    """The experiment without the engine: each arrival straight to the node-class pool (the oracle)."""
    rng = random.Random(seed)
    typical = fidelity.typical_pods(pods)
    pool = fidelity.Cluster(nodes, typical, rng, policy=policy)
    allocation = []
    for pod in fidelity.arrivals(pods, pool.capacity, 1.3, rng):
        pool.schedule(pod, policy)
        allocation.append(pool.allocated)
    return allocation


def test_the_engine_driven_experiment_places_exactly_as_the_pool_alone():
    rng = random.Random(5)
    nodes = [
        fidelity.NodeType(rng.choice(["G2", "T4"]), 32_000, 131_072, rng.choice([2, 4, 8])) for _ in range(12)
    ]
    pods = [
        fidelity.Pod(
            rng.choice([0, 2000, 8000]),
            1024,
            *rng.choice([(0, 0), (1, 250), (1, 500), (1, 1000), (2, 1000)]),
            frozenset({"T4"}) if rng.random() < 0.2 else frozenset(),
        )
        for _ in range(200)
    ]
    for policy in fidelity.POLICIES:
        direct = _direct_curve(nodes, pods, policy, seed=7)
        capacity = sum(n.cards for n in nodes) * 1000
        curve = fidelity.run_experiment(nodes, pods, policy, seed=7)
        assert curve[130] == 100.0 * direct[-1] / capacity
        assert max(curve) <= 100.0


def test_without_queueing_a_retry_that_does_not_fit_is_dropped_too():
    from gpupolicy.simulate.busy import with_busy_devices

    pool = SimPool("shared", 1, 1, "time-sliced", replicas=2)
    policy = with_busy_devices(
        SimPolicy("p", {"shared": pool}, {"q": SimQueue("q", (FlavorQuota("shared", "shared", 1000),))}),
        {"shared": False},
    )
    # b fails at start next to a (memory), is retried at 10 s, when c holds the other replica: dropped then
    jobs = [Job("a", 0, 1000, share=0.6), Job("b", 0, 100, share=0.6), Job("c", 5, 1000, share=0.1)]
    result = Engine(policy, jobs, ["q"] * 3, queueing=False).run()
    a, b, c = result.runs
    assert a.first_start == 0 and c.first_start == 5
    assert b.busy_starts == 1 and b.first_start < 0 and b.never_reason == NOT_QUEUED_REASON
