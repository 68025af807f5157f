"""`gpupolicy simulate --base REV`: the policy of a git revision and the working tree's, replayed on one
workload.

The repositories are fixtures these tests build and commit (tests/support.py), never the reference fleet.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path

import pytest
from simhelpers import TRACES, shared_trace
from support import MINIREPO, copy_repo, fleet_repo, git, git_repository

from gpupolicy.cli import main
from gpupolicy.simulate import mixed, revisions

QUEUES = "clusters/mini/queues.yaml"
# Four one-hour jobs of 8 GPUs each, all submitted at once, for the fixture's one queue (16 GPUs on 2 nodes).
# Replayed by hand: at nominalQuota 8 they run one after another (waits 0, 1, 2, 3 h: p95 3 h, makespan 4 h);
# at 16 two at a time (waits 0, 0, 1, 1 h: p95 1 h, makespan 2 h).
TRACE = """job_id,submit,duration,gpus,team,queue
a1,0,3600,8,alpha,alpha
a2,0,3600,8,alpha,alpha
a3,0,3600,8,alpha,alpha
a4,0,3600,8,alpha,alpha
"""


def _quota(repo: Path, old: int, new: int) -> None:
    path = repo / QUEUES
    text = path.read_text(encoding="utf-8")
    assert f"nominalQuota: {old}" in text
    path.write_text(text.replace(f"nominalQuota: {old}", f"nominalQuota: {new}"), encoding="utf-8")


@pytest.fixture()
def raised_quota(tmp_path: Path) -> Path:
    """Two commits: the queue at 8 GPUs of nominal quota, then raised to 16 (the working tree: the second)."""
    repo = shutil.copytree(MINIREPO, tmp_path / "repo")
    _quota(repo, 16, 8)
    git_repository(repo)
    _quota(repo, 8, 16)
    git(repo, "commit", "-q", "-am", "raise alpha's quota to 16")
    return repo


def _simulate(repo: Path, tmp_path: Path, *extra: str) -> int:
    trace = tmp_path / "trace.csv"
    trace.write_text(TRACE, encoding="utf-8")
    return main(
        [
            "simulate",
            "--repo",
            str(repo),
            "--trace",
            str(trace),
            "--no-plots",
            "--out",
            str(tmp_path / "out"),
            *extra,
        ]
    )


def test_a_head_that_raises_a_quota_waits_less_than_the_base_on_the_same_jobs(raised_quota, tmp_path, capsys):
    code = _simulate(raised_quota, tmp_path, "--base", "HEAD~1", "--format", "json")
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    base, head = data["base"]["summary"], data["head"]["summary"]
    assert data["base"]["revision"] == "HEAD~1"
    assert data["base"]["commit"] == git(raised_quota, "rev-parse", "HEAD~1").strip()
    assert data["head"]["commit"] is None  # the working tree
    assert base["jobs"] == head["jobs"] == data["jobs"] == 4
    assert (base["wait"]["p95"], head["wait"]["p95"]) == (180.0, 60.0)
    assert (base["makespan_hours"], head["makespan_hours"]) == (4.0, 2.0)
    figures = {row["metric"]: row for row in data["headline"]}
    assert figures["wait p95"]["base"] > figures["wait p95"]["head"]
    assert data["verdict"] == {"worse_by": 0.1, "against": "base", "worse": []}
    assert data["baseline"]["jobs"] == 4 and data["workload"]["scale"] is None


def test_the_text_report_shows_base_head_and_the_change(raised_quota, tmp_path, capsys):
    assert _simulate(raised_quota, tmp_path, "--base", "HEAD~1") == 0
    out = capsys.readouterr().out
    commit = git(raised_quota, "rev-parse", "HEAD~1").strip()[:12]
    assert f"| metric | baseline | base HEAD~1 ({commit}) | head (working tree) | head - base |" in out
    assert "| wait p95 | 60.0 min | 3.0 h | 60.0 min | -2.0 h (-67%) |" in out
    assert "verdict: no metric of the head is more than 10% worse than the base" in out
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "## Headline figures" in report
    assert "| makespan | 2.0 h | 4.0 h | 2.0 h | -2.0 h (-50%) |" in report


def test_a_head_that_lowers_the_quota_is_named_by_the_verdict(raised_quota, tmp_path, capsys):
    _quota(raised_quota, 16, 8)
    git(raised_quota, "commit", "-q", "-am", "lower it again")
    assert _simulate(raised_quota, tmp_path, "--base", "HEAD~1") == 0  # every job still ran
    out = capsys.readouterr().out
    assert "metric(s) of the head more than 10% worse than the base:" in out
    assert "  - wait p95: 60.0 min -> 3.0 h (+200%)" in out


def test_the_same_revision_on_both_sides_changes_nothing(raised_quota, tmp_path, capsys):
    assert _simulate(raised_quota, tmp_path, "--base", "HEAD", "--format", "json") == 0
    data = json.loads(capsys.readouterr().out)
    for row in data["headline"]:
        assert row["base"] == row["head"], row["metric"]


def test_busy_devices_replay_the_before_once_and_the_events_name_each_replay(raised_quota, tmp_path, capsys):
    events = tmp_path / "events.jsonl"
    code = _simulate(
        raised_quota,
        tmp_path,
        "--base",
        "HEAD~1",
        "--busy-devices",
        "--events",
        str(events),
        "--format",
        "json",
    )
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["before"]["jobs"] == 4 and data["before"]["busy_starts"] == 0  # an exclusive pool: no crash
    logged = [json.loads(line) for line in events.read_text(encoding="utf-8").splitlines()]
    assert {event["policy"] for event in logged} == {"baseline", "base", "head", "before"}
    for policy in ("base", "before"):  # the before's waits can be traced as the others' can
        finished = [e for e in logged if e["policy"] == policy and e.get("event") == "finished"]
        assert len(finished) == 4, policy


@pytest.mark.parametrize(
    "rev, message",
    [
        ("no-such-branch", "unknown git revision 'no-such-branch'"),
        ("HEAD~9", "unknown git revision 'HEAD~9'"),
        ("--output=x", "unknown git revision '--output=x'"),
        ("", "unknown git revision ''"),
    ],
)
def test_a_bad_revision_is_one_line_and_exit_2(raised_quota, tmp_path, capsys, rev, message):
    assert _simulate(raised_quota, tmp_path, f"--base={rev}") == 2
    captured = capsys.readouterr()
    assert captured.err.strip() == f"gpupolicy simulate: {message}"
    assert captured.out == "" and not (tmp_path / "out").exists()


def test_a_base_without_the_cluster_is_refused(raised_quota, tmp_path, capsys):
    git(raised_quota, "checkout", "-q", "-b", "empty")
    git(raised_quota, "rm", "-r", "-q", "clusters/mini")
    git(raised_quota, "commit", "-q", "-m", "no clusters")
    git(raised_quota, "checkout", "-q", "-")  # back to the branch with the cluster
    assert _simulate(raised_quota, tmp_path, "--cluster", "mini", "--base", "empty") == 2
    err = capsys.readouterr().err
    assert err.startswith("gpupolicy simulate: --base empty: ") and "mini" in err
    assert tempfile.gettempdir() not in err  # the temporary tree is named by its revision


def _tree_state(repo: Path) -> dict[str, str]:
    """Every file under `repo` (.git included) -> a digest of its bytes and mode."""
    state = {}
    for path in sorted(repo.rglob("*")):
        if path.is_file() and not path.is_symlink():
            state[str(path.relative_to(repo))] = hashlib.sha256(path.read_bytes()).hexdigest() + oct(
                path.stat().st_mode
            )
    return state


def test_nothing_on_disk_changes_but_the_report(raised_quota, tmp_path, monkeypatch, capsys):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # where gitrev unpacks the base
    before = _tree_state(raised_quota)
    status = git(raised_quota, "status", "--porcelain", "--ignored")
    assert _simulate(raised_quota, tmp_path, "--base", "HEAD~1") == 0
    assert _tree_state(raised_quota) == before
    assert git(raised_quota, "status", "--porcelain", "--ignored") == status
    assert list(scratch.iterdir()) == []  # the base's temporary tree is gone
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["report.md"]


def test_the_mixed_workload_is_built_once_at_the_heads_scale(tmp_path, capsys):
    """The base has half the training nodes of the head, so `--scale auto` would pick another training factor
    on each; both replay the head's."""
    shared_trace(*mixed.ITP_TRACE)
    shared_trace(*mixed.OPENB_TRACE)
    repo = copy_repo(fleet_repo(), tmp_path / "repo")
    pool = repo / "pools" / "us-h100-train" / "pool.yaml"
    text = pool.read_text(encoding="utf-8")
    assert "us-west-2a: 4\n    us-west-2b: 4\n" in text
    pool.write_text(text.replace("us-west-2b: 4\n", "us-west-2b: 0\n"), encoding="utf-8")
    git_repository(repo)
    base_scale = _auto_scale(repo)
    pool.write_text(text, encoding="utf-8")
    head_scale = _auto_scale(repo)
    assert base_scale != head_scale
    code = main(
        [
            "simulate",
            "--repo",
            str(repo),
            "--cluster",
            "prod-us",
            "--workload",
            "mixed",
            "--traces",
            str(TRACES),
            "--days",
            "1",
            "--limit",
            "400",
            "--base",
            "HEAD",
            "--no-plots",
            "--out",
            str(tmp_path / "out"),
            "--format",
            "json",
        ]
    )
    assert code in (0, 1)
    data = json.loads(capsys.readouterr().out)
    assert data["workload"] == {
        "scale": dict(zip(("training", "inference"), head_scale, strict=True)),
        "scale_option": "auto",
        "seed": 0,
        "days": 1,
    }
    assert data["base"]["summary"]["jobs"] == data["head"]["summary"]["jobs"] == data["jobs"]
    assert data["base"]["summary"] != data["head"]["summary"]  # the training pool differs


def _auto_scale(repo: Path) -> tuple[float, float]:
    from gpupolicy.pipeline import load_fleet

    cluster = load_fleet(repo, ["prod-us"]).clusters["prod-us"]
    workload = mixed.sustained_scales(cluster, *mixed.read_sources(TRACES), days=1)
    return workload.training_scale, workload.inference_scale


def test_deltas_are_in_the_figures_unit_with_the_relative_change_where_it_means_something():
    assert revisions.delta(0.40, 0.52, "percent") == "+12.0 pts"
    assert revisions.delta(180.0, 60.0, "minutes") == "-2.0 h (-67%)"
    assert revisions.delta(0.0, 3.0, "count") == "+3"  # from zero: no percentage
    assert revisions.delta(0.5, 900.0, "hours") == "+899.5 h"  # beyond +1000%: the absolute change alone
    assert revisions.delta(2.0, 2.0, "hours") == "0"
    assert revisions.delta(None, 0.3, "percent") == "n/a"
