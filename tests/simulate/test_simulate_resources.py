"""Kueue counts each resource name on its own (resources.py): MIG profiles are separate quotas, and a
whole-card pod on a time-sliced flavor is one `nvidia.com/gpu` replica."""

from __future__ import annotations

from gpupolicy.simulate import Engine
from gpupolicy.simulate.jobs import Job, Shape, shape_in_pool
from gpupolicy.simulate.policy import FlavorQuota, SimPolicy, SimPool, SimQueue
from gpupolicy.simulate.resources import demand

BALANCED = (("1g.10gb", 2), ("2g.20gb", 1), ("3g.40gb", 1))
ONE_G, THREE_G = "nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb"


def _mig_policy(buckets: tuple) -> SimPolicy:
    """One node of 8 balanced A100s (16 x 1g, 8 x 3g instances) and one queue with per-resource quota."""
    pool = SimPool("mig", 1, 8, "mig", model="A100-80GB", instances=(BALANCED,) * 8)
    flavor = FlavorQuota("mig-flavor", "mig", sum(b[1] for b in buckets), resources=buckets)
    return SimPolicy("mig", {"mig": pool}, {"q": SimQueue("q", (flavor,))})


def _max_running(result, profile_share: float) -> int:
    """The most jobs asking `profile_share` of a card that ran at once."""
    edges = sorted(
        e
        for r in result.runs
        if r.job.share == profile_share and r.first_start >= 0
        for e in ((r.first_start, 1), (r.finished, -1))
    )
    peak = running = 0
    for _, step in edges:
        running += step
        peak = max(peak, running)
    return peak


def test_each_mig_profile_has_its_own_quota_nothing_summed():
    # 8 one-g and 2 three-g instances of quota: plenty of unused 1g quota does not let a third 3g pod in
    policy = _mig_policy(((ONE_G, 8000, None, None), (THREE_G, 2000, None, None)))
    jobs = [Job(f"t{i}", 0, 3600, share=0.4) for i in range(4)]  # 3 of 7 slices: a 3g.40gb instance each
    result = Engine(policy, jobs, ["q"] * len(jobs)).run()
    assert all(r.shape.profile == "3g.40gb" for r in result.runs)
    assert _max_running(result, 0.4) == 2  # 8 free 3g instances on the node; the 3g quota holds two
    assert max(r.first_start for r in result.runs) == 3600


def test_a_profile_without_quota_in_the_flavor_never_runs_there():
    policy = _mig_policy(((ONE_G, 8000, None, None),))
    result = Engine(policy, [Job("t", 0, 60, share=0.4)], ["q"]).run()
    assert result.runs[0].first_start < 0 and result.runs[0].never_reason


def test_a_pod_charges_one_instance_of_its_resource():
    buckets = ((ONE_G, 8000, None, None), (THREE_G, 2000, None, None))
    assert demand("f", buckets, 3, "3g.40gb", 1284) == (f"f/{THREE_G}", 3000)
    assert demand("f", (), 3, "3g.40gb", 1284) == ("f", 1284)  # one GPU bucket: milli-GPUs as before
    assert demand("f", (("nvidia.com/gpu", 4000, None, None),), 1, "1g.10gb", 142) == (
        "f/nvidia.com/gpu",
        1000,
    )


def _shared_policy(gpu_names: tuple) -> SimPolicy:
    pool = SimPool("shared", 1, 2, "time-sliced", replicas=4)
    flavor = FlavorQuota("shared-flavor", "shared", 2000, gpu_names=gpu_names)
    return SimPolicy("ts", {"shared": pool}, {"q": SimQueue("q", (flavor,))})


def test_a_whole_card_pod_takes_one_replica_of_a_time_sliced_flavor():
    job = Job("w", 0, 60, gpus=1)
    assert shape_in_pool(job, "time-sliced", 4, 2, whole_only=False) == Shape(1, 1, 250)
    assert shape_in_pool(job, "time-sliced", 4, 2, whole_only=False, replica_per_pod=True) == Shape(
        1, 1, 250, 1000
    )
    assert shape_in_pool(Job("w2", 0, 60, gpus=2), "time-sliced", 4, 2, whole_only=False) is None
    jobs = [Job(f"w{i}", 0, 60, gpus=1) for i in range(8)]  # 8 replicas: 2 cards x 4
    result = Engine(_shared_policy(("nvidia.com/gpu",)), jobs, ["q"] * 8).run()
    assert [r.first_start for r in result.runs] == [0] * 8


def test_a_renamed_shared_resource_does_not_admit_a_whole_card_pod():
    # the quota lists nvidia.com/gpu.shared only: a pod asking nvidia.com/gpu finds no quota in the flavor
    result = Engine(_shared_policy(("nvidia.com/gpu.shared",)), [Job("w", 0, 60, gpus=1)], ["q"]).run()
    assert result.runs[0].first_start < 0
    fractional = Engine(
        _shared_policy(("nvidia.com/gpu.shared",)), [Job("f", 0, 60, share=0.25)], ["q"]
    ).run()
    assert fractional.runs[0].first_start == 0
