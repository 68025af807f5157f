"""A MIG pool replayed per layout: a pod takes one instance of a profile the layout makes (migpool.py)."""

from __future__ import annotations

import dataclasses

import pytest
from support import fleet_repo

from gpupolicy.findings import Location
from gpupolicy.model import ConfigEntry
from gpupolicy.pipeline import load_fleet
from gpupolicy.simulate import Engine
from gpupolicy.simulate.jobs import Job, Shape, shape_in_pool
from gpupolicy.simulate.migpool import MigPoolState
from gpupolicy.simulate.policy import FlavorQuota, SimPolicy, SimPool, SimQueue, from_cluster

# The tests' own rich fleet (tests/fixtures/fleet), not whatever fleet this repository holds (decision 0085).
REPO = fleet_repo()
BALANCED = (("1g.10gb", 2), ("2g.20gb", 1), ("3g.40gb", 1))
ALL_1G = (("1g.10gb", 7),)


@pytest.fixture(scope="module")
def prod_eu():
    return load_fleet(REPO, ["prod-eu"]).clusters["prod-eu"]


def mig_shape(job: Job, profiles: tuple[str, ...]) -> Shape | None:
    return shape_in_pool(job, "mig", 1, 8, False, "A100-80GB", profiles=profiles)


def test_a_job_takes_the_smallest_instance_of_the_layout_that_holds_it():
    balanced = ("1g.10gb", "2g.20gb", "3g.40gb")
    assert mig_shape(Job("a", 0, 1, share=0.1), balanced) == Shape(1, 1, 142, profile="1g.10gb")
    assert mig_shape(Job("b", 0, 1, share=0.2), balanced) == Shape(1, 1, 285, profile="2g.20gb")
    assert mig_shape(Job("c", 0, 1, share=0.3), balanced) == Shape(1, 1, 428, profile="3g.40gb")
    assert mig_shape(Job("d", 0, 1, share=0.5), balanced) is None  # needs 4 of 7 slices: no 4g in this layout
    assert mig_shape(Job("e", 0, 1, mig="2g.20gb"), ("1g.10gb",)) is None
    # a named profile the layout lacks is served by the smallest one with its slices and memory
    assert mig_shape(Job("f", 0, 1, mig="1g.20gb"), balanced).profile == "2g.20gb"
    assert mig_shape(Job("g", 0, 1, mig="nvidia.com/mig-3g.40gb"), balanced).profile == "3g.40gb"
    # whole-card jobs never run on a MIG pool, whatever its layout
    assert mig_shape(Job("h", 0, 1, gpus=1), balanced) is None


def test_quota_of_n_instances_admits_n_of_them():
    from gpupolicy.simulate.policy import quota_milli

    pool = SimPool("m", 1, 8, "mig", model="A100-80GB", instances=(BALANCED,) * 8)
    for profile, count in (("1g.10gb", 16), ("2g.20gb", 8), ("3g.40gb", 8)):
        shape = mig_shape(Job("x", 0, 1, mig=profile), pool.profiles)
        assert count * shape.milli <= quota_milli(f"nvidia.com/mig-{profile}", count, pool)


def test_instances_are_fixed_a_1g_job_waits_while_a_3g_instance_is_free():
    state = MigPoolState("m", 1, (BALANCED,), "A100-80GB")
    one = Shape(1, 1, 142, profile="1g.10gb")
    three = Shape(1, 1, 428, profile="3g.40gb")
    first, second = state.place(one), state.place(one)
    assert first and second
    assert state.place(one) is None and not state.fits(one)
    assert state.fits(three)
    assert state.place(Shape(2, 1, 428, profile="3g.40gb")) is None  # gang: one 3g instance only
    assert state.allocated == 284  # the failed gang took nothing
    state.release(first)
    assert state.fits(one) and state.allocated == 142


def test_failed_nodes_hold_no_instances_until_they_recover():
    state = MigPoolState("m", 2, (ALL_1G,) * 2, "A100-80GB")
    one = Shape(1, 1, 142, profile="1g.10gb")
    slots = state.place(Shape(3, 1, 142, profile="1g.10gb"))
    assert {node for node, *_ in slots} == {0}  # best fit: the node already in use fills first
    down = state.fail(1)
    assert down == [1]
    assert state.capacity == 2 * 1000  # one node of two cards left
    assert all(node == 0 for node, *_ in state.place(Shape(11, 1, 142, profile="1g.10gb")))
    assert state.place(one) is None  # node 0's 14 instances are all taken
    state.recover(down)
    assert state.place(one)[0][0] == 1


def _policy(instances: tuple) -> SimPolicy:
    pool = SimPool("mig", 1, 1, "mig", model="A100-80GB", instances=instances)
    queue = SimQueue("serving", (FlavorQuota("mig-flavor", "mig", 1000),), workload="inference")
    return SimPolicy("proposed", {"mig": pool}, {"serving": queue})


def test_the_layout_decides_what_runs_at_once():
    jobs = [Job(f"j{i}", 0, 3600, share=0.1, workload="inference") for i in range(14)]
    ends = {}
    for name, layout in (("all-1g", ALL_1G), ("balanced", BALANCED)):
        result = Engine(_policy((layout,)), jobs, ["serving"] * len(jobs)).run()
        assert all(run.finished > 0 for run in result.runs)
        ends[name] = result.end
    assert ends == {"all-1g": 2 * 3600, "balanced": 7 * 3600}  # 7 at a time against 2 at a time


def test_a_larger_job_behind_a_waiting_smaller_one_takes_a_free_larger_instance():
    jobs = [
        Job("a", 0, 3600, share=0.1, workload="inference"),
        Job("b", 0, 3600, share=0.1, workload="inference"),
        Job("c", 10, 3600, share=0.1, workload="inference"),
        Job("d", 20, 3600, share=0.4, workload="inference"),
    ]
    result = Engine(_policy((BALANCED,)), jobs, ["serving"] * len(jobs)).run()
    started = {run.job.id: run.first_start for run in result.runs}
    assert started == {"a": 0, "b": 0, "c": 3600, "d": 20}  # d skipped the waiting 1g job: its 3g was free


def test_the_reference_fleet_replays_each_mig_pool_per_layout(prod_eu):
    cluster = prod_eu
    pool = from_cluster(cluster).pools["eu-a100-mig-balanced"]
    assert pool.instances == (BALANCED,) * 8
    assert pool.profiles == ("1g.10gb", "2g.20gb", "3g.40gb")


def test_an_unknown_layout_keeps_the_optimistic_model(prod_eu):
    cluster = prod_eu
    pools = [
        dataclasses.replace(p, mig_layout="no-such-layout") if p.name == "eu-a100-mig-balanced" else p
        for p in cluster.pools
    ]
    pool = from_cluster(dataclasses.replace(cluster, pools=pools, derived={})).pools["eu-a100-mig-balanced"]
    assert pool.instances == ()
    assert mig_shape(Job("x", 0, 1, share=0.5), pool.profiles).milli == 572  # rounded up to a 4g size


@pytest.mark.parametrize(
    "entries",
    [
        [
            {"devices": "all", "mig-enabled": True, "mig-devices": {"1c.2g.20gb": 2}}
        ],  # a compute-instance profile
        [{"devices": "all", "mig-enabled": False, "mig-devices": {}}],  # no MIG at all
        "not a list",
    ],
)
def test_layouts_the_replay_cannot_place_fall_back(prod_eu, entries):
    cluster = prod_eu
    configs = dict(cluster.mig_configs)
    configs["odd"] = ConfigEntry("mig-parted-config", "odd", entries, Location("policies/x.yaml", 1))
    pools = [
        dataclasses.replace(p, mig_layout="odd") if p.name == "eu-a100-mig-balanced" else p
        for p in cluster.pools
    ]
    odd = dataclasses.replace(cluster, pools=pools, mig_configs=configs, derived={})
    assert from_cluster(odd).pools["eu-a100-mig-balanced"].instances == ()
