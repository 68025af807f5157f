"""The replay's figures on tiny hand-made traces whose answers are worked out by hand in each test:
useful utilization over the arrival window, allocation while work waits, GPU-hours idle while same-class work
waits, waits per queue, checkpoint loss, and the whole-node-per-job before."""

from __future__ import annotations

import pytest

from gpupolicy.simulate import Engine
from gpupolicy.simulate.checkpoints import DEFAULT_INTERVALS, interval_of, parse_intervals, with_checkpoints
from gpupolicy.simulate.engine import whole_nodes
from gpupolicy.simulate.jobs import Job, Shape
from gpupolicy.simulate.metrics import allocation_while_waiting, idle_while_waiting, summarize
from gpupolicy.simulate.policy import FlavorQuota, SimPolicy, SimPool, SimQueue

HOUR = 3600


def _policy(cards: int = 2, **extra) -> SimPolicy:
    """One training queue owning one exclusive node of `cards` cards."""
    pool = SimPool("p", 1, cards, "exclusive")
    queue = SimQueue(
        "q",
        (FlavorQuota("p", "p", cards * 1000),),
        tier="training",
        workload="training",
        within_queue="LowerPriority",
    )
    return SimPolicy("hand", {"p": pool}, {"q": queue}, **extra)


def _summary(policy: SimPolicy, jobs: list[Job], queues: list[str] | None = None):
    return summarize(Engine(policy, jobs, queues or ["q"] * len(jobs)).run())


def test_idle_while_waiting_allocation_while_waiting_and_the_window():
    # A (1 card, 0-1 h) runs at once; B (2 cards, from 0) waits for A: one card idle for an hour while B
    # waits.
    # B runs 1-2 h; C (1 card) arrives at 1.5 h and waits until 2 h with both cards busy (nothing idle).
    jobs = [
        Job("a", 0, HOUR, gpus=1, workload="training"),
        Job("b", 0, HOUR, gpus=2, workload="training"),
        Job("c", 5400, 600, gpus=1, workload="training"),
    ]
    summary = _summary(_policy(), jobs)
    assert summary.idle_while_waiting_gpu_hours == {"training": pytest.approx(1.0)}
    # waiting during [0, 1 h) with 1 of 2 cards busy and [1.5 h, 2 h) with 2 of 2: 7200 / 10800 card-seconds
    assert summary.allocation_while_waiting == pytest.approx(2 / 3)
    # window [0, 1.5 h]: A's hour on one card and B's half hour on two, over 2 cards x 1.5 h
    assert summary.window_useful == pytest.approx((3600 + 1800 * 2) / (2 * 5400))
    assert summary.wait_by_queue["q"].jobs == 3
    assert summary.wait_by_queue["q"].p99 == pytest.approx(60.0)  # B's hour, in minutes


def test_waits_per_queue_are_kept_apart():
    # two queues on one card each; x waits 30 min behind w in queue q, y in queue r never waits
    pool = SimPool("p", 1, 2, "exclusive")
    queues = {
        name: SimQueue(name, (FlavorQuota(f"f-{name}", "p", 1000),), workload="training")
        for name in ("q", "r")
    }
    jobs = [Job("w", 0, 1800, gpus=1), Job("x", 0, 600, gpus=1), Job("y", 60, 600, gpus=1)]
    summary = summarize(Engine(SimPolicy("hand", {"p": pool}, queues), jobs, ["q", "q", "r"]).run())
    assert {q: (s.jobs, s.p95) for q, s in summary.wait_by_queue.items()} == {"q": (2, 30.0), "r": (1, 0.0)}


def test_checkpoint_loss_is_the_work_since_the_last_checkpoint():
    # a batch job checkpointing hourly is preempted 5000 s in by a training job: it keeps 3600 s and loses
    # 1400 s on its one card
    low = Job("low", 0, 10_000, gpus=1, tier="batch", workload="training", checkpoint=HOUR)
    high = Job("high", 5000, 600, gpus=1, tier="training", workload="training")
    summary = _summary(_policy(cards=1), [low, high])
    assert summary.preemptions == 1
    assert summary.checkpoint_loss_gpu_hours == {"training": pytest.approx(1400 / HOUR)}
    assert summary.lost_to_preemption_gpu_hours == pytest.approx(1400 / HOUR)


def test_checkpoint_intervals_default_per_workload_and_are_settable():
    trained, served = Job("t", 0, 10, gpus=1, workload="training"), Job("s", 0, 10, share=0.5)
    assert interval_of(trained, DEFAULT_INTERVALS) == 3600
    assert interval_of(served, DEFAULT_INTERVALS) == 0  # no workload: its class, inference, restarts
    assert interval_of(Job("own", 0, 10, gpus=1, workload="training", checkpoint=90), DEFAULT_INTERVALS) == 90
    intervals = parse_intervals("training=30m, inference=2h")
    assert (intervals["training"], intervals["inference"], intervals["batch"]) == (1800, 7200, 3600)
    assert [job.checkpoint for job in with_checkpoints([trained, served], intervals)] == [1800, 7200]
    for wrong in ("training", "training=soon", "=1h"):
        with pytest.raises(ValueError, match="--checkpoint"):
            parse_intervals(wrong)
    # a kind no job is of, beyond the defaults, is a typo that would change nothing: refused
    with pytest.raises(ValueError) as typo:
        with_checkpoints([trained, served], parse_intervals("trainig=2h"))
    assert str(typo.value) == (
        "--checkpoint: no job is of the kind 'trainig' (the workload's kinds: batch, inference, notebook, "
        "training)"
    )
    own = Job("d", 0, 10, gpus=1, workload="dev")  # a trace's own kind of work may be given
    assert [job.checkpoint for job in with_checkpoints([own], parse_intervals("dev=10m"))] == [600]


def test_whole_node_per_job_holds_every_card_of_its_nodes():
    assert whole_nodes(Shape(1, 1, 1000), 8) == Shape(1, 8, 1000)
    assert whole_nodes(Shape(1, 1, 250), 4) == Shape(1, 4, 1000)
    assert whole_nodes(Shape(3, 4, 1000), 8) == Shape(2, 8, 1000)  # 12 cards fill two 8-card nodes
    # two one-card jobs on one 8-card node: side by side on cards, one after the other on whole nodes
    jobs = [Job("a", 0, HOUR, gpus=1), Job("b", 0, HOUR, gpus=1)]
    assert _summary(_policy(cards=8), jobs).wait.p99 == 0
    assert _summary(_policy(cards=8, whole_nodes=True), jobs).wait.p99 == pytest.approx(60.0)


def test_class_figures_over_a_hand_written_timeline():
    # inference: 4 cards, 1 held, work waiting for 2 h -> 6 idle GPU-hours; training never waits
    timeline = [
        (0, {"inference": (1000, 4000, True), "training": (0, 8000, False)}),
        (7200, {"inference": (4000, 4000, False), "training": (0, 8000, False)}),
    ]
    assert idle_while_waiting(timeline, 10_800) == {"inference": pytest.approx(6.0), "training": 0.0}
    assert allocation_while_waiting(timeline, 10_800) == pytest.approx(1000 / 12_000)
    assert allocation_while_waiting(timeline[1:], 10_800) == 0.0  # no work ever waited
