"""Rollout plans: parsing helpers, drain arithmetic, the shipped plan, the update-procedure page, and the
`gpupolicy upgrade` commands on a git copy of the fixture repository (promote, refusals, rollback round
trip)."""

from __future__ import annotations

import dataclasses
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from prometheus_server import healthy_prometheus
from support import fleet_repo, git, git_repository

from gpupolicy import docsgen, pipeline
from gpupolicy.cli import main
from gpupolicy.docsgen import upgrades as upgrades_page
from gpupolicy.infra.yamlload import load_text
from gpupolicy.rules import all_rules
from gpupolicy.upgrade import plans as upgrades

# The tests' own rich fleet (tests/fixtures/fleet), not whatever fleet this repository holds (decision 0085).
REPO = fleet_repo()
FIXTURE = REPO / "tests" / "fixtures" / "upgrades"
SHIPPED_PLAN = "driver-r580-to-r595"

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


# --- helpers of the plan model
# ---------------------------------------------------------------------------------


def test_durations_and_timestamps_round_trip() -> None:
    assert upgrades.parse_duration("48h") == timedelta(hours=48)
    assert upgrades.parse_duration("7d") == timedelta(days=7)
    assert upgrades.format_duration(timedelta(hours=49, minutes=5)) == "2d1h5m"
    moment = upgrades.parse_timestamp("2026-11-24T10:00:00Z")
    assert upgrades.format_timestamp(moment) == "2026-11-24T10:00:00Z"
    with pytest.raises(ValueError):
        upgrades.parse_duration("two days")


@pytest.mark.parametrize(
    ("value", "nodes", "expected"),
    [("25%", 4, 1), ("25%", 5, 2), ("50%", 4, 2), (1, 8, 1), ("0%", 4, 0), (None, 8, 2)],
)
def test_max_unavailable_rounds_percentages_up(value, nodes: int, expected: int) -> None:
    assert upgrades.resolve_max_unavailable(value, nodes) == expected


def test_nodes_down_takes_the_tighter_of_parallelism_and_unavailability() -> None:
    policy = {"autoUpgrade": True, "maxParallelUpgrades": 3, "maxUnavailable": "25%"}
    assert upgrades.nodes_down_at_once(policy, 8, 8) == (2, False)
    unlimited = {"autoUpgrade": True, "maxParallelUpgrades": 0, "maxUnavailable": "100%"}
    assert upgrades.nodes_down_at_once(unlimited, 6, 6) == (6, False)
    assert upgrades.nodes_down_at_once({"autoUpgrade": True, "maxUnavailable": 0}, 4, 4) == (0, True)
    assert upgrades.nodes_down_at_once({"autoUpgrade": False}, 4, 4) == (1, False)


def test_invalid_plan_is_a_problem_with_its_line() -> None:
    text = (FIXTURE / "policies/upgrades/plan.yaml").read_text().replace("      minimumSoak: 72h\n", "")
    documents = load_text(text, "policies/upgrades/plan.yaml").documents
    plans = upgrades.load_plans(documents)
    assert not plans.plans
    assert any("minimumSoak" in p.message and p.location.line == 21 for p in plans.problems), plans.problems


# --- the shipped plan
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shipped():
    result = pipeline.run(REPO)
    return result, upgrades.plans_of(result.fleet)


def test_shipped_plan_is_mid_rollout_and_clean(shipped) -> None:
    result, plans = shipped
    assert not plans.problems
    plan = plans.plan(SHIPPED_PLAN)
    assert [stage.state for stage in plan.stages] == ["done", "in progress", "pending"]
    assert not [f for f in result.findings if f.rule.startswith("UPG")]
    covered = [u.label for s in plan.stages for u in upgrades.stage_units(result.fleet, plan, s)]
    assert sorted(covered) == sorted(u.label for u in upgrades.driver_units(result.fleet))
    assert len(covered) == len(set(covered)) == 13


def test_shipped_plan_soak_blocks_promotion_until_a_week_has_passed(shipped) -> None:
    _result, plans = shipped
    plan = plans.plan(SHIPPED_PLAN)
    started = plan.current_stage().started
    assert "to go" in upgrades.soak_blocker(plans, plan, started + timedelta(days=2))
    assert upgrades.soak_blocker(plans, plan, started + timedelta(days=7)) is None


def test_update_procedure_page_has_timeline_pools_criteria_and_commands(shipped) -> None:
    result, _plans = shipped
    context = docsgen.Context(root=REPO, fleet=result.fleet)
    page = upgrades_page.pages(context)["upgrades.md"]
    assert "```mermaid\ngantt" in page
    assert ":active, canary, 2026-11-24, 7d" in page
    assert "| prod-us | us-h100-serving | H100-80GB | 32 | `580.173.02` |" in page
    assert "GPUXidCriticalError" in page and "at most 2 failed GPU pod(s)" in page
    assert f"gpupolicy upgrade promote {SHIPPED_PLAN} --prometheus <url>" in page
    assert "288 GPUs in this stage." in page


# --- commands on a git copy of the fixture repository
# ----------------------------------------------------------


def _git(repo: Path, *args: str) -> str:
    return git(repo, *args)


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    return git_repository(shutil.copytree(FIXTURE, tmp_path / "repo"))


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


def _upgrade(repo: Path, *args: str) -> int:
    return main(["upgrade", *args, "--repo", str(repo)])


def _promote_healthy(repo: Path, now: str, *args: str) -> int:
    """promote after a clean soak, shown by a real Prometheus (promote past a stage that ran requires one)."""
    with healthy_prometheus(repo.parent / f"prom-{now[:13]}", repo, "driver-next", now) as url:
        return _upgrade(repo, "promote", "driver-next", *args, "--now", now, "--prometheus", url)


AFTER_SOAK = "2026-11-20T00:00:00Z"  # the canary stage started 2026-11-10T09:00Z with a 72h soak


@needs_git
def test_promote_then_rollback_is_byte_identical(repo: Path, capsys) -> None:
    before = _snapshot(repo)
    assert _promote_healthy(repo, AFTER_SOAK, "--approver", "platform") == 0
    diff = capsys.readouterr().out
    assert '+  version: "595.91.07"' in diff and "pools/prod-h100/nvidiadriver.yaml" in diff
    driver = (repo / "pools/prod-h100/nvidiadriver.yaml").read_text()
    assert 'version: "595.91.07"' in driver and "# One node at a time." in driver  # comments kept
    plan_text = (repo / "policies/upgrades/plan.yaml").read_text()
    assert f'started: "{AFTER_SOAK}"' in plan_text and f'completed: "{AFTER_SOAK}"' in plan_text
    result = pipeline.run(repo)
    assert not [f for f in result.findings if f.rule.startswith("UPG")], "promote left the repo inconsistent"
    _git(repo, "commit", "-q", "-am", "promote")

    assert _upgrade(repo, "rollback", "driver-next") == 0
    assert _snapshot(repo) == before


@needs_git
def test_promote_refuses_before_the_soak_is_over(repo: Path, capsys) -> None:
    before = _snapshot(repo)
    assert (
        _upgrade(repo, "promote", "driver-next", "--approver", "platform", "--now", "2026-11-11T09:00:00Z")
        == 1
    )
    assert "has soaked 1d of 3d" in capsys.readouterr().err
    assert _snapshot(repo) == before


@needs_git
def test_promote_refuses_a_dirty_tree(repo: Path, capsys) -> None:
    (repo / "clusters/prod/notes.txt").write_text("work in progress\n")
    assert _upgrade(repo, "promote", "driver-next", "--approver", "platform", "--now", AFTER_SOAK) == 1
    assert "working tree is dirty" in capsys.readouterr().err


@needs_git
def test_promote_refuses_when_an_upg_rule_fails(repo: Path, capsys) -> None:
    driver = repo / "pools/prod-h100/nvidiadriver.yaml"
    driver.write_text(
        driver.read_text()
        .replace("maxParallelUpgrades: 1", "maxParallelUpgrades: 4")
        .replace('maxUnavailable: "25%"', 'maxUnavailable: "100%"')
    )
    _git(repo, "commit", "-q", "-am", "drain everything at once")
    assert _upgrade(repo, "promote", "driver-next", "--approver", "platform", "--now", AFTER_SOAK) == 1
    assert "UPG008" in capsys.readouterr().err


@needs_git
def test_promote_needs_one_of_the_stage_approvers(repo: Path, capsys) -> None:
    assert _upgrade(repo, "promote", "driver-next", "--approver", "intern", "--now", AFTER_SOAK) == 1
    assert "--approver intern is not among the verified signers (tess)" in capsys.readouterr().err


@needs_git
def test_promote_past_a_stage_that_ran_requires_prometheus(repo: Path, capsys) -> None:
    """Soak time alone proves nothing: the canary stage has soaked, and without --prometheus promote
    refuses."""
    before = _snapshot(repo)
    assert _upgrade(repo, "promote", "driver-next", "--now", AFTER_SOAK) == 1
    assert (
        "stage canary has run: its rollback criteria must be evaluated against Prometheus"
        in capsys.readouterr().err
    )
    assert _snapshot(repo) == before


@needs_git
def test_last_stage_promote_closes_the_plan_and_rollback_reopens_it(repo: Path, capsys) -> None:
    before = _snapshot(repo)
    assert _promote_healthy(repo, AFTER_SOAK) == 0
    _git(repo, "commit", "-q", "-am", "fleet")
    assert _promote_healthy(repo, "2026-11-20T23:00:00Z") == 1  # 1d soak not over
    assert _promote_healthy(repo, "2026-11-21T01:00:00Z") == 0
    plans = upgrades.plans_of(pipeline.load_fleet(repo))
    assert plans.plan("driver-next").finished
    _git(repo, "commit", "-q", "-am", "finished")
    capsys.readouterr()
    assert _upgrade(repo, "status", "driver-next") == 0
    assert "none: every stage is done" in capsys.readouterr().out
    assert _upgrade(repo, "rollback", "driver-next") == 0
    _git(repo, "commit", "-q", "-am", "rolled back")
    assert (repo / "pools/prod-h100/nvidiadriver.yaml").read_bytes() == before[
        "pools/prod-h100/nvidiadriver.yaml"
    ]


@needs_git
def test_status_reports_versions_soak_and_blockers(repo: Path, capsys) -> None:
    assert _upgrade(repo, "status", "--now", "2026-11-11T09:00:00Z") == 0
    out = capsys.readouterr().out
    assert "2. canary [limited] IN PROGRESS" in out and "2d to go" in out
    assert "prod/prod-h100    580.173.02    32 GPUs  ok" in out
    assert "production needs 24 nvidia.com/gpu, has 24 nvidia.com/gpu" in out
    assert "next step: promote stage fleet: blocked" in out


def test_unknown_plan_is_a_usage_error(capsys) -> None:
    assert main(["upgrade", "status", "no-such-plan", "--repo", str(FIXTURE)]) == 2
    assert "no rollout plan 'no-such-plan'" in capsys.readouterr().err


def test_rollback_refuses_when_nothing_was_promoted(tmp_path: Path, capsys) -> None:
    target = tmp_path / "repo"
    shutil.copytree(FIXTURE, target)
    plan = target / "policies/upgrades/plan.yaml"
    text = plan.read_text()
    for line in (
        '      started: "2026-11-01T09:00:00Z"\n',
        '      approvedBy: platform\n',
        '      completed: "2026-11-10T09:00:00Z"\n',
        '      started: "2026-11-10T09:00:00Z"\n',
    ):
        text = text.replace(line, "")
    plan.write_text(text)
    assert main(["upgrade", "rollback", "driver-next", "--repo", str(target)]) == 1
    assert "nothing to roll back" in capsys.readouterr().err


def test_a_partial_run_does_not_mistake_unloaded_clusters_for_unknown_ones() -> None:
    result = pipeline.run(REPO, clusters=["test-us"])
    assert not [f for f in result.findings if f.rule.startswith("UPG")]


# --- a crashed check: the verdict is incomplete
# ----------------------------------------------------------------


def _crash_rule(monkeypatch: pytest.MonkeyPatch, rule_id: str) -> None:
    """Make a registered rule raise (as tests/test_internal_errors.py does): an INTERNAL finding in the
    run."""
    original = all_rules()[rule_id]

    def check(fleet):
        raise ValueError("boom")
        yield  # a generator, like every rule

    monkeypatch.setitem(all_rules(), rule_id, dataclasses.replace(original, check=check))


@needs_git
@pytest.mark.parametrize(
    "action",
    [["promote", "driver-next", "--approver", "platform", "--now", AFTER_SOAK], ["rollback", "driver-next"]],
    ids=["promote", "rollback"],
)
def test_promote_and_rollback_refuse_when_a_check_crashed(action, repo: Path, monkeypatch, capsys) -> None:
    """UPG008 crashed, so whether draining is safe is unknown: editing the fleet on that is a guess."""
    _crash_rule(monkeypatch, "UPG008")
    before = _snapshot(repo)
    assert _upgrade(repo, *action) == 2
    err = capsys.readouterr().err
    assert "refused: the verdict is incomplete: 1 check(s) crashed (rule UPG008)" in err, err
    assert _snapshot(repo) == before


@needs_git
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_status_says_incomplete_and_exits_two_when_a_check_crashed(
    fmt, repo: Path, monkeypatch, capsys
) -> None:
    _crash_rule(monkeypatch, "UPG008")
    assert _upgrade(repo, "status", "--format", fmt, "--now", AFTER_SOAK) == 2
    out, err = capsys.readouterr()
    assert "upgrade status: the verdict is incomplete: 1 check(s) crashed (rule UPG008)" in err
    assert "crashed (rule UPG008)" in out  # a blocker of the next step, in the report itself


def test_a_pool_whose_mig_layout_is_missing_has_no_drain_shortfall(tmp_path: Path) -> None:
    """What such a pool exposes is unknown (MIG004 names the layout): the worst moment of its drain says so
    and counts no shortfall, for UPG008, `upgrade status` and the upgrades page alike."""
    from support import copy_repo

    repo = copy_repo(REPO, tmp_path / "repo")
    pool_file = repo / "pools/eu-a100-mig-balanced/pool.yaml"
    pool_file.write_text(pool_file.read_text().replace("layout: all-balanced", "layout: all-balanced-typo"))
    fleet = pipeline.load_fleet(repo)
    plan = next(p for p in upgrades.plans_of(fleet).plans if p.component == "driver")
    moments = [
        m
        for stage in plan.stages
        for m in upgrades.drain_moments(fleet, plan, stage)
        if m.pool.name == "eu-a100-mig-balanced"
    ]
    assert moments and all(not m.capacity_known and m.shortfalls == {} for m in moments)
    assert "what the pool exposes is unknown (MIG layout all-balanced-typo" in moments[0].describe()


@needs_git
def test_watch_refuses_a_stage_started_in_the_future(repo: Path, capsys) -> None:
    """A canary `started: 2099-01-01` made watch exit 0 ("nothing to watch") during a breach (issue 29)."""
    plan = repo / "policies/upgrades/plan.yaml"
    plan.write_text(
        plan.read_text().replace('started: "2026-11-10T09:00:00Z"', 'started: "2099-01-01T09:00:00Z"')
    )
    _git(repo, "commit", "-q", "-am", "hand edit")
    assert (
        _upgrade(repo, "watch", "driver-next", "--prometheus", "http://127.0.0.1:9", "--now", AFTER_SOAK) == 2
    )
    assert "started in the future" in capsys.readouterr().err
