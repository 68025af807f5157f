"""`recommend`'s sharing switch: which pools get it, what the simulator sees, and what `--apply` writes."""

from __future__ import annotations

from pathlib import Path

from gpupolicy.model import (
    PRODUCT_LABEL,
    Cluster,
    ClusterFacts,
    ClusterQueue,
    Flavor,
    FlavorQuotas,
    K8sObject,
    Pool,
    ResourceGroup,
    ResourceQuota,
)
from gpupolicy.pipeline import load_fleet
from gpupolicy.recommend import sharing, space
from gpupolicy.simulate import replay
from gpupolicy.simulate.jobs import MILLI, Job

REPO = Path(__file__).resolve().parents[1]
GPU = "nvidia.com/gpu"


def _obj(kind: str, name: str) -> K8sObject:
    return K8sObject("kueue.x-k8s.io/v1beta2", kind, name, "", {"metadata": {"name": name}, "spec": {}})


def _pool(name: str, mode: str, **extra) -> Pool:
    """One node of 4 L4 cards, labelled as GPU feature discovery labels an exclusive L4."""
    return Pool(name=name, path=f"pools/{name}/pool.yaml", gpu_model="L4", gpus_per_node=4, zones={"zone-a": 1},
                access_mode=mode, node_labels={"gpupolicy.io/pool": name, PRODUCT_LABEL: "NVIDIA-L4"},
                capacity={GPU: 4 * (extra.get("time_slicing_replicas") or 1)}, **extra)


def _queue(name: str, workload: str, flavor: str, nominal: int) -> ClusterQueue:
    group = ResourceGroup((GPU,), (FlavorQuotas(flavor, (ResourceQuota(GPU, nominal),)),))
    return ClusterQueue(name=name, cohort="", namespace_selector={}, resource_groups=(group,), preemption={},
                        team=name, tier="batch", workload=workload, labels={}, obj=_obj("ClusterQueue", name))


def _cluster(*pools_and_queues: tuple[Pool, str, int]) -> Cluster:
    """A cluster of the given pools, each with one flavor (selecting its nodes by pool and product label) and
    one queue of the given workload holding the given quota there."""
    facts = ClusterFacts("mini", "clusters/mini/cluster.yaml", "test", "eu", ("zone-a",), "1.33", "v26.3.0", "flux")
    flavors = {p.name: Flavor(p.name, {"gpupolicy.io/pool": p.name, PRODUCT_LABEL: p.node_labels[PRODUCT_LABEL]},
                              (), (), _obj("ResourceFlavor", p.name)) for p, _, _ in pools_and_queues}
    queues = {f"{p.name}-q": _queue(f"{p.name}-q", workload, p.name, nominal) for p, workload, nominal in pools_and_queues}
    return Cluster(facts=facts, pools=[p for p, _, _ in pools_and_queues], flavors=flavors, cluster_queues=queues)


def _ranges(cluster: Cluster) -> dict[str, tuple[int, int, int]]:
    return {k.pool: (k.current, k.low, k.high) for k in space.replica_knobs(cluster)}


def test_the_switch_is_offered_to_inference_pools_that_are_exclusive_or_time_sliced():
    cluster = _cluster((_pool("serve", "exclusive"), "inference", 4),
                       (_pool("train", "exclusive"), "training", 4),
                       (_pool("notebooks", "time-sliced", time_slicing_replicas=3), "notebook", 12),
                       (_pool("renamed", "time-sliced", time_slicing_replicas=4, rename_shared=True), "inference", 16),
                       (_pool("dedicated", "isolated", team="serve"), "inference", 4),
                       (_pool("mps", "exclusive", mps_replicas=4), "inference", 16))
    assert _ranges(cluster) == {
        "serve": (1, 1, sharing.EXCLUSIVE_MAX_REPLICAS),  # exclusive today; may become time-sliced
        "notebooks": (3, 1, 6),  # time-sliced today; may become exclusive or go up to twice today's count
        "renamed": (4, 2, 8),  # nvidia.com/gpu.shared: today's replica knob only, no switch
    }  # not the training pool (whole-card jobs cannot run on a shared card), isolated, MIG or MPS pools


def test_the_reference_fleet_offers_the_switch_to_its_shared_pools_only():
    fleet = load_fleet(REPO, None)
    offered = {name: _ranges(cluster) for name, cluster in sorted(fleet.clusters.items())}
    assert offered == {"prod-eu": {"eu-l4-shared": (4, 1, 8)}, "prod-us": {"us-l40s-shared": (4, 1, 8)},
                       "test-us": {"test-l4-shared": (4, 1, 8)}}  # the serving pools are isolated, H100/H200 train


def _quarter_card_jobs(queue: str, count: int = 16) -> list[Job]:
    return [Job(f"j{i}", submit=0, duration=3600, gpus=1, share=0.25, queue=queue, team=queue, workload="inference")
            for i in range(count)]


def _started_at_once(policy, jobs) -> tuple[int, float, set[int]]:
    """(jobs started at submission, mean wait in seconds, milli of a card each pod held)."""
    runs = replay(policy, jobs).runs
    waits = [r.first_start - r.job.submit for r in runs]
    return sum(w == 0 for w in waits), sum(waits) / len(waits), {r.shape.milli for r in runs}


def test_an_exclusive_serving_pool_switched_to_time_slicing_packs_fractional_jobs():
    cluster = _cluster((_pool("serve", "exclusive"), "inference", 4))
    [knob] = space.replica_knobs(cluster)
    jobs = _quarter_card_jobs("serve-q")
    exclusive = space.candidate_policy(cluster, [knob], {})
    shared = space.candidate_policy(cluster, [knob], {knob.name: 4})
    assert (shared.pools["serve"].sharing, shared.pools["serve"].replicas) == ("time-sliced", 4)
    assert shared.queues["serve-q"].flavors[0].nominal == 4 * MILLI  # 16 replicas: the same 4 cards
    before, after = _started_at_once(exclusive, jobs), _started_at_once(shared, jobs)
    assert (before[0], before[2]) == (4, {MILLI})  # a quarter-card job holds a whole card
    assert (after[0], after[2]) == (16, {MILLI // 4})  # four to a card: all start at once
    assert after[1] == 0 < before[1]
    switched = space.with_params(cluster, [knob], {knob.name: 4})
    pool = switched.pools[0]
    assert (pool.access_mode, pool.sharing, pool.time_slicing_replicas, pool.capacity) == \
        ("time-sliced", "time-sliced", 4, {GPU: 16})
    assert pool.node_labels[PRODUCT_LABEL] == "NVIDIA-L4-SHARED"  # as GFD labels a shared card
    assert switched.flavors["serve"].node_labels[PRODUCT_LABEL] == "NVIDIA-L4-SHARED"  # still selects the pool
    assert switched.cluster_queues["serve-q"].resource_groups[0].flavors[0].resources[0].nominal == 16


def test_a_shared_pool_switched_to_exclusive_rounds_jobs_up_to_cards_and_quotas_down():
    cluster = _cluster((_pool("notebooks", "time-sliced", time_slicing_replicas=4), "notebook", 15))
    [knob] = space.replica_knobs(cluster)
    jobs = _quarter_card_jobs("notebooks-q")
    shared, exclusive = (space.candidate_policy(cluster, [knob], {knob.name: value}) for value in (4, 1))
    assert exclusive.pools["notebooks"].sharing == "exclusive"
    started, _, held = _started_at_once(shared, jobs)
    assert (started, held) == (15, {MILLI // 4})  # 15 replicas of the notebooks queue
    started, _, held = _started_at_once(exclusive, jobs)
    assert (started, held) == (3, {MILLI})  # 15 replicas are 3 whole cards (rounded down: CAP001 holds)
    switched = space.with_params(cluster, [knob], {knob.name: 1})
    pool = switched.pools[0]
    assert (pool.access_mode, pool.sharing, pool.time_slicing_replicas, pool.capacity) == \
        ("exclusive", "exclusive", None, {GPU: 4})
    assert pool.node_labels[PRODUCT_LABEL] == "NVIDIA-L4"


def test_the_reference_shared_pool_switched_to_exclusive():
    cluster = load_fleet(REPO, ["prod-us"]).clusters["prod-us"]
    knob_list = space.knobs(cluster)
    switched = space.with_params(cluster, knob_list, {"us-l40s-shared/replicas": 1})
    pool = next(p for p in switched.pools if p.name == "us-l40s-shared")
    assert (pool.sharing, pool.capacity, pool.memory_share_percent) == ("exclusive", {GPU: 16}, 0)

    def nominal(queue: str) -> int:
        return next(q.nominal for g in switched.cluster_queues[queue].resource_groups for f in g.flavors
                    if f.flavor == "us-l40s-shared" for q in f.resources if q.name == GPU)
    assert (nominal("research"), nominal("serving")) == (12, 4)  # 48 and 16 replicas of 4 per card
    policy = space.candidate_policy(cluster, knob_list, {"us-l40s-shared/replicas": 1})
    assert (policy.pools["us-l40s-shared"].sharing, policy.pools["us-l40s-shared"].replicas) == ("exclusive", 1)
