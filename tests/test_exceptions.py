"""Reviewed exceptions (issue 14): an exception in force accepts its finding, which stays visible and is
counted; an expired one fails the build; an incomplete one is an error. The fleet of `guardfleet` has one
error to accept: CAP015 (alpha's namespace quota below its queue's) at policies/base/team.yaml:23. Since issue
29 an exception is
bounded (EXC004: glob, expiry within 90 days, an owner CODEOWNERS names) and never for a protected rule."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import guardfleet
import pytest

from gpupolicy import diff, pipeline
from gpupolicy.cli import main
from gpupolicy.domain import waivers
from gpupolicy.findings import Finding, Severity

EXCEPTION = """\
apiVersion: gpupolicy/v1
kind: Exceptions
exceptions:
  - rule: CAP015
    path: policies/*/team.yaml
    reason: "alpha borrows past its namespace quota on purpose"
    owner: platform-oncall
    expires: "{expires}"
"""
IN_FORCE = guardfleet.in_days(30)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return guardfleet.fleet(tmp_path / "repo")


def _except(repo: Path, expires: str) -> None:
    (repo / "policies/exceptions.yaml").write_text(EXCEPTION.format(expires=expires))


def _validate(repo: Path, capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str]:
    code = main(["validate", "--repo", str(repo), "--no-cache", *args])
    return code, capsys.readouterr().out


def test_an_exception_in_force_accepts_the_finding_and_counts_it(
    repo: Path, capsys: pytest.CaptureFixture
) -> None:
    code, text = _validate(repo, capsys)
    assert code == 1 and "error CAP015" in text  # without an exception
    _except(repo, IN_FORCE)
    code, text = _validate(repo, capsys)
    assert code == 0
    assert "error CAP015" not in text
    assert (
        text.strip()
        .splitlines()[-1]
        .startswith("ok: 0 error(s), 0 warning(s), 1 waived by reviewed exceptions")
    )
    code, text = _validate(repo, capsys, "--show-waived")
    assert "policies/base/team.yaml:23: waived error CAP015: ResourceQuota alpha/gpu allows" in text
    assert (
        "    exception: alpha borrows past its namespace quota on purpose (owner platform-oncall, "
        "expires "
        f"{IN_FORCE}; policies/exceptions.yaml:4)" in text
    )


def test_an_expired_exception_fails_validation_and_accepts_nothing(
    repo: Path, capsys: pytest.CaptureFixture
) -> None:
    _except(repo, "2020-01-31")
    code, text = _validate(repo, capsys)
    assert code == 1
    assert (
        "policies/exceptions.yaml:4: error EXC002: exception for CAP015 (path policies/*/team.yaml, "
        "owner platform-oncall) expired on 2020-01-31; its findings are reported again" in text
    )
    assert "policies/base/team.yaml:23: error CAP015" in text
    assert "waived" not in text


def test_json_and_sarif_keep_the_waived_finding(repo: Path, capsys: pytest.CaptureFixture) -> None:
    _except(repo, IN_FORCE)
    _code, text = _validate(repo, capsys, "--format", "json")
    data = json.loads(text)
    assert data["summary"]["waived"] == 1 and data["summary"]["errors"] == 0
    [item] = data["waived"]
    assert (item["rule"], item["path"], item["line"]) == ("CAP015", "policies/base/team.yaml", 23)
    assert item["exception"] == {
        "rule": "CAP015",
        "selector": "path policies/*/team.yaml",
        "reason": "alpha borrows past its namespace quota on purpose",
        "owner": "platform-oncall",
        "expires": IN_FORCE,
        "source": "policies/exceptions.yaml:4",
        "inline": False,
    }
    _code, text = _validate(repo, capsys, "--format", "sarif")
    [result] = [r for r in json.loads(text)["runs"][0]["results"] if r["ruleId"] == "CAP015"]
    assert result["suppressions"] == [
        {
            "kind": "external",
            "status": "accepted",
            "justification": "alpha borrows past its namespace quota on purpose (owner platform-oncall, "
            f"expires {IN_FORCE})",
            "location": {
                "physicalLocation": {
                    "artifactLocation": {"uri": "policies/exceptions.yaml", "uriBaseId": "%SRCROOT%"},
                    "region": {"startLine": 4},
                }
            },
        }
    ]
    _code, text = _validate(repo, capsys, "--format", "github")
    assert "CAP015" not in text  # annotations are what fails the build


def test_an_object_selector_and_an_annotation_accept_the_findings_of_that_object(repo: Path) -> None:
    (repo / "policies/exceptions.yaml").write_text(
        EXCEPTION.format(expires=IN_FORCE).replace(
            "    path: policies/*/team.yaml\n", "    object: {kind: Namespace, name: alpha}\n"
        )
    )
    result = pipeline.run(repo)
    assert any(f.rule == "EXC003" for f in result.findings)  # the Namespace's document holds no CAP015
    assert [f.rule for f in result.findings if f.rule == "CAP015"] == ["CAP015"]
    team = repo / "policies/base/team.yaml"
    team.write_text(
        team.read_text().replace(
            "  name: gpu\n  namespace: alpha\n",
            "  name: gpu\n  namespace: alpha\n  annotations:\n    exception.gpupolicy.io/CAP015: "
            "'{reason: \"alpha borrows past its namespace quota on purpose\", owner: alpha-lead, expires: "
            f"{IN_FORCE}}}'\n",
        )
    )
    (repo / "policies/exceptions.yaml").unlink()
    result = pipeline.run(repo)
    assert not [f for f in result.findings if f.rule in ("CAP015", "EXC001", "EXC003")]
    [item] = [w for w in result.waived if w.finding.rule == "CAP015"]
    assert item.waiver.inline and item.waiver.object_ref == "ResourceQuota alpha/gpu"
    assert item.waiver.source.path == "policies/base/team.yaml"


def test_the_diff_comment_counts_the_waived_findings(repo: Path) -> None:
    base = pipeline.run(repo)
    _except(repo, IN_FORCE)
    head = pipeline.run(repo)
    result = diff.compare(base.fleet, head.fleet, base.findings, head.findings, "b", "h", (), head.waived)
    markdown = diff.to_markdown(result)
    assert "0 introduced, 1 fixed, 0 pre-existing, 1 waived by reviewed exceptions." in markdown
    assert "<details><summary>Waived by reviewed exceptions</summary>" in markdown
    assert json.loads(diff.to_json(result))["waived"][0]["exception"]["owner"] == "platform-oncall"


def test_the_site_lists_the_exceptions_in_force(repo: Path) -> None:
    from gpupolicy.docsgen import Context
    from gpupolicy.docsgen.exceptions import pages

    _except(repo, IN_FORCE)
    fleet = pipeline.load_fleet(repo)
    text = pages(Context(repo, fleet))["exceptions.md"]
    assert (
        "| [CAP015](rules/CAP015.md) | path policies/*/team.yaml | alpha borrows past its namespace "
        "quota on "
        f"purpose | platform-oncall | {IN_FORCE} | `policies/exceptions.yaml:4` |" in text
    )


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("clusters/*/queues.yaml", "clusters/prod-eu/queues.yaml", True),
        ("clusters/*/queues.yaml", "clusters/prod-eu/queues/x/queues.yaml", False),
        ("clusters/**/queues.yaml", "clusters/queues.yaml", True),
        ("clusters/**/queues.yaml", "clusters/a/b/queues.yaml", True),
        ("pools/eu-?4-shared/pool.yaml", "pools/eu-l4-shared/pool.yaml", True),
        ("pools/[a]/pool.yaml", "pools/a/pool.yaml", False),  # no character classes: brackets are literal
    ],
)
def test_path_globs(pattern: str, path: str, matches: bool) -> None:
    waiver = waivers.Waiver("CAP001", "r", "o", date(2099, 1, 1), waivers.Location("x", 1), path_glob=pattern)
    assert waiver.covers(Finding("CAP001", Severity.ERROR, "m", path, 1)) is matches


def test_a_crash_is_never_waived() -> None:
    from gpupolicy.model import Fleet

    waiver = waivers.Waiver("INTERNAL", "r", "o", date(2099, 1, 1), waivers.Location("x", 1), path_glob="**")
    fleet = Fleet(root="x")
    fleet.memo("waivers", lambda: waivers.WaiverSet([waiver]))  # as if the file had slipped it through
    crash = Finding("INTERNAL", Severity.ERROR, "rule X crashed", "a.yaml", 1)
    outcome = waivers.apply(fleet, [crash], date(2026, 1, 1))
    assert waiver.covers(crash) and outcome.kept == [crash] and outcome.waived == []
