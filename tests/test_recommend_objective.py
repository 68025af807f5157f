"""recommend's objective (lexicographic), the never-worse guarantee, and the lending knob, on a hand-made
cluster and trace (model types only) and, for the edit and the command, on the tests' own fleet."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest
from support import fleet_repo

from gpupolicy.model import (
    Cluster,
    ClusterFacts,
    ClusterQueue,
    Flavor,
    FlavorQuotas,
    K8sObject,
    Pool,
    ResourceGroup,
    ResourceQuota,
    WorkloadPriorityClass,
)
from gpupolicy.recommend import edits, executors, lending, objective, space, targets
from gpupolicy.recommend.search import Candidate, never_worse, ranked, search, simplify, worth_checking
from gpupolicy.simulate.metrics import Summary, WaitStats
from gpupolicy.simulate.traces import read_trace

GPU = "nvidia.com/gpu"
SERVING = targets.parse("serving:p95<15m")


def _summary(
    idle: float = 0.0,
    production: float = 0.0,
    batch: float = 0.0,
    lost: float = 0.0,
    never: int = 0,
    useful: float = 0.5,
) -> Summary:
    tiers = {
        "production": WaitStats(10, 0, production, production, 0),
        "batch": WaitStats(10, 0, batch, batch, 0),
    }
    every = WaitStats(20, 0, max(production, batch), 0, 0)
    return Summary(
        "p",
        20,
        20 - never,
        never,
        0.5,
        100.0,
        10.0,
        every,
        wait_by_tier=tiers,
        lost_to_preemption_gpu_hours=lost,
        window_useful=useful,
        idle_while_waiting_gpu_hours={"training": idle},
    )


def _key(summary: Summary, serving: float = 0.0) -> tuple:
    return objective.key(summary, {str(SERVING[0]): serving}, SERVING)


def test_the_objective_counts_in_order():
    # targets met first: meeting serving's bound beats any amount of idle time
    assert objective.better(_key(_summary(idle=5000), serving=10), _key(_summary(idle=0), serving=30))
    # then jobs never placed, then idle GPU-hours while same-class work waits
    assert objective.better(_key(_summary(idle=900)), _key(_summary(idle=0, never=1)))
    assert objective.better(_key(_summary(idle=100, production=500)), _key(_summary(idle=200, production=0)))
    # then the production tier's p95 before any other tier's, then preemption loss, utilization last
    assert objective.better(_key(_summary(production=30, batch=900)), _key(_summary(production=60, batch=0)))
    assert objective.better(_key(_summary(batch=30, lost=500)), _key(_summary(batch=60, lost=0)))
    assert objective.better(_key(_summary(lost=10, useful=0.1)), _key(_summary(lost=20, useful=0.9)))
    assert objective.better(_key(_summary(useful=0.9)), _key(_summary(useful=0.1)))
    # before all of them: a candidate that turns a pool over to the other class of work (its idle figure would
    # stop counting that class's wait there) ranks after every candidate that keeps the classes
    assert objective.better(
        objective.key(_summary(idle=9000), {}, []),
        objective.key(_summary(idle=0), {}, [], keeps_classes=False),
    )


def test_replay_noise_ties_and_the_next_count_decides():
    assert objective.coarse(94.0) == objective.coarse(94.4) and objective.coarse(94) != objective.coarse(96)
    assert objective.coarse(0.4) == 0.0 and objective.coarse(12_340) == 12_000
    # 9,410 against 9,450 idle GPU-hours is noise: the production p95 decides
    assert objective.better(
        _key(_summary(idle=9450, production=20)), _key(_summary(idle=9410, production=90))
    )
    assert not objective.better(_key(_summary(idle=9450)), _key(_summary(idle=9410)))  # a whole tie


def _candidate(number: int, summary: Summary | None) -> Candidate:
    if summary is None:
        return Candidate(number, {}, pruned=True)
    return Candidate(number, {"k": number}, summary=summary, objective=_key(summary))


def test_the_repository_wins_ties_and_nothing_worse_is_offered():
    repository = _candidate(0, _summary(idle=300, production=20))
    tie, worse, better = (
        _candidate(1, _summary(idle=301, production=20)),
        _candidate(2, _summary(idle=900, production=20)),
        _candidate(3, _summary(idle=100, production=10)),
    )
    pruned = _candidate(4, None)
    assert [c.number for c in ranked([worse, tie, pruned, better, repository])] == [3, 0, 1, 2, 4]
    # nothing strictly better: keep the repository's policy
    assert [c.number for c in worth_checking([worse, tie, repository, pruned], 5)] == [0]
    assert [c.number for c in worth_checking([worse, better, repository], 5)] == [3, 0]
    assert [c.number for c in worth_checking([worse, better, repository], 0)] == [0]
    assert never_worse(tie, repository) is repository and never_worse(better, repository) is better


def test_a_candidate_worse_on_a_headline_figure_is_not_offered():
    # better on the objective (less idle time) but lower useful utilization, or a longer production p95, or
    # a busy-start failure: the brief's table would show it worse than today's policy on that line
    repository = _candidate(0, _summary(idle=300, useful=0.772, production=10))
    lower_util = _candidate(1, _summary(idle=100, useful=0.771, production=10))
    slower = _candidate(2, _summary(idle=100, useful=0.772, production=12))
    crashes = _candidate(
        3, dataclasses.replace(_summary(idle=100, useful=0.772, production=10), busy_starts=1)
    )
    level = _candidate(4, _summary(idle=100, useful=0.7724, production=10.4))  # ties at the table's precision
    faster = _candidate(5, _summary(idle=200, useful=0.7724, production=5))
    found = [lower_util, slower, crashes, level, faster, repository]
    assert [c.number for c in worth_checking(found, 5)] == [5, 0]
    assert all(never_worse(c, repository) is repository for c in (lower_util, slower, crashes, level))
    # level keeps every headline figure but improves none: the table would show no gain to review
    assert objective.keeps_headlines(level.summary, repository.summary)
    assert not objective.improves_headlines(level.summary, repository.summary)


# A hand-made cluster: an exclusive training pool (8 cards) and an exclusive inference pool (8 cards), both
# lent within one cohort; the inference queue is production (not searched) and reclaims LowerPriority work.


def _obj(kind: str, name: str, spec: dict | None = None) -> K8sObject:
    body = {"metadata": {"name": name}, "spec": spec or {}}
    return K8sObject("kueue.x-k8s.io/v1beta2", kind, name, "", body)


def _queue(name: str, tier: str, workload: str, flavor: str) -> ClusterQueue:
    group = ResourceGroup((GPU,), (FlavorQuotas(flavor, (ResourceQuota(GPU, 8, 0),)),))
    preemption = {"reclaimWithinCohort": "LowerPriority", "withinClusterQueue": "Never"}
    return ClusterQueue(
        name=name,
        cohort="shared",
        namespace_selector={},
        resource_groups=(group,),
        preemption=preemption,
        team=name,
        tier=tier,
        workload=workload,
        labels={},
        obj=_obj("ClusterQueue", name, {"queueingStrategy": "BestEffortFIFO"}),
    )


def lending_cluster() -> Cluster:
    facts = ClusterFacts(
        "lend-test", "clusters/lend-test/cluster.yaml", "test", "eu", ("zone-a",), "1.33", "v26.3.0", "flux"
    )
    pools = [
        Pool(
            name=name,
            path=f"pools/{name}/pool.yaml",
            gpu_model="H100-80GB",
            gpus_per_node=8,
            zones={"zone-a": 1},
            access_mode="exclusive",
            node_labels={"gpupolicy.io/pool": name},
            capacity={GPU: 8},
        )
        for name in ("infer", "train")
    ]
    flavors = {
        p.name: Flavor(p.name, {"gpupolicy.io/pool": p.name}, (), (), _obj("ResourceFlavor", p.name))
        for p in pools
    }
    queues = [
        _queue("serve", "production", "inference", "infer"),
        _queue("trainer", "training", "training", "train"),
    ]
    priorities = {
        t: WorkloadPriorityClass(t, v, t, _obj("WorkloadPriorityClass", t))
        for t, v in (("production", 100000), ("training", 10000))
    }
    return Cluster(
        facts=facts,
        pools=pools,
        flavors=flavors,
        cluster_queues={q.name: q for q in queues},
        workload_priority_classes=priorities,
    )


@pytest.fixture()
def lending_jobs(tmp_path):
    """Two eight-card training jobs at once (one waits while the inference pool is idle), then an inference
    job that needs its own pool back."""
    rows = [
        "job_id,submit,duration,gpus,share,mig,pods,team,queue,tier,workload,checkpoint",
        "t1,0,36000,8,,,1,trainer,trainer,training,training,3600",
        "t2,60,36000,8,,,1,trainer,trainer,training,training,3600",
        "s1,18000,3600,8,,,1,serve,serve,production,inference,",
    ]
    trace = tmp_path / "lend.csv"
    trace.write_text("\n".join(rows) + "\n")
    return sorted(read_trace(trace, "csv").jobs, key=lambda j: (j.submit, j.id))


def test_a_training_queue_may_borrow_the_inference_pool():
    cluster = lending_cluster()
    knob_list = space.knobs(cluster)
    [knob] = [k for k in knob_list if k.grid]
    assert (knob.name, knob.current, knob.grid) == (f"trainer/infer/{GPU}/borrow", 0, (0, 2, 4, 8))
    changed = space.with_params(cluster, knob_list, {knob.name: 8}).cluster_queues["trainer"]
    [group] = changed.resource_groups
    # the lender's flavor goes last: Kueue tries the queue's own cards first
    assert [fq.flavor for fq in group.flavors] == ["train", "infer"]
    assert group.flavors[1].resources == (ResourceQuota(GPU, 0, 8),)
    assert cluster.cluster_queues["serve"].preemption["reclaimWithinCohort"] == "LowerPriority"  # as declared


def test_lending_shortens_the_training_wait_and_the_lender_reclaims(lending_jobs):
    cluster = lending_cluster()
    knob_list = space.knobs(cluster)
    run = executors.Serial(lending_jobs).map
    name = f"trainer/infer/{GPU}/borrow"
    today, lent = run(
        [
            (space.candidate_policy(cluster, knob_list, {}), 1.0),
            (space.candidate_policy(cluster, knob_list, {name: 8}), 1.0),
        ]
    )
    # today the second training job waits 10 hours while the inference pool sits idle (idle-while-waiting
    # counts a class's own pools only, so the wait is where this shows)
    assert today.wait_by_tier["training"].p95 == pytest.approx(599.0) and today.preemptions == 0
    assert lent.wait_by_tier["training"].p95 == 0.0
    # serving took its cards back from the borrowed training job, after the termination grace only
    assert lent.preemptions == 1 and lent.wait_by_tier["production"].p95 < objective.FLOOR
    assert objective.better(objective.key(lent, {}, []), objective.key(today, {}, []))
    # the search over the lending knob alone (its grid: 4 values) finds it and keeps it when simplified
    lend_only = [k for k in knob_list if k.name == name]
    found = search(cluster, lend_only, [], trials=8, seed=0, batch=8, run=run)
    best = worth_checking(found, 5)[0]
    assert best.number != 0 and best.params[name] > 0
    assert simplify(cluster, lend_only, [], best, run).params[name] == best.params[name]


def test_a_worse_candidate_is_never_returned(lending_jobs):
    """Every candidate's replay is made worse than the repository's (its idle figure inflated): the search and
    the walk down the ranking offer the repository's policy alone."""
    cluster = lending_cluster()
    knob_list = space.knobs(cluster)
    repository = space.candidate_policy(cluster, knob_list, {})
    serial = executors.Serial(lending_jobs)

    def run(tasks):
        summaries = serial.map(tasks)
        return [
            s
            if policy == repository
            else dataclasses.replace(
                s, idle_while_waiting_gpu_hours={"training": objective.idle_while_waiting(s) + 1000}
            )
            for (policy, _), s in zip(tasks, summaries, strict=True)
        ]

    found = search(cluster, knob_list, [], trials=4, seed=0, batch=4, run=run)
    assert any(c.number and c.summary for c in found)  # other candidates were replayed whole
    assert ranked(found)[0].number == 0
    assert [c.number for c in worth_checking(found, 5)] == [0]


def test_lending_edit_lists_the_flavor_and_validate_stays_clean(tmp_path):
    from gpupolicy.pipeline import load_fleet

    root = edits.copy_repository(fleet_repo(), tmp_path)
    cluster = load_fleet(root, ["prod-us"]).clusters["prod-us"]
    knob_list = space.knobs(cluster)
    lendable = [k for k in knob_list if k.grid]
    assert lendable, "the tests' fleet has a queue that may borrow another class's exclusive pool"
    knob = lendable[0]
    assert lending.holds_nothing(cluster.cluster_queues[knob.queue], knob.flavor) is not None
    texts, errors = edits.edited_files(
        root, "prod-us", knob_list, {knob.name: knob.grid[-1]}, edits.repository_errors(root)
    )
    assert errors == []  # every rule run on the edited copy: validate stays clean
    edits.apply_to_repository(root, texts)
    edited = load_fleet(root, ["prod-us"]).clusters["prod-us"].cluster_queues[knob.queue]
    entries = [fq for g in edited.resource_groups for fq in g.flavors if fq.flavor == knob.flavor]
    [gpu] = [q for fq in entries for q in fq.resources if q.name == GPU]
    assert (gpu.nominal, gpu.borrowing_limit) == (0, knob.grid[-1])


def test_the_command_never_recommends_worse_than_the_repository(tmp_path):
    root = edits.copy_repository(fleet_repo(), tmp_path)
    trace = root / "tools/gpupolicy/data/traces/synthetic-week.csv"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpupolicy",
            "recommend",
            "--repo",
            str(root),
            "--cluster",
            "prod-us",
            "--trace",
            str(trace),
            "--limit",
            "150",
            "--trials",
            "4",
            "--batch",
            "2",
            "--jobs",
            "1",
            "--check",
            "2",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    repository = next(c for c in report["candidates"] if c["trial"] == 0)
    chosen = report["recommended"]
    assert chosen["objective"] <= repository["objective"]
    assert chosen["trial"] == 0 or chosen["objective"] < repository["objective"]
    assert (chosen["trial"] == 0) == (report["changes"] == [])
