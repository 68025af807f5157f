"""Kueue's cohort-tree quota arithmetic (simulate/quota.py) on the shape of the reference fleet's tree, and
the
engine borrowing and reclaiming through parent cohorts."""

from __future__ import annotations

import dataclasses

import pytest
from simhelpers import build_cluster, peak_usage

from gpupolicy.errors import ToolError
from gpupolicy.model import Cohort, FlavorQuotas, ResourceGroup, ResourceQuota
from gpupolicy.simulate.engine import Engine
from gpupolicy.simulate.jobs import Job
from gpupolicy.simulate.policy import FlavorQuota, SimCohort, SimQueue, from_cluster
from gpupolicy.simulate.quota import QuotaTree, available

F = "h100"
G = 1000  # one GPU in milli


def fleet_tree(research_borrow: int | None = 8 * G) -> QuotaTree:
    """fleet <- training (nlp: 36, lends at most 24; vision: 20) and fleet <- research (research: 0, borrows
    8);
    fleet <- production holds 16 of its own and lends none."""
    queues = {
        "nlp": SimQueue("nlp", (FlavorQuota(F, "p", 36 * G, 16 * G, 24 * G),), cohort="training"),
        "vision": SimQueue("vision", (FlavorQuota(F, "p", 20 * G),), cohort="training"),
        "research": SimQueue("research", (FlavorQuota(F, "p", 0, research_borrow),), cohort="research"),
        "serving": SimQueue("serving", (FlavorQuota(F, "p", 8 * G),), cohort="production"),
    }
    cohorts = {
        "fleet": SimCohort("fleet"),
        "training": SimCohort("training", "fleet"),
        "research": SimCohort("research", "fleet"),
        "production": SimCohort("production", "fleet", (FlavorQuota(F, "p", 16 * G, None, 0),)),
    }
    return QuotaTree(queues, cohorts)


def test_quota_flows_up_through_parent_cohorts():
    tree = fleet_tree()
    # nlp keeps 12 of its 36 (lendingLimit 24); vision lends all 20; production keeps all 24 it holds
    assert tree.leaves[("nlp", F)].local == 12 * G
    fleet = tree.leaves[("research", F)].parent.parent
    assert fleet.name == "fleet" and fleet.subtree == 44 * G
    # research has no quota of its own and no cohort sibling: all it borrows comes through `fleet`
    assert tree.potential("research", F) == 8 * G
    assert fleet_tree(research_borrow=None).potential("research", F) == 44 * G
    assert tree.potential("nlp", F) == 36 * G + 16 * G
    assert tree.potential("serving", F) == 24 * G + 44 * G  # production's own 16 plus what the fleet lends


def test_usage_is_stored_in_the_parent_only_beyond_local_quota():
    tree = fleet_tree()
    nlp = tree.leaves[("nlp", F)]
    tree.use("nlp", F, 12 * G)
    assert nlp.parent.usage == 0  # within the quota nlp never lends
    tree.use("nlp", F, 8 * G)
    assert nlp.parent.usage == 8 * G and nlp.parent.parent.usage == 8 * G
    assert tree.fits("research", F, 8 * G) and not tree.fits("research", F, 9 * G)  # its borrowingLimit
    tree.use("research", F, 8 * G)
    assert nlp.parent.parent.usage == 16 * G
    tree.use("nlp", F, -20 * G)
    assert nlp.usage == 0 and nlp.parent.usage == 0 and nlp.parent.parent.usage == 8 * G


def test_what_a_queue_may_admit_follows_every_change_of_usage_in_its_tree():
    """`available` is kept on each node until usage anywhere in its tree moves, a tentative change
    (QuotaTree.shift) included: a queue's room changes when another queue of the tree, two levels away,
    borrows or gives back."""
    tree = fleet_tree(research_borrow=None)
    research, nlp = tree.leaves[("research", F)], tree.leaves[("nlp", F)]
    asked = [available(research), available(nlp)]  # kept
    assert asked == [44 * G, 52 * G] and [available(research), available(nlp)] == asked
    tree.use("vision", F, 20 * G)  # vision lends all 20 of its own: the fleet has 20 fewer to lend
    assert available(research) == 24 * G and available(nlp) == 36 * G
    tree.shift("nlp", F, 36 * G)  # nlp's 12 kept, 24 more from the fleet: nothing left to lend
    assert available(research) == 0 and available(nlp) == 0
    tree.shift("nlp", F, -36 * G)
    assert available(research) == 24 * G and available(nlp) == 36 * G
    assert tree.versions[F] == 1  # the tentative change moved no version, yet nothing stale was read


def test_the_fleet_cannot_lend_more_than_it_holds():
    tree = fleet_tree(research_borrow=None)
    tree.use("research", F, 40 * G)
    assert tree.fits("nlp", F, 12 * G)  # nlp's local quota is its own whatever the fleet has lent
    assert not tree.fits("nlp", F, 17 * G)  # 12 local + the fleet's last 4
    assert tree.fits("serving", F, 24 * G) and not tree.fits("serving", F, 29 * G)


def test_only_a_queue_with_the_advantage_reclaims_and_only_from_borrowers():
    tree = fleet_tree()
    tree.use("research", F, 8 * G)  # borrowing through the fleet
    assert tree.reclaim_sources("nlp", F, 4 * G) == ["research"]  # nlp within its nominal: advantage
    assert tree.reclaim_sources("research", F, 1 * G) == []  # a borrower never reclaims
    tree.use("vision", F, 30 * G)  # vision borrows 10 beyond its nominal
    assert sorted(tree.reclaim_sources("nlp", F, 4 * G)) == ["research", "vision"]
    # nlp beyond its own nominal but within what its cohort holds: still ahead of the fleet's other subtrees
    tree.use("vision", F, -30 * G)
    assert tree.reclaim_sources("nlp", F, 40 * G) == ["research"]


def _sibling_cohort_cluster():
    """team-c-experiments moves to its own cohort `lab` with no quota on train-flavor; `lab` and `research`
    (team-a, team-b) are children of `fleet`."""
    cluster = build_cluster()
    queues = dict(cluster.cluster_queues)
    borrower = queues["team-c-experiments"]
    group = borrower.resource_groups[0]
    train = FlavorQuotas("train-flavor", (ResourceQuota("nvidia.com/gpu", 0, 8),))
    queues["team-c-experiments"] = dataclasses.replace(
        borrower,
        cohort="lab",
        resource_groups=(
            ResourceGroup(("nvidia.com/gpu", *group.covered_resources), (*group.flavors, train)),
        ),
    )
    cohorts = {
        "fleet": Cohort("fleet", "", (), None),
        "research": Cohort("research", "fleet", (), None),
        "lab": Cohort("lab", "fleet", (), None),
    }
    return dataclasses.replace(cluster, cluster_queues=queues, cohorts=cohorts)


def test_engine_lends_through_the_parent_cohort():
    policy = from_cluster(_sibling_cohort_cluster())
    jobs = [Job(f"x{i}", 0, 3600, gpus=1, team="team-c", tier="experiment") for i in range(12)]
    peak, result = peak_usage(
        Engine(policy, jobs, ["team-c-experiments"] * len(jobs)), "team-c-experiments", "train-flavor"
    )
    assert peak == 8 * G  # its borrowingLimit, lent by team-a and team-b through `fleet`
    assert all(run.finished > 0 for run in result.runs)


def test_a_cohort_cycle_is_refused_not_walked():
    cluster = build_cluster()
    cycle = {"research": Cohort("research", "a", (), None), "a": Cohort("a", "research", (), None)}
    with pytest.raises(ToolError, match="loops"):
        from_cluster(dataclasses.replace(cluster, cohorts=cycle))


def test_a_head_within_nominal_quota_goes_before_a_borrowing_one(cluster):
    # 32 cards; team-a holds its 16, team-b 8 of its 16. At t=10 both ask for 8 of the last 8 free cards:
    # team-a's job would borrow, team-b's fits its nominal quota, so team-b's goes first although its
    # priority (batch) is lower than team-a's (training), as Kueue's classicalIterator orders heads.
    jobs = [
        Job("a-own", 0, 36000, gpus=8, pods=2, team="team-a", tier="training"),
        Job("b-own", 0, 36000, gpus=8, team="team-b", tier="training"),
        Job("a-borrow", 10, 3600, gpus=8, team="team-a", tier="training"),
        Job("b-nominal", 10, 3600, gpus=8, team="team-b", tier="batch"),
    ]
    queues = ["team-a-training", "team-b-training", "team-a-training", "team-b-training"]
    runs = {run.job.id: run for run in Engine(from_cluster(cluster), jobs, queues).run().runs}
    assert runs["b-nominal"].first_start == 10
    assert runs["a-borrow"].first_start > 10
