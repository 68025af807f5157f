"""The engine's admission shortcuts change no result: a replay with them gives the same events, job for job,
as one that sends every admission attempt through admission.Admission in full (`Engine(shortcuts=False)`).

The shortcuts (engine.py): a blocked job's verdict kept while nothing admission reads has changed, a verdict
of "waits" told without the whole flavor assignment (before the attempt, in a pass), a pass that surely
starts nothing told from its smallest sizes and skipped without ordering it, and a preemption search skipped
where no holder can be a candidate (HeldAdmission). The workloads below make all of them matter: queues in
a cohort tree that borrow and reclaim, preemption within a queue and across the tree, time-sliced pods
meeting busy devices with and without the startup check, and waitForPodsReady evicting jobs whose pods wait
for nodes.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import replace

import pytest
from simhelpers import TRACES, shared_trace
from support import fleet_repo

from gpupolicy.simulate import Engine
from gpupolicy.simulate.admission import Admission, Workload
from gpupolicy.simulate.busy import with_busy_devices
from gpupolicy.simulate.checkpoints import parse_intervals, with_checkpoints
from gpupolicy.simulate.engine import HeldAdmission, Holders
from gpupolicy.simulate.fair_preemption import FairPreemption
from gpupolicy.simulate.fairsharing import FairSharing, shares_for
from gpupolicy.simulate.jobs import Job
from gpupolicy.simulate.pending import PendingQueue, WaitingPods, dominates
from gpupolicy.simulate.policy import FlavorQuota, SimCohort, SimPolicy, SimPool, SimQueue, assign_queues
from gpupolicy.simulate.quota import QuotaTree
from gpupolicy.simulate.readiness import KUEUE_DEFAULT

G = 1000  # one GPU in milli


def _policy() -> SimPolicy:
    """fleet <- training (team-a, team-b: 16 cards each of 32, team-b lends at most 8) and fleet <- research
    (research: nothing of its own, borrows what the fleet lends); serving alone in production, on its own
    time-sliced pool and on one the others share, where the startup check is off."""
    pools = {
        "train": SimPool("train", 4, 8, "exclusive"),
        "shared": SimPool("shared", 2, 4, "time-sliced", replicas=4),
        "serve": SimPool("serve", 1, 4, "time-sliced", replicas=2),
    }
    train, shared, serve = (
        FlavorQuota("train", "train", 16 * G),
        FlavorQuota("shared", "shared", 8 * G),
        FlavorQuota("serve", "serve", 8 * G),
    )
    queues = {
        "team-a": SimQueue(
            "team-a",
            (train, shared),
            cohort="training",
            tier="training",
            within_queue="LowerPriority",
            reclaim="Any",
        ),
        "team-b": SimQueue(
            "team-b",
            (FlavorQuota("train", "train", 16 * G, lending_limit=8 * G), shared),
            cohort="training",
            tier="training",
            within_queue="LowerOrNewerEqualPriority",
            reclaim="LowerPriority",
            borrow_within="LowerPriority",
        ),
        "research": SimQueue(
            "research",
            (FlavorQuota("shared", "shared", 0), FlavorQuota("train", "train", 0)),
            cohort="research",
            tier="experiment",
            reclaim="LowerPriority",
        ),
        "serving": SimQueue(
            "serving",
            (serve, FlavorQuota("shared", "shared", 4 * G)),
            cohort="production",
            tier="production",
            workload="inference",
            within_queue="LowerPriority",
            reclaim="Any",
        ),
    }
    cohorts = {
        "fleet": SimCohort("fleet"),
        "training": SimCohort("training", "fleet"),
        "research": SimCohort("research", "fleet"),
        "production": SimCohort("production", "fleet"),
    }
    policy = SimPolicy(
        "proposed", pools, queues, cohorts=cohorts, placement="frag-aware", pods_ready=KUEUE_DEFAULT
    )
    return with_busy_devices(policy, {"serve": False})


def _jobs(count: int = 700, seed: int = 11) -> list[Job]:
    """A congested mix: whole-card training (some of several pods, some at batch priority), research on
    shared cards and on borrowed training cards, and fractional serving pods."""
    rng = random.Random(seed)
    jobs = []
    for i in range(count):
        submit = i * 90 + rng.randrange(90)
        kind = rng.random()
        if kind < 0.45:
            jobs.append(
                Job(
                    f"t{i}",
                    submit,
                    rng.randint(1800, 14400),
                    gpus=rng.choice([1, 2, 4, 8]),
                    pods=rng.choice([1, 1, 2]),
                    queue=rng.choice(["team-a", "team-b"]),
                    tier=rng.choice(["training", "training", "batch"]),
                    checkpoint=rng.choice([0, 1800]),
                )
            )
        elif kind < 0.7:
            jobs.append(
                Job(
                    f"r{i}",
                    submit,
                    rng.randint(600, 7200),
                    gpus=rng.choice([1, 2]),
                    share=rng.choice([0.0, 0.25, 0.5]),
                    queue="research",
                    tier="experiment",
                )
            )
        else:
            jobs.append(
                Job(
                    f"s{i}",
                    submit,
                    rng.randint(300, 3600),
                    share=rng.choice([0.25, 0.5, 0.75]),
                    queue="serving",
                    tier="production",
                    workload="inference",
                )
            )
    return jobs


def _replay(policy: SimPolicy, jobs: list[Job], shortcuts: bool) -> tuple[list[dict], Engine]:
    events: list[dict] = []
    engine = Engine(policy, jobs, assign_queues(jobs, policy), events=events, shortcuts=shortcuts)
    engine.run()
    return events, engine


def _assert_same_replay(policy: SimPolicy, jobs: list[Job], monkeypatch) -> Counter:
    skipped = _counted(monkeypatch, Engine, "_pass_surely_fails")
    trivial = _counted(monkeypatch, Holders, "any_preemptible", when=False)
    untried = _counted(monkeypatch, Engine, "_waits_untried")
    unordered = _counted(monkeypatch, Engine, "_pass_done", when=None)
    fast, engine = _replay(policy, jobs, shortcuts=True)
    reference, _ = _replay(policy, jobs, shortcuts=False)
    assert len(fast) == len(reference)
    for ours, theirs in zip(fast, reference, strict=True):
        assert ours == theirs  # the first event that differs, if any
    assert engine.verdicts, "no admission attempt went through the shortcuts"
    if policy.fair_sharing is None:  # with fair sharing, passes go in cycles (Engine._schedule_fairly)
        assert skipped[True], "no pass was skipped: the minimal sizes' probe went untested"
        assert untried[True], "no attempt was told from its quota alone: _waits_untried went untested"
        assert unordered[True], "no cycle ended without ordering its idle queues: _next_queue went untested"
    assert trivial[True], "no bound was told from the priorities held alone"
    return Counter(event["event"] for event in fast)


def _counted(monkeypatch, owner: type, name: str, when: bool = True) -> Counter:
    """Count the answers of `owner.name` that equal `when`, under key True (the replay's own answers kept)."""
    answers: Counter = Counter()
    original = getattr(owner, name)

    def counting(*args):
        answer = original(*args)
        answers[answer == when] += 1
        return answer

    monkeypatch.setattr(owner, name, counting)
    return answers


def test_the_shortcuts_give_the_same_events_as_full_admission(monkeypatch):
    kinds = _assert_same_replay(_policy(), _jobs(), monkeypatch)
    # the workload exercises what the shortcuts must stay sound under
    assert kinds["preempted"] > 0
    assert kinds["evicted"] > 0  # waitForPodsReady
    assert kinds["failed_at_start"] > 0  # busy devices where the startup check is off
    assert kinds["finished"] > 0


def test_the_shortcuts_give_the_same_events_with_fair_sharing(monkeypatch):
    """With fair sharing on, a verdict reads every quota key's usage (the shares), the scheduling goes in
    cycles ordered by the tournament, and the preemption bound is fair_preemption's: still the same events."""
    kinds = _assert_same_replay(replace(_policy(), fair_sharing=FairSharing()), _jobs(), monkeypatch)
    assert kinds["preempted"] > 0 and kinds["finished"] > 0


def test_the_shortcuts_give_the_same_events_on_the_mixed_workload(monkeypatch):
    """A day of the mixed workload on prod-us of the tests' own fleet (decision 0085: the same on a fork that
    replaced the reference fleet), with busy devices (as `simulate --busy-devices` and `recommend
    --busy-devices` replay it)."""
    from gpupolicy.pipeline import load_fleet
    from gpupolicy.simulate import mixed
    from gpupolicy.simulate.busy import startup_checks
    from gpupolicy.simulate.policy import from_cluster

    shared_trace(*mixed.ITP_TRACE)
    shared_trace(*mixed.OPENB_TRACE)
    repo = fleet_repo()
    cluster = load_fleet(repo, ["prod-us"]).clusters["prod-us"]
    itp, openb = mixed.read_sources(TRACES)
    # --scale 3:5: congested enough on this fleet that a day holds preemptions and PodsReady evictions
    workload = mixed.build(itp, openb, 3, 5, 1, teams=mixed.teams_of(cluster), cluster=cluster, seed=0)
    jobs = with_checkpoints(workload.jobs, parse_intervals(""))
    policy = with_busy_devices(from_cluster(cluster), startup_checks(repo, cluster))
    kinds = _assert_same_replay(policy, jobs, monkeypatch)
    assert kinds["preempted"] > 0 and kinds["evicted"] > 0


def test_a_pass_is_probed_with_the_least_amount_each_key_is_asked(monkeypatch):
    """Two jobs wait whose sizes dominate neither (eight one-card pods; one six-card pod): one quota key, two
    amounts. When a finish leaves 7 cards of quota, the larger amount is refused and the smaller is not, so
    the pass must run and admit the six-card job: the probe asks with the least amount (Engine._probe_asks),
    and the replay matches full admission event for event."""
    policy = SimPolicy(
        "proposed",
        {"p": SimPool("p", 2, 8, "exclusive")},
        {"q": SimQueue("q", (FlavorQuota("p", "p", 16 * G),), tier="training")},
    )
    jobs = [
        Job("held", 0, 1000, gpus=3, pods=3, queue="q", tier="training"),
        Job("leaves", 0, 50, gpus=4, queue="q", tier="training"),
        Job("eight-pods", 1, 100, gpus=1, pods=8, queue="q", tier="training"),
        Job("six-cards", 2, 100, gpus=6, queue="q", tier="training"),
    ]
    kinds = Counter()
    for shortcuts in (True, False):
        events, _ = _replay(policy, jobs, shortcuts)
        kinds[shortcuts] = [(e["time"], e["event"], e["job"]) for e in events if e["event"] == "admitted"]
    assert kinds[True] == kinds[False]
    assert (50, "admitted", "six-cards") in kinds[True]


def _random_cohort(rng: random.Random) -> tuple[SimPolicy, list[Job]]:
    """Two to four queues in one cohort on a 24-card pool, each with a random nominal quota and random
    preemption settings, and a congested stream of whole-card jobs of every tier."""
    names = [f"q{i}" for i in range(rng.randint(2, 4))]
    queues = {
        name: SimQueue(
            name,
            (FlavorQuota("train", "train", rng.choice([0, 4, 8, 12]) * G),),
            cohort="c",
            within_queue=rng.choice(["Never", "LowerPriority", "LowerOrNewerEqualPriority"]),
            reclaim=rng.choice(["Never", "LowerPriority", "Any"]),
            borrow_within=rng.choice(["Never", "LowerPriority"]),
        )
        for name in names
    }
    policy = SimPolicy(
        "proposed", {"train": SimPool("train", 3, 8, "exclusive")}, queues, cohorts={"c": SimCohort("c")}
    )
    jobs = [
        Job(
            f"j{i}",
            i * 120 + rng.randrange(120),
            rng.randint(600, 7200),
            gpus=rng.choice([1, 2, 4, 8]),
            pods=rng.choice([1, 1, 2]),
            queue=rng.choice(names),
            tier=rng.choice(["production", "training", "batch", "experiment"]),
        )
        for i in range(150)
    ]
    return policy, jobs


@pytest.mark.parametrize("seed", range(30))
def test_the_shortcuts_give_the_same_events_on_random_cohorts(seed):
    """Random cohorts (`_random_cohort`): the order in which a cycle's passes go, and which of them are
    skipped as surely idle, must match full admission event for event whatever the queues' settings."""
    policy, jobs = _random_cohort(random.Random(seed))
    fast, _ = _replay(policy, jobs, shortcuts=True)
    reference, _ = _replay(policy, jobs, shortcuts=False)
    assert fast == reference


def test_a_replay_whose_queues_preempt_each_other_without_end_stops_with_an_error(monkeypatch):
    """One of the random cohorts (seed 57: q0 reclaims with Any, q1 borrows with borrowWithinCohort, both
    preempt newer equal-priority jobs of their own) evicts jobs back and forth for ever: the replay ran for
    minutes and grew past 3 GB. It stops at the engine's bound with a message naming the last preemption (the
    bound lowered here so the test is quick; the real one is 100 per job)."""
    from gpupolicy.errors import ToolError
    from gpupolicy.recommend import executors
    from gpupolicy.simulate import engine

    monkeypatch.setattr(engine, "PREEMPTIONS_PER_JOB", 10)
    policy, jobs = _random_cohort(random.Random(57))
    endless = r"after 11,50\d preemptions for 150 jobs .* the last: j\d+ of q\d by"
    with pytest.raises(ToolError, match=endless):
        Engine(policy, jobs, assign_queues(jobs, policy)).run()
    # recommend's replay of such a candidate hands back the message, to rank it last and search on
    stopped = executors.evaluate(policy, jobs, 1.0)
    assert isinstance(stopped, executors.Stopped) and re.search(endless, stopped.reason)


def _sorted_sweep(entries: dict, fits) -> list[int]:
    """The engine's former sweep: every waiting pod in order, a shape covered by a failure skipped (equal
    shapes stand for 'at least as large' here)."""
    tried, failed = [], set()
    for entry in sorted(entries):
        shape = entries[entry]
        if shape in failed:
            continue
        tried.append(entry[-1])
        if not fits(shape):
            failed.add(shape)
    return tried


@pytest.mark.parametrize("seed", range(50))
def test_a_sweep_of_pods_grouped_by_shape_tries_what_the_sorted_scan_tries(seed):
    rng = random.Random(seed)
    waiting, entries = WaitingPods(), {}
    for index in range(rng.randrange(1, 40)):
        entry = (-rng.choice((100, 1000)), rng.randrange(30), index)
        shape = rng.choice("abcd")
        entries[entry] = shape
        waiting.add(entry, shape)
    for index in rng.sample(range(len(entries)), len(entries) // 4):  # some left by other means
        waiting.discard(index)
        del entries[next(e for e in entries if e[-1] == index)]
    room = rng.randrange(0, 12)
    sizes = {"a": 1, "b": 2, "c": 3, "d": 5}

    def fits_in(left: list[int]):
        def fits(shape) -> bool:
            if sizes[shape] <= left[0]:
                left[0] -= sizes[shape]
                return True
            return False

        return fits

    expected = _sorted_sweep(entries, fits_in([room]))
    tried, placed, fits, sweep = [], [], fits_in([room]), waiting.sweep()
    while (step := sweep.next()) is not None:
        entry, shape = step
        tried.append(entry[-1])
        if fits(shape):
            sweep.placed(entry, shape)
            placed.append(entry[-1])
        # else the shape is ruled out for the rest of the sweep: its group is dropped
    assert tried == expected
    assert len(waiting) == len(entries) - len(placed)


def test_a_queue_keeps_its_head_and_minimal_sizes_through_adds_and_removals():
    """PendingQueue.head, kept between changes, is always the first entry of all its groups; minimal_sizes,
    kept while no group comes or goes, are the pending sizes that dominate no other, and every pending size
    dominates one of them (MIG instances and flavors must match)."""
    rng = random.Random(5)
    queue, held = PendingQueue(), []
    for step in range(2000):
        if held and rng.random() < 0.45:
            entry, size = held.pop(rng.randrange(len(held)))
            queue.remove(entry, size)
        else:
            entry = (-rng.choice((100, 1000)), rng.randrange(500), step, step)
            per_pod, count = rng.choice((250, 1000)), rng.choice((1, 2, 8))
            shared = rng.choice(((), (("shared", count),)))
            charges = (("train", per_pod * count), *shared)
            size = (per_pod * count, per_pod, (rng.choice(("1g", "3g")),), charges)
            queue.add(entry, size)
            held.append((entry, size))
        assert queue.head() == min((entry for entry, _ in held), default=None)
        sizes = {size for _, size in held}
        least = set(queue.minimal_sizes())
        assert least == {s for s in sizes if not any(o != s and dominates(s, o) for o in sizes)}
        assert all(any(dominates(s, m) for m in least) for s in sizes)


def _flat_policy() -> SimPolicy:
    """One cohort of queues alone (HeldAdmission's short path): each with its own mix of reclaim,
    borrowWithinCohort (with and without a threshold) and withinClusterQueue policies."""
    pool = {"train": SimPool("train", 4, 8, "exclusive")}

    def queue(name: str, nominal: int, **preemption) -> SimQueue:
        return SimQueue(name, (FlavorQuota("train", "train", nominal * G),), cohort="training", **preemption)

    queues = {
        "team-a": queue(
            "team-a",
            12,
            within_queue="LowerPriority",
            reclaim="Any",
            borrow_within="LowerPriority",
            borrow_threshold=100,
        ),
        "team-b": queue("team-b", 12, within_queue="LowerOrNewerEqualPriority", reclaim="LowerPriority"),
        "research": queue("research", 8, reclaim="Any", borrow_within="LowerPriority"),
    }
    return SimPolicy("proposed", pool, queues, cohorts={"training": SimCohort("training")})


def _random_holders(rng: random.Random, policy: SimPolicy, tree, count: int) -> list[Workload]:
    """Workloads holding quota on the `train` key at random, charged to the tree as the engine would."""
    holders = []
    for index in range(count):
        queue = rng.choice(["team-a", "team-b", "research"])
        total = rng.choice([1, 2, 4, 8]) * G
        if tree.fits(queue, "train", total):
            tree.use(queue, "train", total)
            holders.append(
                Workload(
                    index, queue, "train", total, rng.choice([0, 100, 1000]), index, index, rng.random() < 0.1
                )
            )
    return holders


def _random_state(rng: random.Random, policy: SimPolicy, fair: bool):
    """A fresh quota tree with random holders (`_random_holders`), and fair sharing's preemption over them
    when `fair`."""
    tree = QuotaTree(policy.queues, policy.cohorts)
    holders = Holders(tree.versions)
    for workload in _random_holders(rng, policy, tree, rng.randint(2, 12)):
        holders.put(workload)
    preemption = FairPreemption(FairSharing(), shares_for(policy, tree), holders.workloads) if fair else None
    return tree, holders, preemption


def _usage(tree) -> list[int]:
    return [node.usage for node in tree.nodes()]


@pytest.mark.parametrize("fair", [False, True], ids=["classical", "fair sharing"])
@pytest.mark.parametrize("make_policy", [_policy, _flat_policy], ids=["cohort tree", "one cohort"])
def test_a_preemption_search_is_skipped_only_where_it_surely_fails(make_policy, fair):
    """HeldAdmission skips a search where evicting every candidate could not make room, remembers what it
    found per quota key until the key's tree or holders change, and leaves the tree as it was: on random
    states of a cohort tree, it agrees with admission.Admission's full search every time, and it does skip
    searches that have candidates (the bound is not the bare "no candidate" test)."""
    policy = make_policy()
    rng = random.Random(5)
    skipped_with_candidates = found = 0
    for _ in range(300):
        tree, holders, preemption = _random_state(rng, policy, fair)
        full = Admission(tree, policy.queues, holders.workloads, preemption)
        held = HeldAdmission(tree, policy.queues, holders, preemption)
        queue = policy.queues[rng.choice(["team-a", "team-b", "research"])]
        incoming = Workload(
            999, queue.name, "train", rng.choice([1, 2, 4, 8, 16]) * G, rng.choice([0, 100, 1000]), 999
        )
        before = _usage(tree)
        expected = full.targets(queue, incoming)
        enough = held.may_preempt_enough(queue, "train", incoming.total, incoming.priority)
        assert _usage(tree) == before
        assert enough or expected is None  # never skips a search that would succeed
        assert held.targets(queue, incoming) == expected
        assert held.targets(queue, incoming) == expected  # remembered: the same answer
        candidates = sum(
            holders.freeable(name, "train", queue.reclaim, incoming.priority)
            for name in ("team-a", "team-b", "research")
            if name != queue.name
        )
        skipped_with_candidates += not enough and candidates > 0
        found += expected is not None
    assert found > 20 and skipped_with_candidates > 20


@pytest.mark.parametrize("fair", [False, True], ids=["classical", "fair sharing"])
@pytest.mark.parametrize("make_policy", [_policy, _flat_policy], ids=["cohort tree", "one cohort"])
def test_may_admit_never_admits_an_amount_where_it_refuses_a_smaller_one(make_policy, fair):
    """A pass's probe asks each quota key only for the least amount its queue's smallest jobs charge there
    (Engine._probe_asks): sound only if HeldAdmission.may_admit, on any state, refuses every larger amount
    wherever it refuses a smaller one. Checked on random states of both trees, with the answers worked out
    afresh for each amount, and the refusals that matter (a small amount admitted, a larger one not) seen."""
    policy = make_policy()
    rng = random.Random(11)
    amounts = [size * G for size in (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)]
    turned = 0
    for _ in range(300):
        tree, holders, preemption = _random_state(rng, policy, fair)
        queue = policy.queues[rng.choice(["team-a", "team-b", "research"])]
        priority = rng.choice([0, 100, 1000])
        leaf = tree.leaves[(queue.name, "train")]
        answers = [
            HeldAdmission(tree, policy.queues, holders, preemption).may_admit(
                queue, "train", total, priority, leaf
            )
            for total in amounts
        ]
        assert answers == sorted(answers, reverse=True), (queue.name, priority, answers)
        turned += any(answers) and not all(answers)
    assert turned > 20


def test_a_tentative_change_of_usage_leaves_the_versions_alone():
    """A search takes candidates out and puts them back (QuotaTree.shift): the verdicts stamped with the
    tree's versions stay true, so shift must not count a version, and use must."""
    tree = QuotaTree(_policy().queues, _policy().cohorts)
    tree.use("team-a", "train", 4 * G)
    version = tree.versions["train"]
    tree.shift("team-a", "train", -4 * G)
    tree.shift("team-a", "train", 4 * G)
    assert tree.versions["train"] == version
    assert tree.leaves[("team-a", "train")].usage == 4 * G
