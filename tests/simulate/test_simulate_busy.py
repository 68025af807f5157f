"""Busy devices: time-sliced pods beyond their memory share, with and without the startup check."""

from __future__ import annotations

from pathlib import Path

from gpupolicy.simulate import replay
from gpupolicy.simulate.busy import skips_startup_check, with_busy_devices
from gpupolicy.simulate.engine import BUSY_DEVICE_REASON, JOB_BACKOFF_LIMIT
from gpupolicy.simulate.jobs import Job, Shape, shape_in_pool
from gpupolicy.simulate.metrics import summarize
from gpupolicy.simulate.policy import FlavorQuota, SimPolicy, SimPool, SimQueue


def _one_card(checked: bool) -> SimPolicy:
    """One time-sliced card, four replicas, one queue with room for all of them."""
    pool = SimPool("shared", 1, 1, "time-sliced", replicas=4)
    queue = SimQueue("serving", (FlavorQuota("shared", "shared", 1000),), workload="inference")
    return with_busy_devices(SimPolicy("proposed", {"shared": pool}, {"serving": queue}), {"shared": checked})


def test_a_pod_takes_one_replica_and_needs_its_own_memory_share():
    job = Job("a", 0, 60, share=0.6)
    assert shape_in_pool(job, "time-sliced", 4, 1, whole_only=False, replica_per_pod=True) == Shape(
        1, 1, 250, 600
    )
    assert shape_in_pool(job, "time-sliced", 4, 1, whole_only=False) == Shape(1, 1, 750)  # the default model


def test_with_the_check_a_pod_waits_for_the_memory_instead_of_starting_on_a_busy_card():
    jobs = [Job("first", 0, 3600, share=0.6), Job("second", 0, 600, share=0.6)]
    result = replay(_one_card(checked=True), jobs)
    first, second = result.runs
    assert result.busy_starts == 0
    # waits for the first pod's memory, not a replica
    assert (first.first_start, second.first_start) == (0, 3600)


def test_without_the_check_the_pod_fails_at_start_and_its_job_retries_with_backoff():
    jobs = [Job("first", 0, 100, share=0.6), Job("second", 0, 600, share=0.6)]
    result = replay(_one_card(checked=False), jobs)
    second = result.runs[1]
    # fails at 0, 10 and 30 s (backoff 10 s, then 20 s); the retry at 70 s still meets the first pod, the one
    # at 150 s finds the card free
    assert result.busy_starts == second.busy_starts == 4
    assert second.first_start == 150 and second.finished == 750


def test_a_job_that_keeps_failing_at_start_is_lost_after_the_backoff_limit():
    jobs = [Job("holder", 0, 100_000, share=0.6), Job("victim", 0, 600, share=0.6)]
    summary = summarize(replay(_one_card(checked=False), jobs))
    assert summary.busy_starts == JOB_BACKOFF_LIMIT
    assert summary.lost_to_busy_devices == 1 and summary.never_reasons == {BUSY_DEVICE_REASON: 1}


def test_pods_within_their_share_never_meet_a_busy_card():
    jobs = [Job(f"p{i}", 0, 600, share=0.25) for i in range(4)]
    result = replay(_one_card(checked=False), jobs)
    assert result.busy_starts == 0 and all(run.first_start == 0 for run in result.runs)


def _pool_yaml(tmp_path: Path, block: str) -> str:
    path = tmp_path / "pools" / "p" / "pool.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(
        f"apiVersion: gpupolicy.io/v1\nkind: Pool\nmetadata:\n  name: p\nspec:\n  gpuModel: L4\n{block}"
    )
    return "pools/p/pool.yaml"


def test_the_check_is_skipped_only_where_pool_yaml_says_so(tmp_path):
    assert skips_startup_check(tmp_path, _pool_yaml(tmp_path, "  startupCheck:\n    skip: true\n"))


def test_a_pool_without_the_block_or_with_skip_false_keeps_the_check(tmp_path):
    assert not skips_startup_check(tmp_path, _pool_yaml(tmp_path, ""))
    other = tmp_path / "other"
    assert not skips_startup_check(
        other, _pool_yaml(other, "  startupCheck:\n    skip: false\n    retries: 3\n")
    )
    assert not skips_startup_check(tmp_path, "pools/missing/pool.yaml")
    assert not skips_startup_check(tmp_path, "../outside/pool.yaml")  # refused by repopath, never read


def test_simulate_reports_busy_devices_with_and_without_the_check(tmp_path, capsys):
    import json

    from support import fleet_repo

    REPO = fleet_repo()  # the tests' own rich fleet (decision 0085), the same on a fork

    from gpupolicy.cli import main

    code = main(
        [
            "simulate",
            "--repo",
            str(REPO),
            "--cluster",
            "prod-us",
            "--busy-devices",
            "--no-plots",
            "--out",
            str(tmp_path),
            "--format",
            "json",
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert code in (0, 1)
    # the shipped trace's shared pods ask up to half a card on 4-replica pools: without the check some of them
    # start where a neighbour holds the memory; with it (per pool.yaml) at most on pools that skip it
    assert data["proposed_without_startup_check"]["busy_starts"] > data["proposed"]["busy_starts"]
    assert data["baseline"]["busy_starts"] == 0  # whole cards: no neighbours


def _whole_cards(rate: float, seed: int = 0) -> SimPolicy:
    """The brief's "before" as policy.before builds it: whole cards, one FIFO line, starts crashing at
    `rate`."""
    from dataclasses import replace

    pool = SimPool("cards", 4, 8, "exclusive")
    queue = SimQueue("fifo", (FlavorQuota("cards-whole", "cards", 32_000),), strategy="StrictFIFO")
    policy = SimPolicy("baseline", {"cards": pool}, {"fifo": queue}, whole_gpus=True)
    return replace(policy, start_failure_rate=rate, failure_seed=seed)


def test_the_before_crashes_starts_at_the_measured_rate_and_its_jobs_retry():
    from gpupolicy.simulate.policy import busy_start_rate

    jobs = [Job(f"j{i}", i * 60, 600, gpus=1) for i in range(2000)]
    quiet = summarize(replay(_whole_cards(0.0), jobs))
    assert quiet.busy_starts == 0 and quiet.starts == 2000
    crashed = summarize(replay(_whole_cards(0.2, seed=1), jobs))
    assert 0.17 < crashed.busy_starts / crashed.starts < 0.23  # one start in five, as drawn
    rate = busy_start_rate(crashed.jobs_crashed_at_start, crashed.jobs_tried)
    assert 0.17 < rate < 0.23 and crashed.jobs_tried == 2000  # and so one job in five crashes at least once
    # a job gives up only after JOB_BACKOFF_LIMIT crashes in a row: 0.2^6 of 2,000 jobs is about none
    assert crashed.completed + crashed.lost_to_busy_devices == 2000 and crashed.lost_to_busy_devices <= 2
    assert crashed.wait.p95 > quiet.wait.p95  # the retries' backoff is waiting
    again = summarize(replay(_whole_cards(0.2, seed=1), jobs))
    assert (again.busy_starts, again.wait) == (crashed.busy_starts, crashed.wait)  # the seed reproduces it
    other = summarize(replay(_whole_cards(0.2, seed=2), jobs))
    assert other.busy_starts != crashed.busy_starts
    assert busy_start_rate(0, 0) == 0.0
