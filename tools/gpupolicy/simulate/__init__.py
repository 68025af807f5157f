"""What-if replay of a GPU workload against a cluster's policy, side by side with a naive baseline.

jobs.py       the simulator's own types: a job as a trace describes it, its size in a pool
policy.py     model Cluster -> SimPolicy (and the baseline from the same cluster)
traces.py     csv / openb / itp readers, CSV writer; synthetic.py the shipped synthetic trace
workload.py   the mixed workload from the command line's options; failures.py `--fail-nodes`
engine.py     the discrete-event engine; pending.py its queues of pending work, indexed by size
admission.py  Kueue's admission on quota alone (flavor, preemptions); quota.py the cohort tree's quota
placement.py  per-pool card bookkeeping; PLACEMENTS, the placement scores (best-fit, frag-aware) by name
migpool.py    a MIG pool replayed per layout: fixed instances, one per pod
nodeclasses.py  heterogeneous nodes (CPU, memory, GPU model) as the FGD simulator places on them
metrics.py    summaries; report.py Markdown + PNG; verdict.py the metrics made worse than the baseline
fidelity.py   the FGD paper check
mixed.py      the congested ITP + openb workload; busy.py time-sliced neighbours and the startup check
revisions.py  two revisions' policies on one workload, beside one baseline (`simulate --base`)
beside.py     one replay run in a forked child while this process runs another
collector.py  the cyclic garbage collector paused while a replay runs or its answer is read
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..model import Cluster
from .beside import started
from .busy import with_busy_devices
from .engine import Engine, Result
from .failures import Failure
from .jobs import Job
from .metrics import Summary, summarize
from .placement import DEFAULT_PLACEMENT
from .policy import SimPolicy, assign_queues, baseline, from_cluster


@dataclass
class Comparison:
    before: Result
    after: Result
    before_summary: Summary
    after_summary: Summary


def replay(
    policy: SimPolicy,
    jobs: Sequence[Job],
    failures: Sequence[Failure] = (),
    mapping: dict[str, str] | None = None,
    events: list | None = None,
) -> Result:
    """`events`: a list the engine appends one dict per job event to (engine.Engine._event)."""
    return Engine(policy, jobs, assign_queues(jobs, policy, mapping), failures, events=events).run()


def compare(
    cluster: Cluster,
    jobs: Sequence[Job],
    failures: Sequence[Failure] = (),
    mapping: dict[str, str] | None = None,
    placement: str = DEFAULT_PLACEMENT,
    checks: dict[str, bool] | None = None,
    events: dict[str, list] | None = None,
) -> Comparison:
    """Replay `jobs` under the baseline and under the cluster's declared policy; with `checks` (pool ->
    startup
    check on), time-sliced pods take one replica each and may meet busy devices (busy.py)."""
    logged = events is not None
    # the baseline in a forked child where the machine has a second core (beside.py): the same answer,
    # summarized there while this process still replays the policy
    baseline_replay = started(_summarized, baseline(cluster), jobs, failures, mapping, logged, shared=jobs)
    after, after_log = logged_replay(declared(cluster, placement, checks), jobs, failures, mapping, logged)
    before, before_log, before_summary = baseline_replay()
    if events is not None:
        events.update({"baseline": before_log, "proposed": after_log})
    return Comparison(before, after, before_summary, summarize(after))


def _summarized(policy: SimPolicy, jobs: Sequence[Job], failures: Sequence[Failure], mapping, logged: bool):
    """`logged_replay` and the result's summary."""
    result, log = logged_replay(policy, jobs, failures, mapping, logged)
    return result, log, summarize(result)


def declared(
    cluster: Cluster, placement: str = DEFAULT_PLACEMENT, checks: dict[str, bool] | None = None
) -> SimPolicy:
    """The cluster's declared policy (policy.from_cluster); with `checks` (pool -> startup check on), its
    time-sliced pods take one replica each and may meet busy devices (busy.py)."""
    policy = from_cluster(cluster, placement)
    return policy if checks is None else with_busy_devices(policy, checks)


def logged_replay(
    policy: SimPolicy, jobs: Sequence[Job], failures: Sequence[Failure], mapping, logged: bool
) -> tuple[Result, list | None]:
    """The replay, and its job events when `logged` (returned, not appended: it may run in a child)."""
    log = [] if logged else None
    return replay(policy, jobs, failures, mapping, log), log
