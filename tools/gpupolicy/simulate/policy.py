"""Turn a model Cluster into the simulator's own small structures, and build the baseline from the same
cluster.

The engine only sees SimPolicy: pools (nodes x cards, sharing mode), queues with per-flavor quotas in
milli-GPUs, cohorts, priorities and preemption settings. Nothing here reads the repository.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..domain import catalog, kueue_configuration, quotas
from ..domain.capacity import layout_per_gpu
from ..errors import ToolError
from ..infra.limits import MAX_NODES_PER_CLUSTER
from ..model import GPU_RESOURCES, MIG_RESOURCE_PREFIX, TIERS, Cluster, Pool
from . import fairsharing
from .fairsharing import FairSharing
from .jobs import MILLI, Job, mig_card, profile_share
from .placement import BASELINE_PLACEMENT, DEFAULT_PLACEMENT
from .readiness import PodsReady, from_configuration
from .resources import resource_buckets

# Used when the cluster declares no WorkloadPriorityClass for a tier; only the order matters.
DEFAULT_TIER_PRIORITY = {"production": 1000, "training": 500, "batch": 200, "experiment": 100}
BASELINE_QUEUE = "fifo"
INFERENCE_WORKLOADS = ("inference", "notebook")


@dataclass(frozen=True)
class SimPool:
    name: str
    nodes: int
    gpus_per_node: int
    sharing: str  # exclusive | time-sliced | mig
    replicas: int = 1
    model: str = ""
    startup_check: bool = True  # pool.yaml `startupCheck: {skip: true}` turns it off (busy.py)
    # A MIG pool replayed per layout: per GPU index of a node, the (profile, count) instances its layout makes
    # (a GPU the layout leaves out has none). Empty: not a MIG pool, or its layout is unknown
    # (jobs.shape_in_pool)
    instances: tuple[tuple[tuple[str, int], ...], ...] = ()

    @property
    def capacity(self) -> int:
        return self.nodes * self.gpus_per_node * MILLI

    @property
    def profiles(self) -> tuple[str, ...]:
        """The MIG profiles the pool's layout makes, in a stable order; () when not replayed per layout."""
        return tuple(sorted({name for card in self.instances for name, _ in card}))


@dataclass(frozen=True)
class FlavorQuota:
    flavor: str
    pool: str
    nominal: int  # milli-GPUs
    borrowing_limit: int | None = None  # None: may borrow all the cohort lends
    lending_limit: int | None = None  # None: lends all of its nominal
    resources: tuple = ()  # per-resource quota of a MIG pool replayed per layout (resources.resource_buckets)
    gpu_names: tuple = field(default=(), compare=False)  # GPU resource names its quota lists (resources.py)

    @property
    def lendable(self) -> int:
        return self.nominal if self.lending_limit is None else min(self.lending_limit, self.nominal)


@dataclass(frozen=True)
class SimQueue:
    name: str
    flavors: tuple[FlavorQuota, ...]
    cohort: str = ""
    tier: str = ""
    team: str = ""
    workload: str = ""
    strategy: str = "BestEffortFIFO"  # or StrictFIFO
    within_queue: str = "Never"  # Never | LowerPriority | LowerOrNewerEqualPriority
    reclaim: str = "Never"  # Never | LowerPriority | Any
    allow_shared: bool = True
    # spec.flavorFungibility, defaults of kueue v1beta2 (apis/kueue/v1beta2/clusterqueue_types.go): a flavor
    # where the job fits by borrowing ends the search; one where it needs preemption lets the next be tried
    when_can_borrow: str = "MayStopSearch"  # or TryNextFlavor
    when_can_preempt: str = "TryNextFlavor"  # or Preempt / MayStopSearch
    preference: str = "BorrowingOverPreemption"  # flavorFungibility.preference, or PreemptionOverBorrowing
    # spec.preemption.borrowWithinCohort: LowerPriority lets the job preempt lower-priority workloads of other
    # queues while it borrows, those at or below `borrow_threshold` (maxPriorityThreshold; None: any lower)
    borrow_within: str = "Never"
    borrow_threshold: int | None = None
    fair_weight: float = fairsharing.DEFAULT_WEIGHT  # spec.fairSharing.weight, read with fair sharing on


@dataclass(frozen=True)
class SimCohort:
    """A Kueue Cohort: its parent and the quota it holds itself (v1beta2 `Cohort.spec`), per flavor."""

    name: str
    parent: str = ""
    flavors: tuple[FlavorQuota, ...] = ()
    fair_weight: float = fairsharing.DEFAULT_WEIGHT  # spec.fairSharing.weight


@dataclass
class SimPolicy:
    name: str
    pools: dict[str, SimPool]
    queues: dict[str, SimQueue]
    priorities: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_TIER_PRIORITY))
    whole_gpus: bool = False  # round every fractional request up to a card
    whole_nodes: bool = False  # every job holds whole nodes (whole_node_before)
    placement: str = BASELINE_PLACEMENT  # a name in placement.PLACEMENTS
    # every cohort named by a queue or a parent, with its own quota (simulate/quota.py does the arithmetic)
    cohorts: dict[str, SimCohort] = field(default_factory=dict)
    # a pod on a time-sliced pool takes one replica and needs its share of the card's memory (busy.py)
    replica_per_pod: bool = False
    # the share of starts that crash on a busy card the scheduler cannot see (`before`), drawn with
    # failure_seed
    start_failure_rate: float = 0.0
    failure_seed: int = 0
    pods_ready: PodsReady | None = None  # Kueue's waitForPodsReady (readiness.py); None: off (no Kueue)
    fair_sharing: FairSharing | None = None  # the Configuration's fairSharing (fairsharing.py); None: off

    def priority(self, tier: str) -> int:
        return self.priorities.get(tier, 0)


def sim_pool(pool: Pool, layout_entries: Any = None) -> SimPool | None:
    """The pool as the engine sees it; a MIG pool with its layout's mig-parted entries is replayed per
    instance."""
    if pool.gpus_per_node <= 0 or pool.nodes <= 0:
        return None
    sharing = pool.sharing
    if sharing == "mps":
        sharing = "time-sliced"
    replicas = pool.time_slicing_replicas or pool.mps_replicas or 1
    instances = mig_instances(pool, layout_entries) if sharing == "mig" else ()
    return SimPool(
        pool.name, pool.nodes, pool.gpus_per_node, sharing, replicas, pool.gpu_model, instances=instances
    )


def mig_instances(pool: Pool, layout_entries: Any) -> tuple[tuple[tuple[str, int], ...], ...]:
    """Per GPU index, the instances the pool's layout makes, read as mig-manager reads the layout
    (capacity.layout_per_gpu). () (the optimistic model) when the layout or the GPU is unknown, when
    time-slicing shares the instances, or when a profile is not one the catalog places on that GPU (a
    compute-instance profile
    such as 1c.2g.20gb): the replay would otherwise place instances that do not exist."""
    card = catalog.GPUS.get(pool.gpu_model)
    time_sliced = bool(pool.time_slicing_replicas and pool.time_slicing_replicas > 1)
    if not isinstance(layout_entries, list) or card is None or not card.mig_capable or time_sliced:
        return ()
    per_gpu = layout_per_gpu(layout_entries, pool.gpus_per_node, card)
    if not per_gpu or any(name not in card.mig_profiles for counts in per_gpu.values() for name in counts):
        return ()
    return tuple(tuple(sorted(per_gpu.get(index, {}).items())) for index in range(pool.gpus_per_node))


# A quota above this many devices is unlimited for any fleet the simulator replays; clamping keeps absurd
# values (1e400, which the model holds as an exact int) from overflowing the float arithmetic below.
MAX_QUOTA_DEVICES = 10**9


def _bounded(amount: float) -> float:
    if amount != amount:  # NaN: no quota
        return 0.0
    return float(max(min(amount, MAX_QUOTA_DEVICES), -MAX_QUOTA_DEVICES))


def quota_milli(resource: str, amount: float, pool: SimPool) -> int | None:
    """A Kueue quota on one resource name, in milli-GPUs of the pool; None for non-GPU resources."""
    if resource.startswith(MIG_RESOURCE_PREFIX):
        share = profile_share(resource, pool.model)  # on the pool's GPU model (catalog.card_fraction)
        if share is None:
            return None
        return math.floor(amount * share.numerator * MILLI / share.denominator)
    if resource in GPU_RESOURCES:
        if pool.sharing == "time-sliced":
            return math.floor(amount * MILLI / max(pool.replicas, 1))
        if pool.sharing == "mig":  # single strategy: every instance is a nvidia.com/gpu; assume 1g slices
            return math.floor(amount * MILLI / mig_card(pool.model).compute_slices)
        return math.floor(amount * MILLI)
    return None


def _queue_flavors(cluster: Cluster, cq, pools: dict[str, SimPool]) -> tuple[FlavorQuota, ...]:
    """The GPU quota of a ClusterQueue's or a Cohort's flavors, in milli-GPUs of each flavor's pool."""
    result: list[FlavorQuota] = []
    for group in cq.resource_groups:
        for fq in group.flavors:
            pool = _pool_of_flavor(cluster, fq.flavor, pools)
            if pool is None:
                continue
            nominal = borrow = lend = 0
            has_borrow = has_lend = False
            for quota in fq.resources:
                n = quota_milli(quota.name, _bounded(quota.nominal), pool)
                if n is None:
                    continue
                nominal += n
                if quota.borrowing_limit is not None:
                    has_borrow = True
                    borrow += quota_milli(quota.name, _bounded(quota.borrowing_limit), pool) or 0
                if quota.lending_limit is not None:
                    has_lend = True
                    lend += quota_milli(quota.name, _bounded(quota.lending_limit), pool) or 0
            if nominal or has_borrow:
                result.append(
                    FlavorQuota(
                        fq.flavor,
                        pool.name,
                        nominal,
                        borrow if has_borrow else None,
                        lend if has_lend else None,
                        resource_buckets(fq.resources, _bounded) if pool.instances else (),
                        tuple(q.name for q in fq.resources if q.name in GPU_RESOURCES),
                    )
                )
    return tuple(result)


def _priorities(cluster: Cluster) -> dict[str, int]:
    found: dict[str, int] = {}
    for wpc in cluster.workload_priority_classes.values():
        if wpc.tier in TIERS:
            found[wpc.tier] = max(found.get(wpc.tier, wpc.value), wpc.value)
    return {tier: found.get(tier, DEFAULT_TIER_PRIORITY[tier]) for tier in TIERS}


def layout_entries(cluster: Cluster, pool: Pool) -> Any:
    """The mig-parted entries of the pool's layout (a list), or None when it has none or the cluster lacks
    it."""
    entry = cluster.mig_configs.get(pool.mig_layout) if pool.mig_layout else None
    return entry.data if entry is not None else None


def check_simulable(cluster: Cluster) -> dict[str, SimPool]:
    """The cluster's simulated pools, or a ToolError (exit 2) for a cluster the simulator must not replay.

    The simulator loads the fleet without running rules, so POOL004 does not protect it: the engine keeps
    state per node and card, and a cluster declaring more nodes than Kubernetes supports would exhaust memory
    before any rule reported the typo. A cluster without a usable pool has nothing to place jobs on."""
    total = sum(pool.nodes for pool in cluster.pools)
    if total > MAX_NODES_PER_CLUSTER:
        sizes = ", ".join(
            f"{pool.path} ({pool.nodes})" for pool in sorted(cluster.pools, key=lambda p: -p.nodes)
        )
        raise ToolError(
            f"cluster {cluster.name} declares {total} nodes in its pools ({sizes}); Kubernetes "
            f"supports at most {MAX_NODES_PER_CLUSTER} nodes per cluster (POOL004), so it is not "
            "simulated"
        )
    pools = {p.name: sp for p in cluster.pools if (sp := sim_pool(p, layout_entries(cluster, p))) is not None}
    if not pools:
        raise ToolError(
            f"cluster {cluster.name} has no valid pool to simulate (`gpupolicy validate` says "
            "why "
            "its pools are missing or invalid)"
        )
    return pools


def from_cluster(cluster: Cluster, placement: str = DEFAULT_PLACEMENT) -> SimPolicy:
    """The cluster's policy as declared: its ClusterQueues, cohorts, priorities and sharing modes. A Kueue
    Configuration Kueue refuses (rule WL015) is refused here too: Kueue would not start, and admit nothing."""
    pools = check_simulable(cluster)
    refused = kueue_configuration.refusals(cluster.kueue_configuration)
    if refused:
        field, why = refused[0]
        raise ToolError(
            f"{kueue_configuration.KUEUE_VALUES}: Kueue refuses its Configuration ({field}: {why}) and would "
            "not start, so there is no policy to replay (`gpupolicy validate` reports it as WL015)"
        )
    queues: dict[str, SimQueue] = {}
    for cq in cluster.cluster_queues.values():
        flavors = _queue_flavors(cluster, cq, pools)
        if not flavors:
            continue
        preemption = cq.preemption or {}
        queues[cq.name] = SimQueue(
            name=cq.name,
            flavors=flavors,
            cohort=cq.cohort,
            tier=cq.tier,
            team=cq.team,
            workload=cq.workload,
            strategy=str(cq.obj.spec.get("queueingStrategy") or "BestEffortFIFO"),
            within_queue=str(preemption.get("withinClusterQueue") or "Never"),
            reclaim=str(preemption.get("reclaimWithinCohort") or "Never"),
            allow_shared=cq.workload != "training"
            or cq.labels.get("gpupolicy.io/allow-shared-gpus") == "true",
            **_fungibility(cq.obj.spec.get("flavorFungibility")),
            **_borrow_within(preemption),
            fair_weight=fairsharing.weight(cq.obj.spec),
        )
    if not queues:  # the engine needs a queue for every job
        raise ToolError(f"cluster {cluster.name} has no ClusterQueue with GPU quota in its pools to simulate")
    return SimPolicy(
        name="proposed",
        pools=pools,
        queues=queues,
        priorities=_priorities(cluster),
        placement=placement,
        cohorts=_cohorts(cluster, pools),
        pods_ready=from_configuration(cluster.kueue_configuration),
        fair_sharing=fairsharing.from_configuration(cluster.kueue_configuration),
    )


def _fungibility(spec: Any) -> dict[str, str]:
    """`spec.flavorFungibility`; v1beta1's `Borrow` and `Preempt` stop the search as v1beta2's
    `MayStopSearch`."""
    spec = spec if isinstance(spec, dict) else {}
    return {
        "when_can_borrow": str(spec.get("whenCanBorrow") or "MayStopSearch"),
        "when_can_preempt": str(spec.get("whenCanPreempt") or "TryNextFlavor"),
        "preference": str(spec.get("preference") or "BorrowingOverPreemption"),
    }


def _borrow_within(preemption: Any) -> dict[str, Any]:
    block = preemption.get("borrowWithinCohort") if isinstance(preemption, dict) else None
    if not isinstance(block, dict) or block.get("policy") != "LowerPriority":
        return {}
    threshold = block.get("maxPriorityThreshold")
    return {
        "borrow_within": "LowerPriority",
        "borrow_threshold": threshold
        if isinstance(threshold, int) and not isinstance(threshold, bool)
        else None,
    }


def _cohorts(cluster: Cluster, pools: dict[str, SimPool]) -> dict[str, SimCohort]:
    """Every cohort of the cluster (implied ones too) with its parent and the GPU quota it holds itself.

    Kueue refuses a cohort tree with a cycle (pkg/cache/scheduler/resource_node.go
    `updateCohortTreeResources`);
    so does the simulator, which would otherwise walk it forever."""
    for name in cluster.cohorts:
        seen: set[str] = set()
        cohort = name
        while cohort in cluster.cohorts and cohort not in seen:
            seen.add(cohort)
            cohort = cluster.cohorts[cohort].parent
        if cohort in seen:
            raise ToolError(
                f"cluster {cluster.name}: cohort {name}'s parentName chain loops "
                "(CAP008), which Kueue refuses; it is not simulated"
            )
    return {
        cohort.name: SimCohort(
            cohort.name,
            cohort.parent,
            _queue_flavors(cluster, cohort, pools),
            fairsharing.weight(cohort.obj.spec if cohort.obj is not None else None),
        )
        for cohort in cluster.cohorts.values()
    }


def _pool_of_flavor(cluster: Cluster, flavor_name: str, pools: dict[str, SimPool]) -> SimPool | None:
    """The simulated pool behind a flavor: the one pool it selects (`quotas.pool_of`); a flavor selecting none
    or
    several (CAP003) holds no simulated quota."""
    pool = quotas.pool_of(cluster, flavor_name)
    return pools.get(pool.name) if pool else None


def job_class(job: Job) -> str:
    """`inference` for serving and notebook work and anything asking for part of a card, else `training`."""
    if job.workload in INFERENCE_WORKLOADS or job.fractional:
        return "inference"
    return "training"


def queue_class(queue: SimQueue) -> str:
    return "inference" if queue.workload in INFERENCE_WORKLOADS else "training"


def pool_classes(proposed: SimPolicy) -> dict[str, str]:
    """Which kind of work each pool is for, from the nominal quota the proposed queues hold in it."""
    quota: dict[str, dict[str, int]] = {name: {"training": 0, "inference": 0} for name in proposed.pools}
    for queue in proposed.queues.values():
        for fq in queue.flavors:
            quota[fq.pool][queue_class(queue)] += fq.nominal
    return {
        name: max(("training", "inference"), key=lambda c: (q[c], c == "training"))
        for name, q in quota.items()
    }


def baseline(cluster: Cluster) -> SimPolicy:
    """Whole GPUs, strict FIFO, no sharing, no quotas, no preemption, best-fit placement, on the same pools.

    Each pool keeps its purpose (from the quota the cluster's queues hold in it): training jobs queue in one
    FIFO line for the training pools, inference and notebook jobs in one for the serving, MIG and shared
    pools, so the baseline never runs a job on hardware the proposed policy reserves for other work. A
    cluster whose pools all serve one kind of work gets a single line over every pool.
    """
    pools = {
        sp.name: SimPool(sp.name, sp.nodes, sp.gpus_per_node, "exclusive", 1, sp.model)
        for sp in check_simulable(cluster).values()
    }
    purpose = pool_classes(from_cluster(cluster))
    lines: dict[str, list[SimPool]] = {}
    for pool in pools.values():
        lines.setdefault(purpose.get(pool.name, "training"), []).append(pool)
    if len(lines) < 2:
        lines = {"": list(pools.values())}
    queues = {}
    for kind, members in sorted(lines.items()):
        name = f"{BASELINE_QUEUE}-{kind}" if kind else BASELINE_QUEUE
        flavors = tuple(FlavorQuota(f"{p.name}-whole", p.name, p.capacity) for p in members)
        queues[name] = SimQueue(name, flavors, strategy="StrictFIFO", workload=kind)
    return SimPolicy(
        name="baseline",
        pools=pools,
        queues=queues,
        priorities={tier: 0 for tier in TIERS},
        whole_gpus=True,
        placement=BASELINE_PLACEMENT,
    )


def before(cluster: Cluster, start_failure_rate: float, seed: int = 0) -> SimPolicy:
    """The brief's "before": the baseline (whole GPUs as the default scheduler sees them, strict FIFO, no
    priorities, no quotas) on cards that are in fact shared with no device-memory visibility, so a start
    crashes on a busy card at `start_failure_rate` (the share of jobs the replay without the startup check saw
    fail at start at least once: `busy_start_rate`), and its Job retries with the backoff busy.py models, each
    retry drawn again."""
    if not 0 <= start_failure_rate < 1:
        raise ValueError(f"a start failure rate is a share of starts in [0, 1), got {start_failure_rate}")
    return replace(baseline(cluster), start_failure_rate=start_failure_rate, failure_seed=seed)


def whole_node_before(cluster: Cluster) -> SimPolicy:
    """The whole-node-per-job "before": the baseline's FIFO lines, but a job holds every card of the nodes it
    lands on (a 1-card pod takes a whole 8-GPU node), as clusters that handed out nodes, not cards, ran. No
    two jobs share a node, so no start meets a busy card: this variant crashes none."""
    return replace(baseline(cluster), whole_nodes=True)


def busy_start_rate(crashed_jobs: int, tried_jobs: int) -> float:
    """Jobs that failed at start on a busy device at least once over the jobs that tried to start (0 when none
    did). Per job, not per attempt: a crashed pod's retries meet the same neighbour and crash again, which the
    before's independent draws would count as fresh bad luck."""
    return crashed_jobs / tried_jobs if tried_jobs else 0.0


def assign_queues(jobs: Sequence[Job], policy: SimPolicy, mapping: dict[str, str] | None = None) -> list[str]:
    """The queue each job goes to under `policy`.

    A job's own `queue` wins when the policy has it; then an explicit team -> queue `mapping`; then trace
    teams are dealt round-robin (in sorted order) onto the policy's team owners, and inside a team the queue
    whose tier (then workload) matches the job's is picked.
    """
    names = list(policy.queues)
    if not names:  # from_cluster refuses such a cluster; a hand-built policy gets a message, not a crash
        raise ValueError(f"the {policy.name} policy has no queue to send jobs to")
    if len(names) == 1:
        return [names[0]] * len(jobs)
    if policy.name == "baseline":  # one FIFO line per kind of work
        by_class = {q.workload or "training": q.name for q in policy.queues.values()}
        return [by_class.get(job_class(job), names[0]) for job in jobs]
    mapping = dict(mapping or {})
    by_team: dict[str, list[SimQueue]] = {}
    for queue in policy.queues.values():
        by_team.setdefault(queue.team or queue.name, []).append(queue)
    owners = sorted(by_team)
    trace_teams = sorted({j.team for j in jobs if j.team and j.team not in by_team and j.team not in mapping})
    dealt = {team: owners[i % len(owners)] for i, team in enumerate(trace_teams)} if owners else {}
    chosen: list[str] = []
    for i, job in enumerate(jobs):
        if job.queue in policy.queues:
            chosen.append(job.queue)
            continue
        if job.team in mapping and mapping[job.team] in policy.queues:
            chosen.append(mapping[job.team])
            continue
        if not job.team:  # a trace without teams: pick by kind of work over every queue
            chosen.append(_best_queue(list(policy.queues.values()), job, i).name)
            continue
        owner = job.team if job.team in by_team else dealt.get(job.team, owners[i % len(owners)])
        chosen.append(_best_queue(by_team[owner], job, i).name)
    return chosen


def _best_queue(candidates: list[SimQueue], job: Job, index: int = 0) -> SimQueue:
    """The queue that fits the job's kind of work, then tier, then workload; equals are dealt round-robin."""
    kind = job_class(job)

    def score(queue: SimQueue) -> tuple:
        shared_ok = not job.fractional or queue.allow_shared
        return (
            queue_class(queue) == kind,
            queue.tier == job.tier,
            bool(job.workload) and queue.workload == job.workload,
            shared_ok,
        )

    best = max(score(q) for q in candidates)
    tied = [q for q in candidates if score(q) == best]
    return tied[index % len(tied)]
