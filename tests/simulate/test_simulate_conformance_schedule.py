"""Conformance with Kueue's scheduler tests: table cases ported from kubernetes-sigs/kueue (read at commit
ff69552e, 2026-08-22) pkg/scheduler/scheduler_test.go `TestSchedule` and
pkg/scheduler/flavorassigner/flavorassigner_test.go `TestAssignFlavors`, with the same ClusterQueues, cohorts,
flavors, quotas, workloads and priorities, asserting what upstream asserts.

TestSchedule runs one scheduling cycle over workloads that arrive together; here they are Jobs submitted at
time 0 to the Engine (a tiny SimPolicy, one exclusive pool per flavor, large enough that no pod waits for
nodes), and what the engine did at that instant is compared with upstream's: every workload holding quota
after the cycle and its flavor (`wantAssignments`, preempted ones included: their quota frees only once their
pods are gone), the workloads left pending (`wantLeft` and `wantInadmissibleLeft`) and the ones preempted.
Workloads that upstream admits before the cycle (`ReserveQuotaAt`) hold quota on upstream's flavor when the
replay starts. A cpu (or `gpu`, `example.com/gpu`) request of n is a job of n one-card pods: the same quota
charge, counted in milli-units. Every TestSchedule case is listed: the ported ones run (ADAPTED says where one
differs in form), the others are in NOT_PORTED with the deliberate difference that keeps them out.

TestAssignFlavors assigns flavors to one workload against given quota usage, with a test double for the
preemption simulation (`testOracle`: preemption possible and no borrowing after it unless the case says
otherwise); here Admission.best_flavor runs with the same double in place of `simulate_preemption`.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import pytest

from gpupolicy.simulate import admission as adm
from gpupolicy.simulate.admission import Admission, Choice, Workload
from gpupolicy.simulate.engine import ARRIVE, Engine
from gpupolicy.simulate.fairsharing import FairSharing
from gpupolicy.simulate.jobs import MILLI, Job
from gpupolicy.simulate.policy import FlavorQuota, SimCohort, SimPolicy, SimPool, SimQueue
from gpupolicy.simulate.quota import QuotaTree

# -- the harness ------------------------------------------------------------------------------------------

LOWER, ANY = "LowerPriority", "Any"
TRY_NEXT, STOP = "TryNextFlavor", "MayStopSearch"
BORROW_LOWER = {"borrow_within": LOWER}
# `r1` and `r2`, two resources of one flavor, are MIG resources here: the engine keeps a quota bucket per
# resource name only on a MIG flavor replayed per layout (simulate/resources.py)
R1, R2 = "1g.10gb", "2g.20gb"
MIG_LAYOUT = ((R1, 3), (R2, 2))  # per card: enough instances of each for every case
POOL_NODES, CARDS_PER_NODE, MIG_NODES = 64, 8, 8


def fq(
    flavor: str,
    nominal: int,
    borrowing: int | None = None,
    lending: int | None = None,
    resources: tuple[str, ...] = (),
) -> FlavorQuota:
    """A flavor's quota in units (cpu, gpus): one bucket, or one per MIG resource of `resources` (each with
    the same nominal and borrowingLimit, as the cases that use them have)."""
    limit = None if borrowing is None else borrowing * MILLI
    lend = None if lending is None else lending * MILLI
    if resources:
        buckets = tuple((f"nvidia.com/mig-{r}", nominal * MILLI, limit, lend) for r in resources)
        return FlavorQuota(flavor, flavor, 0, resources=buckets)
    return FlavorQuota(flavor, flavor, nominal * MILLI, limit, lend)


def cq(name: str, cohort: str, *flavors: FlavorQuota, **spec) -> SimQueue:
    return SimQueue(name, flavors, cohort=cohort, **spec)


@dataclass(frozen=True)
class Held:
    """A workload holding quota when the cycle starts: `amount` units on `flavor` of `queue`."""

    name: str
    queue: str
    flavor: str
    amount: int
    priority: int = 0
    mig: str = ""


@dataclass(frozen=True)
class Pending:
    """A workload waiting in `queue`; `created` orders equal priorities (seconds, upstream's Creation)."""

    name: str
    queue: str
    amount: int
    priority: int = 0
    created: int = 0
    mig: str = ""


@dataclass(frozen=True)
class Case:
    queues: tuple[SimQueue, ...]
    held: tuple[Held, ...]
    pending: tuple[Pending, ...]
    assigned: dict[str, str]  # wantAssignments: workload -> flavor
    left: frozenset[str] = frozenset()  # wantLeft and wantInadmissibleLeft
    preempted: frozenset[str] = frozenset()  # workloads upstream marks Evicted (Preempted)
    cohorts: tuple[SimCohort, ...] = ()
    fair: bool = False  # enableFairSharing (test_simulate_conformance_schedule_fair.py)


@dataclass
class Outcome:
    assigned: dict[str, str] = field(default_factory=dict)
    left: set[str] = field(default_factory=set)
    preempted: set[str] = field(default_factory=set)


def _pool(name: str, mig: bool) -> SimPool:
    if mig:
        return SimPool(
            name,
            MIG_NODES,
            CARDS_PER_NODE,
            "mig",
            model="A100-80GB",
            instances=(MIG_LAYOUT,) * CARDS_PER_NODE,
        )
    return SimPool(name, POOL_NODES, CARDS_PER_NODE, "exclusive")


def _policy(case: Case) -> SimPolicy:
    flavors = [f for q in case.queues for f in q.flavors] + [f for c in case.cohorts for f in c.flavors]
    mig = {f.flavor for f in flavors if f.resources}
    pools = {f.flavor: _pool(f.flavor, f.flavor in mig) for f in flavors}
    workloads = case.held + case.pending
    return SimPolicy(
        "conformance",
        pools,
        {q.name: q for q in case.queues},
        priorities={f"p{w.priority}": w.priority for w in workloads},
        cohorts={c.name: c for c in case.cohorts},
        fair_sharing=FairSharing() if case.fair else None,
    )


def _job(workload: Held | Pending) -> Job:
    """n units as n one-card pods (or n instances of a MIG resource)."""
    return Job(workload.name, 0, 3600, pods=workload.amount, tier=f"p{workload.priority}", mig=workload.mig)


def _hold(engine: Engine, held: Held, index: int) -> None:
    """Reserve the workload's quota on upstream's flavor and start its pods, as if admitted before the cycle;
    its arrival is dropped."""
    run = engine.runs[index]
    flavor = next(f for f in engine.policy.queues[held.queue].flavors if f.flavor == held.flavor)
    engine._reserve(run, flavor, engine._shape(run, flavor))
    engine._place_or_wait(run)
    assert run.started == 0, f"{held.name}: the harness's pools must hold every pod at once"
    engine.heap = [event for event in engine.heap if not (event[1] == ARRIVE and event[3] == index)]
    heapq.heapify(engine.heap)


def schedule(case: Case) -> Outcome:
    """Run the engine and report what it did at time 0 (Kueue's cycles for workloads that arrive together)."""
    pending = sorted(case.pending, key=lambda w: w.created)  # the submit order breaks equal priorities
    workloads = [*case.held, *pending]
    engine = Engine(_policy(case), [_job(w) for w in workloads], [w.queue for w in workloads])
    for index, held in enumerate(case.held):
        _hold(engine, held, index)
    engine.log = log = []
    engine.run()
    now = [event for event in log if event["time"] == 0]
    assert not [e for e in now if e["event"] == "released"], "a victim's pods must outlive the instant"
    outcome = Outcome(assigned={w.name: w.flavor for w in case.held})
    outcome.assigned |= {e["job"]: e["flavor"] for e in now if e["event"] == "admitted"}
    outcome.preempted = {e["job"] for e in now if e["event"] == "preempted"}
    outcome.left = {w.name for w in pending if w.name not in outcome.assigned}
    return outcome


# -- TestSchedule -------------------------------------------------------------------------------------------

# TestSchedule's ClusterQueues, eng-beta split by resource group: a case's workloads in it ask the resource of
# one group, and the engine would try every flavor of a queue. `flavor-nonexistent-cq` (no cohort, a flavor
# that does not exist) serves only a case in NOT_PORTED.
SALES = cq("sales", "", fq("default", 50, 0), strategy="StrictFIFO")
ENG_ALPHA = cq("eng-alpha", "eng", fq("on-demand", 50, 50), fq("spot", 100, 0), strategy="StrictFIFO")
ENG_BETA_PREEMPTION = {"within_queue": LOWER, "reclaim": ANY, "strategy": "StrictFIFO"}
ENG_BETA_CPU = cq("eng-beta", "eng", fq("on-demand", 50, 10), fq("spot", 0, 100), **ENG_BETA_PREEMPTION)
ENG_BETA_GPU = cq("eng-beta", "eng", fq("model-a", 20, 0), **ENG_BETA_PREEMPTION)
LEND = (cq("lend-a", "lend", fq("default", 3, lending=2)), cq("lend-b", "lend", fq("default", 2, lending=2)))
BASE = (SALES, ENG_ALPHA, ENG_BETA_CPU, *LEND)
BASE_GPU = (SALES, ENG_ALPHA, ENG_BETA_GPU, *LEND)

OTHER_RECLAIM = {"within_queue": LOWER, "reclaim": ANY}


def _co_queues() -> tuple[SimQueue, ...]:
    """cq1..cq3 of cohort `co`, each with r1 and r2 of flavor default (10, borrowingLimit 10)."""
    return tuple(
        cq(f"cq{i}", "co", fq("default", 10, 10, resources=(R1, R2)), **OTHER_RECLAIM) for i in (1, 2, 3)
    )


def _lender_borrower(lending: int) -> tuple[SimQueue, ...]:
    return (
        cq("cq-lender", "child", fq("on-demand", 10, lending=lending)),
        cq("cq-borrower", "child", fq("on-demand", 5, 10)),
    )


ROOT_CHILD = (SimCohort("root"), SimCohort("child", "root"))


def _gpu_pair(beta_preemption: dict) -> tuple[SimQueue, ...]:
    """other-alpha (gpu 10 on on-demand and spot) and other-beta (0 on both) of cohort `other`."""
    alpha = cq("other-alpha", "other", fq("on-demand", 10), fq("spot", 10), within_queue=LOWER, reclaim=LOWER)
    beta = cq("other-beta", "other", fq("on-demand", 0), fq("spot", 0), **beta_preemption)
    return alpha, beta


def _lending_pair(reclaim: str) -> tuple[SimQueue, ...]:
    return (
        cq("ClusterQueueA", "root", fq("on-demand", 2), reclaim=reclaim),
        cq("ClusterQueueB", "root", fq("on-demand", 0)),
    )


def _fungible(name: str, cohort: str, preference: str) -> SimQueue:
    """pob-cq / bop-cq: on-demand 5 (borrowingLimit 0), spot 0 (borrowingLimit 5), TryNextFlavor for both."""
    return cq(
        name,
        cohort,
        fq("on-demand", 5, 0),
        fq("spot", 0, 5),
        within_queue=LOWER,
        when_can_borrow=TRY_NEXT,
        when_can_preempt=TRY_NEXT,
        preference=preference,
    )


def _lender(name: str, cohort: str) -> SimQueue:
    return cq(name, cohort, fq("on-demand", 0), fq("spot", 5))


POB, BOP = "PreemptionOverBorrowing", "BorrowingOverPreemption"

CASES: dict[str, Case] = {
    "use second flavor when the first has no preemption candidates; WhenCanPreempt: MayStopSearch": Case(
        (
            *BASE,
            cq(
                "other-alpha",
                "",
                fq("on-demand", 50, 50),
                fq("spot", 100, 0),
                within_queue=LOWER,
                when_can_preempt=STOP,
            ),
        ),
        (Held("eng-alpha/admitted", "other-alpha", "on-demand", 50),),
        (Pending("eng-alpha/new", "other-alpha", 20),),
        {"eng-alpha/admitted": "on-demand", "eng-alpha/new": "spot"},
    ),
    "workload fits in single clusterQueue, with check state ready": Case(
        BASE, (), (Pending("sales/foo", "sales", 10),), {"sales/foo": "default"}
    ),
    "workload fits in single clusterQueue, with check state pending": Case(
        BASE, (), (Pending("sales/foo", "sales", 10),), {"sales/foo": "default"}
    ),
    "single clusterQueue full": Case(
        BASE,
        (Held("sales/assigned", "sales", "default", 40),),
        (Pending("sales/new", "sales", 11),),
        {"sales/assigned": "default"},
        left=frozenset({"sales/new"}),
    ),
    "admit in different cohorts": Case(
        BASE,
        (),
        (Pending("sales/new", "sales", 1), Pending("eng-alpha/new", "eng-alpha", 51)),
        {"sales/new": "default", "eng-alpha/new": "on-demand"},
    ),
    "admit in same cohort with no borrowing": Case(
        BASE,
        (),
        (Pending("eng-alpha/new", "eng-alpha", 40), Pending("eng-beta/new", "eng-beta", 40)),
        {"eng-alpha/new": "on-demand", "eng-beta/new": "on-demand"},
    ),
    "can borrow if cohort was assigned and will not result in overadmission": Case(
        BASE,
        (),
        (Pending("eng-alpha/new", "eng-alpha", 45), Pending("eng-beta/new", "eng-beta", 55)),
        {"eng-alpha/new": "on-demand", "eng-beta/new": "on-demand"},
    ),
    "can borrow if needs reclaim from cohort in different flavor": Case(
        BASE,
        (
            Held("eng-beta/user-on-demand", "eng-beta", "on-demand", 50),
            Held("eng-beta/user-spot", "eng-beta", "spot", 1),
        ),
        (
            Pending("eng-alpha/can-reclaim", "eng-alpha", 100),
            Pending("eng-beta/needs-to-borrow", "eng-beta", 1),
        ),
        {
            "eng-beta/user-on-demand": "on-demand",
            "eng-beta/user-spot": "spot",
            "eng-beta/needs-to-borrow": "on-demand",
        },
        left=frozenset({"eng-alpha/can-reclaim"}),
    ),
    "workload exceeds lending limit when borrow in cohort": Case(
        BASE,
        (Held("lend/a", "lend-b", "default", 2),),
        (Pending("lend/b", "lend-b", 3),),
        {"lend/a": "default"},
        left=frozenset({"lend/b"}),
    ),
    "hierarchical cohort respects lending limit when borrowing": Case(
        (*BASE, *_lender_borrower(3)),
        (Held("eng-alpha/wl-existing", "cq-borrower", "on-demand", 5),),
        (Pending("eng-alpha/wl-pending", "cq-borrower", 4),),
        {"eng-alpha/wl-existing": "on-demand"},
        left=frozenset({"eng-alpha/wl-pending"}),
        cohorts=ROOT_CHILD,
    ),
    "hierarchical cohort allows borrowing up to lending limit": Case(
        (*BASE, *_lender_borrower(5)),
        (Held("eng-alpha/wl-existing", "cq-borrower", "on-demand", 5),),
        (Pending("eng-alpha/wl-borrowing", "cq-borrower", 5),),
        {"eng-alpha/wl-existing": "on-demand", "eng-alpha/wl-borrowing": "on-demand"},
        cohorts=ROOT_CHILD,
    ),
    "preempt workloads in ClusterQueue and cohort": Case(
        BASE,
        (
            Held("eng-alpha/use-all-spot", "eng-alpha", "spot", 100),
            Held("eng-beta/low-1", "eng-beta", "on-demand", 30, -1),
            Held("eng-beta/low-2", "eng-beta", "on-demand", 10, -2),
            Held("eng-alpha/borrower", "eng-alpha", "on-demand", 60),
        ),
        (Pending("eng-beta/preemptor", "eng-beta", 20),),
        {
            "eng-alpha/use-all-spot": "spot",
            "eng-beta/low-1": "on-demand",
            "eng-beta/low-2": "on-demand",
            "eng-alpha/borrower": "on-demand",
        },
        left=frozenset({"eng-beta/preemptor"}),
        preempted=frozenset({"eng-alpha/borrower", "eng-beta/low-2"}),
    ),
    "multiple CQs need preemption": Case(
        (
            *BASE,
            cq("other-alpha", "other", fq("on-demand", 50, 50)),
            cq("other-beta", "other", fq("on-demand", 50, 10), **OTHER_RECLAIM),
        ),
        (Held("eng-alpha/use-all", "other-alpha", "on-demand", 100),),
        (
            Pending("eng-beta/preemptor", "other-beta", 1, -1),
            Pending("eng-alpha/pending", "other-alpha", 1, 1),
        ),
        {"eng-alpha/use-all": "on-demand"},
        left=frozenset({"eng-beta/preemptor", "eng-alpha/pending"}),
        preempted=frozenset({"eng-alpha/use-all"}),
    ),
    "not enough resources to borrow, fallback to next flavor; WhenCanPreempt: TryNextFlavor": Case(
        BASE,
        (Held("eng-beta/existing", "eng-beta", "on-demand", 45),),
        (Pending("eng-alpha/new", "eng-alpha", 60),),
        {"eng-alpha/new": "spot", "eng-beta/existing": "on-demand"},
    ),
    "no overadmission while borrowing": Case(
        (*BASE, cq("eng-gamma", "eng", fq("on-demand", 50, 10), fq("spot", 0, 100), **OTHER_RECLAIM)),
        (
            Held("eng-gamma/existing[borrow-on-demand]", "eng-gamma", "on-demand", 51),
            Held("eng-gamma/existing[use-all-spot]", "eng-gamma", "spot", 100),
        ),
        (
            Pending("eng-beta/new", "eng-beta", 50, created=-2),
            Pending("eng-alpha/new-alpha", "eng-alpha", 1, created=-1),
            Pending("eng-gamma/new-gamma", "eng-gamma", 50),
        ),
        {
            "eng-gamma/existing[borrow-on-demand]": "on-demand",
            "eng-gamma/existing[use-all-spot]": "spot",
            "eng-beta/new": "on-demand",
            "eng-alpha/new-alpha": "on-demand",
        },
        left=frozenset({"eng-gamma/new-gamma"}),
    ),
    "two workloads can borrow different resources from the same flavor in the same cycle": Case(
        (*BASE, *_co_queues()),
        (),
        (Pending("sales/wl1", "cq1", 16, -1, mig=R1), Pending("sales/wl2", "cq2", 16, -2, mig=R2)),
        {"sales/wl1": "default", "sales/wl2": "default"},
    ),
    "two workloads can borrow the same resources from the same flavor in the same cycle if fits in the "
    "cohort quota": Case(
        (*BASE, *_co_queues()),
        (),
        (Pending("sales/wl1", "cq1", 16, -1, mig=R1), Pending("sales/wl2", "cq2", 14, -2, mig=R1)),
        {"sales/wl1": "default", "sales/wl2": "default"},
    ),
    "only one workload can borrow one resources from the same flavor in the same cycle if cohort quota "
    "cannot fit": Case(
        (*BASE, *_co_queues()),
        (),
        (Pending("sales/wl1", "cq1", 16, -1, mig=R1), Pending("sales/wl2", "cq2", 16, -2, mig=R1)),
        {"sales/wl1": "default"},
        left=frozenset({"sales/wl2"}),
    ),
    "preemption while borrowing, workload waiting for preemption should not block a borrowing workload in "
    "another CQ": Case(
        (
            *BASE,
            cq("cq_shared", "preemption-while-borrowing", fq("default", 4, 0)),
            cq("cq_a", "preemption-while-borrowing", fq("default", 0, 3), reclaim=LOWER, **BORROW_LOWER),
            cq("cq_b", "preemption-while-borrowing", fq("default", 0), reclaim=LOWER, **BORROW_LOWER),
        ),
        (Held("eng-alpha/admitted_a", "cq_a", "default", 2),),
        (Pending("eng-alpha/a", "cq_a", 3, created=1), Pending("eng-beta/b", "cq_b", 1, created=2)),
        {"eng-alpha/admitted_a": "default", "eng-beta/b": "default"},
        left=frozenset({"eng-alpha/a"}),
    ),
    "minimal preemptions when target queue is exhausted": Case(
        (
            *BASE,
            cq("other-alpha", "other", fq("on-demand", 2), **OTHER_RECLAIM),
            cq("other-beta", "other", fq("on-demand", 2)),
            cq("other-gamma", "other", fq("on-demand", 2)),
        ),
        (
            Held("eng-alpha/a1", "other-alpha", "on-demand", 1, -2),
            Held("eng-alpha/a2", "other-alpha", "on-demand", 1, -2),
            Held("eng-alpha/a3", "other-alpha", "on-demand", 1, -1),
            Held("eng-beta/b1", "other-beta", "on-demand", 1),
            Held("eng-beta/b2", "other-beta", "on-demand", 1),
            Held("eng-beta/b3", "other-beta", "on-demand", 1),
        ),
        (Pending("eng-alpha/incoming", "other-alpha", 2),),
        {
            name: "on-demand"
            for name in (
                "eng-alpha/a1",
                "eng-alpha/a2",
                "eng-alpha/a3",
                "eng-beta/b1",
                "eng-beta/b2",
                "eng-beta/b3",
            )
        },
        left=frozenset({"eng-alpha/incoming"}),
        preempted=frozenset({"eng-alpha/a1", "eng-alpha/a2"}),
    ),
    "A workload is only eligible to do preemptions if it fits fully within nominal quota": Case(
        (
            *BASE,
            cq("other-alpha", "other", fq("on-demand", 2), **OTHER_RECLAIM),
            cq("other-beta", "other", fq("on-demand", 2)),
        ),
        (
            Held("eng-alpha/a1", "other-alpha", "on-demand", 1, -1),
            Held("eng-beta/b1", "other-beta", "on-demand", 1, -1),
        ),
        (Pending("eng-alpha/incoming", "other-alpha", 3, 1),),
        {"eng-alpha/a1": "on-demand", "eng-beta/b1": "on-demand"},
        left=frozenset({"eng-alpha/incoming"}),
    ),
    "multiple preemptions without borrowing": Case(
        (
            *BASE,
            cq("other-alpha", "other", fq("default", 2), within_queue=LOWER),
            cq("other-beta", "other", fq("default", 2), within_queue=LOWER),
        ),
        (Held("eng-alpha/a1", "other-alpha", "default", 2), Held("eng-beta/b1", "other-beta", "default", 2)),
        (
            Pending("eng-alpha/preemptor", "other-alpha", 2, 100),
            Pending("eng-beta/preemptor", "other-beta", 2, 100),
        ),
        {"eng-alpha/a1": "default", "eng-beta/b1": "default"},
        left=frozenset({"eng-alpha/preemptor", "eng-beta/preemptor"}),
        preempted=frozenset({"eng-alpha/a1", "eng-beta/b1"}),
    ),
    "multiple preemptions preemption possible after earlier workload fits": Case(
        (
            *BASE,
            cq("other-alpha", "other", fq("default", 1), within_queue=LOWER),
            cq("other-beta", "other", fq("default", 2), within_queue=LOWER),
        ),
        (Held("eng-beta/b1", "other-beta", "default", 2),),
        (Pending("eng-alpha/fit", "other-alpha", 1, 100), Pending("eng-beta/preemptor", "other-beta", 2, 99)),
        {"eng-alpha/fit": "default", "eng-beta/b1": "default"},
        left=frozenset({"eng-beta/preemptor"}),
        preempted=frozenset({"eng-beta/b1"}),
    ),
    "multiple preemptions skip preemption when shared limited resource": Case(
        (
            *BASE,
            cq("other-alpha", "other", fq("default", 2), within_queue=LOWER, **BORROW_LOWER),
            cq("other-beta", "other", fq("default", 2), within_queue=LOWER, **BORROW_LOWER),
            cq("resource-bank", "other", fq("default", 1)),
        ),
        (Held("eng-alpha/a1", "other-alpha", "default", 2), Held("eng-beta/b1", "other-beta", "default", 2)),
        (
            Pending("eng-alpha/preemptor", "other-alpha", 3, 100),
            Pending("eng-beta/pretending-preemptor", "other-beta", 3, 99),
        ),
        {"eng-alpha/a1": "default", "eng-beta/b1": "default"},
        left=frozenset({"eng-alpha/preemptor", "eng-beta/pretending-preemptor"}),
        preempted=frozenset({"eng-alpha/a1"}),
    ),
    "not enough resources": Case(
        BASE, (), (Pending("sales/new", "sales", 100),), {}, left=frozenset({"sales/new"})
    ),
    "prefer reclamation over cq priority based preemption": Case(
        (*BASE, *_gpu_pair({"within_queue": LOWER, "reclaim": LOWER})),
        (
            Held("eng-alpha/a1", "other-alpha", "on-demand", 5, 50),
            Held("eng-beta/b1", "other-beta", "spot", 5, 50),
        ),
        (Pending("eng-alpha/preemptor", "other-alpha", 6, 100),),
        {"eng-alpha/a1": "on-demand", "eng-beta/b1": "spot"},
        left=frozenset({"eng-alpha/preemptor"}),
        preempted=frozenset({"eng-beta/b1"}),
    ),
    "prefer first preemption flavor when second flavor requires both reclaim and cq priority "
    "preemption": Case(
        (*BASE, *_gpu_pair({})),
        (
            Held("eng-alpha/a1", "other-alpha", "on-demand", 5, 50),
            Held("eng-alpha/a2", "other-alpha", "spot", 5, 50),
            Held("eng-beta/b1", "other-beta", "spot", 5, 50),
        ),
        (Pending("eng-alpha/preemptor", "other-alpha", 6, 100),),
        {"eng-alpha/a1": "on-demand", "eng-alpha/a2": "spot", "eng-beta/b1": "spot"},
        left=frozenset({"eng-alpha/preemptor"}),
        preempted=frozenset({"eng-alpha/a1"}),
    ),
    "prefer first preemption flavor when second flavor also requires cq preemption": Case(
        (*BASE, *_gpu_pair({})),
        (
            Held("eng-alpha/a1", "other-alpha", "on-demand", 6, 50),
            Held("eng-alpha/a2", "other-alpha", "spot", 5, 50),
            Held("eng-beta/b1", "other-beta", "spot", 5, 9001),
        ),
        (Pending("eng-alpha/preemptor", "other-alpha", 5, 100),),
        {"eng-alpha/a1": "on-demand", "eng-alpha/a2": "spot", "eng-beta/b1": "spot"},
        left=frozenset({"eng-alpha/preemptor"}),
        preempted=frozenset({"eng-alpha/a1"}),
    ),
    "workload requiring reclaimation prioritized over wl in another full cq": Case(
        (
            *BASE,
            cq("CQ1", "other", fq("on-demand", 10)),
            cq("CQ2", "other", fq("on-demand", 10), reclaim=ANY),
            cq("CQ3", "other", fq("on-demand", 0)),
        ),
        (
            Held("eng-alpha/Admitted-Workload-1", "CQ1", "on-demand", 5),
            Held("eng-gamma/Admitted-Workload-2", "CQ3", "on-demand", 5, 0),
            Held("eng-gamma/Admitted-Workload-3", "CQ3", "on-demand", 5, 1),
        ),
        (Pending("eng-alpha/WL1", "CQ1", 10), Pending("eng-beta/WL2", "CQ2", 10, created=1)),
        {
            "eng-alpha/Admitted-Workload-1": "on-demand",
            "eng-gamma/Admitted-Workload-2": "on-demand",
            "eng-gamma/Admitted-Workload-3": "on-demand",
        },
        left=frozenset({"eng-alpha/WL1", "eng-beta/WL2"}),
        preempted=frozenset({"eng-gamma/Admitted-Workload-2"}),
    ),
    "capacity not blocked when lending clusterqueue can reclaim (ReclaimWithinCohort=Any)": Case(
        (*BASE, *_lending_pair(ANY)),
        (Held("eng-alpha/a1-admitted", "ClusterQueueA", "on-demand", 1),),
        (
            Pending("eng-alpha/a2-pending", "ClusterQueueA", 2),
            Pending("eng-beta/b1-pending", "ClusterQueueB", 1),
        ),
        {"eng-alpha/a1-admitted": "on-demand", "eng-beta/b1-pending": "on-demand"},
        left=frozenset({"eng-alpha/a2-pending"}),
    ),
    "in a hierarchical cohort, workload borrowing less is scheduled first": Case(
        (
            *BASE,
            cq("guaranteed", "guaranteed", fq("default", 0)),
            cq("best-effort", "root", fq("default", 0)),
        ),
        (),
        (
            Pending("eng-alpha/guaranteed", "guaranteed", 4, 0),
            Pending("eng-alpha/best-effort", "best-effort", 4, 3),
        ),
        {"eng-alpha/guaranteed": "default"},
        left=frozenset({"eng-alpha/best-effort"}),
        cohorts=(SimCohort("root"), SimCohort("guaranteed", "root", (fq("default", 4),))),
    ),
    "don't assign flavor if there are no candidates for preemption": Case(
        (
            *BASE,
            cq(
                "cq1",
                "cohort",
                fq("on-demand", 0, 1),
                fq("spot", 0, 1),
                within_queue=LOWER,
                reclaim=ANY,
                when_can_preempt=STOP,
                **BORROW_LOWER,
            ),
            cq("cq2", "cohort", fq("on-demand", 1), fq("spot", 1)),
        ),
        (Held("eng-alpha/admitted", "cq2", "on-demand", 1),),
        (Pending("eng-alpha/new", "cq1", 1, 100),),
        {"eng-alpha/admitted": "on-demand", "eng-alpha/new": "spot"},
    ),
    "pending admission check with nofit and fit flavors": Case(
        BASE, (), (Pending("eng-beta/pending-check", "eng-beta", 80),), {"eng-beta/pending-check": "spot"}
    ),
    "admit to second flavor when first needs preemption; WhenCanPreempt: TryNextFlavor": Case(
        (
            *BASE,
            cq("preempt-attempts-cq", "", fq("on-demand", 1), fq("spot", 1), within_queue=LOWER),
        ),
        (Held("eng-alpha/blocker", "preempt-attempts-cq", "on-demand", 1, 50),),
        (Pending("eng-alpha/test-wl", "preempt-attempts-cq", 1, 100),),
        {"eng-alpha/blocker": "on-demand", "eng-alpha/test-wl": "spot"},
    ),
    "admit workload with zero-quantity request for resource not in ClusterQueue": Case(
        BASE, (), (Pending("sales/zero-resource-wl", "sales", 1),), {"sales/zero-resource-wl": "default"}
    ),
    "preempt when workload requests zero of a resource not defined in ClusterQueue": Case(
        (*BASE, cq("preempt-zero-gpu-cq", "", fq("default", 4), within_queue=LOWER)),
        (Held("sales/low-priority", "preempt-zero-gpu-cq", "default", 4, -1),),
        (Pending("sales/preemptor", "preempt-zero-gpu-cq", 2),),
        {"sales/low-priority": "default"},
        left=frozenset({"sales/preemptor"}),
        preempted=frozenset({"sales/low-priority"}),
    ),
    "PreemptionOverBorrowing preference: preempt in first flavor instead of borrowing in second": Case(
        (*BASE, _fungible("pob-cq", "pob-cohort", POB), _lender("pob-lender", "pob-cohort")),
        (Held("default/low-pob", "pob-cq", "on-demand", 5, -1),),
        (Pending("default/high-pob", "pob-cq", 5),),
        {"default/low-pob": "on-demand"},
        left=frozenset({"default/high-pob"}),
        preempted=frozenset({"default/low-pob"}),
    ),
    "PreemptionOverBorrowing preference: select fitting second flavor over first flavor with no preemption "
    "candidates": Case(
        (
            *BASE,
            cq(
                "nopc-cq",
                "nopc-mid",
                fq("on-demand", 5, 0),
                fq("spot", 0),
                within_queue=LOWER,
                when_can_borrow=TRY_NEXT,
                when_can_preempt=TRY_NEXT,
                preference=POB,
            ),
            cq("nopc-sibling", "nopc-mid", fq("on-demand", 5), fq("spot", 0)),
        ),
        (Held("default/admitted-nopc", "nopc-cq", "on-demand", 5),),
        (Pending("default/pending-nopc", "nopc-cq", 5),),
        {"default/admitted-nopc": "on-demand", "default/pending-nopc": "spot"},
        cohorts=(
            SimCohort("nopc-root", "", (fq("on-demand", 0), fq("spot", 5))),
            SimCohort("nopc-mid", "nopc-root"),
        ),
    ),
    "BorrowingOverPreemption preference: borrow in second flavor instead of preempting in first": Case(
        (*BASE, _fungible("bop-cq", "bop-cohort", BOP), _lender("bop-lender", "bop-cohort")),
        (Held("default/low-bop", "bop-cq", "on-demand", 5, -1),),
        (Pending("default/high-bop", "bop-cq", 5),),
        {"default/low-bop": "on-demand", "default/high-bop": "spot"},
    ),
    "do not signal `BlockedOnPreemptionGates` when a preemption gate is present, but the workload fits "
    "without preemption": Case(
        BASE_GPU, (), (Pending("eng-beta/preemptor", "eng-beta", 20),), {"eng-beta/preemptor": "model-a"}
    ),
    "do not signal `BlockedOnPreemptionGates` when a preemption gate is present, but the workload had "
    "nothing to preempt": Case(
        BASE_GPU,
        (Held("eng-beta/high-priority", "eng-beta", "model-a", 20, 1),),
        (Pending("eng-beta/preemptor", "eng-beta", 20),),
        {"eng-beta/high-priority": "model-a"},
        left=frozenset({"eng-beta/preemptor"}),
    ),
    "partial admission single variable pod set, preempt first": Case(
        BASE_GPU,
        (Held("eng-beta/old", "eng-beta", "model-a", 10, -4),),
        (Pending("eng-beta/new", "eng-beta", 20, 4),),
        {"eng-beta/old": "model-a"},
        left=frozenset({"eng-beta/new"}),
        preempted=frozenset({"eng-beta/old"}),
    ),
}

# How a ported case differs in form from upstream's, where it does (the assertions are upstream's)
CHECK = "the admission check gates the Admitted condition only; the quota reservation is what is asserted"
ZERO = "its request of 0 example.com/gpu is no request of that resource"
GATE = "a preemption gate acts only on a workload that needs preemption: this one fits, or has no target"
ADAPTED = {
    "workload fits in single clusterQueue, with check state ready": CHECK,
    "workload fits in single clusterQueue, with check state pending": CHECK,
    "pending admission check with nofit and fit flavors": CHECK,
    "admit workload with zero-quantity request for resource not in ClusterQueue": ZERO,
    "preempt when workload requests zero of a resource not defined in ClusterQueue": ZERO,
    "no overadmission while borrowing": (
        "eng-gamma/existing has two pod sets (51 on on-demand, 100 on spot); a simulated workload has one, "
        "so it holds its quota as two workloads, neither of which any preemptor here may evict"
    ),
    "partial admission single variable pod set, preempt first": (
        "minCount 10 is never used: Kueue tries the full count first (scheduler.go getInitialAssignments), "
        "and 20 fits once eng-beta/old is preempted"
    ),
    "do not signal `BlockedOnPreemptionGates` when a preemption gate is present, but the workload fits "
    "without preemption": GATE,
    "do not signal `BlockedOnPreemptionGates` when a preemption gate is present, but the workload had "
    "nothing to preempt": GATE,
    **dict.fromkeys(
        (
            "two workloads can borrow different resources from the same flavor in the same cycle",
            "two workloads can borrow the same resources from the same flavor in the same cycle if fits in "
            "the cohort quota",
            "only one workload can borrow one resources from the same flavor in the same cycle if cohort "
            "quota cannot fit",
        ),
        "r1 and r2 of flavor default are two MIG resources, the engine's resources counted apart",
    ),
}

# TestSchedule cases not ported, each for a deliberate difference of the simulator
TAINTS = "taints and tolerations are not modelled: a flavor takes any job of its queue"
LOCAL_QUEUES = "LocalQueues and their ClusterQueue lookup are not modelled: a job names its ClusterQueue"
PARTIAL = "partial admission (a pod set's minCount) is not modelled: a job is admitted whole or not at all"
PODSETS = "a simulated workload has one pod set asking one resource"
NAMESPACES = "namespaces and ClusterQueue namespaceSelectors are not modelled"
SLICES = "workload slices (ElasticJobsViaWorkloadSlices) are not modelled"
LIMITS = "LimitRanges and container limits are not modelled"
UNLISTED = (
    "a job asks the accelerator its queue's flavors count; a resource outside the queue's quota is not "
    "expressed (the engine's time-sliced and MIG flavors are where a flavor lacks a job's resource)"
)
ONE_CYCLE = (
    "asserts the state after one scheduling cycle, which Kueue's next cycle changes at the same instant "
    "({}); the engine runs an instant's cycles to the end"
)
NOT_PORTED = {
    "skip workload with missing or deleted ClusterQueue (NoFit)": LOCAL_QUEUES,
    "workload should not fit in nonexistent clusterQueue": LOCAL_QUEUES,
    "flavors with mixed misconfiguration and insufficient quota": TAINTS,
    "flavors with mixed taint mismatch and exceeding limits": TAINTS,
    "flavors are structurally incompatible": TAINTS,
    "error during admission": "API errors on the status update are not modelled",
    "failed to match clusterQueue selector": NAMESPACES,
    "assign multiple resources and flavors": PODSETS,
    "cannot borrow if cohort was assigned and would result in overadmission": ONE_CYCLE.format(
        "eng-beta/new, skipped as no longer fitting on on-demand, is admitted on spot"
    ),
    "cannot borrow resource not listed in clusterQueue": UNLISTED,
    "workload should not fit in clusterQueue with nonexistent flavor": (
        "ResourceFlavor objects and inactive ClusterQueues are not modelled: a flavor exists where a queue "
        "names it"
    ),
    "partial admission single variable pod set": PARTIAL,
    "partial admission single variable pod set, preempt with partial admission": PARTIAL,
    "partial admission multiple variable pod sets": PARTIAL,
    "partial admission disabled, multiple variable pod sets": PODSETS,
    "container does not satisfy limitRange constraints": LIMITS,
    "container resource requests exceed limits": LIMITS,
    "capacity blocked when lending clusterqueue not guaranteed to reclaim "
    "(ReclaimWithinCohort=LowerPriority)": (
        ONE_CYCLE.format(
            "a2-pending waits as inadmissible under BestEffortFIFO, so its capacity reservation "
            "(scheduler.go reserveCapacityForUnreclaimablePreempt) is gone and b1-pending is admitted"
        )
    ),
    "capacity blocked when lending clusterqueue not guaranteed to reclaim (ReclaimWithinCohort=Never)": (
        ONE_CYCLE.format(
            "a2-pending waits as inadmissible under BestEffortFIFO, so its capacity reservation "
            "(scheduler.go reserveCapacityForUnreclaimablePreempt) is gone and b1-pending is admitted"
        )
    ),
    "workload-slice fits in single clusterQueue": SLICES,
    "block preemptions and signal `BlockedOnPreemptionGates` when a preemption gate is present": (
        "preemption gates (MultiKueueOrchestratedPreemption) are not modelled"
    ),
    "prevent integer overflow when sum of requests over podsets exceeds MaxInt64": PODSETS,
    "prevent integer overflow in ResourceValue conversion to MilliValue": (
        "int64 quantities: the simulator's integers do not overflow"
    ),
}

# TestSchedule's case names at the commit read, in the file's order
UPSTREAM_SCHEDULE = (
    "use second flavor when the first has no preemption candidates; WhenCanPreempt: MayStopSearch",
    "workload fits in single clusterQueue, with check state ready",
    "skip workload with missing or deleted ClusterQueue (NoFit)",
    "flavors with mixed misconfiguration and insufficient quota",
    "flavors with mixed taint mismatch and exceeding limits",
    "flavors are structurally incompatible",
    "workload fits in single clusterQueue, with check state pending",
    "error during admission",
    "single clusterQueue full",
    "failed to match clusterQueue selector",
    "admit in different cohorts",
    "admit in same cohort with no borrowing",
    "assign multiple resources and flavors",
    "cannot borrow if cohort was assigned and would result in overadmission",
    "can borrow if cohort was assigned and will not result in overadmission",
    "can borrow if needs reclaim from cohort in different flavor",
    "workload exceeds lending limit when borrow in cohort",
    "hierarchical cohort respects lending limit when borrowing",
    "hierarchical cohort allows borrowing up to lending limit",
    "preempt workloads in ClusterQueue and cohort",
    "multiple CQs need preemption",
    "cannot borrow resource not listed in clusterQueue",
    "not enough resources to borrow, fallback to next flavor; WhenCanPreempt: TryNextFlavor",
    "workload should not fit in nonexistent clusterQueue",
    "workload should not fit in clusterQueue with nonexistent flavor",
    "no overadmission while borrowing",
    "partial admission single variable pod set",
    "partial admission single variable pod set, preempt first",
    "partial admission single variable pod set, preempt with partial admission",
    "partial admission multiple variable pod sets",
    "partial admission disabled, multiple variable pod sets",
    "two workloads can borrow different resources from the same flavor in the same cycle",
    "two workloads can borrow the same resources from the same flavor in the same cycle if fits in the "
    "cohort quota",
    "only one workload can borrow one resources from the same flavor in the same cycle if cohort quota "
    "cannot fit",
    "preemption while borrowing, workload waiting for preemption should not block a borrowing workload in "
    "another CQ",
    "minimal preemptions when target queue is exhausted",
    "A workload is only eligible to do preemptions if it fits fully within nominal quota",
    "multiple preemptions without borrowing",
    "multiple preemptions preemption possible after earlier workload fits",
    "multiple preemptions skip preemption when shared limited resource",
    "not enough resources",
    "container does not satisfy limitRange constraints",
    "container resource requests exceed limits",
    "prefer reclamation over cq priority based preemption",
    "prefer first preemption flavor when second flavor requires both reclaim and cq priority preemption",
    "prefer first preemption flavor when second flavor also requires cq preemption",
    "workload requiring reclaimation prioritized over wl in another full cq",
    "capacity not blocked when lending clusterqueue can reclaim (ReclaimWithinCohort=Any)",
    "capacity blocked when lending clusterqueue not guaranteed to reclaim "
    "(ReclaimWithinCohort=LowerPriority)",
    "capacity blocked when lending clusterqueue not guaranteed to reclaim (ReclaimWithinCohort=Never)",
    "in a hierarchical cohort, workload borrowing less is scheduled first",
    "don't assign flavor if there are no candidates for preemption",
    "workload-slice fits in single clusterQueue",
    "pending admission check with nofit and fit flavors",
    "admit to second flavor when first needs preemption; WhenCanPreempt: TryNextFlavor",
    "admit workload with zero-quantity request for resource not in ClusterQueue",
    "preempt when workload requests zero of a resource not defined in ClusterQueue",
    "PreemptionOverBorrowing preference: preempt in first flavor instead of borrowing in second",
    "PreemptionOverBorrowing preference: select fitting second flavor over first flavor with no preemption "
    "candidates",
    "BorrowingOverPreemption preference: borrow in second flavor instead of preempting in first",
    "block preemptions and signal `BlockedOnPreemptionGates` when a preemption gate is present",
    "do not signal `BlockedOnPreemptionGates` when a preemption gate is present, but the workload fits "
    "without preemption",
    "do not signal `BlockedOnPreemptionGates` when a preemption gate is present, but the workload had "
    "nothing to preempt",
    "prevent integer overflow when sum of requests over podsets exceeds MaxInt64",
    "prevent integer overflow in ResourceValue conversion to MilliValue",
)


@pytest.mark.parametrize("name", sorted(CASES))
def test_schedule_case(name):
    case = CASES[name]
    outcome = schedule(case)
    assert outcome.assigned == case.assigned
    assert outcome.left == case.left
    assert outcome.preempted == case.preempted


def test_every_schedule_case_is_ported_or_says_why():
    upstream = _names(UPSTREAM_SCHEDULE)
    assert len(upstream) == 65
    assert not set(CASES) & set(NOT_PORTED)
    assert set(CASES) | set(NOT_PORTED) == set(upstream)
    assert all(NOT_PORTED.values())
    assert set(ADAPTED) <= set(CASES)


def _names(listing: tuple[str, ...]) -> list[str]:
    assert len(listing) == len(set(listing))
    return list(listing)


# -- TestAssignFlavors --------------------------------------------------------------------------------------


class Oracle(Admission):
    """flavorassigner_test.go testOracle in place of the preemption simulation: preemption possible (Preempt)
    with no borrowing after it, unless the case gives (mode, borrowing after) for the flavor."""

    def __init__(self, tree: QuotaTree, queues: dict[str, SimQueue], results: dict[str, tuple[int, int]]):
        super().__init__(tree, queues, lambda queue, flavor: ())
        self.results = results

    def simulate_preemption(self, queue, incoming, key, total, borrow):
        mode, after = self.results.get(key, (adm.PREEMPT, 0))
        return mode, (), after


@dataclass(frozen=True)
class Assign:
    """One pod asking `request` cpu of `queue` (used as `usage` says), `secondary` in its cohort; `want` is
    upstream's (flavor, representative mode, borrowing), None for NoFit."""

    queue: SimQueue
    request: int
    want: tuple[str, str, int] | None
    usage: dict[str, int] = field(default_factory=dict)
    secondary: SimQueue | None = None
    secondary_usage: dict[str, int] = field(default_factory=dict)
    oracle: dict[str, tuple[int, int]] = field(default_factory=dict)


def assign(case: Assign) -> tuple[str, str, int] | None:
    queues = {q.name: q for q in (case.queue, case.secondary) if q is not None}
    tree = QuotaTree(queues, {})
    for queue, usage in ((case.queue, case.usage), (case.secondary, case.secondary_usage)):
        for flavor, amount in usage.items():
            tree.use(queue.name, flavor, amount * MILLI)
    incoming = Workload(0, case.queue.name, "", 0, 0, 0)
    requests = {f.flavor: (f.flavor, case.request * MILLI) for f in case.queue.flavors}
    choice: Choice | None = Oracle(tree, queues, case.oracle).best_flavor(case.queue, incoming, requests)
    if choice is None:
        return None
    return choice.flavor.flavor, "Fit" if choice.mode == adm.FIT else "Preempt", choice.borrow


TEST_CQ, SECONDARY = "test-clusterqueue", "test-secondary-clusterqueue"
COHORT_CQ = "test-cohort"
BORROW_WHILE_PREEMPTING = {"reclaim": LOWER, **BORROW_LOWER}
STOP_BOTH = {"when_can_borrow": STOP, "when_can_preempt": STOP}
TRY_BOTH = {"when_can_borrow": TRY_NEXT, "when_can_preempt": TRY_NEXT}
PREEMPT_BORROWING = {"one": (adm.PREEMPT, 1)}


def assign_cq(*flavors: FlavorQuota, cohort: str = COHORT_CQ, **spec) -> SimQueue:
    return cq(TEST_CQ, cohort, *flavors, **spec)


def secondary(*flavors: FlavorQuota) -> SimQueue:
    return cq(SECONDARY, COHORT_CQ, *flavors)


def _borrowing_while_preempting(
    one: FlavorQuota, fungibility: dict, want: tuple[str, str, int], **usage_and_oracle
) -> Assign:
    """TestAssignFlavors' `when borrowing while preemption is needed for flavor one` cases: 12 cpu on flavor
    one (nominal 0) or two (12), the secondary queue holding 12 of one."""
    queue = assign_cq(one, fq("two", 12), **BORROW_WHILE_PREEMPTING, **fungibility)
    return Assign(queue, 12, want, secondary=secondary(fq("one", 12)), **usage_and_oracle)


# the secondary queue uses 10 of its 12 on flavor one, and the oracle says preemption leaves 1 borrowing level
TEN_USED = {"secondary_usage": {"one": 10}, "oracle": PREEMPT_BORROWING}
TRY_BORROW_STOP_PREEMPT = {"when_can_borrow": TRY_NEXT, "when_can_preempt": STOP}
PREEMPT_ON_ONE, FIT_ON_TWO = ("one", "Preempt", 1), ("two", "Fit", 0)
NO_CANDIDATES_ON_ONE = Assign(
    assign_cq(fq("one", 0, 2), fq("two", 0, 2), **BORROW_WHILE_PREEMPTING, **STOP_BOTH),
    2,
    ("two", "Fit", 1),
    secondary=secondary(fq("one", 2), fq("two", 2)),
    secondary_usage={"one": 2},
    oracle={"one": (adm.NO_CANDIDATES, 0)},
)
ONE_USES_2 = {"one": 2}

# The `pods` quota several of these flavors list (10, one pod asked) never binds; the port keeps their cpu.
ASSIGN_CASES: dict[str, Assign] = {
    "single flavor, used resources, doesn't fit": Assign(
        assign_cq(fq("default", 4), cohort=""), 2, ("default", "Preempt", 0), usage={"default": 3}
    ),
    "not enough space to borrow": Assign(
        assign_cq(fq("one", 1)),
        2,
        None,
        secondary=secondary(fq("one", 10, lending=0)),
        secondary_usage={"one": 9},
    ),
    "past max, but can preempt in ClusterQueue": Assign(
        assign_cq(fq("one", 2, 8)),
        2,
        ("one", "Preempt", 1),
        usage={"one": 9},
        secondary=secondary(fq("one", 98)),
        secondary_usage={"one": 9},
        oracle=PREEMPT_BORROWING,
    ),
    "past min, but can preempt in ClusterQueue": Assign(
        assign_cq(fq("one", 2), cohort=""), 2, ("one", "Preempt", 0), usage={"one": 1}
    ),
    "past min, but can preempt in cohort and ClusterQueue": Assign(
        assign_cq(fq("one", 3)),
        2,
        ("one", "Preempt", 1),
        usage={"one": 2},
        secondary=secondary(fq("one", 7)),
        secondary_usage={"one": 8},
        oracle=PREEMPT_BORROWING,
    ),
    "zero resource request not in clusterQueue should succeed": Assign(
        assign_cq(fq("default", 4), cohort=""), 1, ("default", "Fit", 0)
    ),
    "preempt before try next flavor": Assign(
        assign_cq(fq("one", 10), fq("two", 10), cohort="", **STOP_BOTH),
        9,
        ("one", "Preempt", 0),
        usage=ONE_USES_2,
    ),
    "preempt before try next flavor; using WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch": Assign(
        assign_cq(fq("one", 10), fq("two", 10), cohort="", **STOP_BOTH),
        9,
        ("one", "Preempt", 0),
        usage=ONE_USES_2,
    ),
    "preempt try next flavor": Assign(
        assign_cq(fq("one", 10), fq("two", 10), cohort=""), 9, ("two", "Fit", 0), usage=ONE_USES_2
    ),
    "borrow try next flavor, found the first flavor": Assign(
        assign_cq(fq("one", 10, 1), fq("two", 1), **TRY_BOTH),
        9,
        ("one", "Fit", 1),
        secondary=secondary(fq("one", 1)),
        usage=ONE_USES_2,
    ),
    "borrow try next flavor, found the second flavor": Assign(
        assign_cq(fq("one", 10, 1), fq("two", 10), **TRY_BOTH),
        9,
        ("two", "Fit", 0),
        secondary=secondary(fq("one", 1)),
        usage=ONE_USES_2,
    ),
    "borrow before try next flavor": Assign(
        assign_cq(fq("one", 10, 1), fq("two", 10)),
        9,
        ("one", "Fit", 1),
        secondary=secondary(fq("one", 1)),
        usage=ONE_USES_2,
    ),
    "when borrowing while preemption is needed for flavor one; WhenCanBorrow=MayStopSearch": (
        _borrowing_while_preempting(fq("one", 0, 12), STOP_BOTH, PREEMPT_ON_ONE, **TEN_USED)
    ),
    "when borrowing while preemption is needed for flavor one; WhenCanBorrow=MayStopSearch,"
    "WhenCanPreempt=MayStopSearch": (
        _borrowing_while_preempting(fq("one", 0, 12), STOP_BOTH, PREEMPT_ON_ONE, **TEN_USED)
    ),
    "when borrowing while preemption is needed for flavor one, no borrowingLimit; "
    "WhenCanBorrow=MayStopSearch": (
        _borrowing_while_preempting(fq("one", 0), STOP_BOTH, PREEMPT_ON_ONE, **TEN_USED)
    ),
    "when borrowing while preemption is needed for flavor one, no borrowingLimit; "
    "WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch": (
        _borrowing_while_preempting(fq("one", 0), STOP_BOTH, PREEMPT_ON_ONE, **TEN_USED)
    ),
    "when borrowing while preemption is needed for flavor one; WhenCanBorrow=TryNextFlavor": (
        _borrowing_while_preempting(fq("one", 0, 12), TRY_BORROW_STOP_PREEMPT, FIT_ON_TWO)
    ),
    "when borrowing while preemption is needed for flavor one; WhenCanBorrow=TryNextFlavor,"
    "WhenCanPreempt=MayStopSearch": (
        _borrowing_while_preempting(fq("one", 0, 12), TRY_BORROW_STOP_PREEMPT, FIT_ON_TWO)
    ),
    "when borrowing while preemption is needed, but borrowingLimit exceeds the quota available in the "
    "cohort": (
        Assign(
            assign_cq(fq("one", 0, 12), **BORROW_WHILE_PREEMPTING),
            12,
            None,
            secondary=secondary(fq("one", 11)),
            secondary_usage={"one": 10},
        )
    ),
    "lend try next flavor, found the second flavor": Assign(
        assign_cq(fq("one", 10, lending=1), fq("two", 10, lending=0), **TRY_BOTH),
        9,
        ("two", "Fit", 0),
        secondary=secondary(fq("one", 1)),
        usage=ONE_USES_2,
    ),
    "lend try next flavor, found the first flavor": Assign(
        assign_cq(fq("one", 10, lending=1), fq("two", 1, lending=0), **TRY_BOTH),
        9,
        ("one", "Fit", 1),
        secondary=secondary(fq("one", 1)),
        usage=ONE_USES_2,
    ),
    "cannot preempt in cohort (oracle returns None) for the first flavor, tries the second flavor (which "
    "fits)": NO_CANDIDATES_ON_ONE,
    "cannot preempt in cohort (oracle returns None) for the first flavor, tries the second flavor (which "
    "fits); using deprecated WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch": NO_CANDIDATES_ON_ONE,
    "quota exhausted, but can preempt in cohort and ClusterQueue": Assign(
        assign_cq(fq("one", 10, lending=0)),
        9,
        ("one", "Preempt", 1),
        usage={"one": 2},
        secondary=secondary(fq("one", 0)),
        oracle=PREEMPT_BORROWING,
    ),
}

# TestAssignFlavors cases not ported (the function's other tests are not ported either)
TWO_RESOURCES = "the pod set asks two or more resources at once; a simulated pod set asks one"
AFFINITY = "node selectors and affinity are not modelled: a flavor takes any job of its queue"
PODS_QUOTA = "the `pods` resource (a quota on the number of pods) is not modelled"
RECLAIMABLE = "reclaimable pods (a finished part of a job) are not modelled"
FAIR_SHARING = (
    "fair sharing is not modelled (with it, reclaimWithinCohort lets a queue preempt while borrowing)"
)
ASSIGN_NOT_PORTED = {
    "single flavor, fits": TWO_RESOURCES,
    "single flavor, fits tainted flavor": TAINTS,
    "single flavor, fits tainted flavor with toleration": TAINTS,
    "multiple resource groups, fits": TWO_RESOURCES,
    "multiple flavors, leader worker set, leader and workers request the same resources fits": PODSETS,
    "multiple flavors, leader worker set, workers request GPU, leader does not request GPU, fits": PODSETS,
    "multiple flavors, leader worker set, workers request GPU, leader does not request GPU, does not fit, "
    "without group it would fit": PODSETS,
    "multiple resource groups, one could fit with preemption, other doesn't fit": TWO_RESOURCES,
    "multiple resource groups with multiple resources, fits": TWO_RESOURCES,
    "multiple resource groups with multiple resources, fits with different modes": TWO_RESOURCES,
    "multiple resources in a group, doesn't fit": TWO_RESOURCES,
    "multiple flavors, fits while skipping tainted flavor": TAINTS,
    "multiple flavors, fits a node selector": AFFINITY,
    "multiple flavors, fits with node affinity": AFFINITY,
    "multiple flavors, node affinity fits any flavor": AFFINITY,
    "multiple flavors with different label keys, selector only uses flavor's own keys": AFFINITY,
    "labelless flavor in group with labeled flavor, workload uses labeled selector": AFFINITY,
    "multiple flavors, doesn't fit node affinity": AFFINITY,
    "multiple specs, fit different flavors": PODSETS,
    "multiple specs, fits borrowing": PODSETS,
    "can only preempt flavors that match affinity": AFFINITY,
    "each podset requires preemption on a different flavor": PODSETS,
    "resource not listed in clusterQueue": UNLISTED,
    "zero resource request defined in clusterQueue should get flavor assigned": (
        "asserts the flavor given to a request of 0; a simulated pod set asks one resource"
    ),
    "num pods fit": PODS_QUOTA,
    "num pods don't fit": PODS_QUOTA,
    "with reclaimable pods; reclaimablePods on": RECLAIMABLE,
    "with reclaimable pods; reclaimablePods off": RECLAIMABLE,
    "when borrowing while preemption is needed for flavor one, fair sharing enabled, "
    "reclaimWithinCohort=Any": FAIR_SHARING,
    "when borrowing while preemption is needed for flavor one, fair sharing enabled, "
    "reclaimWithinCohort=Any; using deprecated "
    "WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch": FAIR_SHARING,
    "when borrowing while preemption is needed for flavor one, fair sharing enabled, "
    "reclaimWithinCohort=Never": FAIR_SHARING,
    "when borrowing while preemption is needed for flavor one, fair sharing enabled, "
    "reclaimWithinCohort=Never; using deprecated "
    "WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch": FAIR_SHARING,
    "workload slice preemption fits in the original workload resource flavor": SLICES,
    "workload slice preemption does not fit in the original workload resource flavor": SLICES,
    "multiple TAS flavors assigned to different resources in the same PodSet leads to NoFit": (
        "topology-aware scheduling is not modelled"
    ),
    "multi-podset, one fits and another fails, fitting podset attempts skipped in "
    "resolveNoFitReason": PODSETS,
}

# TestAssignFlavors' case names at the commit read, in the file's order
UPSTREAM_ASSIGN = (
    "single flavor, fits",
    "single flavor, fits tainted flavor",
    "single flavor, fits tainted flavor with toleration",
    "single flavor, used resources, doesn't fit",
    "multiple resource groups, fits",
    "multiple flavors, leader worker set, leader and workers request the same resources fits",
    "multiple flavors, leader worker set, workers request GPU, leader does not request GPU, fits",
    "multiple flavors, leader worker set, workers request GPU, leader does not request GPU, does not fit, "
    "without group it would fit",
    "multiple resource groups, one could fit with preemption, other doesn't fit",
    "multiple resource groups with multiple resources, fits",
    "multiple resource groups with multiple resources, fits with different modes",
    "multiple resources in a group, doesn't fit",
    "multiple flavors, fits while skipping tainted flavor",
    "multiple flavors, fits a node selector",
    "multiple flavors, fits with node affinity",
    "multiple flavors, node affinity fits any flavor",
    "multiple flavors with different label keys, selector only uses flavor's own keys",
    "labelless flavor in group with labeled flavor, workload uses labeled selector",
    "multiple flavors, doesn't fit node affinity",
    "multiple specs, fit different flavors",
    "multiple specs, fits borrowing",
    "not enough space to borrow",
    "past max, but can preempt in ClusterQueue",
    "past min, but can preempt in ClusterQueue",
    "past min, but can preempt in cohort and ClusterQueue",
    "can only preempt flavors that match affinity",
    "each podset requires preemption on a different flavor",
    "resource not listed in clusterQueue",
    "zero resource request not in clusterQueue should succeed",
    "zero resource request defined in clusterQueue should get flavor assigned",
    "num pods fit",
    "num pods don't fit",
    "with reclaimable pods; reclaimablePods on",
    "with reclaimable pods; reclaimablePods off",
    "preempt before try next flavor",
    "preempt before try next flavor; using WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch",
    "preempt try next flavor",
    "borrow try next flavor, found the first flavor",
    "borrow try next flavor, found the second flavor",
    "borrow before try next flavor",
    "when borrowing while preemption is needed for flavor one; WhenCanBorrow=MayStopSearch",
    "when borrowing while preemption is needed for flavor one; "
    "WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch",
    "when borrowing while preemption is needed for flavor one, no borrowingLimit; "
    "WhenCanBorrow=MayStopSearch",
    "when borrowing while preemption is needed for flavor one, no borrowingLimit; "
    "WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch",
    "when borrowing while preemption is needed for flavor one; WhenCanBorrow=TryNextFlavor",
    "when borrowing while preemption is needed for flavor one; "
    "WhenCanBorrow=TryNextFlavor,WhenCanPreempt=MayStopSearch",
    "when borrowing while preemption is needed, but borrowingLimit exceeds the quota available in the cohort",
    "lend try next flavor, found the second flavor",
    "lend try next flavor, found the first flavor",
    "cannot preempt in cohort (oracle returns None) for the first flavor, tries the second flavor (which "
    "fits)",
    "cannot preempt in cohort (oracle returns None) for the first flavor, tries the second flavor (which "
    "fits); using deprecated WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch",
    "quota exhausted, but can preempt in cohort and ClusterQueue",
    "when borrowing while preemption is needed for flavor one, fair sharing enabled, reclaimWithinCohort=Any",
    "when borrowing while preemption is needed for flavor one, fair sharing enabled, "
    "reclaimWithinCohort=Any; using deprecated WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch",
    "when borrowing while preemption is needed for flavor one, fair sharing enabled, "
    "reclaimWithinCohort=Never",
    "when borrowing while preemption is needed for flavor one, fair sharing enabled, "
    "reclaimWithinCohort=Never; using deprecated WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch",
    "workload slice preemption fits in the original workload resource flavor",
    "workload slice preemption does not fit in the original workload resource flavor",
    "multiple TAS flavors assigned to different resources in the same PodSet leads to NoFit",
    "multi-podset, one fits and another fails, fitting podset attempts skipped in resolveNoFitReason",
)


@pytest.mark.parametrize("name", sorted(ASSIGN_CASES))
def test_assign_flavors_case(name):
    case = ASSIGN_CASES[name]
    assert assign(case) == case.want


def test_every_assign_flavors_case_is_ported_or_says_why():
    upstream = _names(UPSTREAM_ASSIGN)
    assert len(upstream) == 60
    assert not set(ASSIGN_CASES) & set(ASSIGN_NOT_PORTED)
    assert set(ASSIGN_CASES) | set(ASSIGN_NOT_PORTED) == set(upstream)
    assert all(ASSIGN_NOT_PORTED.values())
