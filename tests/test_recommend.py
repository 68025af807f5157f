"""`gpupolicy recommend`: targets, the search's reproducibility across executors, edits that keep validate
clean."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import random
import re
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from support import cli_on, fleet_repo

from gpupolicy import docsgen
from gpupolicy.domain import quotas
from gpupolicy.errors import ToolError
from gpupolicy.pipeline import load_fleet
from gpupolicy.recommend import cpu_share, edits, executors, objective, space, targets
from gpupolicy.recommend.search import search, simplify
from gpupolicy.simulate.traces import read_trace

# The tests' own rich fleet (tests/fixtures/fleet), not whatever fleet this repository holds (decision 0085).
REPO = fleet_repo()
TRACE = REPO / "tools/gpupolicy/data/traces/synthetic-week.csv"
LIMIT = 150  # a tiny workload keeps each test fast


@pytest.fixture(scope="module")
def cluster():
    return load_fleet(REPO, ["prod-us"]).clusters["prod-us"]


@pytest.fixture(scope="module")
def jobs():
    return sorted(read_trace(TRACE, "csv").jobs, key=lambda j: (j.submit, j.id))[:LIMIT]


def test_targets_parse_units_and_refuse_garbage():
    parsed = targets.parse("serving:p95<15m, training:p50<2h,x:p99<30s")
    assert [(t.key, t.percentile, t.minutes) for t in parsed] == [
        ("serving", "p95", 15),
        ("training", "p50", 120),
        ("x", "p99", 0.5),
    ]
    with pytest.raises(ToolError, match="expected KEY"):
        targets.parse("serving:p90<15m")


def test_knobs_leave_production_alone_and_start_at_the_repository(cluster):
    knob_list = space.knobs(cluster)
    assert knob_list and not any(k.queue == "serving" for k in knob_list)
    research = {k.name: k for k in knob_list}["research/us-h100-train/nvidia.com/gpu/borrow"]
    # the search starts at the fleet's own limit and may go up to the pool's cards (read, not copied)
    groups = cluster.cluster_queues["research"].resource_groups
    limit = next(
        q.borrowing_limit
        for g in groups
        for f in g.flavors
        if f.flavor == "us-h100-train"
        for q in f.resources
        if q.name == "nvidia.com/gpu"
    )
    cards = next(p.gpus for p in cluster.pools if p.name == "us-h100-train")
    assert research.current == limit and research.high == cards


def test_cohort_moves_are_searched_where_cohorts_are_flat(cluster):
    flat = dataclasses.replace(
        cluster, cohorts={name: dataclasses.replace(c, parent="") for name, c in cluster.cohorts.items()}
    )
    assert not any(c.parent for c in flat.cohorts.values())
    moves = {k.name: k for k in space.knobs(flat) if k.kind == space.COHORT}
    assert moves["research/cohort"].choices == ("research", "training")


def test_cohort_moves_are_searched_in_a_cohort_tree(cluster):
    # the fleet's cohorts form a tree (fleet -> production, training, research); the engine lends through it
    assert {c.parent for c in cluster.cohorts.values() if c.parent} == {"fleet"}
    moves = {k.name: k for k in space.knobs(cluster) if k.kind == space.COHORT}
    assert moves["research/cohort"].choices == ("research", "training")
    assert moves["research/cohort"].current == "research" and "serving/cohort" not in moves
    moved = space.candidate_policy(cluster, list(moves.values()), {"research/cohort": "training"})
    assert moved.queues["research"].cohort == "training" and moved.cohorts["training"].parent == "fleet"


def test_apportion_fits_whole_units_into_the_room():
    assert space.apportion({"a": 10, "b": 20}, 40) == {"a": 10, "b": 20}  # fits: left as asked
    # 6.67 and 13.33: the larger remainder
    assert space.apportion({"a": 10, "b": 20}, 20) == {"a": 7, "b": 13}
    assert space.apportion({"b": 1, "a": 1}, 1) == {"a": 1, "b": 0}  # a tie goes by name
    assert space.apportion({"a": 5}, 0) == {"a": 0}


def _over_capacity(cluster) -> list[str]:
    """CAP001's sum: the pools where the nominal quota given out exceeds what the pool exposes."""
    return [
        f"{pool} {resource}"
        for (pool, resource), entries in quotas.nominal_per_pool(cluster).items()
        if sum(e.quota.nominal for e in entries)
        > quotas.pool_of(cluster, entries[0].flavor).capacity[resource]
    ]


def test_nominal_knobs_keep_every_pool_within_capacity(cluster):
    knob_list = space.knobs(cluster)
    nominal = {k.name: k for k in knob_list if k.kind == space.NOMINAL}
    assert not any(k.queue == "serving" for k in nominal.values())  # production's reserve is not searched
    assert nominal["research/us-l40s-shared/nvidia.com/gpu/nominal"].high == 48  # 64 less serving's 16
    assert nominal["nlp/us-h100-train/nvidia.com/gpu/nominal"].high == 64
    rng = random.Random(3)
    for _ in range(50):
        params = {k.name: rng.randint(k.low, k.high) for k in knob_list if not k.choices}  # integer knobs
        values = space.resolved(knob_list, params)
        candidate = space.with_params(cluster, knob_list, params)
        assert _over_capacity(candidate) == []
        for knob in knob_list:
            if knob.kind == space.LEND:
                assert values[knob.name] <= values[f"{knob.queue}/{knob.flavor}/{knob.resource}/nominal"]
    both = space.resolved(
        knob_list,
        {"nlp/us-h100-train/nvidia.com/gpu/nominal": 64, "vision/us-h100-train/nvidia.com/gpu/nominal": 64},
    )
    assert (
        both["nlp/us-h100-train/nvidia.com/gpu/nominal"],
        both["vision/us-h100-train/nvidia.com/gpu/nominal"],
        both["research/us-h100-train/nvidia.com/gpu/nominal"],
    ) == (32, 32, 0)
    # trial 0: the repository's policy
    assert space.resolved(knob_list, {}) == space.current_values(knob_list)


def test_replica_knobs_rescale_the_pool_and_its_quotas(cluster):
    knob_list = space.knobs(cluster)
    [knob] = [k for k in knob_list if k.kind == space.REPLICAS and k.pool == "us-l40s-shared"]
    # 1: exclusive
    assert (knob.name, knob.current, knob.low, knob.high) == ("us-l40s-shared/replicas", 4, 1, 8)
    changed = space.with_params(
        cluster, knob_list, {knob.name: 6, "research/us-l40s-shared/nvidia.com/gpu/nominal": 45}
    )
    pool = next(p for p in changed.pools if p.name == "us-l40s-shared")
    assert pool.time_slicing_replicas == 6 and pool.capacity["nvidia.com/gpu"] == 96
    shared = {
        q.name: q
        for g in changed.cluster_queues["research"].resource_groups
        for f in g.flavors
        if f.flavor == "us-l40s-shared"
        for q in f.resources
    }
    # 45 x 1.5
    assert (shared["nvidia.com/gpu"].nominal, shared["nvidia.com/gpu"].borrowing_limit) == (67, 24)
    assert "cpu" not in shared  # cpu and memory are the cpu flavor's, in a group of their own (decision 0069)
    cpu_before, cpu_after = (
        {
            q.name: q.nominal
            for g in c.cluster_queues["research"].resource_groups
            for f in g.flavors
            if f.flavor == "cpu"
            for q in f.resources
        }
        for c in (cluster, changed)
    )
    assert cpu_after == cpu_before and cpu_after["cpu"] > 0  # the same cards need the same cpu
    serving = {
        q.name: q
        for g in changed.cluster_queues["serving"].resource_groups
        for f in g.flavors
        if f.flavor == "us-l40s-shared"
        for q in f.resources
    }
    assert serving["nvidia.com/gpu"].nominal == 24  # production's reserve: the same 4 cards, in the new unit
    assert _over_capacity(changed) == []
    policy = space.candidate_policy(cluster, knob_list, {knob.name: 6})
    assert policy.pools["us-l40s-shared"].replicas == 6  # the simulator sees the finer share


def _search(cluster, jobs, run):
    wanted = targets.parse("serving:p95<15m,training:p50<2h")
    return search(cluster, space.knobs(cluster), wanted, trials=6, seed=7, batch=3, run=run)


def _fingerprint(candidates):
    return [
        (c.number, c.pruned, c.params, c.summary and (c.summary.useful, c.summary.wait.p95))
        for c in candidates
    ]


def test_same_seed_same_candidates_serial_and_process_pool(cluster, jobs):
    """The pool starts a survivor's whole replay while the batch's other partial replays run (chain); one
    batch after the other (a plain map function) and the serial executor give the same candidates."""
    serial = _fingerprint(_search(cluster, jobs, executors.Serial(jobs)))
    assert _fingerprint(_search(cluster, jobs, executors.Serial(jobs).map)) == serial
    pool = executors.ProcessPool(jobs, 2)
    try:
        assert _fingerprint(_search(cluster, jobs, pool)) == serial
    finally:
        pool.close()
    assert any(c[2] != serial[0][2] for c in serial)  # the search did move away from the repository's values


def test_ray_gives_the_same_numbers(cluster, jobs):
    ray = pytest.importorskip("ray")
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        on_ray = executors.RayCluster(jobs, "local")
        assert _fingerprint(_search(cluster, jobs, on_ray)) == _fingerprint(
            _search(cluster, jobs, executors.Serial(jobs))
        )
    finally:
        ray.shutdown()


def test_simplify_keeps_only_changes_that_help(cluster, jobs):
    knob_list = space.knobs(cluster)
    wanted = targets.parse("training:p50<2h")
    run = executors.Serial(jobs).map
    best = next(c for c in search(cluster, knob_list, wanted, trials=6, seed=7, batch=3, run=run) if c.number)
    smaller = simplify(cluster, knob_list, wanted, best, run)
    kept = space.changes(knob_list, smaller.params)
    assert set(kept) <= set(space.changes(knob_list, best.params))
    assert smaller.reverted == len(space.changes(knob_list, best.params)) - len(kept)
    assert smaller.objective <= best.objective  # a change is taken back only where the objective is no worse
    pool = executors.ProcessPool(jobs, 2)  # two replays side by side, some of them ahead of the walk
    try:
        beside = simplify(cluster, knob_list, wanted, best, pool)
    finally:
        pool.close()
    assert (beside.params, beside.reverted, beside.objective) == (
        smaller.params,
        smaller.reverted,
        smaller.objective,
    )


def _stopping(jobs, stops):
    """A map function that replays each task and hands back `executors.Stopped` where `stops(index, policy)`
    (index: the replay's place in the order they were asked for), as the engine does for a policy whose
    queues preempt each other without end."""
    serial, order = executors.Serial(jobs), itertools.count()

    def run(tasks):
        return [
            executors.Stopped(f"replay {index} stopped") if stops(index, task[0]) else summary
            for summary, task, index in zip(serial.map(tasks), tasks, order, strict=False)
        ]

    return run


def test_a_candidate_whose_replay_stops_is_ranked_last_and_the_search_goes_on(cluster, jobs):
    repository = space.candidate_policy(cluster, space.knobs(cluster), {})
    candidates = _search(cluster, jobs, _stopping(jobs, lambda index, policy: policy != repository))
    assert len(candidates) == 6 and candidates[0].number == 0 and candidates[0].summary is not None
    stopped = candidates[1:]
    assert all(re.fullmatch(r"replay \d+ stopped", c.stopped) for c in stopped)
    assert all(c.summary is None and not c.pruned and c.objective == objective.STOPPED for c in stopped)
    assert objective.better(candidates[0].objective, objective.STOPPED)
    assert executors.summary_of(candidates[0].summary) is candidates[0].summary


def test_the_repository_policy_whose_replay_stops_ends_the_search_with_the_engine_message(cluster, jobs):
    with pytest.raises(ToolError, match="^replay 0 stopped$"):
        _search(cluster, jobs, _stopping(jobs, lambda index, policy: index == 0))
    with pytest.raises(ToolError, match="^why$"):
        executors.summary_of(executors.Stopped("why"))


def test_simplify_takes_back_no_change_whose_replay_stops(cluster, jobs):
    knob_list = space.knobs(cluster)
    wanted = targets.parse("training:p50<2h")
    run = executors.Serial(jobs).map
    best = next(c for c in search(cluster, knob_list, wanted, trials=6, seed=7, batch=3, run=run) if c.number)
    assert space.changes(knob_list, best.params)
    kept = simplify(cluster, knob_list, wanted, best, _stopping(jobs, lambda index, policy: True))
    assert kept is best


def test_target_rows_show_each_wait_against_its_bound():
    wanted = targets.parse("serving:p95<15m,training:p50<2h")
    entries = targets.target_report(
        wanted,
        {
            "repository": {"serving:p95<15m": 488.2, "training:p50<120m": 30.0},
            "recommended": {"serving:p95<15m": 12.0, "training:p50<120m": 150.0},
        },
    )
    assert targets.target_rows(entries, ["repository", "recommended"]) == [
        ["serving:p95<15m", "15m", "488m (missed)", "12m (met)"],
        ["training:p50<120m", "120m", "30m (met)", "150m (missed)"],
    ]


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid", *args],
        cwd=root,
        check=True,
        capture_output=True,
        timeout=120,
    )


def _copy(tmp_path: Path) -> Path:
    return edits.copy_repository(REPO, tmp_path)


def _namespace_gpu_quota(team_quotas: str, namespace: str) -> int:
    """requests.nvidia.com/gpu of a namespace's ResourceQuota in a team-quotas.yaml text."""
    found = re.search(rf'namespace: {namespace}\n(?:.*\n)*?\s+requests.nvidia.com/gpu: "(\d+)"', team_quotas)
    return int(found[1])


def test_apply_writes_the_change_in_place_and_validate_stays_clean(tmp_path, cluster):
    root = _copy(tmp_path)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    knob_list = [
        *space.knobs(cluster),
        space.Knob(
            "research/cohort",
            "research",
            space.COHORT,
            "research",
            # edits work in any fleet
            choices=("research", "training"),
        ),
    ]
    params = space.current_values(knob_list) | {
        "research/cohort": "training",
        "research/us-h100-train/nvidia.com/gpu/borrow": 12,
        "research/us-l40s-shared/nvidia.com/gpu/nominal": 40,
    }
    # what the edit starts from is read from the fleet, so the test follows it (decision 0071 moved these)
    before = (root / "clusters/prod-us/queues/research.yaml").read_text()
    cpu_before = int(re.search(r"- name: cpu\n\s+nominalQuota: (\d+)", before)[1])
    memory_before = int(re.search(r'- name: memory\n\s+nominalQuota: "(\d+)Gi"', before)[1])
    borrow_before = space.current_values(knob_list)["research/us-h100-train/nvidia.com/gpu/borrow"]
    quota_before = _namespace_gpu_quota((root / "clusters/prod-us/team-quotas.yaml").read_text(), "research")
    texts, errors = edits.edited_files(root, "prod-us", knob_list, params)
    assert errors == []
    edits.apply_to_repository(root, texts)
    docsgen.refresh(root)  # as `recommend --apply` does after writing: the quota pages follow (DOC005)
    research = (root / "clusters/prod-us/queues/research.yaml").read_text()
    assert "cohortName: training" in research and "borrow up to 12." in research
    cpu_flavor = research[research.index("- name: cpu\n") : research.index("- name: us-l40s-shared")]
    # the cpu flavor's cpu/memory follow the GPUs at the share one L40S device stands for, derived from the
    # YAML and the pool's node shape (cpu_share, decision 0090): 48 -> 40 takes 8 x that off, rounded up to
    # whole cores and Gi (the unit the quota is written in); its borrowing stays unlimited (unset), so a new
    # borrowing limit moves none
    research_queue = cluster.cluster_queues["research"]
    ratio = cpu_share.per_device(cluster, research_queue, "us-l40s-shared", "nvidia.com/gpu")
    cpu_after = math.ceil(cpu_before - 8 * ratio["cpu"])
    memory_after = math.ceil(memory_before - 8 * ratio["memory"] / 2**30)
    assert (cpu_after, memory_after) != (cpu_before, memory_before)
    assert f"nominalQuota: {cpu_after}\n" in cpu_flavor
    assert f'nominalQuota: "{memory_after}Gi"' in cpu_flavor
    assert "borrowingLimit" not in cpu_flavor
    # the namespace quota follows what its queues now admit, nominal + borrowing over the GPU flavors (CAP015)
    edited = load_fleet(root, ["prod-us"]).clusters["prod-us"].cluster_queues["research"]
    quota_after = sum(
        q.nominal + (q.borrowing_limit or 0)
        for g in edited.resource_groups
        for f in g.flavors
        for q in f.resources
        if q.name == "nvidia.com/gpu"
    )
    team_quotas = (root / "clusters/prod-us/team-quotas.yaml").read_text()
    assert _namespace_gpu_quota(team_quotas, "research") == quota_after
    assert "# research in prod-us" in research  # comments kept
    assert "us-l40s-shared (time-sliced): gpu 40 of 64, borrow up to 16, lend at most 40." in research
    shared = research[research.index("- name: us-l40s-shared") : research.index("- name: us-a100-mig-1g")]
    assert "nominalQuota: 40\n" in shared and "lendingLimit: 40\n" in shared  # lending kept within nominal
    # GPU resources only (decision 0069)
    assert "- name: cpu" not in shared and "- name: memory" not in shared
    validate = cli_on(root, "validate")
    assert validate.returncode == 0, validate.stdout + validate.stderr
    diff = cli_on(root, "diff", "--base", "HEAD")
    assert diff.returncode == 0, diff.stderr
    change = quota_after - quota_before
    row = (
        f"| prod-us | research | gpu | requests.nvidia.com/gpu | {quota_before} | {quota_after} "
        f"| {change:+d} |"
    )
    assert row in diff.stdout
    row = f"| prod-us | research | us-h100-train | nvidia.com/gpu | borrowingLimit | {borrow_before} | 12 |"
    assert row in diff.stdout
    assert "-8 L40S on us-l40s-shared for team research in prod-us (48 -> 40)" in diff.stdout


def test_apply_writes_every_file_that_carries_the_replicas(tmp_path, cluster):
    root = _copy(tmp_path)
    knob_list = space.knobs(cluster)
    params = {"us-l40s-shared/replicas": 8, "research/us-l40s-shared/nvidia.com/gpu/nominal": 40}
    texts, errors = edits.edited_files(root, "prod-us", knob_list, params)
    assert errors == []
    assert {
        "pools/us-l40s-shared/pool.yaml",
        "pools/us-l40s-shared/device-plugin.yaml",
        "policies/startup-check/pools.conf",
        "clusters/prod-us/queues/research.yaml",
        "clusters/prod-us/queues/serving.yaml",
        "clusters/prod-us/team-quotas.yaml",
    } <= set(texts)
    pool = texts["pools/us-l40s-shared/pool.yaml"]
    assert "    replicas: 8\n" in pool
    assert "replicas =" not in pool and "exposes nvidia.com/gpu =" not in pool  # no counts in comments (0090)
    assert "        replicas: 8\n" in texts["pools/us-l40s-shared/device-plugin.yaml"]
    assert re.search(
        r"^  us-l40s-shared\s+time-sliced.*\s12$", texts["policies/startup-check/pools.conf"], re.M
    )
    research = texts["clusters/prod-us/queues/research.yaml"]
    assert "us-l40s-shared (time-sliced): gpu 80 of 128, borrow up to 32, lend at most 80." in research
    # gpu, in replicas
    assert "              nominalQuota: 80\n              borrowingLimit: 32\n" in research
    assert (
        "nominalQuota: 32\n              borrowingLimit: 32\n              lendingLimit: 32\n"
        in texts["clusters/prod-us/queues/serving.yaml"]
    )  # serving's 16 replicas of 4 cards are 32 of 8
    edits.apply_to_repository(root, texts)
    docsgen.refresh(root)  # as `recommend --apply` does
    validate = cli_on(root, "validate")
    assert validate.returncode == 0, validate.stdout + validate.stderr


def test_command_json_and_refused_out(tmp_path):
    root = _copy(tmp_path)
    result = cli_on(
        root,
        "recommend",
        "--cluster",
        "prod-us",
        "--trace",
        str(TRACE),
        "--limit",
        str(LIMIT),
        "--trials",
        "4",
        "--batch",
        "2",
        "--jobs",
        "1",
        "--check",
        "1",
        "--format",
        "json",
        "--record",
        "--target",
        "training:p50<2h",
    )
    assert result.returncode in (0, 1), result.stderr
    report = json.loads(result.stdout)
    assert len(report["candidates"]) == 4 and report["candidates"][0]["trial"] is not None
    [target] = report["targets"]
    assert target["target"] == "training:p50<120m" and target["bound_minutes"] == 120
    repository = next(c for c in report["candidates"] if c["trial"] == 0)
    assert target["waits_minutes"]["repository"] == repository["waits"]["training:p50<120m"]
    assert (root / "artifacts/recommend/pareto.png").read_bytes()[:4] == b"\x89PNG"
    recorded = json.loads((root / "docs/recommendations/prod-us.json").read_text())
    assert recorded["trials"] == 4 and recorded["command"].startswith("gpupolicy recommend --cluster prod-us")
    assert recorded["targets"][0]["target"] == "training:p50<120m"
    assert cli_on(root, "docs", "--check").returncode != 0  # the new record's page is missing
    assert cli_on(root, "docs").returncode == 0
    page = (root / "docs/generated/recommendations/prod-us.md").read_text()
    assert "| metric | baseline | repository policy |" in page and "prod-us.png" in page
    assert "## Wait targets" in page and "| training:p50<120m | 120m |" in page
    text = cli_on(
        root,
        "recommend",
        "--cluster",
        "prod-us",
        "--trace",
        str(TRACE),
        "--limit",
        str(LIMIT),
        "--trials",
        "2",
        "--batch",
        "2",
        "--jobs",
        "1",
        "--check",
        "1",
        "--target",
        "training:p50<2h",
    )
    assert text.returncode in (0, 1), text.stderr
    assert (
        "worst wait of each target's queues" in text.stdout and "| training:p50<120m | 120m |" in text.stdout
    )
    assert cli_on(root, "docs", "--check").returncode == 0
    bad = cli_on(root, "recommend", "--cluster", "prod-us", "--trace", str(TRACE), "--target", "serving<1")
    assert bad.returncode == 2 and "expected KEY" in bad.stderr
    shutil.rmtree(root / "artifacts")
    (root / "artifacts").symlink_to(tmp_path)
    refused = cli_on(root, "recommend", "--cluster", "prod-us", "--trace", str(TRACE), "--trials", "1")
    assert refused.returncode == 2 and "outside the repository" in refused.stderr


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (("--seed", "-1"), "--seed takes a number from 0 to 4294967295"),
        (("--seed", str(2**32)), "--seed takes a number from 0 to 4294967295"),  # was an internal error
        (("--limit", "0"), "--limit takes a positive number of jobs"),
        (("--limit", "-5"), "--limit takes a positive number of jobs"),  # was every job but the last five
    ],
)
def test_the_command_refuses_a_seed_the_sampler_cannot_take_and_a_limit_below_one(given, message):
    refused = cli_on(REPO, "recommend", "--cluster", "prod-us", "--trace", str(TRACE), *given)
    assert refused.returncode == 2 and refused.stderr.strip() == f"gpupolicy recommend: {message}"


def test_apply_refuses_files_with_uncommitted_changes_unless_forced(tmp_path):
    from gpupolicy.commands.recommend import _apply_refusal

    root = _copy(tmp_path)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    queue = root / "clusters/prod-us/queues/research.yaml"
    queue.write_text(queue.read_text() + "# a reviewer's note\n")
    texts = {"clusters/prod-us/queues/research.yaml": "", "clusters/prod-us/team-quotas.yaml": ""}
    refusal = _apply_refusal(SimpleNamespace(repo=str(root), force=False), texts)
    assert "clusters/prod-us/queues/research.yaml" in refusal and "team-quotas" not in refusal
    assert "commit or stash" in refusal and "--force" in refusal
    assert _apply_refusal(SimpleNamespace(repo=str(root), force=True), texts) is None
    assert (
        _apply_refusal(
            SimpleNamespace(repo=str(root), force=False), {"clusters/prod-us/team-quotas.yaml": ""}
        )
        is None
    )
    new = {"clusters/prod-us/queues/new.yaml": ""}
    (root / "clusters/prod-us/queues/new.yaml").write_text("untracked\n")
    assert "new.yaml" in _apply_refusal(SimpleNamespace(repo=str(root), force=False), new)


def test_the_candidate_copy_leaves_out_git_caches_and_top_level_virtual_environments(tmp_path):
    # the fork job's venv is .venv-system; a pyvenv.cfg elsewhere (a pull request's) hides nothing
    root = tmp_path / "fork"
    for folder in (".git", ".venv-system", ".pytest_cache", "pools/p", ".github", ".ci"):
        (root / folder).mkdir(parents=True)
    (root / "pools" / "p" / "pool.yaml").write_text("kind: Pool\n")
    (root / ".venv-system" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (root / ".venv-system" / "big").write_text("x\n")
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / ".ci" / "run").write_text("#!/bin/sh\n")
    for planted in ("pools/p/pyvenv.cfg", ".github/pyvenv.cfg", ".github/CODEOWNERS"):
        (root / planted).write_text("home = /usr/bin\n")
    copy = edits.copy_repository(root, tmp_path / "into")
    kept = sorted(str(p.relative_to(copy)) for p in copy.rglob("*") if p.is_file())
    assert kept == [
        ".ci/run",
        ".github/CODEOWNERS",
        ".github/pyvenv.cfg",
        "pools/p/pool.yaml",
        "pools/p/pyvenv.cfg",
    ]
