"""Engine invariants on the hand-built cluster: capacity, completion, tiers, borrowing, failures."""

from __future__ import annotations

import dataclasses
import random

import pytest
from simhelpers import peak_usage

from gpupolicy.model import Cohort, FlavorQuotas, ResourceGroup, ResourceQuota
from gpupolicy.simulate import Engine, compare, replay
from gpupolicy.simulate.engine import FINISH, Run
from gpupolicy.simulate.failures import Failure, parse_failures
from gpupolicy.simulate.jobs import Job, Shape, shape_in_pool
from gpupolicy.simulate.metrics import percentile, summarize
from gpupolicy.simulate.placement import PLACEMENTS
from gpupolicy.simulate.policy import FlavorQuota, SimPool, assign_queues, baseline, from_cluster, quota_milli


def mixed_jobs(count: int = 300, seed: int = 3, spacing: int = 240) -> list[Job]:
    rng = random.Random(seed)
    jobs = []
    for i in range(count):
        team = rng.choice(["team-a", "team-b", "team-c"])
        if team == "team-c":
            if rng.random() < 0.5:
                jobs.append(
                    Job(
                        f"s{i}",
                        i * spacing,
                        rng.randint(600, 7200),
                        share=rng.choice([0.25, 0.5]),
                        team=team,
                        tier="production",
                        workload="inference",
                    )
                )
            else:
                jobs.append(
                    Job(
                        f"m{i}",
                        i * spacing,
                        rng.randint(600, 3600),
                        mig=rng.choice(["1g.10gb", "3g.40gb"]),
                        team=team,
                        tier="experiment",
                    )
                )
        else:
            jobs.append(
                Job(
                    f"t{i}",
                    i * spacing,
                    rng.randint(1800, 14400),
                    gpus=rng.choice([1, 2, 4, 8]),
                    pods=rng.choice([1, 1, 2]),
                    team=team,
                    tier=rng.choice(["training", "training", "batch"]),
                    checkpoint=1800,
                )
            )
    return jobs


class CheckedEngine(Engine):
    """Checks, after every scheduling step, that no card, pool or quota is over-committed."""

    def _record(self) -> None:
        for pool in self.pools.values():
            for node, cards in enumerate(pool.free):
                assert all(0 <= free <= 1000 for free in cards), (pool.name, node, cards)
            assert (
                0 <= pool.allocated <= pool.capacity + sum(pool.gpus_per_node * 1000 for _ in pool.failed)
            ), pool.name
            for node in pool.failed:
                assert all(free == 1000 for free in pool.free[node]), "a failed node still runs work"
        for queue in self.policy.queues.values():
            for flavor in queue.flavors:
                used = self.usage[queue.name][flavor.flavor]
                assert used >= 0
                if flavor.borrowing_limit is not None:
                    assert used <= flavor.nominal + flavor.borrowing_limit, (queue.name, used)
                if not queue.cohort:
                    assert used <= flavor.nominal
        for node in self.quota.nodes():  # no cohort lends more than its subtree holds
            if node.parent is None:
                assert node.usage <= node.subtree, (node.name, node.usage, node.subtree)
            assert node.usage >= 0, node.name
        kept = {}  # quota kept for a preemptor waiting for its victims (Engine._keep_for_preemptor)
        for index, (flavor, amount) in self.reserved.items():
            key = (self.runs[index].queue, flavor)
            kept[key] = kept.get(key, 0) + amount
        for (queue, flavor), leaf in self.quota.leaves.items():
            assert leaf.usage == self.usage[queue][flavor] + kept.get((queue, flavor), 0), (queue, flavor)
        super()._record()


def run_checked(policy, jobs, failures=()):
    return CheckedEngine(policy, jobs, assign_queues(jobs, policy), failures).run()


@pytest.mark.parametrize("placement", sorted(PLACEMENTS))
def test_no_over_allocation_and_every_job_accounted_for(cluster, placement):
    jobs = mixed_jobs()
    for policy in (baseline(cluster), from_cluster(cluster, placement)):
        result = run_checked(policy, jobs)
        for run in result.runs:
            assert (run.finished >= 0) != bool(run.never_reason), run.job.id
            if run.finished >= 0:
                assert run.finished >= run.job.submit + 1
                assert run.first_start >= run.job.submit


def test_node_failures_reschedule_and_every_job_completes(cluster):
    jobs = mixed_jobs(200)
    failures = parse_failures("train:2@3600+2h,shared:1@7200+1h,train:1@20000+30m")
    for policy in (baseline(cluster), from_cluster(cluster)):
        result = run_checked(policy, jobs, failures)
        summary = summarize(result)
        assert summary.never_scheduled == 0
        assert summary.completed == len(jobs)
        assert summary.interruptions > 0, "the failures hit no job: the test would prove nothing"
        assert summary.lost_to_failures_gpu_hours == pytest.approx(2 * 8 * 2 + 4 * 1 + 8 * 0.5)
        # nothing is lost to a failure: every interrupted job still ran exactly its duration of work
        for run in result.runs:
            assert run.lost_milli_seconds == 0 or run.preemptions > 0


def test_permanent_failure_still_completes_when_capacity_remains(cluster):
    jobs = [Job(f"j{i}", i * 60, 3600, gpus=8, team="team-a", tier="training") for i in range(6)]
    result = run_checked(from_cluster(cluster), jobs, [Failure("train", 1, 1800)])
    assert all(run.finished > 0 for run in result.runs)
    assert summarize(result).lost_to_failures_gpu_hours > 0


def test_preemption_respects_tiers_and_loses_work_since_checkpoint(cluster):
    # team-a fills the train pool at low (batch) priority, then training jobs of the same queue arrive
    low = [Job(f"low{i}", 0, 20000, gpus=8, team="team-a", tier="batch", checkpoint=1000) for i in range(4)]
    high = [Job(f"high{i}", 2500, 3600, gpus=8, team="team-a", tier="training") for i in range(2)]
    result = run_checked(from_cluster(cluster), low + high)
    runs = {r.job.id: r for r in result.runs}
    assert result.preemptions >= 1
    for run in runs.values():
        if run.job.tier == "training":
            assert run.preemptions == 0
    victim = next(r for r in runs.values() if r.preemptions)
    assert victim.job.tier == "batch"
    # preempted at 2500 s with checkpoints every 1000 s: 500 s of 8 GPUs lost
    assert victim.lost_milli_seconds == 500 * 8 * 1000
    assert all(r.finished > 0 for r in runs.values())


def test_experiments_never_preempt_production(cluster):
    policy = from_cluster(cluster)
    jobs = [
        Job(
            f"p{i}",
            0,
            10000,
            share=0.5,
            team="team-c",
            tier="production",
            workload="inference",
            queue="team-c-inference",
        )
        for i in range(16)
    ]
    jobs += [
        Job(f"e{i}", 100, 600, share=0.5, team="team-c", tier="experiment", queue="team-c-inference")
        for i in range(4)
    ]
    result = run_checked(policy, jobs)
    assert all(r.preemptions == 0 for r in result.runs if r.job.tier == "production")


def test_borrowing_limit_caps_a_queue(cluster):
    # team-b may borrow 8 GPUs over its 16: 32 single-GPU jobs never run more than 24 at once
    jobs = [Job(f"b{i}", 0, 3600, gpus=1, team="team-b", tier="training") for i in range(32)]
    policy = from_cluster(cluster)
    peak, _ = peak_usage(
        CheckedEngine(policy, jobs, ["team-b-training"] * len(jobs)), "team-b-training", "train-flavor"
    )
    assert peak == 24_000


def _peak_usage(policy, jobs, queue: str, flavor: str) -> int:
    return peak_usage(CheckedEngine(policy, jobs, [queue] * len(jobs)), queue, flavor)[0]


def test_quota_a_cohort_holds_is_lent_to_its_queues(cluster):
    # team-a alone in its cohort: 16 GPUs of its own, and 8 more that the Cohort object itself holds
    alone = dataclasses.replace(
        cluster, cluster_queues={"team-a-training": cluster.cluster_queues["team-a-training"]}
    )
    jobs = [Job(f"a{i}", 0, 3600, gpus=1, team="team-a", tier="training") for i in range(32)]
    assert _peak_usage(from_cluster(alone), jobs, "team-a-training", "train-flavor") == 16_000  # no lender
    held = ResourceGroup(
        ("nvidia.com/gpu",), (FlavorQuotas("train-flavor", (ResourceQuota("nvidia.com/gpu", 8),)),)
    )
    with_reserve = dataclasses.replace(alone, cohorts={"research": Cohort("research", "", (held,), None)})
    policy = from_cluster(with_reserve)
    assert policy.cohorts["research"].flavors == (FlavorQuota("train-flavor", "train", 8_000),)
    assert _peak_usage(policy, jobs, "team-a-training", "train-flavor") == 24_000


def test_jobs_too_large_are_never_scheduled_not_stuck(cluster):
    jobs = [
        Job("huge", 0, 100, gpus=64, team="team-a", tier="training"),
        Job("ok", 10, 100, gpus=1, team="team-a", tier="training"),
    ]
    result = replay(from_cluster(cluster), jobs)
    runs = {r.job.id: r for r in result.runs}
    assert runs["huge"].never_reason and runs["ok"].finished > 0


def test_strict_fifo_baseline_blocks_behind_the_head(cluster):
    jobs = [Job("a", 0, 1000, gpus=8, pods=4), Job("b", 1, 1000, gpus=8, pods=4), Job("c", 2, 10, gpus=1)]
    result = replay(baseline(cluster), jobs)
    runs = {r.job.id: r for r in result.runs}
    # b needs the whole train pool again, so c (which would fit elsewhere) waits behind it
    assert runs["b"].first_start == 1000 and runs["c"].first_start >= 1000


def test_sharing_packs_fractional_jobs(cluster):
    jobs = [
        Job(
            f"s{i}",
            0,
            3600,
            share=0.25,
            team="team-c",
            tier="production",
            workload="inference",
            queue="team-c-inference",
        )
        for i in range(32)
    ]
    result = replay(from_cluster(cluster), jobs)
    # 32 quarter-cards fit on 8 time-sliced L4-class cards
    assert max(r.first_start for r in result.runs) == 0
    shape = shape_in_pool(jobs[0], "time-sliced", 4, 4, whole_only=False)
    assert shape == Shape(1, 1, 250)
    assert shape_in_pool(Job("m", 0, 1, mig="3g.40gb"), "mig", 1, 8, False).milli == 429
    assert shape_in_pool(Job("w", 0, 1, gpus=16), "exclusive", 1, 8, False) == Shape(2, 8, 1000)
    assert shape_in_pool(Job("w", 0, 1, gpus=1), "mig", 1, 8, False) is None
    assert shape_in_pool(Job("w", 0, 1, gpus=1), "mig", 1, 8, True) == Shape(1, 1, 1000)


def test_compare_reports_both_policies(cluster):
    comparison = compare(cluster, mixed_jobs(120))
    assert comparison.before_summary.policy == "baseline"
    assert comparison.after_summary.policy == "proposed"
    assert comparison.before_summary.completed == 120


def test_finish_events_of_preempted_runs_are_ignored(cluster):
    engine = Engine(from_cluster(cluster), [Job("x", 0, 100, gpus=1, team="team-a")], ["team-a-training"])
    assert any(kind != FINISH for _, kind, _, _ in engine.heap)


def test_percentile_nearest_rank():
    values = sorted(range(1, 101))
    assert percentile(values, 50) == 50 and percentile(values, 95) == 95 and percentile(values, 99) == 99
    assert percentile([], 50) == 0


@pytest.mark.parametrize("spec", ["pool", "pool:x@1", "pool:1", "Pool:1@1"])
def test_bad_failure_specs_are_rejected(spec):
    with pytest.raises(ValueError, match="POOL:COUNT@TIME"):
        parse_failures(spec)


def test_failure_spec_units():
    assert parse_failures("a-1:2@1h+30m, b:1@90") == [
        Failure("a-1", 2, 3600, 1800),
        Failure("b", 1, 90, None),
    ]


class ReclaimCheckedEngine(Engine):
    """Records every eviction made to reclaim quota, with the victim queue's usage (less what its evicted jobs
    still hold while they terminate) and nominal afterwards."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # victim queue, usage left, largest victim, nominal
        self.reclaims: list[tuple[str, int, int, int]] = []
        self.evicted: list = []

    def _preempt(self, victim, by, reason):
        self.evicted.append((victim.queue, victim.flavor.flavor, victim.shape.total))
        super()._preempt(victim, by, reason)

    def _kueue_admit(self, run, queue, entry, *rest):
        self.evicted = []
        admitted = super()._kueue_admit(run, queue, entry, *rest)
        for victim_queue, flavor, _ in self.evicted:
            if victim_queue != queue.name:
                largest = max(size for q, _, size in self.evicted if q == victim_queue)
                terminating = sum(
                    self.runs[i].shape.total
                    for i in self.holding[victim_queue]
                    if self.runs[i].evicted and self.runs[i].flavor.flavor == flavor
                )
                self.reclaims.append(
                    (
                        victim_queue,
                        self.usage[victim_queue][flavor] - terminating,
                        largest,
                        self.nominal[(victim_queue, flavor)],
                    )
                )
        return admitted


@pytest.mark.parametrize("seed", [3, 5, 8])
def test_reclaim_takes_only_from_queues_above_nominal(cluster, seed):
    # Kueue's reclaimWithinCohort: a victim is taken from another queue only while that queue still uses
    # more than its nominal quota, so a queue is never pushed below nominal by more than one job
    policy = from_cluster(cluster)
    jobs = mixed_jobs(400, seed, 120)
    engine = ReclaimCheckedEngine(policy, jobs, assign_queues(jobs, policy))
    engine.run()
    assert engine.reclaims, "no reclaim happened: the test would prove nothing"
    for queue, usage_left, largest_victim, nominal in engine.reclaims:
        assert usage_left + largest_victim > nominal, (queue, usage_left, largest_victim, nominal)


def test_baseline_keeps_each_pool_for_its_kind_of_work(cluster):
    policy = baseline(cluster)
    pools = {name: {f.pool for f in q.flavors} for name, q in policy.queues.items()}
    assert pools == {"fifo-training": {"train"}, "fifo-inference": {"shared", "mig"}}
    jobs = [
        Job("t", 0, 10, gpus=8, workload="training"),
        Job("s", 0, 10, share=0.25),
        Job("n", 0, 10, gpus=1, workload="notebook"),
        Job("w", 0, 10, gpus=1),
    ]
    assert assign_queues(jobs, policy) == [
        "fifo-training",
        "fifo-inference",
        "fifo-inference",
        "fifo-training",
    ]


def test_teamless_jobs_go_to_a_queue_of_their_kind(cluster):
    policy = from_cluster(cluster)
    jobs = [Job("s", 0, 10, share=0.5, tier="production"), Job("t", 0, 10, gpus=8, tier="training")]
    queues = assign_queues(jobs, policy)
    assert queues[0] == "team-c-inference" and queues[1] in ("team-a-training", "team-b-training")


def test_mig_sizes_follow_the_pools_gpu():
    """A MIG pool rounds to its own GPU's profile sizes: quarters on an A30, sevenths on an A100."""
    assert shape_in_pool(Job("m", 0, 1, mig="2g.12gb"), "mig", 1, 4, False, "A30").milli == 500
    assert shape_in_pool(Job("s", 0, 1, share=0.3), "mig", 1, 4, False, "A30").milli == 500
    assert shape_in_pool(Job("s", 0, 1, share=0.3), "mig", 1, 8, False, "A100-80GB").milli == 429
    assert shape_in_pool(Job("m", 0, 1, mig="3g.40gb"), "mig", 1, 4, False, "A30").milli == 500
    a30 = SimPool("a30", 1, 4, "mig", model="A30")
    assert quota_milli("nvidia.com/mig-2g.12gb", 4, a30) == 2000
    assert quota_milli("nvidia.com/mig-1g.6gb", 4, a30) == 1000
    assert quota_milli("nvidia.com/gpu", 4, a30) == 1000  # single strategy: 1g instances
    assert quota_milli("nvidia.com/mig-3g.40gb", 7, SimPool("h", 1, 8, "mig", model="H100-80GB")) == 3000
    assert quota_milli("nvidia.com/mig-9g.1gb", 1, a30) is None


def test_a_run_pickles_field_for_field():
    """Run.__reduce__ (a forked replay's answer, beside.py) keeps every field, even those set later."""
    import pickle

    run = Run(Job("x", 5, 100, gpus=2), 3, "team-a", 100, 40, slots=[("n1", 2)], preemptions=2, queued=9)
    run.size = (2000, 2000, (), (("train", "train", 2000),))
    assert pickle.loads(pickle.dumps(run)) == run
