"""Fair sharing as the simulator reads and applies it (simulate/fairsharing.py): the Configuration and weights
it reads, the dominant resource share over several flavors, and what it changes in a replay."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from simhelpers import fleet_copy, reloaded, with_configuration, with_queue_spec

from gpupolicy.errors import ToolError
from gpupolicy.simulate import Engine
from gpupolicy.simulate.fairsharing import (
    DEFAULT_STRATEGIES,
    LESS_THAN_INITIAL_SHARE,
    FairSharing,
    Share,
    compare,
    from_configuration,
    shares_for,
    weight,
)
from gpupolicy.simulate.jobs import Job
from gpupolicy.simulate.policy import FlavorQuota, SimCohort, SimPolicy, SimPool, SimQueue
from gpupolicy.simulate.quota import QuotaTree

G = 1000
V1BETA2 = "config.kueue.x-k8s.io/v1beta2"


def test_a_fair_sharing_block_turns_it_on_with_its_strategies():
    both = list(DEFAULT_STRATEGIES)
    assert from_configuration(None) is None
    assert from_configuration({"apiVersion": V1BETA2}) is None
    block = {"apiVersion": V1BETA2, "fairSharing": {"preemptionStrategies": both}}
    assert from_configuration(block) == FairSharing(DEFAULT_STRATEGIES)
    one = {"apiVersion": V1BETA2, "fairSharing": {"preemptionStrategies": [LESS_THAN_INITIAL_SHARE]}}
    assert from_configuration(one).strategies == (LESS_THAN_INITIAL_SHARE,)
    # v1beta1 needs `enable: true` (configuration_conversion.go drops the block otherwise), and then
    # defaults the strategies (apis/config/v1beta1/defaults.go)
    v1beta1 = {"apiVersion": "config.kueue.x-k8s.io/v1beta1", "fairSharing": {"preemptionStrategies": both}}
    assert from_configuration(v1beta1) is None
    assert from_configuration({**v1beta1, "fairSharing": {"enable": True}}) == FairSharing()
    gates = {"FairSharingPrioritizeNonBorrowing": False, "FairSharingPreemptWithinNominal": False}
    off = from_configuration({**block, "featureGates": gates})
    assert not off.prioritize_non_borrowing and not off.preempt_within_nominal and off.priority_sorting


def test_a_block_kueue_refuses_is_refused_before_it_is_read():
    """v1beta2 gives preemptionStrategies no default and validation.go requires one of three sets: Kueue
    exits on anything else, so the replay refuses it (from_cluster) and validate reports it (WL015)."""
    from gpupolicy.domain.kueue_configuration import refusals

    assert refusals({"apiVersion": V1BETA2, "fairSharing": {}}) == [
        ("fairSharing.preemptionStrategies", "must be specified (v1beta2 gives it no default)")
    ]
    backwards = [LESS_THAN_INITIAL_SHARE, "LessThanOrEqualToFinalShare"]
    ((field, why),) = refusals({"apiVersion": V1BETA2, "fairSharing": {"preemptionStrategies": backwards}})
    assert field == "fairSharing.preemptionStrategies" and "is not one of" in why
    v1beta1 = {"apiVersion": "config.kueue.x-k8s.io/v1beta1"}
    assert refusals({**v1beta1, "fairSharing": {"enable": True}}) == []
    assert refusals({**v1beta1, "fairSharing": {"preemptionStrategies": backwards}}) == []  # off: not read


def test_weights_are_quantities_defaulting_to_one():
    assert weight({}) == 1.0
    assert weight({"fairSharing": {"weight": "2"}}) == 2.0
    assert weight({"fairSharing": {"weight": "500m"}}) == 0.5
    assert weight({"fairSharing": {"weight": 0}}) == 0.0
    assert weight({"fairSharing": {"weight": "lots"}}) == 1.0  # refused by the API server: the default


def test_a_zero_weight_that_borrows_ranks_above_every_other_share():
    borrows_unweighted = Share(0.0, 10.0, True)
    assert borrows_unweighted.value == math.inf
    assert compare(borrows_unweighted, Share(1.0, 900.0, True)) == 1
    assert compare(Share(0.0, 10.0, True), Share(0.0, 20.0, True)) == -1  # both: the ratios decide
    assert compare(Share(2.0, 400.0, True), Share(1.0, 300.0, True)) == -1  # 200 against 300
    assert Share(0.0).value == 0  # a zero weight that does not borrow has no share


def _two_pools() -> SimPolicy:
    """team-a and team-b in `all`, on an exclusive pool (8 cards) and a time-sliced one (8 cards, 4 replicas
    each: 32 replicas of quota)."""
    pools = {
        "whole": SimPool("whole", 1, 8, "exclusive"),
        "sliced": SimPool("sliced", 1, 8, "time-sliced", replicas=4),
    }
    queues = {
        name: SimQueue(
            name,
            (FlavorQuota("whole", "whole", 4 * G), FlavorQuota("sliced", "sliced", 4 * G)),
            cohort="all",
            reclaim="Any",
            within_queue="LowerPriority",
        )
        for name in ("team-a", "team-b")
    }
    return SimPolicy("proposed", pools, queues, cohorts={"all": SimCohort("all")})


def test_the_share_counts_replicas_as_kueue_does_and_sums_flavors_of_one_resource():
    policy = _two_pools()
    tree = QuotaTree(policy.queues, policy.cohorts)
    shares = shares_for(policy, tree)
    tree.use("team-a", "whole", 6 * G)  # 2 cards above its 4
    tree.use("team-a", "sliced", 5 * G)  # 1 card = 4 replicas above its 16
    share = shares.share(True, "team-a")
    # nvidia.com/gpu borrowed: 2 cards + 4 replicas = 6 units, of 8 + 32 = 40 the cohort can lend
    assert share.borrowing and share.borrowed == {"whole", "sliced"}
    assert share.ratio == 6 * 1000 / 40
    assert not shares.share(True, "team-b").borrowing
    assert shares.share(False, "all") == Share(1.0)  # a root cohort has no share


def _jobs() -> list[Job]:
    """team-a takes every card of the cohort at 0 (half of it until 36,000 s); four more of team-a's arrive
    at 60 s, four of team-b's at 120 s, one card and an hour each."""
    first = [Job(f"a{i}", 0, 36_000 if i < 4 else 100_000, gpus=1, queue="team-a") for i in range(8)]
    more_a = [Job(f"a{i}", 60, 3_600, gpus=1, queue="team-a") for i in range(8, 12)]
    b = [Job(f"b{i}", 120, 3_600, gpus=1, queue="team-b") for i in range(4)]
    return first + more_a + b


def _borrowers() -> SimPolicy:
    """team-a and team-b own nothing; their cohort owns the 8 cards."""
    pool = SimPool("whole", 1, 8, "exclusive")
    queues = {
        name: SimQueue(name, (FlavorQuota("whole", "whole", 0),), cohort="all")
        for name in ("team-a", "team-b")
    }
    cohort = SimCohort("all", "", (FlavorQuota("whole", "whole", 8 * G),))
    return SimPolicy("proposed", {"whole": pool}, queues, cohorts={"all": cohort})


def test_with_fair_sharing_the_queue_that_borrows_less_goes_first():
    """Four cards free at 36,000 s and both queues wait, both borrowing. Classically the heads go by submit
    time, and team-a's pass takes all four; with fair sharing each cycle takes the head of the queue whose
    share would stay lower, so team-b (which holds nothing) and team-a alternate."""
    jobs = _jobs()
    queues = [job.queue for job in jobs]
    classical = Engine(_borrowers(), jobs, queues).run()
    fair = Engine(replace(_borrowers(), fair_sharing=FairSharing()), jobs, queues).run()

    def starts(result, prefix):
        return sorted(r.first_start for r in result.runs if r.job.id.startswith(prefix) and r.job.submit > 0)

    assert starts(classical, "a") == [36_000] * 4 and starts(classical, "b") == [39_600] * 4
    assert starts(fair, "a") == starts(fair, "b") == [36_000, 36_000, 39_600, 39_600]


def test_the_repository_configuration_and_weights_reach_the_declared_policy(tmp_path):
    """from_cluster replays the fair sharing the repository's Kueue values turn on, with the weights its
    ClusterQueues declare."""
    from gpupolicy.simulate.policy import from_cluster

    repo, cluster = fleet_copy(tmp_path)
    assert from_cluster(cluster).fair_sharing is None  # the fixture fleet leaves it off
    text = with_configuration(repo, "    fairSharing: {}\n")
    refused = reloaded(repo, cluster.name)
    with pytest.raises(
        ToolError, match=r"Kueue refuses its Configuration \(fairSharing.preemptionStrategies"
    ):
        from_cluster(refused)  # v1beta2 gives the strategies no default: Kueue would not start
    with_configuration(repo, "    fairSharing:\n      preemptionStrategies: [LessThanInitialShare]\n", text)
    queue = next(iter(cluster.cluster_queues.values()))
    with_queue_spec(repo, queue, "  fairSharing:\n    weight: 2500m\n")
    policy = from_cluster(reloaded(repo, cluster.name))
    assert policy.fair_sharing == FairSharing((LESS_THAN_INITIAL_SHARE,))
    assert policy.queues[queue.name].fair_weight == 2.5


def test_a_cohort_quota_no_queue_asks_for_is_still_lendable():
    """Kueue's lendable capacity (calculateLendable) sums every flavor of the root's tree, also one that only
    a cohort holds: team-a's 2 cards borrowed are 2 of the 8 + 8 the cohort could lend."""
    pool = SimPool("whole", 2, 8, "exclusive")
    queue = SimQueue("team-a", (FlavorQuota("a", "whole", 0),), cohort="all")
    cohort = SimCohort("all", "", (FlavorQuota("a", "whole", 8 * G), FlavorQuota("b", "whole", 8 * G)))
    policy = SimPolicy("proposed", {"whole": pool}, {"team-a": queue}, cohorts={"all": cohort})
    tree = QuotaTree(policy.queues, policy.cohorts)
    tree.use("team-a", "a", 2 * G)
    assert shares_for(policy, tree).share(True, "team-a").ratio == 2 * 1000 / 16
