"""Kueue's waitForPodsReady (readiness.py): pods not ready within the timeout evict the workload, which is
requeued after a doubling backoff; on by default in Kueue 0.19's v1beta2 Configuration."""

from __future__ import annotations

import contextlib
import dataclasses
import signal

from gpupolicy.simulate import Engine
from gpupolicy.simulate.engine import NO_HEALTHY_NODE_REASON, REQUEUED_FOR_EVER_REASON
from gpupolicy.simulate.failures import parse_failures
from gpupolicy.simulate.jobs import Job
from gpupolicy.simulate.metrics import summarize
from gpupolicy.simulate.policy import FlavorQuota, SimPolicy, SimPool, SimQueue
from gpupolicy.simulate.readiness import KUEUE_DEFAULT, PodsReady, duration_seconds, from_configuration
from gpupolicy.simulate.report import summary_rows


def _policy(ready: PodsReady | None) -> SimPolicy:
    """One node of 2 cards, and a queue whose quota (4 cards) admits more than the node holds."""
    pool = SimPool("train", 1, 2, "exclusive")
    queue = SimQueue("q", (FlavorQuota("f", "train", 4000),))
    return SimPolicy("p", {"train": pool}, {"q": queue}, pods_ready=ready)


READY_ROW = "admitted workloads evicted, pods not running in time (waitForPodsReady)"
JOBS = [Job("first", 0, 7200, gpus=2), Job("second", 0, 3600, gpus=2)]


def _run(ready: PodsReady | None):
    events: list = []
    result = Engine(_policy(ready), JOBS, ["q", "q"], events=events).run()
    return result.runs[1], [e["time"] for e in events if e["event"] == "evicted" and e["job"] == "second"]


def test_pods_waiting_past_the_timeout_are_evicted_and_requeued_with_backoff():
    second, evicted = _run(KUEUE_DEFAULT)
    # admitted at 0, 1860 (60 s backoff), 3780 (120 s), 5820 (240 s): each wait for nodes ends at 30 min
    assert evicted == [1800, 3660, 5580]
    assert second.ready_timeouts == 3 and second.first_start == 7200  # the node frees when `first` finishes


def test_the_summary_and_the_report_count_the_evictions_per_queue():
    """Quota that admits more than the pool's cards hold shows as churn, not only as waits."""
    result = Engine(_policy(KUEUE_DEFAULT), JOBS, ["q", "q"]).run()
    summary = summarize(result)
    assert summary.ready_timeouts == {"q": 3}
    assert dict(summary_rows([summary]))[READY_ROW] == "q 3"
    quiet = summarize(Engine(_policy(None), JOBS, ["q", "q"]).run())
    assert quiet.ready_timeouts == {}
    old_record = dataclasses.replace(summary, ready_timeouts=None)  # recorded before the figure existed
    assert dict(summary_rows([old_record]))[READY_ROW] == "not recorded"
    assert dict(summary_rows([quiet]))[READY_ROW] == "0"


def test_without_wait_for_pods_ready_the_workload_keeps_its_quota():
    second, evicted = _run(None)
    assert evicted == [] and second.first_start == 7200 and second.ready_timeouts == 0


def test_past_the_backoff_limit_the_workload_is_deactivated():
    second, evicted = _run(dataclasses.replace(KUEUE_DEFAULT, backoff_limit=1))
    assert evicted == [1800, 3660] and second.first_start < 0 and "backoff limit" in second.never_reason


def test_kueue_defaults_and_the_configuration_read():
    assert (KUEUE_DEFAULT.timeout, KUEUE_DEFAULT.backoff(1), KUEUE_DEFAULT.backoff(3)) == (1800, 60, 240)
    assert KUEUE_DEFAULT.backoff(10) == 3600
    v1beta2 = "config.kueue.x-k8s.io/v1beta2"
    assert from_configuration({"apiVersion": v1beta2, "kind": "Configuration"}) == KUEUE_DEFAULT
    disabled = {"apiVersion": v1beta2, "featureGates": {"DisableWaitForPodsReady": True}}
    assert from_configuration(disabled) is None
    assert from_configuration({"apiVersion": "config.kueue.x-k8s.io/v1beta1"}) is None
    assert (
        from_configuration(
            {"apiVersion": "config.kueue.x-k8s.io/v1beta1", "waitForPodsReady": {"enable": True}}
        )
        == KUEUE_DEFAULT
    )
    custom = from_configuration(
        {
            "apiVersion": v1beta2,
            "waitForPodsReady": {
                "timeout": "5m",
                "blockAdmission": True,
                "requeuingStrategy": {
                    "backoffLimitCount": 5,
                    "backoffBaseSeconds": 10,
                    "timestamp": "Creation",
                },
            },
        }
    )
    assert custom == PodsReady(300, True, 10, 3600, 5, False)
    assert (duration_seconds("1h30m", 0), duration_seconds("90s", 0)) == (5400, 90)
    assert duration_seconds("soon", 7) == 7


def test_block_admission_admits_nothing_while_an_admitted_workload_waits_for_nodes():
    # `second` is admitted on quota but its node is busy; `third` fits its own queue and pool, yet under
    # blockAdmission waits until `second` gives its admission up at its 30-minute timeout
    pools = {name: SimPool(name, 1, 2, "exclusive") for name in ("train", "other")}
    queues = {
        "q1": SimQueue("q1", (FlavorQuota("f1", "train", 4000),)),
        "q2": SimQueue("q2", (FlavorQuota("f2", "other", 2000),)),
    }
    block = dataclasses.replace(KUEUE_DEFAULT, block_admission=True)
    jobs = [Job("first", 0, 7200, gpus=2), Job("second", 10, 600, gpus=2), Job("third", 20, 600, gpus=2)]
    blocked = Engine(SimPolicy("p", pools, queues, pods_ready=block), jobs, ["q1", "q1", "q2"]).run().runs
    assert [r.first_start for r in blocked] == [0, 7200, 1810]
    free = (
        Engine(SimPolicy("p", pools, queues, pods_ready=KUEUE_DEFAULT), jobs, ["q1", "q1", "q2"]).run().runs
    )
    assert [r.first_start for r in free] == [0, 7200, 20]


def test_the_repository_configuration_reaches_the_declared_policy(tmp_path):
    """from_cluster replays the waitForPodsReady the repository's Kueue values set, not Kueue's default."""
    from support import copy_repo, fleet_repo

    from gpupolicy import pipeline
    from gpupolicy.domain.kueue_configuration import KUEUE_VALUES
    from gpupolicy.simulate.policy import from_cluster

    repo = copy_repo(fleet_repo(), tmp_path / "repo")
    cluster = next(iter(pipeline.load_fleet(repo, use_cache=False).clusters.values()))
    assert from_cluster(cluster).pods_ready == KUEUE_DEFAULT  # the fixture fleet sets none of it
    values = repo / KUEUE_VALUES
    text = values.read_text()
    assert "    kind: Configuration\n" in text
    values.write_text(
        text.replace(
            "    kind: Configuration\n",
            "    kind: Configuration\n    "
            "waitForPodsReady:\n      timeout: 10m\n      blockAdmission: true\n",
        )
    )
    cluster = pipeline.load_fleet(repo, use_cache=False).clusters[cluster.name]
    assert from_cluster(cluster).pods_ready == PodsReady(600, True)


@contextlib.contextmanager
def _ends_within(seconds: int):
    """These replays once never ended: a regression fails the test instead of hanging the suite."""

    def endless(signum, frame):
        raise AssertionError(f"the replay did not end within {seconds} s")

    previous = signal.signal(signal.SIGALRM, endless)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _dead_first_flavor() -> SimPolicy:
    """A queue whose first flavor's one node fails for good at 0, its second flavor on a healthy node."""
    pools = {"dead": SimPool("dead", 1, 2, "exclusive"), "alive": SimPool("alive", 1, 2, "exclusive")}
    flavors = (FlavorQuota("d", "dead", 2000), FlavorQuota("a", "alive", 2000))
    return SimPolicy("p", pools, {"q": SimQueue("q", flavors)}, pods_ready=KUEUE_DEFAULT)


def test_jobs_whose_nodes_failed_for_good_end_the_replay_instead_of_being_requeued_for_ever():
    """With no backoffLimitCount, Kueue requeues a workload whose pods never start for ever; the replay
    used to do the same and never ended (`simulate --fail-nodes POOL:ALL@0` hung). Once that churn is all
    that is left and nothing runs, it ends: at once where no waiting job fits a healthy node."""
    with _ends_within(60):
        result = Engine(_policy(KUEUE_DEFAULT), JOBS, ["q", "q"], parse_failures("train:1@0")).run()
    assert [run.never_reason for run in result.runs] == [NO_HEALTHY_NODE_REASON] * 2
    # known at once: when they were admitted, only their timeouts were left and no node could hold them
    assert result.end == 0 and [run.ready_timeouts for run in result.runs] == [0, 0]


def test_a_job_kueue_keeps_admitting_to_a_dead_flavor_ends_after_its_backoff_settles():
    """Kueue assigns the first flavor whose quota fits: the dead one, again after every eviction, though the
    second flavor's node is free. The replay churns until every backoff reached its cap and three more
    periods passed with nothing started (Engine._churn_horizon), and ends."""
    jobs = [Job("stuck", 0, 3600, gpus=2), Job("runs", 7200, 3600, gpus=2)]
    events: list = []
    engine = Engine(_dead_first_flavor(), jobs, ["q", "q"], parse_failures("dead:1@0"), events=events)
    with _ends_within(60):
        stuck, runs = engine.run().runs
    assert runs.first_start >= 0 and runs.finished >= 0  # a job admitted to the live flavor still runs
    assert stuck.first_start < 0 and stuck.never_reason == REQUEUED_FOR_EVER_REASON
    assert {e["flavor"] for e in events if e["job"] == "stuck" and e["event"] == "admitted"} == {"d"}
    # the churn began when nothing ran any more (`runs` finished), and the replay ended one horizon later
    horizon = engine._churn_horizon()
    assert horizon == 7 * 1800 + (60 + 120 + 240 + 480 + 960 + 1920 + 3600) + 3 * (1800 + 3600)
    assert engine.churn_since >= runs.finished and engine.now - engine.churn_since <= horizon + 5400
