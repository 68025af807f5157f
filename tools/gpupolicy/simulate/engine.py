"""A discrete-event replay of jobs against a SimPolicy: Kueue admission, placement, preemption, failures.

Events sit in one heap (time, order, kind, payload): arrivals, completions, node failures and recoveries, the
end of a preempted job's termination grace, a crashed pod's recreation. All events at one instant are applied,
then pods waiting for nodes are placed, then one scheduling pass runs. Checkpoints are not events: the work a
preempted job keeps is computed from its checkpoint interval when it is evicted.

Admission is Kueue's, on quota alone (admission.py: flavor assignment with flavorFungibility, classical
preemption with `withinClusterQueue`, `reclaimWithinCohort`, `borrowWithinCohort` and CandidatesOrdering, over
the cohort-tree arithmetic of quota.py, a bucket per resource name where Kueue counts them apart:
resources.py). An admitted job holds its quota while its pods wait for nodes, as the Job's pods wait for
kube-scheduler (placed in priority, then admission order, each wherever it fits): Kueue without topology-aware
scheduling never looks at nodes, so it never preempts for node fragmentation. A preempted job stops working at
once (it loses the work since its last checkpoint) and keeps its cards and quota for
TERMINATION_GRACE_SECONDS, as Kueue releases quota only once the Job's pods are gone
(pkg/controller/jobframework/reconciler.go: the evicted Job is stopped, and the workload's QuotaReserved
condition cleared after it is no longer active); then it requeues. A job on a failed node is requeued with all
its work kept. The grace is Kubernetes' default terminationGracePeriodSeconds (the traces give none).
`waitForPodsReady` (readiness.py) is on for a policy that carries it, as Kueue 0.19 applies it by default: an
admitted job whose pods are not all running after the timeout gives its quota back and is requeued after a
doubling backoff; with blockAdmission nothing is admitted while an admitted job's pods are not running.
Fair sharing (fairsharing.py, fair_preemption.py) is on for a policy whose Configuration turns it on: the
queues' heads go in scheduling cycles, in the order of the tournament on dominant resource shares, and
preemption follows its strategies.

With `queueing=False` (the FGD experiment's protocol, fidelity.py) admission is fused with placement instead:
a job starts at once on the first flavor where quota fits and the pool can place it, or is dropped.
"""

from __future__ import annotations

import heapq
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, fields

from ..errors import ToolError
from .admission import AGE_POLICY, REASONS, Admission, Candidate, Choice, Workload
from .collector import collector_paused
from .failures import Failure
from .fair_preemption import FairPreemption, queues_under, root_of
from .fairsharing import Head, Tournament, shares_for
from .jobs import MILLI, Job, Shape, request_key, shape_in_pool
from .migpool import MigPoolState
from .pending import PendingQueue, WaitingPods
from .placement import PoolState, typical_sizes
from .policy import FlavorQuota, SimPolicy, SimPool, SimQueue, job_class, pool_classes
from .quota import Node, QuotaTree, available, lowest_fitting_subtree
from .resources import covers_gpu, demand

ARRIVE, FINISH, FAIL, RECOVER = 0, 1, 2, 3
# A pod that crashes at start is recreated by the Job controller after 10 s, 20 s, 40 s ... capped at six
# minutes, and the Job fails after backoffLimit (default 6) failures (kubernetes.io, "Jobs": Pod backoff
# failure policy).
CRASH_BACKOFF_SECONDS, CRASH_BACKOFF_CAP, JOB_BACKOFF_LIMIT = 10, 360, 6
BUSY_DEVICE_REASON = "failed at start on a busy device (Job backoff limit)"
NOT_QUEUED_REASON = "did not fit when it arrived (no queueing)"
# kubernetes.io "Pod Lifecycle", termination of Pods: terminationGracePeriodSeconds defaults to 30 seconds
TERMINATION_GRACE_SECONDS = 30
RELEASE, RETRY = 4, 5  # a preempted job's grace ends; a crashed pod is recreated by its Job
PODS_READY = 6  # an admitted job's waitForPodsReady timeout is up (readiness.py)
DEACTIVATED_REASON = "deactivated after its requeuing backoff limit (waitForPodsReady)"
PROTECTED_TIERS = ("production",)
PROTECTED_WORKLOADS = ("inference",)
# A replay stops past this many preemptions per job (and 10,000 more): queues whose settings let each take
# back what the other just took evict each other without end, no job finishes, and the replay would run and
# grow until it was killed. The most the reference fleet's replays reach is 0.13 per job (ITP on prod-eu).
PREEMPTIONS_PER_JOB, PREEMPTIONS_ANYWAY = 100, 10_000
# waitForPodsReady with no backoffLimitCount (Kueue's default) requeues for ever a workload admitted to a
# flavor whose nodes cannot hold its pods (nodes failed for good): the replay ends once that churn is all that
# is left (Engine._churn_ends), with these reasons
NO_HEALTHY_NODE_REASON = "its pods fit no healthy node of its queue's flavors (nodes failed for good)"
REQUEUED_FOR_EVER_REASON = (
    "admitted again and again to a flavor whose nodes cannot hold its pods, each time evicted by "
    "waitForPodsReady (no backoffLimitCount: requeued for ever)"
)


class EndlessReplay(ToolError):
    """A replay stopped at its preemption bound: `simulate` exits with it; `recommend` ranks the candidate
    last and searches on (recommend/executors.py)."""


@dataclass(slots=True)
class Run:
    """A job's life in the replay."""

    job: Job
    index: int
    queue: str
    priority: int
    remaining: int
    first_start: int = -1
    started: int = -1
    finished: int = -1
    flavor: FlavorQuota | None = None
    shape: Shape | None = None
    slots: list = field(default_factory=list)
    token: int = 0
    preemptions: int = 0
    interruptions: int = 0
    lost_milli_seconds: int = 0
    never_reason: str = ""
    # (total milli, milli per pod) as the trace asks, MIG instances (Engine._size), then per flavor it can
    # take (quota key, amount) (Engine._add_demands_to_sizes)
    size: tuple = (0, 0, (), ())
    request: tuple = ()  # what decides the job's shape in a pool (jobs.request_key), so shapes are shared
    charge: tuple = ("", 0)  # (quota key, milli-units) it holds while bound or admitted (resources.demand)
    busy_starts: int = 0  # times it crashed at start on a card whose memory a neighbour held
    admitted: int = -1  # when it last reserved quota (Kueue mode), -1 while it holds none
    evicted: bool = False  # preempted, its pods terminating: still holds its cards and quota
    preemptor: int = -1  # the run that preempted it, while it terminates
    ready_timeouts: int = 0  # evictions for pods not ready within waitForPodsReady's timeout
    queued: int = -1  # its queue order time once requeued by such an eviction (-1: its submit time)
    timer: int = -1  # the admission whose PodsReady timeout is scheduled

    @property
    def key(self) -> tuple[int, int, int]:
        return (-self.priority, self.job.submit if self.queued < 0 else self.queued, self.index)

    def __reduce__(self):
        """Pickled as its fields in order (a forked replay's answer holds one per job, beside.py): half the
        time of the dataclass's name-to-value state."""
        return (Run, tuple(getattr(self, name) for name in RUN_FIELDS))


RUN_FIELDS = tuple(f.name for f in fields(Run))


@dataclass(frozen=True, slots=True)
class Options:
    """What a job's request can take in one queue (Engine._options): per flavor it can run on, its shape and
    the (quota key, amount) it charges there, as admission reads them; and the quota keys asked for."""

    shapes: dict[str, Shape]  # flavor -> shape
    requests: dict[str, tuple[str, int]]  # flavor -> (quota key, amount)
    per_flavor: tuple[
        tuple[str, int, Node], ...
    ]  # (quota key, amount, the queue's leaf) in the queue's order
    asks: tuple[tuple[str, int, Node], ...]  # the same for each of `requests`
    keys: tuple[str, ...]
    ever_fits: bool  # some flavor's pool and potential quota could hold it (Engine._could_ever_fit)


@dataclass
class Result:
    policy: str
    runs: list[Run]
    timeline: list[tuple[int, int, int]]  # (time, allocated milli, available milli) after each change
    capacity: int  # milli, all nodes up
    failure_milli_seconds: int = 0
    preemptions: int = 0
    events: int = 0
    end: int = 0
    queues: dict[str, SimQueue] = field(default_factory=dict)
    busy_starts: int = 0  # starts that crashed on a busy device (time-sliced pools without the startup check)
    starts: int = 0  # every start attempted, the crashed ones included
    # per instant a class's figures changed: (time, {pool class: (allocated milli, available milli, work of
    # that class waiting)}); the pool class is policy.pool_classes, a job's class policy.job_class
    class_timeline: list[tuple[int, dict[str, tuple[int, int, bool]]]] = field(default_factory=list)
    pool_class: dict[str, str] = field(default_factory=dict)
    useful_in_window: int = 0  # milli-GPU-seconds of kept work done between the first and last submission


class Holders:
    """The workloads holding quota, by (queue, quota key), as admission asks for them (`workloads`); per quota
    key, how many times they changed, counted in `versions` (the quota tree's: QuotaTree.versions, so one
    number per key says that a key's usage or holders moved, and kept verdicts are stamped with it,
    Engine._assign); per (queue, key), how much quota each priority holds (HeldAdmission asks what a
    preemption could free at most). Apart from the engine, so admission's callbacks refer to this and not
    to the engine: no reference cycle keeps a finished engine alive until the cyclic collector finds it."""

    def __init__(self, versions: Counter) -> None:
        self.records: dict[tuple[str, str], dict[int, Workload]] = {}
        self.changes = versions
        self.amounts: dict[tuple[str, str], Counter] = {}  # (queue, key) -> priority -> milli-units held
        self.priorities: dict[str, Counter] = {}  # quota key -> priority -> workloads holding quota there

    def workloads(self, queue: str, key: str):
        return self.records.get((queue, key), {}).values()

    def put(self, workload: Workload) -> None:
        """A workload now holds quota, or its record changed (evicted)."""
        where = (workload.queue, workload.flavor)
        records = self.records.setdefault(where, {})
        if workload.index not in records:
            self.amounts.setdefault(where, Counter())[workload.priority] += workload.total
            self.priorities.setdefault(workload.flavor, Counter())[workload.priority] += 1
        records[workload.index] = workload
        self.changes[workload.flavor] += 1

    def drop(self, queue: str, key: str, index: int) -> None:
        workload = self.records.get((queue, key), {}).pop(index, None)
        if workload is not None:
            self.changes[key] += 1
            amounts = self.amounts[(queue, key)]
            amounts[workload.priority] -= workload.total
            if not amounts[workload.priority]:
                del amounts[workload.priority]
            held = self.priorities[key]
            held[workload.priority] -= 1
            if not held[workload.priority]:
                del held[workload.priority]

    def holds(self, queue: str, key: str, index: int) -> bool:
        return index in self.records.get((queue, key), ())

    def freeable(self, queue: str, key: str, policy: str, priority: int) -> int:
        """At most how much quota at (queue, key) a preemption `policy` lets a workload of `priority` take
        (admission.satisfies; LowerOrNewerEqualPriority counts every equal priority, whatever its age)."""
        amounts = self.amounts.get((queue, key))
        if not amounts or policy == "Never":
            return 0
        if policy == "LowerPriority":
            if min(amounts) >= priority:  # most often: nothing held below it (no generator to learn that)
                return 0
            return sum(amount for held, amount in amounts.items() if held < priority)
        if policy == AGE_POLICY:
            return sum(amount for held, amount in amounts.items() if held <= priority)
        return sum(amounts.values())

    def any_preemptible(self, key: str, policy: str, priority: int) -> bool:
        """Whether any workload holding quota under `key`, in any queue, is one a preemption `policy` lets a
        workload of `priority` take (`freeable` for each queue, without summing any)."""
        held = self.priorities.get(key)
        if not held or policy == "Never":
            return False
        if policy == "LowerPriority":
            return min(held) < priority
        if policy == AGE_POLICY:
            return min(held) <= priority
        return True

    def freeable_below(self, queue: str, key: str, priority: int, threshold: int | None) -> int:
        """The quota at (queue, key) held below `priority` and at most `threshold` (None: any): what a
        preemptor that borrows may reclaim under `borrowWithinCohort: LowerPriority`
        (admission.above_threshold is false for it)."""
        amounts = self.amounts.get((queue, key)) or {}
        return sum(
            amount
            for held, amount in amounts.items()
            if held < priority and (threshold is None or held <= threshold)
        )


REFUSED_NONE = 1 << 62  # `HeldAdmission._enough` before any amount was refused


class HeldAdmission(Admission):
    """Admission over the engine's workloads holding quota, which knows how much quota each priority holds per
    (queue, quota key) (Holders.freeable). A preemption search (`targets`) succeeds only when evicting some of
    its candidates lets the workload fit: of its own queue, holders the `withinClusterQueue` policy lets it
    preempt; of the other queues QuotaTree.cohort_candidates finds above their nominal quota, holders the
    `reclaimWithinCohort` policy lets it preempt, and while it borrows only those `borrowWithinCohort` allows.
    Evicting all of them frees the most any attempt of the search can (a node's `available` only grows as
    usage falls), so where even that leaves too little, or there is none, every attempt fails: that is told
    from the amounts held alone (`may_preempt_enough`), and the search, which would build and sort its
    candidate lists and take them out one by one, is skipped."""

    def __init__(self, tree: QuotaTree, queues: dict[str, SimQueue], holders: Holders, fair=None) -> None:
        super().__init__(tree, queues, holders.workloads, fair)
        if holders.changes is not tree.versions:
            raise ValueError("the holders must count their changes in the quota tree's versions")
        self.freeable, self.holds, self.versions = holders.freeable, holders.holds, tree.versions
        self.freeable_below, self.any_preemptible = holders.freeable_below, holders.any_preemptible
        # quota key -> (its version, {what was asked: the answer}) (`_kept`)
        self.memos: dict[str, tuple[int, dict[tuple, object]]] = {}

    def targets(self, queue: SimQueue, incoming: Workload) -> tuple[Candidate, ...] | None:
        """The search's targets, or the ones it found for an alike workload while nothing it reads has changed
        (`_kept`); of the workload it reads its queue, request and priority, its age only under a
        LowerOrNewerEqualPriority policy, and its index only when it holds quota there itself (an evicted
        workload, still terminating, is no candidate against itself)."""
        key = incoming.flavor
        kept = self._kept(key)
        if self.fair is not None:  # its verdict reads the shares, every key's usage: never kept
            if not self._enough(kept, queue, key, incoming.total, incoming.priority):
                return None
            return super().targets(queue, incoming)
        asked = (
            "targets",
            queue.name,
            incoming.total,
            incoming.priority,
            incoming.submit if AGE_POLICY in (queue.within_queue, queue.reclaim) else None,
            incoming.index if self.holds(queue.name, key, incoming.index) else None,
        )
        if asked not in kept:
            found = None  # every attempt of the search fails
            if self._enough(kept, queue, key, incoming.total, incoming.priority):
                found = super().targets(queue, incoming)
            kept[asked] = found
        return kept[asked]

    def may_admit(self, queue: SimQueue, key: str, total: int, priority: int, leaf: Node) -> bool:
        """Whether a flavor charging `total` milli-units of quota key `key` may admit a workload of `priority`
        in `queue` (whose quota node there is `leaf`) now (False: it surely does not): the request fits the
        quota available, or a preemption search may free enough. The search's bound is kept per key as the
        search's answers are: a blocked job is asked again after every release in its pool, and its queue's
        other jobs alike ask the same."""
        # `available(leaf)`, its kept answer read here, and `_enough` on `_kept(key)`, written out: this is
        # the replay's most frequent question (two million times in the ITP replay on prod-eu)
        if total <= (leaf.free if leaf.seen == leaf.moves[0] else available(leaf)):
            return True
        stamp = self.versions[key]
        memo = self.memos.get(key)
        if memo is None or memo[0] != stamp:
            memo = self.memos[key] = (stamp, {})
        return self._enough(memo[1], queue, key, total, priority)

    def _enough(self, kept: dict, queue: SimQueue, key: str, total: int, priority: int) -> bool:
        """`may_preempt_enough`, kept per (queue, priority) as the largest amount it allowed and the least it
        refused under this stamp of the key: it never allows an amount where it refuses a smaller one (what
        evicting every candidate frees does not grow with the amount), so any amount at most the one or at
        least the other is answered without a bound (tests/simulate/test_simulate_identity.py checks it)."""
        known = kept.get((queue.name, priority))
        if known is None:
            known = kept[(queue.name, priority)] = [0, REFUSED_NONE]
        if total <= known[0]:
            return True
        if total >= known[1]:
            return False
        if self.may_preempt_enough(queue, key, total, priority):
            known[0] = total
            return True
        known[1] = total
        return False

    def _kept(self, key: str) -> dict:
        """What was worked out under quota key `key` since its tree's usage or its holders last changed: all
        of it reads that key alone (its cohort tree, the workloads holding quota under it), so it holds until
        then. Never asked while a search has taken candidates out (QuotaTree.shift): the tree is as its
        version says."""
        stamp = self.versions[key]
        kept = self.memos.get(key)
        if kept is None or kept[0] != stamp:
            kept = self.memos[key] = (stamp, {})
        return kept[1]

    def may_preempt_enough(self, queue: SimQueue, key: str, total: int, priority: int) -> bool:
        """Whether a preemption search for `total` milli-units of quota key `key` in `queue`, by a workload of
        `priority`, may succeed (False: it surely fails), per attempt of the search (admission.Admission
        .targets): without borrowing, the workload must end within its queue's own quota, and only its own
        queue's holders lower that queue's usage; while borrowing, only the candidates valid then count
        (`_valid`: another queue's holder only with the hierarchical advantage, or below the preemptor's
        priority and `borrowWithinCohort`'s threshold). Each attempt may succeed only where the workload fits
        once every holder it could take is taken out of the tree (put back before returning)."""
        own = self.freeable(queue.name, key, queue.within_queue, priority)
        if not own and not self.any_preemptible(key, queue.reclaim, priority):
            return False  # no holder anywhere under the key that it may take (most blocked jobs)
        leaf = self.tree.leaves[(queue.name, key)]
        if self.fair is not None:
            return self._may_preempt_fairly(queue, leaf, key, total, priority, own)
        anyhow = [(queue.name, own)] if own else []  # (queue, amount) either attempt may take out
        borrowing = list(anyhow)  # what the attempt while borrowing may take out
        if queue.reclaim != "Never" and leaf.parent is not None:
            while_borrowing = queue.borrow_within == "LowerPriority"
            for name, advantage, _ in self.tree.cohort_candidates(queue.name, key, total):
                if not (amount := self.freeable(name, key, queue.reclaim, priority)):
                    continue
                anyhow.append((name, amount))
                if advantage:
                    borrowing.append((name, amount))
                elif while_borrowing and (
                    below := self.freeable_below(name, key, priority, queue.borrow_threshold)
                ):
                    borrowing.append((name, below))
        if not anyhow:
            return False
        if leaf.usage - own + total <= leaf.subtree and self._fits_without(leaf, key, total, anyhow):
            return True
        return bool(borrowing) and self._fits_without(leaf, key, total, borrowing)

    def _may_preempt_fairly(
        self, queue: SimQueue, leaf: Node, key: str, total: int, priority: int, own: int
    ) -> bool:
        """The bound with fair sharing on (fair_preemption.py `findCandidates`): the workload fits, borrowing
        allowed, once its own queue's holders and those of every borrowing queue of its tree that
        `reclaimWithinCohort` lets it take are all out (the strategies only ever take fewer)."""
        taken = [(queue.name, own)] if own else []
        if queue.reclaim != "Never" and leaf.parent is not None:
            for other in queues_under(root_of(leaf)):
                if other is not leaf and other.usage > other.nominal:
                    if amount := self.freeable(other.name, key, queue.reclaim, priority):
                        taken.append((other.name, amount))
        return bool(taken) and self._fits_without(leaf, key, total, taken)

    def _fits_without(self, leaf: Node, key: str, total: int, taken: list[tuple[str, int]]) -> bool:
        for name, amount in taken:
            self.tree.shift(name, key, -amount)
        fits = total <= available(leaf)
        for name, amount in reversed(taken):
            self.tree.shift(name, key, amount)
        return fits


class Engine:
    """`pools` replaces the PoolState of the named pools (the FGD experiment's node-class pool). The workload
    protocol of the FGD simulator is two options: `departures=False` (a started job holds its cards to the
    end) and `queueing=False` (a job that cannot start when it arrives is dropped, not queued).
    `shortcuts=False` sends every admission attempt through admission.Admission in full (no verdict kept,
    no search skipped): the reference the shortcuts are tested against (tests/simulate/
    test_simulate_identity.py)."""

    def __init__(
        self,
        policy: SimPolicy,
        jobs: Sequence[Job],
        queues: Sequence[str],
        failures: Sequence[Failure] = (),
        pools: dict | None = None,
        departures: bool = True,
        queueing: bool = True,
        events: list | None = None,
        shortcuts: bool = True,
    ):
        self.policy = policy
        # admission on quota alone; the FGD protocol (no queueing) fuses it with placement
        self.kueue = queueing
        self.log = events  # a list to append one dict per job event to, or None
        self.grace = TERMINATION_GRACE_SECONDS
        self.ready = policy.pods_ready if queueing else None  # waitForPodsReady, Kueue mode only
        self.unready: set[int] = set()  # with blockAdmission: admitted runs whose pods are not all running
        self.unblocked = False  # the last of them came ready: every queue gets a pass
        self.departures, self.queueing = departures, queueing
        self.shapes: dict[tuple[tuple, str], Shape | None] = {}  # (request, pool) -> shape, computed once
        requests: dict[tuple, tuple[Job, int]] = {}  # request -> (a job asking for it, how many jobs do)
        keys = [request_key(job) for job in jobs]
        for job, key in zip(jobs, keys, strict=True):
            example, count = requests.get(key, (job, 0))
            requests[key] = (example, count + 1)
        given = pools or {}
        self.pools = {
            name: given.get(name) or self._pool_state(p, requests) for name, p in policy.pools.items()
        }
        self.instance_pools = [name for name, pool in policy.pools.items() if pool.instances]
        # a job's size reads only what its request key holds: worked out once per request
        sizes = {key: self._size(example) for key, (example, _) in requests.items()}
        self.runs = [
            Run(
                job,
                i,
                q,
                policy.priority(job.tier or policy.queues[q].tier),
                job.duration,
                size=sizes[key],
                request=key,
            )
            for i, (job, q, key) in enumerate(zip(jobs, queues, keys, strict=True))
        ]
        # queue -> quota key -> milli-units held (a flavor's GPU bucket in milli-GPUs, resources.py)
        self.usage: dict[str, Counter] = {name: Counter() for name in policy.queues}
        # Kueue's cohort-tree arithmetic, usage kept in step
        self.quota = QuotaTree(policy.queues, policy.cohorts)
        # time-sliced flavors whose quota lists no nvidia.com/gpu: a whole-card pod's one replica is barred
        self.no_whole_cards = {
            fq.flavor
            for q in policy.queues.values()
            for fq in q.flavors
            if policy.pools[fq.pool].sharing == "time-sliced" and not covers_gpu(fq.gpu_names)
        }
        self._add_demands_to_sizes()
        self.nominal: dict[tuple[str, str], int] = {k: leaf.nominal for k, leaf in self.quota.leaves.items()}
        self.pending: dict[str, PendingQueue] = {name: PendingQueue() for name in policy.queues}
        # A queue's pass can start something only after cards or quota came free in one of its pools (quota is
        # per flavor, and a flavor is one pool): a release marks the queues of that pool stale, and a
        # scheduling pass runs only the stale ones instead of every queue after every finish.
        self.queues_in_pool: dict[str, set[str]] = {name: set() for name in policy.pools}
        for queue in policy.queues.values():
            for fq in queue.flavors:
                self.queues_in_pool[fq.pool].add(queue.name)
        self.stale: set[str] = set()
        self.running: dict[str, set[int]] = {name: set() for name in policy.pools}  # pool -> run indices
        # queue -> priority -> run indices: a victim search looks only at the priorities it may preempt
        self.queue_running: dict[str, dict[int, set[int]]] = {name: {} for name in policy.queues}
        self.priority_levels = sorted({run.priority for run in self.runs})
        for name, pool in policy.pools.items():
            self.pools[name].memory_check = pool.startup_check
        self.busy_starts = 0
        self.starts = 0
        # the "before" crashes starts at a measured rate (policy.before); its own stream, seeded, so a replay
        # is reproducible and the other policies draw nothing
        self.crashes = random.Random(policy.failure_seed) if policy.start_failure_rate else None
        # queue -> runs with quota (rebuilt only when one changes); admission reads them from `holders`
        self.holding: dict[str, dict[int, Workload]] = {name: {} for name in policy.queues}
        self.holders = Holders(self.quota.versions)
        # admitted, no nodes yet
        self.node_wait: dict[str, WaitingPods] = {name: WaitingPods() for name in policy.pools}
        self.sweep: set[str] = set()
        self.reserved: dict[int, tuple[str, int]] = {}  # preemptor -> (flavor, quota its victims gave back)
        # queue -> its head, waiting for the workloads it preempted  # pools where cards came free since their
        # waiting pods were last tried
        self.preempting: dict[str, int] = {}
        # this pass's preemptors (queue, quota key, amount) and their targets, which Kueue's scheduling cycle
        # counts as admitted and gone for the workloads after them (_fits_in_cycle)
        self.claims: list[tuple[str, str, int]] = []
        self.doomed: set[int] = set()
        self.shortcuts = shortcuts
        # Kueue's fair sharing (fairsharing.py), when the Configuration turns it on: Kueue mode only
        self.fair = policy.fair_sharing if queueing else None
        fair_preemption = None
        if self.fair is not None:
            shares = shares_for(policy, self.quota)
            self.tournament = Tournament(shares, self.fair)
            fair_preemption = FairPreemption(self.fair, shares, self.holders.workloads)
        # a verdict with fair sharing reads the shares, so every quota key's usage (Engine._stamp)
        self.all_keys = tuple(sorted({key for _, key in self.quota.leaves}))
        self.admission = (
            HeldAdmission(self.quota, policy.queues, self.holders, fair_preemption)
            if shortcuts
            else Admission(self.quota, policy.queues, self.holders.workloads, fair_preemption)
        )
        self.options: dict[tuple[tuple, str], Options] = {}  # (request, queue) -> Engine._options
        self.run_options: dict[int, Options] = {}  # run index -> the same, without hashing its request
        self.probes: dict[str, tuple[tuple, tuple]] = {}  # queue -> (minimal sizes, _probe_asks)
        # run index -> (stamp, verdict) of its last admission attempt (Engine._assign)
        self.verdicts: dict[int, tuple[tuple, Choice | None]] = {}
        self.levels: dict[int, tuple[int, int]] = {}  # run index -> (QuotaTree.changes, _head_borrowing)
        self.heap: list[tuple] = []
        self.order = 0
        self.now = 0
        self.timeline: list[tuple[int, int, int]] = [(0, 0, self._available())]
        self.failure_milli_seconds = 0
        self.preemptions = 0
        self.most_preemptions = PREEMPTIONS_PER_JOB * len(self.runs) + PREEMPTIONS_ANYWAY
        self.last_preemption: tuple[Run, Run, str] | None = None  # (victim, preemptor, reason)
        self.churn = 0  # heap events that are waitForPodsReady churn: timeouts and requeues (_churn_ends)
        self.churn_since = -1  # when the heap last came to hold churn alone with nothing running (-1: not)
        self.requeues: set[int] = set()  # runs whose requeue after a PodsReady eviction is in the heap
        self.events = 0
        self.open_failures: list[tuple[str, tuple[int, ...], int]] = []  # never recovered
        self.pool_class = pool_classes(policy)
        self.classes = sorted(set(self.pool_class.values()) | {job_class(run.job) for run in self.runs})
        self.waiting: dict[str, set[int]] = {kind: set() for kind in self.classes}  # arrived, not running
        self.class_timeline: list[tuple[int, dict[str, tuple[int, int, bool]]]] = []
        # what the last _record saw: pool allocations and capacities, whether each class had work waiting
        self.pool_states = list(self.pools.values())
        self.waiting_by_class = [self.waiting[kind] for kind in self.classes]
        self.class_of_pool = [
            self.classes.index(self.pool_class.get(name, "training")) for name in self.pools
        ]
        self.recorded: list | None = None
        submits = [run.job.submit for run in self.runs]
        self.window = (min(submits, default=0), max(submits, default=0))
        self.useful_in_window = 0
        for run in self.runs:
            self._push(run.job.submit, ARRIVE, run.index)
        for failure in failures:
            if failure.pool not in self.pools:
                raise ValueError(
                    f"--fail-nodes: no pool {failure.pool!r} in policy (pools: "
                    f"{', '.join(sorted(self.pools))})"
                )
            self._push(failure.at, FAIL, failure)

    def _pool_state(self, pool: SimPool, requests: dict[tuple, tuple[Job, int]]) -> PoolState | MigPoolState:
        """Per-card free capacity, or a MIG pool's fixed instances where its layout is known (migpool.py)."""
        if pool.instances:
            return MigPoolState(pool.name, pool.nodes, pool.instances, pool.model)
        return PoolState(
            pool.name,
            pool.nodes,
            pool.gpus_per_node,
            self.policy.placement,
            self._typical(requests, pool.name),
        )

    def _typical(self, requests: dict[tuple, tuple[Job, int]], pool_name: str):
        sizes: Counter = Counter()
        for request, (job, count) in requests.items():
            shape = self._request_shape(request, job, pool_name)
            if shape is not None:
                sizes[(shape.count, shape.milli)] += count
        return typical_sizes(sizes.elements())

    def _push(self, time: int, kind: int, payload) -> None:
        self.order += 1
        heapq.heappush(self.heap, (time, kind, self.order, payload))

    def _available(self) -> int:
        return sum(p.capacity for p in self.pools.values())

    def _endless_preemption(self) -> str:
        victim, by, reason = self.last_preemption
        return (
            f"the replay of the {self.policy.name} policy stopped at {self.now / 3600:,.1f} h after "
            f"{self.preemptions:,} preemptions for {len(self.runs):,} jobs (at most {PREEMPTIONS_PER_JOB} "
            f"per job and {PREEMPTIONS_ANYWAY:,} more), a sign that its queues' jobs preempt each other "
            f"without end; the last: {victim.job.id} of {victim.queue} by {by.job.id} of {by.queue} "
            f"({reason}). Check the reclaimWithinCohort, borrowWithinCohort and withinClusterQueue settings "
            "of the queues involved"
        )

    def _allocated(self) -> int:
        return sum(p.allocated for p in self.pools.values())

    # -- main loop -----------------------------------------------------------------------------------
    def run(self) -> Result:
        with collector_paused():  # a replay makes no reference cycles (collector.py)
            return self._run()

    def _run(self) -> Result:
        heap = self.heap
        while heap:
            now = heap[0][0]
            self.now = now
            released = False
            arrivals: list[Run] = []
            while heap and heap[0][0] == now:
                _, kind, _, payload = heapq.heappop(heap)
                self.events += 1
                if kind == ARRIVE:
                    run = self.runs[payload]
                    if self.requeues and payload in self.requeues:  # after a PodsReady eviction
                        self.requeues.discard(payload)
                        self.churn -= 1
                    if self._enqueue(run):
                        arrivals.append(run)
                elif kind == FINISH:
                    run = self.runs[payload[0]]
                    if run.token == payload[1] and run.started >= 0:
                        self._finish(run)
                        released = True
                elif kind == FAIL:
                    self._fail(payload)
                    released = True
                elif kind == RELEASE:
                    self._release_evicted(self.runs[payload])
                    released = True
                elif kind == RETRY:
                    run = self.runs[payload]
                    if run.admitted >= 0 and run.started < 0 and not run.evicted:
                        self._place_or_wait(run)
                elif kind == PODS_READY:
                    self.churn -= 1
                    released = self._pods_ready_timeout(self.runs[payload[0]], payload[1]) or released
                else:
                    self._recover(payload)
                    released = True
            if self.sweep:
                self._place_waiting()
            if released or self.fair is not None:
                self.stale.update(run.queue for run in arrivals)  # a full pass takes in the new jobs too
                self._schedule_all()
            else:
                self._schedule_arrivals(arrivals)
            while self.unblocked:  # blockAdmission lifted: the queues it held back get their pass
                self.unblocked = False
                self.stale.update(self.policy.queues)
                self._schedule_all()
            if not self.queueing:
                self._drop_unstarted(arrivals)
            self._record()
            if self.preemptions > self.most_preemptions:
                raise EndlessReplay(self._endless_preemption())
            if self.churn == len(heap) and heap:
                if self._churn_ends():
                    break
            elif self.churn_since >= 0:
                self.churn_since = -1
        end = self.now
        for pool_name, nodes, since in self.open_failures:
            gpus = len(nodes) * self.pools[pool_name].gpus_per_node
            self.failure_milli_seconds += (end - since) * gpus * MILLI
        for run in self.runs:
            if run.finished < 0 and not run.never_reason:
                run.never_reason = "still pending when the replay ended"
        return Result(
            self.policy.name,
            self.runs,
            self.timeline,
            sum(p.full_capacity for p in self.pools.values()),
            self.failure_milli_seconds,
            self.preemptions,
            self.events,
            end,
            dict(self.policy.queues),
            self.busy_starts,
            self.starts,
            self.class_timeline,
            dict(self.pool_class),
            self.useful_in_window,
        )

    def _record(self) -> None:
        """The instant's figures, on the timeline and per class. Each series already ends with the figures of
        the last instant recorded, so an instant where no pool's allocation or capacity and no class's
        waiting work changed has nothing to add (most arrivals only join a queue)."""
        pools = self.pool_states
        state = [pool.allocated for pool in pools]
        state += [pool.capacity for pool in pools]
        state += [bool(waiting) for waiting in self.waiting_by_class]
        if state == self.recorded:
            return
        self.recorded = state
        count = len(pools)
        point = (self.now, sum(state[:count]), sum(state[count : 2 * count]))
        last = self.timeline[-1]
        if point[1:] != last[1:]:
            if last[0] == point[0]:
                self.timeline[-1] = point
            else:
                self.timeline.append(point)
        self._record_classes(state)

    def _record_classes(self, state: list) -> None:
        """Per class of pools, (allocated, available, whether that class's work waits), from `_record`'s
        state: each pool's allocation, then each pool's capacity, then each class's waiting."""
        count, kinds = len(self.pool_states), self.classes
        allocated, available = [0] * len(kinds), [0] * len(kinds)
        for position, kind in enumerate(self.class_of_pool):
            allocated[kind] += state[position]
            available[kind] += state[count + position]
        waiting = state[2 * count :]
        point = {kind: (allocated[j], available[j], waiting[j]) for j, kind in enumerate(kinds)}
        series = self.class_timeline
        if series and series[-1][1] == point:
            return
        if series and series[-1][0] == self.now:
            series[-1] = (self.now, point)
        else:
            series.append((self.now, point))

    def _keep(self, run: Run, since: int, seconds: int) -> None:
        """Work a run keeps (ran from `since` for `seconds`), counted where it falls in the arrival window."""
        lo, hi = max(since, self.window[0]), min(since + seconds, self.window[1])
        if hi > lo:
            self.useful_in_window += (hi - lo) * run.size[0]

    def _waits(self, run: Run) -> None:
        self.waiting[job_class(run.job)].add(run.index)

    def _stops_waiting(self, run: Run) -> None:
        self.waiting[job_class(run.job)].discard(run.index)

    # -- queues --------------------------------------------------------------------------------------
    def _shape(self, run: Run, flavor: FlavorQuota) -> Shape | None:
        """The job's shape on the flavor's pool; None also where the flavor's quota lacks the resource the job
        asks for (Kueue: no fit): a MIG flavor counting resources apart without the job's instance, or a
        time-sliced flavor without `nvidia.com/gpu` for a whole-card pod."""
        try:
            shape = self.shapes[(run.request, flavor.pool)]
        except KeyError:
            shape = self._request_shape(run.request, run.job, flavor.pool)
        if shape is not None and flavor.resources and self._demand(flavor, shape) is None:
            return None
        if shape is not None and not run.job.fractional and flavor.flavor in self.no_whole_cards:
            return None
        return shape

    def _request_shape(self, request: tuple, job: Job, pool_name: str) -> Shape | None:
        key = (request, pool_name)
        if key not in self.shapes:
            pool = self.policy.pools[pool_name]
            self.shapes[key] = shape_in_pool(
                job,
                pool.sharing,
                pool.replicas,
                pool.gpus_per_node,
                self.policy.whole_gpus,
                pool.model,
                self.policy.replica_per_pod,
                pool.profiles,
            )
            if self.policy.whole_nodes and self.shapes[key] is not None:
                self.shapes[key] = whole_nodes(self.shapes[key], pool.gpus_per_node)
        return self.shapes[key]

    def _enqueue(self, run: Run) -> bool:
        """Queue an arriving job; a job no flavor could ever hold is reported never-scheduled at once."""
        queue = self.policy.queues[run.queue]
        if run.interruptions == run.preemptions == run.busy_starts == run.ready_timeouts == 0:
            self._event("arrived", run, queue=run.queue, tier=run.job.tier, gpus=run.size[0] / MILLI)
        if not self._options(run, queue).ever_fits:
            run.never_reason = "larger than any flavor's quota or pool can hold"
            self._event("never", run, reason=run.never_reason)
            return False
        self._add_pending(run)
        self._waits(run)
        return True

    def _could_ever_fit(self, run: Run, flavor: FlavorQuota) -> bool:
        shape = self._shape(run, flavor)
        if shape is None:
            return False
        pool = self.policy.pools[flavor.pool]
        key, amount = self._demand(flavor, shape)
        return shape.total <= pool.capacity and amount <= self.quota.potential(run.queue, key)

    def _size(self, job: Job) -> tuple:
        """(total milli, milli per pod) as the trace asks, then the MIG instance it takes in each pool
        replayed per layout: a job that failed rules out a larger one only when both ask for the same
        instances there
        (a 1g job waits for a 1g instance while a free 3g one still holds a 3g job; pending.dominates)."""
        milli = int(job.fraction * MILLI) if job.fractional else MILLI
        count = 1 if job.fractional else job.gpus
        request = request_key(job)
        instances = tuple(
            (shape.profile if (shape := self._request_shape(request, job, name)) else None)
            for name in self.instance_pools
        )
        return (job.pods * count * milli, count * milli, instances)

    def _add_demands_to_sizes(self) -> None:
        """Each run's size ends with what it charges on each flavor of its queue it can take, (quota key,
        amount) in the queue's order (a flavor's keys are its own): in Kueue mode a job that failed rules out
        another only when that one takes no flavor the failed one could not, and asks at least as much of
        each it takes (pending.dominates). Its total says less: a whole-card job may take a flavor a
        fractional one cannot, and a job of two pods each asking a quarter of a card charges two whole cards
        on an exclusive pool. Kueue's BestEffortFIFO tries every workload."""
        charged: dict[tuple[tuple, str], tuple] = {}
        alike: dict[tuple, tuple] = {}  # one object for equal charges, which dominates() tells by identity
        for run in self.runs:
            where = (run.request, run.queue)
            if where not in charged:
                flavors = self.policy.queues[run.queue].flavors
                demands = tuple(
                    self._demand(f, shape) for f in flavors if (shape := self._shape(run, f)) is not None
                )
                charged[where] = alike.setdefault(demands, demands)
            run.size = (*run.size, charged[where])

    def _add_pending(self, run: Run) -> None:
        self.pending[run.queue].add((*run.key, run.index), run.size)

    # -- quota ---------------------------------------------------------------------------------------
    def _demand(self, flavor: FlavorQuota, shape: Shape) -> tuple[str, int] | None:
        """The quota key the shape charges on the flavor and how much (Kueue counts each resource alone)."""
        return demand(flavor.flavor, flavor.resources, shape.pods, shape.profile, shape.total)

    def _quota_fits(self, queue: SimQueue, flavor: FlavorQuota, shape: Shape) -> bool:
        key, amount = self._demand(flavor, shape)
        return amount <= available(self.quota.leaves[(queue.name, key)])  # asked on every attempt

    def _charge(self, run: Run, sign: int) -> None:
        self._use(run.queue, run.charge[0], sign * run.charge[1])

    def _use(self, queue_name: str, flavor: str, delta: int) -> None:
        """Change a queue's usage of a flavor, and its cohorts' up the tree."""
        self.usage[queue_name][flavor] += delta
        self.quota.use(queue_name, flavor, delta)

    # -- scheduling ----------------------------------------------------------------------------------
    def _next_queue(self, done: set[str]) -> str | None:
        """The stale queue to run next, by its head job as Kueue orders heads (pkg/scheduler/scheduler.go,
        classicalIterator, v0.19.2): the head that borrows less first (none: within its queue's nominal
        quota), then priority, then submit time. Stale queues with nothing pending are no longer stale.
        A queue whose pass surely starts nothing (`_surely_idle`) would change nothing, so it is done on the
        spot and the next in that order is asked, without ordering the rest again."""
        heads = []
        for name in list(self.stale):
            head = self.pending[name].head()
            if head is None:
                self.stale.discard(name)
            elif name not in done:
                heads.append((head, name))
        if len(heads) > 1:
            borrowing_now = self._borrowing_now
            heads = sorted([((borrowing_now(head[-1]), head), name) for head, name in heads])
        for _, name in heads:
            if not self._surely_idle(name):
                return name
            self._pass_done(name, done)
        return None

    def _surely_idle(self, name: str) -> bool:
        """Whether the queue's pass surely starts nothing; a StrictFIFO pass is never told in advance."""
        queue = self.policy.queues[name]
        return queue.strategy != "StrictFIFO" and self._pass_surely_fails(queue, self.pending[name])

    def _pass_done(self, name: str, done: set[str]) -> None:
        """What a pass that starts nothing does (`_schedule_queue`): the queue is no longer stale, and a head
        that waited for its preemptions waits no more."""
        self.stale.discard(name)
        done.add(name)
        self.preempting.pop(name, None)

    def _borrowing_now(self, index: int) -> int:
        """`_head_borrowing`, kept while no quota tree changed: a pass that started nothing changed none, so
        the next choice of queue reads the other heads' levels again (one of the shortcuts)."""
        if not self.shortcuts:
            return self._head_borrowing(index)
        changes = self.quota.changes
        kept = self.levels.get(index)
        if kept is not None and kept[0] == changes:
            return kept[1]
        level = self._head_borrowing(index)
        self.levels[index] = (changes, level)
        return level

    def _head_borrowing(self, index: int) -> int:
        """How far the job's flavor assignment would borrow, as Kueue orders heads by it (scheduler.go
        classicalIterator on `Assignment.Borrows`, the height of the lowest cohort subtree whose quota holds
        the job: hierarchical_preemption.go FindHeightOfLowestSubtreeThatFits): 0 on the first flavor where it
        is within the queue's nominal quota; the height on the first where it fits only by borrowing (Kueue's
        default `whenCanBorrow: MayStopSearch` stops there). A job no flavor fits now counts the height its
        first flavor would borrow at, as SimulatePreemption reports a flavor without candidates."""
        run = self.runs[index]
        queue = self.policy.queues[run.queue]
        usage = self.usage[run.queue]
        first = None  # (leaf, amount) on the first flavor that can hold the job
        for key, amount, leaf in self._options(run, queue).per_flavor:
            if usage[key] + amount <= leaf.nominal:
                return 0  # within nominal quota: it fits, or reclaims what the queue lent
            if amount <= available(leaf):  # _quota_fits
                return lowest_fitting_subtree(leaf, amount)[0]
            first = first or (leaf, amount)
        if first is None:
            return 1
        return lowest_fitting_subtree(*first)[0]

    def _schedule_all(self) -> None:
        """One pass over each stale queue, the order chosen as the pass goes: a queue's preemption may free
        cards for another. A queue marked stale again after its pass waits for the next event."""
        if self.fair is not None:
            self._schedule_fairly()
            return
        done: set[str] = set()
        while (name := self._next_queue(done)) is not None:
            self.stale.discard(name)
            done.add(name)
            self._schedule_queue(name, None)
        self._end_cycle()

    def _schedule_fairly(self) -> None:
        """With fair sharing on, the stale queues' passes go in scheduling cycles, as Kueue's do: each cycle
        nominates one head per queue (its flavor assignment, worked out once per cycle as `nominate` does) and
        tries them in the tournament's order (fairsharing.Tournament, shares recomputed at every pick); the
        next cycle nominates each queue's next head. A queue's pass ends as the classical one does (its walk
        is over, a StrictFIFO head failed, a head waits for its preemptions). Taking a queue's whole pass at
        once, as the classical order does, would hand the first queue all its cohort lends."""
        passes: dict[str, _QueuePass] = {}
        started: set[str] = set()  # a queue marked stale again after its pass waits for the next event
        while True:
            for name in sorted(self.stale - started):
                self.stale.discard(name)
                started.add(name)
                if self.pending[name].head() is not None:
                    self.preempting.pop(name, None)
                    passes[name] = _QueuePass(self.pending[name], self.policy.queues[name].strategy)
            heads: dict[str, tuple[tuple, tuple, Head]] = {}
            for name, state in list(passes.items()):
                step = state.next(self.runs)
                if step is None:
                    del passes[name]
                else:
                    heads[name] = (*step, self._nominated(name, step[0]))
            if not heads:
                break
            while heads:
                name = self.tournament.next({n: head for n, (_, _, head) in heads.items()})
                entry, size, _ = heads.pop(name)
                if not self._try_in_pass(name, passes[name], entry, size):
                    del passes[name]
            self._end_cycle()

    def _nominated(self, name: str, entry: tuple) -> Head:
        """The head as the tournament weighs it: what its flavor assignment would charge now. Quota its
        victims gave back and the engine keeps for it (`reserved`) is out of the tree while it is assigned,
        as `_kueue_admit` has it, and not added twice to its queue's share."""
        run, queue = self.runs[entry[-1]], self.policy.queues[name]
        options = self._options(run, queue)
        held = self.reserved.get(run.index)
        if held is not None:
            self.quota.use(run.queue, held[0], -held[1])
        try:
            choice = self._assign(run, queue, options)
        finally:
            if held is not None:
                self.quota.use(run.queue, held[0], held[1])
        order = entry[1:3]  # queue order time, then the queue's own tie-break (PendingQueue)
        if choice is None:
            return Head(name, "", 0, run.priority, order)
        key, amount = options.requests[choice.flavor.flavor]
        if held is not None and held[0] == key:
            amount -= held[1]
        return Head(name, key, amount, run.priority, order)

    def _try_in_pass(self, name: str, state: _QueuePass, entry: tuple, size: tuple) -> bool:
        """Try one head of a queue's pass; False when the pass is over (see `_schedule_queue`)."""
        pending = self.pending[name]
        requeued = pending.added
        if self._try_start(self.runs[entry[-1]], self.policy.queues[name], entry):
            state.started(entry, size, rescan=pending.added != requeued)
            return True
        if self.preempting.get(name) == entry[-1]:
            return False
        return state.failed(entry, size)

    def _drop_unstarted(self, arrivals: list[Run]) -> None:
        """No queueing: an arrival that did not start at once leaves the queue for good."""
        for run in arrivals:
            entry, pending = (*run.key, run.index), self.pending[run.queue]
            if pending.holds(entry, run.size):  # not one that failed at start and waits for its Job's retry
                pending.remove(entry, run.size)
                run.never_reason = NOT_QUEUED_REASON
                self._stops_waiting(run)

    def _released(self, pool_name: str) -> None:
        self.stale.update(self.queues_in_pool[pool_name])
        self.sweep.add(pool_name)

    def _schedule_arrivals(self, arrivals: list[Run]) -> None:
        """Nothing was released, so only the new jobs can change anything (older ones already failed). They go
        in the order of `_next_queue`, each queue's first arrival standing for its queue (Kueue orders the
        queues' heads; within a queue, priority and submit time alone decide)."""
        first: dict[str, Run] = {}
        for run in arrivals:
            if run.queue not in first or run.key < first[run.queue].key:
                first[run.queue] = run
        levels = {
            name: self._head_borrowing(run.index) if len(first) > 1 else 0 for name, run in first.items()
        }
        for run in sorted(arrivals, key=lambda r: (levels[r.queue], r.key)):
            queue = self.policy.queues[run.queue]
            pending = self.pending[run.queue]
            if queue.strategy == "StrictFIFO" and pending and pending.head()[-1] != run.index:
                continue
            self._schedule_queue(run.queue, run.index)
        self._end_cycle()

    def _schedule_queue(self, name: str, only: int | None) -> None:
        """Start what fits from one queue: just the run `only` when given (an arrival), the head alone while
        it fits under StrictFIFO, else a pass in scheduling order over the sizes no failure rules out (one
        `_next_queue` chose: it has found that the pass may start something)."""
        queue = self.policy.queues[name]
        pending = self.pending[name]
        if only is not None:
            run = self.runs[only]
            head = self.preempting.get(name)
            if head is not None and self.runs[head].key < run.key:
                return  # the queue's head waits for its preemptions: Kueue admits nothing behind it
            self._try_start(run, queue, (*run.key, run.index))
            return
        self.preempting.pop(name, None)
        if queue.strategy == "StrictFIFO":
            while (head := pending.head()) is not None and self._try_start(self.runs[head[-1]], queue, head):
                pass
            return
        walk = pending.walk()
        while (step := walk.next()) is not None:
            entry, size = step
            run = self.runs[entry[-1]]
            if self._waits_untried(run, queue):
                walk.failed(entry, size)
                continue
            requeued = pending.added
            if self._try_start(run, queue, entry, cleared=self._tells_untried(run)):
                # a preemption sent a victim back to this queue, behind the pass
                if pending.added != requeued:
                    walk.rescan(entry)
                elif self._pass_surely_fails(queue, pending):
                    break  # what it took leaves too little for the rest
                else:
                    walk.started(entry, size)
            elif self.preempting.get(name) == entry[-1]:
                # a head waiting for its preemptions stays the queue's head (scheduler.go requeues it first)
                break
            else:
                walk.failed(entry, size)

    def _waits_untried(self, run: Run, queue: SimQueue) -> bool:
        """Whether the job surely waits, told before an attempt (`_kueue_admit` would learn it first thing
        and change nothing): most jobs a pass tries fail so, one per decreasing size."""
        return self._tells_untried(run) and self._surely_waits(queue, run.priority, self._options(run, queue))

    def _tells_untried(self, run: Run) -> bool:
        """Whether `_waits_untried` asks: not for a job holding quota its victims gave back (its attempt puts
        that back first, so the answer could differ), nor without the shortcuts. Where it asked and the job
        may be admitted, the attempt right after it need not ask again (`_assign`'s `cleared`)."""
        return self.shortcuts and self.kueue and run.index not in self.reserved

    def _pass_surely_fails(self, queue: SimQueue, pending: PendingQueue) -> bool:
        """Whether a pass over the queue would start nothing, told from its smallest sizes alone: a pass
        skips every job whose size dominates one that failed (pending.Walk), so where a job of each minimal
        size, asked at the queue's highest pending priority, surely waits (`_surely_waits`, which touches
        nothing), so does every job of the pass. Most passes after a release start nothing, and the walk
        would try one job per decreasing size to learn it. Not where quota is reserved for one of the
        queue's jobs (its attempt gives that quota back first, `_kueue_admit`), nor without the shortcuts."""
        if not (self.kueue and self.shortcuts):
            return False
        if self.reserved and any(self.runs[index].queue == queue.name for index in self.reserved):
            return False
        if (head := pending.head()) is None:
            return True
        priority, may_admit = -head[0], self.admission.may_admit
        for key, amount, leaf in self._probe_asks(queue.name, pending.minimal_sizes()):
            if may_admit(queue, key, amount, priority, leaf):
                return False
        return True

    def _probe_asks(self, name: str, sizes: tuple) -> tuple:
        """What the minimal `sizes` of queue `name` ask, (quota key, amount, quota leaf): per quota key any of
        them asks for (a size ends with what it charges per flavor it can take, `_add_demands_to_sizes`, the
        asks `_options` gives any of its jobs), the least amount. HeldAdmission.may_admit never admits an
        amount where it refuses a smaller one under the same key (the quota available, and what evicting
        candidates could free, do not grow with the amount), so only the least can tell a pass that may start
        something. Kept while the sizes are the same (PendingQueue keeps them until a group comes or goes)."""
        kept = self.probes.get(name)
        if kept is None or kept[0] is not sizes:
            least: dict[str, int] = {}
            for size in sizes:
                for key, amount in size[3]:
                    if key not in least or amount < least[key]:
                        least[key] = amount
            leaves = self.quota.leaves
            kept = self.probes[name] = (sizes, tuple((k, a, leaves[(name, k)]) for k, a in least.items()))
        return kept[1]

    def _try_start(self, run: Run, queue: SimQueue, entry: tuple, cleared: bool = False) -> bool:
        """`cleared`: `_surely_waits` was just asked about the job and said it may be admitted (`_assign`)."""
        if self.kueue:
            return self._kueue_admit(run, queue, entry, cleared)
        if self._admit(run, queue) or self._preempt_for(run, queue):
            self.pending[run.queue].remove(entry, run.size)
            self._start(run)
            return True
        return False

    # -- Kueue mode: admission on quota, then pods wait for nodes ------------------------------------------
    def _kueue_admit(self, run: Run, queue: SimQueue, entry: tuple, cleared: bool = False) -> bool:
        """One admission attempt (pkg/scheduler/scheduler.go `schedule`: nominate, then admit or preempt):
        True when the job reserved quota. A job that needs preemption evicts its targets and stays pending
        until
        their quota is released (the scheduler admits it in a later cycle)."""
        options = self._options(run, queue)
        shapes, requests = options.shapes, options.requests
        held = self.reserved.pop(run.index, None)
        if held is not None:  # quota its victims gave back, kept for it (see _release_evicted)
            self.quota.use(run.queue, held[0], -held[1])
        choice = self._assign(run, queue, options, cleared)
        if choice is None:
            return False
        if self.claims and not self._fits_in_cycle(run, choice, requests[choice.flavor.flavor]):
            if held is not None:
                self._hold_again(run, held)
            return False
        if not choice.targets:
            if self.unready:  # blockAdmission: scheduler.go waitForPodsReadyIfNeeded waits for them all
                if held is not None:
                    self._hold_again(run, held)
                return False
            if self.preempting.get(run.queue) == run.index:
                del self.preempting[run.queue]
            self.pending[run.queue].remove(entry, run.size)
            self._reserve(run, choice.flavor, shapes[choice.flavor.flavor])
            self._place_or_wait(run)
            return True
        for target in choice.targets:
            victim = self.runs[target.workload.index]
            if not victim.evicted:
                self._preempt(victim, run, REASONS[target.variant])
            victim.preemptor = run.index
        key, amount = requests[choice.flavor.flavor]
        if held is not None and held[0] == key:
            self._hold_again(run, held)
            amount -= held[1]
        # the rest of this pass counts it as holding its quota and its targets as gone (_fits_in_cycle)
        self.claims.append((run.queue, key, amount))
        self.doomed.update(target.workload.index for target in choice.targets)
        self.preempting[run.queue] = run.index
        return False

    def _hold_again(self, run: Run, held: tuple[str, int]) -> None:
        self.reserved[run.index] = held
        self.quota.use(run.queue, held[0], held[1])

    def _fits_in_cycle(self, run: Run, choice: Choice, demand: tuple[str, int]) -> bool:
        """Kueue's check on a workload after others that issued preemptions in the same scheduling cycle
        (pkg/scheduler/scheduler.go processEntry, v0.19.2): its targets may not overlap theirs (the assignment
        is not recomputed: RecomputeAssignmentUponPreemptionTargetsOverlap is off by default), and it must
        still fit once their usage is added and every target of the cycle is taken out (`fits`, after
        `preemptedWorkloads.Insert` and `cq.AddUsage`). So a later head cannot preempt, or take quota, that a
        preemptor before it will have."""
        targets = {target.workload.index for target in choice.targets}
        if targets & self.doomed:
            return False
        gone = [self.runs[index] for index in self.doomed | targets]
        self._cycle_usage(gone, -1)
        fits = self.quota.fits(run.queue, *demand)
        self._cycle_usage(gone, 1)
        return fits

    def _cycle_usage(self, gone: list[Run], sign: int) -> None:
        """Take the cycle's targets out of the quota tree and add its preemptors' usage (sign 1 undoes it)."""
        for victim in gone:
            self.quota.use(victim.queue, victim.charge[0], sign * victim.charge[1])
        for queue, key, amount in self.claims:
            self.quota.use(queue, key, -sign * amount)

    def _end_cycle(self) -> None:
        self.claims.clear()
        self.doomed.clear()

    def _assign(self, run: Run, queue: SimQueue, options: Options, cleared: bool = False) -> Choice | None:
        """None where the job surely waits (`_surely_waits`, asked first unless `cleared`, asked just before
        with nothing changed since: most attempts end there, and more cheaply than by comparing a stamp),
        else admission.assign's verdict, or the one it gave this job last time when nothing it reads has
        changed since. Admission reads the job's own record (`_workload`: its index and queue, fixed, and
        `asked`), its requests (fixed: `_options`) and, under each quota key it asks for, that key's quota
        tree and the workloads holding quota there (QuotaTree.versions counts every change of the key's
        usage, and Holders counts there every change of its holders and of the priorities HeldAdmission
        reads). The stamp is taken after the call: admission takes candidates out
        tentatively and puts them all back, and a tree's usage is a function of its queues' usage, so the
        tree is then as it was when the verdict was worked out."""
        if not self.shortcuts:
            return self.admission.assign(queue, self._workload(run, None), options.requests)
        if not cleared and self._surely_waits(queue, run.priority, options):
            return None  # told more cheaply than by a kept verdict's stamp (most attempts end here)
        asked = (run.priority, run.job.submit if run.queued < 0 else run.queued, run.admitted, run.evicted)
        kept = self.verdicts.get(run.index)
        if kept is not None and kept[0] == self._stamp(asked, options.keys):
            return kept[1]
        choice = self.admission.assign(queue, self._workload(run, None), options.requests)
        self.verdicts[run.index] = (self._stamp(asked, options.keys), choice)
        return choice

    def _surely_waits(self, queue: SimQueue, priority: int, options: Options) -> bool:
        """Whether no flavor can admit the job now, told more cheaply than by the whole flavor assignment
        (most blocked jobs are tried on every pass): a flavor admits a workload only where its request fits
        the quota available now, or where a preemption search finds targets whose eviction makes it fit, and
        HeldAdmission.may_admit tells where neither can be, per quota key."""
        may_admit = self.admission.may_admit
        for key, amount, leaf in options.asks:
            if may_admit(queue, key, amount, priority, leaf):
                return False
        return True

    def _stamp(self, asked: tuple, keys: tuple[str, ...]) -> tuple:
        versions = self.quota.versions  # usage and holders (Holders counts there)
        if self.fair is not None:
            keys = self.all_keys
        return (asked, [versions[key] for key in keys])

    def _options(self, run: Run, queue: SimQueue) -> Options:
        """What the job can take in its queue (`queue` is always its own): shapes, demands, a pool's full
        capacity and a quota's potential read only the job's request and the policy, so they are worked out
        once per (request, queue), and found again by the job's index (asked about a million times in a
        long replay, where hashing the request each time cost more than the rest of this)."""
        found = self.run_options.get(run.index)
        if found is None:
            found = self.run_options[run.index] = self._request_options(run, queue)
        return found

    def _request_options(self, run: Run, queue: SimQueue) -> Options:
        found = self.options.get((run.request, queue.name))
        if found is None:
            shapes = {f.flavor: shape for f in queue.flavors if (shape := self._shape(run, f)) is not None}
            requests = {
                f.flavor: self._demand(f, shapes[f.flavor]) for f in queue.flavors if f.flavor in shapes
            }
            leaves = self.quota.leaves
            per_flavor = tuple(
                (key, amount, leaves[(queue.name, key)])
                for f in queue.flavors
                if (shape := self._shape(run, f)) is not None
                for key, amount in [self._demand(f, shape)]
            )
            asks = tuple((key, amount, leaves[(queue.name, key)]) for key, amount in requests.values())
            keys = tuple(dict.fromkeys(key for key, _ in requests.values()))
            ever_fits = any(self._could_ever_fit(run, f) for f in queue.flavors)
            found = Options(shapes, requests, per_flavor, asks, keys, ever_fits)
            self.options[(run.request, queue.name)] = found
        return found

    def _workload(self, run: Run, flavor: str | None) -> Workload:
        total = run.charge[1] if flavor is not None else 0
        return Workload(
            run.index, run.queue, flavor or "", total, run.priority, run.key[1], run.admitted, run.evicted
        )

    def _hold(self, run: Run) -> None:
        """The run holds quota under its charge's key (set before, and unchanged until `_unhold`), or its
        record changes (evicted)."""
        workload = self._workload(run, run.charge[0])
        self.holding[run.queue][run.index] = workload
        self.holders.put(workload)

    def _unhold(self, run: Run) -> None:
        self.holding[run.queue].pop(run.index, None)
        self.holders.drop(run.queue, run.charge[0], run.index)

    def _reserve(self, run: Run, flavor: FlavorQuota, shape: Shape) -> None:
        run.flavor, run.shape, run.slots = flavor, shape, []
        run.charge = self._demand(flavor, shape)
        run.admitted = self.now
        self._charge(run, 1)
        if self.ready is not None and self.ready.block_admission:
            self.unready.add(run.index)
        self._hold(run)
        self._event("admitted", run, queue=run.queue, flavor=flavor.flavor, gpus=shape.total / MILLI)

    def _place_or_wait(self, run: Run) -> None:
        """kube-scheduler places the admitted job's pods wherever they fit now, else they wait for nodes."""
        slots = self.pools[run.flavor.pool].place(run.shape)
        if slots is None:
            self.node_wait[run.flavor.pool].add((-run.priority, run.admitted, run.index), run.shape)
            self._ready_clock(run)
            return
        self.node_wait[run.flavor.pool].discard(run.index)
        run.slots = slots
        self._start(run)

    def _place_waiting(self) -> None:
        """Retry the pods waiting for nodes in the pools where cards came free, highest priority then earliest
        admission first (kube-scheduler's active queue order); a shape that did not fit rules out larger
        ones."""
        pools, self.sweep = self.sweep, set()
        for name in pools:
            waiting = self.node_wait[name]
            if not waiting:
                continue
            pool = self.pools[name]
            failed: list[Shape] = []
            sweep = waiting.sweep()  # the pods in order, a shape dropped once ruled out
            while (step := sweep.next()) is not None:
                entry, shape = step
                if any(_covers(shape, small) for small in failed):
                    continue
                slots = pool.place(shape)
                if slots is None:
                    failed.append(shape)
                    continue
                sweep.placed(entry, shape)
                run = self.runs[entry[-1]]
                run.slots = slots
                self._start(run)

    def _ready_clock(self, run: Run) -> None:
        """Its pods are not running: the PodsReady timeout of its admission is due (one event per admission;
        a job whose pods start at once needs none)."""
        if self.ready is not None and run.admitted >= 0 and run.timer != run.admitted:
            run.timer = run.admitted
            due = max(self.now, run.admitted + self.ready.timeout)
            self._push(due, PODS_READY, (run.index, run.admitted))
            self.churn += 1

    def _came_ready(self, run: Run) -> None:
        """The run no longer holds blockAdmission back: its pods run, or it gave its admission up."""
        if run.index in self.unready:
            self.unready.discard(run.index)
            self.unblocked = not self.unready

    def _pods_ready_timeout(self, run: Run, admitted: int) -> bool:
        """waitForPodsReady (readiness.py, workload_controller.go): a workload admitted at `admitted` whose
        pods are not all running when the timeout is up is evicted (reason PodsReadyTimeout). Its pods never
        ran, so its quota frees at once; it is requeued after UpdateRequeueState's backoff, ordered by the
        eviction time, or deactivated past backoffLimitCount. True when quota came free."""
        if run.admitted != admitted or run.started >= 0 or run.evicted or run.finished >= 0:
            return False
        self.node_wait[run.flavor.pool].discard(run.index)
        self._charge(run, -1)
        self._unhold(run)
        run.admitted = -1
        self._came_ready(run)
        self._released(run.flavor.pool)
        run.ready_timeouts += 1
        self._event("evicted", run, reason="PodsReadyTimeout", flavor=run.flavor.flavor)
        limit = self.ready.backoff_limit
        if limit is not None and run.ready_timeouts > limit:
            run.never_reason = DEACTIVATED_REASON
            return True
        if self.ready.eviction_timestamp:
            run.queued = self.now
        self._push(self.now + self.ready.backoff(run.ready_timeouts), ARRIVE, run.index)
        self.requeues.add(run.index)
        self.churn += 1
        return True

    def _churn_ends(self) -> bool:
        """Asked when every event left is waitForPodsReady churn (timeouts and requeues). While something
        runs, it may yet finish and free cards. Once nothing runs, no card frees any more: where no waiting
        job's pods fit a healthy node, none ever starts, and the replay ends at once. Where one does, Kueue
        may still admit it to a flavor that holds it; the churn goes on until every requeue backoff has
        reached its cap and three more of its periods have passed (`_churn_horizon`) with nothing started,
        and the replay ends then: Kueue would only go on evicting and requeueing the same jobs."""
        if self._allocated():
            self.churn_since = -1
            return False
        if self.churn_since < 0:
            self.churn_since = self.now
            waiting = self._waiting_runs()
            if not any(self._fits_a_healthy_node(run) for run in waiting):
                for run in waiting:
                    run.never_reason = NO_HEALTHY_NODE_REASON
                return True
        if self.now - self.churn_since <= self._churn_horizon():
            return False
        for run in self._waiting_runs():
            if run.ready_timeouts:
                run.never_reason = REQUEUED_FOR_EVER_REASON
        return True

    def _waiting_runs(self) -> list[Run]:
        return [self.runs[index] for index in sorted(set().union(*self.waiting.values()))]

    def _churn_horizon(self) -> int:
        """Simulated seconds of churn alone in which every requeue backoff reaches its cap (each eviction a
        timeout and a backoff later), then three more periods of a timeout and the capped backoff."""
        ready, ramp = self.ready, 0
        for count in range(1, 64):
            ramp += ready.timeout + ready.backoff(count)
            if ready.backoff(count) >= ready.backoff_max:
                break
        return ramp + 3 * (ready.timeout + ready.backoff_max)

    def _fits_a_healthy_node(self, run: Run) -> bool:
        """Whether the job's pods fit the healthy nodes of one of its queue's flavors' pools as they are."""
        for flavor in self.policy.queues[run.queue].flavors:
            shape = self._shape(run, flavor)
            if shape is not None and self.pools[flavor.pool].fits(shape):
                return True
        return False

    def _preempt(self, victim: Run, by: Run, reason: str) -> None:
        """Kueue evicts the victim: its work stops now; its quota and cards are released when its pods are
        gone."""
        victim.evicted = True
        if victim.index in self.holding[victim.queue]:
            self._hold(victim)  # its record now says evicted
        self.preemptions += 1
        victim.preemptions += 1
        self.last_preemption = (victim, by, reason)
        self._event(
            "preempted", victim, by=by.job.id, by_queue=by.queue, reason=reason, flavor=victim.flavor.flavor
        )
        if victim.started >= 0:
            elapsed = self.now - victim.started
            interval = victim.job.checkpoint
            kept = (elapsed // interval) * interval if interval > 0 else 0
            victim.lost_milli_seconds += (elapsed - kept) * victim.shape.total
            self._keep(victim, victim.started, kept)
            victim.remaining = max(1, victim.remaining - kept)
            victim.token += 1  # its FINISH event no longer counts
            self.running[victim.flavor.pool].discard(victim.index)
            self.queue_running[victim.queue][victim.priority].discard(victim.index)
            victim.started = -1
            self._waits(victim)
            self._push(self.now + self.grace, RELEASE, victim.index)
        else:  # admitted, pods still waiting for nodes: nothing to terminate
            self.node_wait[victim.flavor.pool].discard(victim.index)
            self._push(self.now, RELEASE, victim.index)

    def _release_evicted(self, run: Run) -> None:
        pool = self.pools[run.flavor.pool]
        if run.slots:
            pool.release(run.slots)
        self._released(run.flavor.pool)
        self._charge(run, -1)
        self._unhold(run)
        self._keep_for_preemptor(run)
        self._came_ready(run)
        run.slots, run.admitted, run.evicted = [], -1, False
        self._event("released", run)
        # requeued a second later, once Kueue has seen the eviction through: the preemptor, whose targets
        # these were, is admitted first (in the same instant the victim could take the quota back)
        self._push(self.now + 1, ARRIVE, run.index)

    def _keep_for_preemptor(self, victim: Run) -> None:
        """The quota a victim releases is kept for the workload that preempted it while that one still waits
        for its other victims: Kueue's scheduler adds a preempting workload's usage to the cycle's snapshot
        (scheduler.go `processEntry`, `cq.AddUsage` before `issuePreemptions`), so a workload behind it in the
        cycle cannot take that quota back."""
        preemptor = self.runs[victim.preemptor] if victim.preemptor >= 0 else None
        victim.preemptor = -1
        if preemptor is None or preemptor.admitted >= 0 or preemptor.finished >= 0:
            return
        key = victim.charge[0]
        held = self.reserved.get(preemptor.index, (key, 0))
        if held[0] != key:
            return
        flavors = self.policy.queues[preemptor.queue].flavors
        need = max(
            (
                d[1]
                for f in flavors
                if f.flavor == victim.flavor.flavor
                and (s := self._shape(preemptor, f)) is not None
                and (d := self._demand(f, s))[0] == key
            ),
            default=0,
        )
        amount = min(victim.charge[1], need - held[1])
        if amount > 0:
            self.reserved[preemptor.index] = (key, held[1] + amount)
            self.quota.use(preemptor.queue, key, amount)

    def _event(self, kind: str, run: Run, **fields) -> None:
        if self.log is not None:
            self.log.append({"time": self.now, "event": kind, "job": run.job.id, **fields})

    def _admit(self, run: Run, queue: SimQueue) -> bool:
        for flavor in queue.flavors:
            shape = self._shape(run, flavor)
            if shape is None or not self._quota_fits(queue, flavor, shape):
                continue
            slots = self.pools[flavor.pool].place(shape)
            if slots is not None:
                self._bind(run, flavor, shape, slots)
                return True
        return False

    def _bind(self, run: Run, flavor: FlavorQuota, shape: Shape, slots: list) -> None:
        run.flavor, run.shape, run.slots = flavor, shape, slots
        run.charge = self._demand(flavor, shape)
        self._charge(run, 1)

    def _start(self, run: Run) -> None:
        self.starts += 1
        if run.shape.memory and self.pools[run.flavor.pool].busy(run.slots):
            self._crash_at_start(run)
            return
        if self.crashes is not None and self.crashes.random() < self.policy.start_failure_rate:
            self._crash_at_start(run)  # a busy card the default scheduler cannot see (policy.before)
            return
        if self.log is not None:
            self._event(
                "started",
                run,
                pool=run.flavor.pool,
                nodes=sorted(self.pools[run.flavor.pool].nodes_of(run.slots)),
            )
        run.started = self.now
        self._came_ready(run)
        self._stops_waiting(run)
        if run.first_start < 0:
            run.first_start = self.now
        run.token += 1
        self.running[run.flavor.pool].add(run.index)
        self.queue_running[run.queue].setdefault(run.priority, set()).add(run.index)
        if self.departures:
            self._push(self.now + run.remaining, FINISH, (run.index, run.token))

    def _crash_at_start(self, run: Run) -> None:
        """No startup check: the pod starts on a card whose memory its neighbours hold, fails, and its Job
        recreates it after a backoff (a new arrival), or gives up after JOB_BACKOFF_LIMIT failures."""
        self.busy_starts += 1
        run.busy_starts += 1
        self.pools[run.flavor.pool].release(run.slots)
        self._released(run.flavor.pool)
        run.slots = []
        self._event("failed_at_start", run, pool=run.flavor.pool, attempt=run.busy_starts)
        last = run.busy_starts >= JOB_BACKOFF_LIMIT
        if not self.kueue or last:  # in Kueue the workload keeps its quota while its Job recreates the pod
            self._charge(run, -1)
            self._unhold(run)
            run.admitted = -1
            self._came_ready(run)
        if last:
            run.never_reason = BUSY_DEVICE_REASON
            self._stops_waiting(run)
            return
        backoff = min(CRASH_BACKOFF_CAP, CRASH_BACKOFF_SECONDS * 2 ** (run.busy_starts - 1))
        self._push(self.now + backoff, RETRY if self.kueue else ARRIVE, run.index)
        self._ready_clock(run)

    def _unbind(self, run: Run) -> None:
        self.pools[run.flavor.pool].release(run.slots)
        self._released(run.flavor.pool)
        self._charge(run, -1)
        self._unhold(run)
        run.admitted = -1
        self.running[run.flavor.pool].discard(run.index)
        self.queue_running[run.queue][run.priority].discard(run.index)
        run.slots, run.started = [], -1

    def _finish(self, run: Run) -> None:
        self._keep(run, run.started, self.now - run.started)
        self._unbind(run)
        run.remaining = 0
        run.finished = self.now
        self._event("finished", run)

    # -- preemption ----------------------------------------------------------------------------------
    def _may_preempt(self, run: Run, victim: Run, queue: SimQueue, reclaim: bool) -> bool:
        if run.job.tier == "experiment" and (
            victim.job.tier in PROTECTED_TIERS or victim.job.workload in PROTECTED_WORKLOADS
        ):
            return False
        if not reclaim:
            if queue.within_queue == "LowerPriority":
                return victim.priority < run.priority
            if queue.within_queue == AGE_POLICY:
                return victim.priority < run.priority or (
                    victim.priority == run.priority and victim.job.submit > run.job.submit
                )
            return False
        if queue.reclaim == "Any":
            return True
        return queue.reclaim == "LowerPriority" and victim.priority < run.priority

    def _victim_priorities(self, run: Run, policy: str, reclaim: bool) -> list[int] | None:
        """Priorities a job may preempt under a queue's `withinClusterQueue` or `reclaimWithinCohort` setting;
        None means any priority."""
        if reclaim and policy == "Any":
            return None
        if policy == "LowerPriority" or (not reclaim and policy == AGE_POLICY):
            return [
                p
                for p in self.priority_levels
                if p < run.priority or (policy == AGE_POLICY and p == run.priority)
            ]
        return []

    def _candidates(self, run: Run, queue: SimQueue, flavor: FlavorQuota, shape: Shape) -> list[Run]:
        """Running jobs on this flavor the job may evict: its own queue's, and those of queues of its cohort
        tree
        that borrow where the job has the advantage (QuotaTree.reclaim_sources)."""
        # the priorities each policy lets the job preempt ([]: none, None: any), worked out once per attempt
        within = (
            [] if queue.within_queue == "Never" else self._victim_priorities(run, queue.within_queue, False)
        )
        reclaim = [] if queue.reclaim == "Never" else self._victim_priorities(run, queue.reclaim, True)
        key, amount = self._demand(flavor, shape)
        sources: list[tuple[str, bool, list[int] | None]] = []
        if within != []:
            sources.append((queue.name, False, within))
        if reclaim != []:
            sources += [(name, True, reclaim) for name in self.quota.reclaim_sources(queue.name, key, amount)]
        found: list[Run] = []
        for name, is_reclaim, wanted in sources:
            by_priority = self.queue_running[name]
            for priority in by_priority if wanted is None else wanted:
                for index in by_priority.get(priority, ()):
                    victim = self.runs[index]
                    if victim.charge[0] == key and self._may_preempt(run, victim, queue, is_reclaim):
                        found.append(victim)
        found.sort(key=lambda v: (v.priority, -v.started, v.index))
        return found

    def _preempt_for(self, run: Run, queue: SimQueue) -> bool:
        if queue.within_queue == "Never" and queue.reclaim == "Never":
            return False
        for flavor in queue.flavors:
            shape = self._shape(run, flavor)
            if shape is None:
                continue
            victims = self._candidates(run, queue, flavor, shape)
            if not victims:
                continue
            pool = self.pools[flavor.pool]
            if sum(v.shape.total for v in victims) + pool.capacity - pool.allocated < shape.total:
                continue  # even evicting every candidate would not make room
            first = self._first_sufficient(victims, queue, flavor, shape)
            if first < 0:
                continue  # quota or free cards stay short whatever is evicted: no card is touched
            chosen: list[Run] = []
            for victim in victims:
                if victim.queue != queue.name and not self._borrowing(victim.queue, victim.charge[0]):
                    continue  # Kueue reclaims only from a queue still above its nominal quota
                chosen.append(victim)
                self._unbind_tentative(victim)
                if len(chosen) >= first and self._room_for(queue, flavor, shape):
                    chosen = self._minimal(chosen, queue, flavor, shape)
                    for evicted in chosen:
                        self._evict(evicted, preempted=True)
                    slots = pool.place(shape)
                    self._bind(run, flavor, shape, slots)
                    return True
            for victim in reversed(chosen):
                self._rebind_tentative(victim)
        return False

    def _first_sufficient(
        self, victims: list[Run], queue: SimQueue, flavor: FlavorQuota, shape: Shape
    ) -> int:
        """How many victims the selection below takes before the job fits (-1: never).

        A dry run on counters only, in the same order and with the same still-borrowing rule, so cards are
        touched only when an eviction will succeed. Quota and free capacity are always checked; placement too
        when every card involved is whole (a node with k free cards holds k // count pods, see
        PoolState.fits).
        """
        pool = self.pools[flavor.pool]
        free = pool.capacity - pool.allocated
        whole = shape.milli == MILLI and not shape.profile  # a 7g instance is not a whole card
        count = shape.count
        placeable = pool.whole_pods(count) if whole else 0
        freed_cards: dict[int, int] = {}  # node -> whole cards free once the victims so far are gone
        taken: list[Run] = []
        found = -1
        for victim in victims:
            if victim.queue != queue.name and not self._borrowing(victim.queue, victim.charge[0]):
                continue
            taken.append(victim)
            self._charge(victim, -1)
            free += victim.shape.total
            if whole:
                if victim.shape.milli != MILLI:
                    whole = False  # a shared card frees capacity only with its neighbours: place for real
                else:
                    for node, *_ in victim.slots:
                        cards = freed_cards.get(node, pool.whole[node])
                        freed_cards[node] = cards + 1
                        placeable += (cards + 1) // count - cards // count
            if (
                free >= shape.total
                and self._quota_fits(queue, flavor, shape)
                and (not whole or placeable >= shape.pods)
            ):
                found = len(taken)
                break
        for victim in taken:
            self._charge(victim, 1)
        return found

    def _room_for(self, queue: SimQueue, flavor: FlavorQuota, shape: Shape) -> bool:
        pool = self.pools[flavor.pool]
        return (
            pool.capacity - pool.allocated >= shape.total
            and self._quota_fits(queue, flavor, shape)
            and pool.fits(shape)
        )

    def _minimal(self, chosen: list[Run], queue: SimQueue, flavor: FlavorQuota, shape: Shape) -> list[Run]:
        """Put back every chosen victim (last added first) the job still fits without, as Kueue does: an
        eviction that freed quota or cards the job did not need is not made."""
        needed = [chosen[-1]]
        for victim in reversed(chosen[:-1]):
            self._rebind_tentative(victim)
            if not self._room_for(queue, flavor, shape):
                self._unbind_tentative(victim)
                needed.append(victim)
        return needed

    def _borrowing(self, queue_name: str, flavor: str) -> bool:
        return self.usage[queue_name][flavor] > self.nominal[(queue_name, flavor)]

    def _unbind_tentative(self, victim: Run) -> None:
        self.pools[victim.flavor.pool].release(victim.slots)
        self._charge(victim, -1)

    def _rebind_tentative(self, victim: Run) -> None:
        pool = self.pools[victim.flavor.pool]
        for node, card, milli, memory in victim.slots:
            pool._take(node, card, milli, memory)
        self._charge(victim, 1)

    def _evict(self, run: Run, preempted: bool) -> None:
        """Stop a running job whose cards were already released (tentatively) and requeue it."""
        elapsed = self.now - run.started
        if preempted:
            interval = run.job.checkpoint
            kept = (elapsed // interval) * interval if interval > 0 else 0
            run.lost_milli_seconds += (elapsed - kept) * run.shape.total
            self._keep(run, run.started, kept)
            run.remaining = max(1, run.remaining - kept)  # the run's start is its last resume point
            run.preemptions += 1
            self.preemptions += 1
        else:
            self._keep(run, run.started, elapsed)
            run.remaining = max(1, run.remaining - elapsed)
            run.interruptions += 1
        self.running[run.flavor.pool].discard(run.index)
        self.queue_running[run.queue][run.priority].discard(run.index)
        self._unhold(run)
        run.admitted = -1
        self._released(run.flavor.pool)
        run.slots, run.started = [], -1
        run.token += 1
        self._add_pending(run)
        self._waits(run)

    # -- failures ------------------------------------------------------------------------------------
    def _fail(self, failure: Failure) -> None:
        pool = self.pools[failure.pool]
        down = pool.fail(failure.nodes)
        hit = [
            self.runs[i]
            for i in sorted(self.running[failure.pool])
            if pool.nodes_of(self.runs[i].slots) & set(down)
        ]
        for run in hit:
            self._unbind_tentative(run)
            self._evict(run, preempted=False)
        if failure.downtime is not None:
            self._push(self.now + failure.downtime, RECOVER, (failure.pool, tuple(down), self.now))
        else:
            self.open_failures.append((failure.pool, tuple(down), self.now))

    def _recover(self, payload) -> None:
        pool_name, nodes, since = payload
        self.pools[pool_name].recover(nodes)
        self._released(pool_name)
        self.failure_milli_seconds += (
            (self.now - since) * len(nodes) * self.pools[pool_name].gpus_per_node * MILLI
        )


class _QueuePass:
    """One queue's pass in fair-sharing cycles (Engine._schedule_fairly): its heads one at a time, the
    StrictFIFO head alone or the BestEffortFIFO walk (pending.Walk)."""

    def __init__(self, pending: PendingQueue, strategy: str) -> None:
        self.pending = pending
        self.walk = None if strategy == "StrictFIFO" else pending.walk()

    def next(self, runs: list[Run]) -> tuple[tuple, tuple] | None:
        if self.walk is not None:
            return self.walk.next()
        head = self.pending.head()
        return None if head is None else (head, runs[head[-1]].size)

    def started(self, entry: tuple, size: tuple, rescan: bool) -> None:
        if self.walk is None:
            return
        if rescan:  # a preemption sent a victim back to this queue, behind the pass
            self.walk.rescan(entry)
        else:
            self.walk.started(entry, size)

    def failed(self, entry: tuple, size: tuple) -> bool:
        if self.walk is None:
            return False  # StrictFIFO: nothing behind a head that does not fit
        self.walk.failed(entry, size)
        return True


def whole_nodes(shape: Shape, gpus_per_node: int) -> Shape:
    """A job's shape when it holds whole nodes: as many full nodes as its cards fill, at least one."""
    cards = shape.pods * shape.count * shape.milli
    nodes = max(1, -(-cards // (gpus_per_node * MILLI)))
    return Shape(nodes, gpus_per_node, MILLI, profile=shape.profile)


def _covers(shape: Shape, smaller: Shape) -> bool:
    """A shape at least as large in every dimension as one that did not fit cannot fit either."""
    return (
        shape.profile == smaller.profile
        and shape.pods >= smaller.pods
        and shape.count >= smaller.count
        and shape.milli >= smaller.milli
        and shape.memory >= smaller.memory
        and shape.demand == smaller.demand
    )
