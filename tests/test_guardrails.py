"""Issue 29, "the PR configures its own guardrail": with a base revision the guardrail configuration
(gpupolicy.yaml, the exceptions, policies/checks, CODEOWNERS) is the base's, a change to it is CFG003 and
takes effect only once merged; exceptions are bounded and never for a protected rule; the diff headline says
the configuration changed and keeps its guarantees to what the base's configuration reports. Each test is one
defect
of the hostile-input run, on a small fleet committed in a git repository under tmp_path (`guardfleet`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import guardfleet
import pytest
from support import git

from gpupolicy import pipeline
from gpupolicy.cli import main
from gpupolicy.configure import guardrails
from gpupolicy.domain import waivers

HERE = Path(__file__).resolve().parent
CLUSTER_ADMIN = (
    HERE / "rules" / "RBAC004" / "bad" / "team-cluster-admin" / "policies" / "base" / "access.yaml"
)
FAILING_CHECK = HERE / "rules" / "CFG002" / "bad" / "fails-on-an-object" / "policies" / "checks"
CONFIG = "apiVersion: gpupolicy/v1\nkind: Config\n"


@pytest.fixture
def change(tmp_path: Path) -> Path:
    """The clean fleet (CAP015 accepted by a reviewed exception on main), checked out on branch `change`."""
    repo = guardfleet.fleet(tmp_path / "repo")
    _exceptions(repo, _entry("CAP015", "policies/base/team.yaml", guardfleet.in_days(30)))
    return guardfleet.commit_base(repo)


def _entry(rule: str, path: str, expires: str, owner: str = "platform-oncall") -> str:
    return (
        f"  - rule: {rule}\n    path: \"{path}\"\n    reason: \"accepted while the fixture is small\"\n"
        f"    owner: \"{owner}\"\n    expires: \"{expires}\"\n"
    )


def _exceptions(repo: Path, *entries: str) -> None:
    listed = "\n" + "".join(entries) if entries else " []\n"
    (repo / "policies/exceptions.yaml").write_text(
        f"apiVersion: gpupolicy/v1\nkind: Exceptions\nexceptions:{listed}"
    )


def _validate(repo: Path, capsys: pytest.CaptureFixture, *args: str) -> tuple[int, list[dict]]:
    code = main(["validate", "--repo", str(repo), "--no-cache", "--format", "json", *args])
    return code, json.loads(capsys.readouterr().out)["findings"]


def _rules(findings: list[dict]) -> set[str]:
    return {f["rule"] for f in findings}


def test_a_change_disabling_cap001_everywhere_still_fails_against_its_base(
    change: Path, capsys: pytest.CaptureFixture
) -> None:
    guardfleet.raise_alpha(change)
    (change / "gpupolicy.yaml").write_text(
        CONFIG + 'disable:\n  - {rule: CAP001, paths: ["**"], reason: "quotas are checked elsewhere"}\n'
    )
    code, _findings = _validate(change, capsys)
    assert code == 0  # a developer's run without --base applies the working tree's configuration, as before
    code, findings = _validate(change, capsys, "--base", "main")
    assert code == 1
    assert "CAP001" in _rules(findings)
    [changed] = [f for f in findings if f["rule"] == "CFG003"]
    assert (changed["path"], changed["line"]) == ("gpupolicy.yaml", 1)
    assert "takes effect only once merged" in changed["message"]
    assert "@example-org/gpu-platform (docs/CODEOWNERS)" in changed["message"]


def test_severities_lowered_to_info_still_fail_against_the_base(
    change: Path, capsys: pytest.CaptureFixture
) -> None:
    guardfleet.raise_alpha(change)
    git(change, "add", "-A")
    git(change, "commit", "-q", "-m", "alpha +8")  # a committed head: --base compares the commits' files too
    (change / "gpupolicy.yaml").write_text(CONFIG + "severity:\n  - {rule: CAP001, severity: info}\n")
    assert _validate(change, capsys)[0] == 0
    code, findings = _validate(change, capsys, "--base", "main")
    assert code == 1
    assert [f["severity"] for f in findings if f["rule"] == "CAP001"] == ["error"]
    assert ("gpupolicy.yaml", 1) in {(f["path"], f["line"]) for f in findings if f["rule"] == "CFG003"}


def test_an_unbounded_exception_is_refused_with_or_without_a_base(
    change: Path, capsys: pytest.CaptureFixture
) -> None:
    guardfleet.raise_alpha(change)
    _exceptions(
        change,
        _entry("CAP001", "**", "9999-12-31", owner="anyone"),
        _entry("CAP001", "clusters/**", guardfleet.in_days(30)),
        _entry("CAP001", "clusters/mini/queues.yaml", "9999-12-31"),
        _entry("CAP001", "clusters/mini/queues.yaml", guardfleet.in_days(30), owner="anyone"),
        _entry("CAP015", "policies/base/team.yaml", guardfleet.in_days(30)),
    )
    code, findings = _validate(change, capsys)
    assert code == 1 and "CAP001" in _rules(findings)
    refused = sorted((f["line"], f["message"]) for f in findings if f["rule"] == "EXC004")
    assert [line for line, _message in refused] == [4, 9, 14, 19]
    assert "more than 90 days away" in refused[0][1]  # the first bound it breaks
    assert "matches a whole top-level folder" in refused[1][1]
    assert "more than 90 days away" in refused[2][1]
    assert "'anyone' is not an owner CODEOWNERS names" in refused[3][1]
    code, findings = _validate(change, capsys, "--base", "main")
    assert code == 1 and "CAP001" in _rules(findings) and "EXC004" not in _rules(findings)  # the base's file
    assert ("policies/exceptions.yaml", 4) in {
        (f["path"], f["line"]) for f in findings if f["rule"] == "CFG003"
    }


def test_an_owner_the_change_adds_to_codeowners_owns_nothing_yet(
    change: Path, capsys: pytest.CaptureFixture
) -> None:
    guardfleet.raise_alpha(change)
    codeowners = change / "docs/CODEOWNERS"
    codeowners.write_text(
        codeowners.read_text() + "/policies/exceptions.yaml  @example-org/platform-oncall "
        "@example-org/mallory\n"
    )
    _exceptions(
        change,
        _entry("CAP001", "clusters/mini/queues.yaml", guardfleet.in_days(30), owner="mallory"),
        _entry("CAP015", "policies/base/team.yaml", guardfleet.in_days(30)),
    )
    code, findings = _validate(change, capsys)
    assert code == 0, findings  # the working tree's CODEOWNERS names mallory
    shutil.copyfile(change / "policies/exceptions.yaml", change / "exceptions.kept")
    git(change, "add", "-A")
    git(change, "commit", "-q", "-m", "mallory owns exceptions")
    code, findings = _validate(change, capsys, "--base", "main")
    assert code == 1 and "CAP001" in _rules(findings)
    assert {"docs/CODEOWNERS", "policies/exceptions.yaml"} <= {
        f["path"] for f in findings if f["rule"] == "CFG003"
    }


def test_a_team_group_bound_to_cluster_admin_cannot_be_waived_inline(
    change: Path, capsys: pytest.CaptureFixture
) -> None:
    access = change / "policies/base/access.yaml"
    shutil.copyfile(CLUSTER_ADMIN, access)
    access.write_text(
        access.read_text().replace(
            "  name: alpha-admin\n",
            "  name: alpha-admin\n  annotations:\n    exception.gpupolicy.io/RBAC004: '{reason: \"alpha runs "
            "its own "
            f"operators for now\", owner: platform-oncall, expires: {guardfleet.in_days(30)}}}'\n",
        )
    )
    kustomization = change / "policies/base/kustomization.yaml"
    kustomization.write_text(kustomization.read_text() + "  - access.yaml\n")
    code, findings = _validate(change, capsys)
    assert code == 1
    assert any(f["rule"] == "RBAC004" and "cluster-admin to Group alpha" in f["message"] for f in findings)
    [refused] = [f for f in findings if f["rule"] == "EXC001"]
    assert refused["path"] == "policies/base/access.yaml"
    assert "RBAC004 cannot be waived (a security rule)" in refused["message"]


def test_an_inline_exception_new_in_the_change_waits_for_the_merge(
    change: Path, capsys: pytest.CaptureFixture
) -> None:
    _exceptions(change)  # the base no longer accepts CAP015 in the file ...
    git(change, "commit", "-q", "-am", "no file exception")
    git(change, "branch", "-f", "main")
    team = change / "policies/base/team.yaml"
    team.write_text(
        team.read_text().replace(  # ... but by an annotation the change adds to the ResourceQuota
            "  name: gpu\n  namespace: alpha\n",
            "  name: gpu\n  namespace: alpha\n  annotations:\n    exception.gpupolicy.io/CAP015: '{reason: "
            "\"alpha "
            f"borrows past its namespace quota\", owner: alpha-lead, expires: {guardfleet.in_days(30)}}}'\n",
        )
    )
    code, findings = _validate(change, capsys)
    assert code == 0, findings
    code, findings = _validate(change, capsys, "--base", "main")
    assert code == 1 and "CAP015" in _rules(findings)
    assert ("policies/base/team.yaml", 22) in {
        (f["path"], f["line"]) for f in findings if f["rule"] == "CFG003"
    }
    git(change, "add", "-A")
    git(change, "commit", "-q", "-m", "inline exception")
    git(change, "branch", "-f", "main")  # merged: the base now has the annotation
    code, findings = _validate(change, capsys, "--base", "main")
    assert code == 0, findings


def test_an_org_check_failing_on_every_object_cannot_be_waived(
    change: Path, capsys: pytest.CaptureFixture
) -> None:
    shutil.copytree(FAILING_CHECK, change / "policies/checks")
    code, findings = _validate(change, capsys)
    failures = [f for f in findings if f["rule"] == "CFG002"]
    assert code == 1 and failures
    _exceptions(
        change,
        _entry("CAP015", "policies/base/team.yaml", guardfleet.in_days(30)),
        _entry("CFG002", failures[0]["path"], guardfleet.in_days(30)),
    )
    code, findings = _validate(change, capsys)
    assert code == 1
    assert [f["rule"] for f in findings if f["rule"] == "CFG002"] == ["CFG002"] * len(failures)
    assert any(f["rule"] == "EXC001" and "CFG002 cannot be waived" in f["message"] for f in findings)


def test_the_base_org_checks_apply_to_the_change(change: Path, capsys: pytest.CaptureFixture) -> None:
    (change / "policies/checks").mkdir()
    (change / "policies/checks/quota.yaml").write_text(
        "apiVersion: gpupolicy/v1\nkind: Check\nid: ACME-QUOTA001\nseverity: error\nsummary: small team "
        "quotas\nmatch: {kinds: [ResourceQuota]}\nexpression: \"object.spec.hard['requests.nvidia.com/gpu'] "
        "!= '16'\"\nmessage: a team quota of 16 GPUs\n"
    )
    git(change, "add", "-A")
    git(change, "commit", "-q", "-m", "org check")
    git(change, "branch", "-f", "main")
    team = change / "policies/base/team.yaml"
    team.write_text(team.read_text().replace('requests.nvidia.com/gpu: "8"', 'requests.nvidia.com/gpu: "16"'))
    (change / "policies/checks/quota.yaml").unlink()  # the change deletes the check that would stop it
    assert "ACME-QUOTA001" not in _rules(_validate(change, capsys)[1])
    code, findings = _validate(change, capsys, "--base", "main")
    assert code == 1 and "ACME-QUOTA001" in _rules(findings)
    assert ("policies/checks/quota.yaml", 0) in {
        (f["path"], f["line"]) for f in findings if f["rule"] == "CFG003"
    }


def test_changed_since_validates_everything_when_only_the_configuration_changed(
    change: Path, capsys: pytest.CaptureFixture
) -> None:
    guardfleet.raise_alpha(change)
    git(change, "commit", "-q", "-am", "alpha +8")
    git(change, "branch", "-f", "main")  # the base already has the over-capacity quota ...
    (change / "gpupolicy.yaml").write_text(
        CONFIG + 'disable:\n  - {rule: CAP001, paths: ["**"], reason: "quotas are checked elsewhere"}\n'
    )
    code = main(
        [
            "validate",
            "--repo",
            str(change),
            "--no-cache",
            "--format",
            "json",
            "--changed-since",
            "main",
            "--base",
            "main",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 1  # ... and a change to the configuration alone reaches no overlay, yet is validated
    assert {"CAP001", "CFG003"} <= _rules(json.loads(out)["findings"])
    assert "guardrail configuration changed (gpupolicy.yaml): validating everything" in err


def test_the_changes_own_configuration_is_still_checked(change: Path, capsys: pytest.CaptureFixture) -> None:
    (change / "gpupolicy.yaml").write_text(CONFIG + "severity:\n  - {rule: CAP01, severity: warning}\n")
    code, findings = _validate(change, capsys, "--base", "main")
    assert code == 1
    assert [(f["line"], f["message"]) for f in findings if f["rule"] == "CFG001"] == [
        (4, "no rule CAP01 (in this change's version, applied once merged)")
    ]


def test_validate_refuses_an_unknown_base(change: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["validate", "--repo", str(change), "--base", "no-such-rev"]) == 2
    assert "unknown git revision 'no-such-rev'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("pattern", "bounded"),
    [
        ("clusters/test-us/queues.yaml", True),
        ("clusters/*/queues.yaml", True),
        ("clusters/**/queues.yaml", True),
        ("clusters/test-us/queues/*.yaml", True),
        ("policies/teams/team-0001/**", True),
        ("**", False),
        ("**/queues.yaml", False),
        ("*/queues.yaml", False),
        ("clusters/**", False),
        ("clusters/*", False),
        ("clusters/**/*.yaml", False),
        ("clusters/**/a/**/b.yaml", False),
        ("clusters/a**/b.yaml", False),
        ("/clusters/a.yaml", False),
    ],
)
def test_bounded_globs(pattern: str, bounded: bool) -> None:
    assert (waivers.bounded_glob_problem(pattern) == "") is bounded


def test_first_changed_line() -> None:
    assert guardrails.first_changed_line(b"a\nb\nc\n", b"a\nB\nc\n") == 2
    assert guardrails.first_changed_line(b"a\nb\n", b"a\nb\nc\n") == 3
    assert guardrails.first_changed_line(b"a\nb\nc\n", b"a\nb\n") == 2
    assert guardrails.first_changed_line(b"", b"a\n") == 1


def test_pipeline_without_a_base_reads_the_working_tree(change: Path) -> None:
    (change / "gpupolicy.yaml").write_text(
        CONFIG + 'disable:\n  - {rule: CAP015, paths: '
        '["policies/base/*.yaml"], reason: "namespace quotas are advisory here"}\n'
    )
    _exceptions(change)
    assert pipeline.run(change).disabled == 1
    assert pipeline.run(change, guardrail_base=guardrails.FromBase(change, "main")).disabled == 0
