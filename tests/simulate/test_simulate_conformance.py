"""Conformance with Kueue's own preemption tests: cases ported from kubernetes-sigs/kueue
pkg/scheduler/preemption/preemption_test.go `TestPreemption` (same ClusterQueues, cohort, workloads and
priorities; the one resource, cpu, stands for the flavor's GPUs), asserting the preempted set upstream asserts.
"""

from __future__ import annotations

import pytest

from gpupolicy.simulate.admission import Admission, Workload
from gpupolicy.simulate.policy import FlavorQuota, SimQueue
from gpupolicy.simulate.quota import QuotaTree

BORROW_LOWER = {"borrow_within": "LowerPriority", "borrow_threshold": 0}


def _queue(name: str, nominal: int, borrowing: int | None, within: str, reclaim: str) -> SimQueue:
    return SimQueue(name, (FlavorQuota("default", "pool", nominal * 1000, borrowing * 1000 if borrowing is not
                                       None else None),), cohort="with_shared_cq", within_queue=within,
                    reclaim=reclaim, **BORROW_LOWER)


# TestPreemption's defaultClusterQueues of the cohort `with_shared_cq`
WITH_SHARED_CQ = {
    "a_standard": _queue("a_standard", 1, 12, "Never", "LowerPriority"),
    "b_standard": _queue("b_standard", 1, 12, "LowerPriority", "Any"),
    "a_best_effort": _queue("a_best_effort", 1, 12, "Never", "LowerPriority"),
    "b_best_effort": _queue("b_best_effort", 0, 13, "Never", "LowerPriority"),
    "shared": SimQueue("shared", (FlavorQuota("default", "pool", 10_000),), cohort="with_shared_cq"),
}

# TestPreemption's `preventStarvation` ClusterQueue (no cohort)
PREVENT_STARVATION = {"preventStarvation": SimQueue("preventStarvation", (FlavorQuota("default", "pool", 6000),),
                                                    within_queue="LowerOrNewerEqualPriority")}

# TestPreemption's `standalone` (its cpu flavor `default`) and the `cohort-lend` queues with lendingLimits
STANDALONE = {"standalone": SimQueue("standalone", (FlavorQuota("default", "pool", 6000),),
                                     within_queue="LowerPriority")}
COHORT_LEND = {name: SimQueue(name, (FlavorQuota("default", "pool", 6000, None, lend * 1000),), cohort="cohort-lend",
                              within_queue="LowerPriority", reclaim="LowerPriority")
               for name, lend in (("lend1", 4), ("lend2", 2))}
THREE = [("low", "standalone", -1, 2, 0, 0), ("mid", "standalone", 0, 2, 0, 0), ("high", "standalone", 1, 2, 0, 0)]

# name: (queues, admitted (workload, queue, priority, cpu, created, quota reserved), incoming (queue, priority,
# cpu, created), the workloads upstream asserts preempted); times in seconds from the test's `now`
CASES = {
    # preemption_test.go TestPreemption
    "use BorrowWithinCohort; allow preempting a lower-priority workload from another ClusterQueue while "
    "borrowing": (
        WITH_SHARED_CQ,
        [("a_best_effort_low", "a_best_effort", -1, 10, 0, 0), ("b_best_effort_low", "b_best_effort", -1, 1, 0, 0)],
        ("a_standard", 0, 10, 1), {"a_best_effort_low"}),
    "use BorrowWithinCohort; don't allow preempting a lower-priority workload with priority above "
    "MaxPriorityThreshold, if borrowing is required even after the preemption": (
        WITH_SHARED_CQ, [("b_standard", "b_standard", 1, 10, 0, 0)], ("a_standard", 2, 10, 1), set()),
    "preempt newer workloads with the same priority": (
        PREVENT_STARVATION,
        [("wl1", "preventStarvation", 2, 2, 0, 0), ("wl2", "preventStarvation", 1, 2, 0, 1),
         ("wl3", "preventStarvation", 1, 2, 0, 0)],
        ("preventStarvation", 1, 2, -15), {"wl2"}),
    "preempt lowest priority": (STANDALONE, THREE, ("standalone", 1, 2, 1), {"low"}),
    "preempt multiple": (STANDALONE, THREE, ("standalone", 1, 3, 1), {"low", "mid"}),
    "no preemption for low priority": (
        STANDALONE, [("low", "standalone", -1, 3, 0, 0), ("mid", "standalone", 0, 3, 0, 0)],
        ("standalone", -1, 1, 1), set()),
    "not enough low priority workloads": (
        STANDALONE, [("low", "standalone", -1, 3, 0, 0), ("mid", "standalone", 0, 3, 0, 0)],
        ("standalone", 0, 4, 1), set()),
    "minimal set excludes low priority": (
        STANDALONE, [("low", "standalone", -1, 1, 0, 0), ("mid", "standalone", 0, 2, 0, 0),
                     ("high", "standalone", 1, 3, 0, 0)], ("standalone", 1, 2, 1), {"mid"}),
    "reclaim quota from lender": (
        COHORT_LEND, [("lend1-low", "lend1", -1, 3, 0, 0), ("lend2-mid", "lend2", 0, 3, 0, 0),
                      ("lend2-high", "lend2", 1, 4, 0, 0)], ("lend1", 1, 3, 1), {"lend2-mid"}),
    "cannot preempt from other ClusterQueues if exceeds requestable quota including lending limit": (
        COHORT_LEND, [("lend2-low", "lend2", -1, 10, 0, 0)], ("lend1", 0, 9, 1), set()),
    "preempt from all ClusterQueues in cohort-lend": (
        COHORT_LEND, [("lend1-low", "lend1", -1, 3, 0, 0), ("lend1-mid", "lend1", 0, 2, 0, 0),
                      ("lend2-low", "lend2", -1, 3, 0, 0), ("lend2-mid", "lend2", 0, 4, 0, 0)],
        ("lend1", 0, 4, 1), {"lend1-low", "lend2-low"}),
    "use BorrowWithinCohort; allow preempting a lower-priority workload with priority above "
    "MaxPriorityThreshold, if borrowing is not required after the preemption": (
        WITH_SHARED_CQ, [("b_standard", "b_standard", 1, 13, 0, 0)], ("a_standard", 2, 1, 1), {"b_standard"}),
    "use BorrowWithinCohort; don't allow for preemption of lower-priority workload from the same "
    "ClusterQueue": (
        WITH_SHARED_CQ, [("a_standard", "a_standard", 1, 13, 0, 0)], ("a_standard", 2, 1, 1), set()),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_preemption_case(name):
    queues, admitted, (target, priority, cpu, created), wanted = CASES[name]
    tree = QuotaTree(queues, {})
    names = {}
    holding: dict[str, list[Workload]] = {}
    for index, (workload, queue, prio, request, submit, reserved) in enumerate(admitted):
        names[index] = workload
        holding.setdefault(queue, []).append(Workload(index, queue, "default", request * 1000, prio, submit,
                                                      reserved))
        tree.use(queue, "default", request * 1000)
    admission = Admission(tree, queues, lambda queue, flavor: holding.get(queue, []))
    incoming = Workload(len(admitted), target, "", 0, priority, created)
    choice = admission.assign(queues[target], incoming, {"default": ("default", cpu * 1000)})
    preempted = {names[t.workload.index] for t in choice.targets} if choice else set()
    assert preempted == wanted
