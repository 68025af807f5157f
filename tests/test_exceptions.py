"""Reviewed exceptions (issue 14): an exception in force accepts its finding, which stays visible and is counted;
an expired one fails the build; an incomplete one is an error. The minirepo, with the CPU flavor and tainted pool of
WL012's good fixture laid over it (so every workload-matrix case lands), has one error to accept: SEC003 (no
admission policy) at clusters/mini/kustomization.yaml:4; raising alpha's quota adds CAP015 on its ResourceQuota."""

from __future__ import annotations

import json
import shutil
from datetime import date
from pathlib import Path

import pytest
from support import MINIREPO

from gpupolicy import diff, pipeline, waivers
from gpupolicy.cli import main
from gpupolicy.findings import Finding, Severity

EXCEPTION = """\
apiVersion: gpupolicy/v1
kind: Exceptions
exceptions:
  - rule: SEC003
    path: clusters/*/kustomization.yaml
    reason: "the mini cluster runs no admission policies yet"
    owner: platform-oncall
    expires: "{expires}"
"""


LANDING_MATRIX = Path(__file__).resolve().parent / "rules" / "WL012" / "good" / "cpu-flavor-first"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    copy = shutil.copytree(MINIREPO, tmp_path / "repo")
    return shutil.copytree(LANDING_MATRIX, copy, dirs_exist_ok=True)


def _except(repo: Path, expires: str) -> None:
    (repo / "policies/exceptions.yaml").write_text(EXCEPTION.format(expires=expires))


def _validate(repo: Path, capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str]:
    code = main(["validate", "--repo", str(repo), "--no-cache", *args])
    return code, capsys.readouterr().out


def test_an_exception_in_force_accepts_the_finding_and_counts_it(repo: Path, capsys: pytest.CaptureFixture) -> None:
    code, text = _validate(repo, capsys)
    assert code == 1 and "error SEC003" in text  # without an exception
    _except(repo, "2099-12-31")
    code, text = _validate(repo, capsys)
    assert code == 0
    assert "error SEC003" not in text
    assert text.strip().splitlines()[-1].startswith("ok: 0 error(s), 0 warning(s), 1 waived by reviewed exceptions")
    code, text = _validate(repo, capsys, "--show-waived")
    assert "clusters/mini/kustomization.yaml:4: waived error SEC003: cluster mini renders no " \
           "ValidatingAdmissionPolicy" in text
    assert "    exception: the mini cluster runs no admission policies yet (owner platform-oncall, expires " \
           "2099-12-31; policies/exceptions.yaml:4)" in text


def test_an_expired_exception_fails_validation_and_accepts_nothing(repo: Path, capsys: pytest.CaptureFixture) -> None:
    _except(repo, "2020-01-31")
    code, text = _validate(repo, capsys)
    assert code == 1
    assert "policies/exceptions.yaml:4: error EXC002: exception for SEC003 (path clusters/*/kustomization.yaml, " \
           "owner platform-oncall) expired on 2020-01-31; its findings are reported again" in text
    assert "clusters/mini/kustomization.yaml:4: error SEC003" in text
    assert "waived" not in text


def test_json_and_sarif_keep_the_waived_finding(repo: Path, capsys: pytest.CaptureFixture) -> None:
    _except(repo, "2099-12-31")
    _code, text = _validate(repo, capsys, "--format", "json")
    data = json.loads(text)
    assert data["summary"]["waived"] == 1 and data["summary"]["errors"] == 0
    [item] = data["waived"]
    assert (item["rule"], item["path"], item["line"]) == ("SEC003", "clusters/mini/kustomization.yaml", 4)
    assert item["exception"] == {"rule": "SEC003", "selector": "path clusters/*/kustomization.yaml",
                                 "reason": "the mini cluster runs no admission policies yet",
                                 "owner": "platform-oncall", "expires": "2099-12-31",
                                 "source": "policies/exceptions.yaml:4", "inline": False}
    _code, text = _validate(repo, capsys, "--format", "sarif")
    [result] = [r for r in json.loads(text)["runs"][0]["results"] if r["ruleId"] == "SEC003"]
    assert result["suppressions"] == [{
        "kind": "external", "status": "accepted",
        "justification": "the mini cluster runs no admission policies yet (owner platform-oncall, expires 2099-12-31)",
        "location": {"physicalLocation": {"artifactLocation": {"uri": "policies/exceptions.yaml",
                                                               "uriBaseId": "%SRCROOT%"},
                                          "region": {"startLine": 4}}}}]
    _code, text = _validate(repo, capsys, "--format", "github")
    assert "SEC003" not in text  # annotations are what fails the build


def _raise_alpha(repo: Path) -> None:
    queues = repo / "clusters/mini/queues.yaml"
    queues.write_text(queues.read_text().replace("nominalQuota: 16", "nominalQuota: 24", 1))


def test_an_object_selector_and_an_annotation_accept_the_findings_of_that_object(repo: Path) -> None:
    _raise_alpha(repo)
    (repo / "policies/exceptions.yaml").write_text(EXCEPTION.format(expires="2099-12-31").replace(
        "    path: clusters/*/kustomization.yaml\n", "    object: {kind: Namespace, name: alpha}\n").replace(
        "SEC003", "CAP015"))
    result = pipeline.run(repo)
    assert any(f.rule == "EXC003" for f in result.findings)  # the Namespace's document holds no CAP015
    assert [f.rule for f in result.findings if f.rule == "CAP015"] == ["CAP015"]
    team = repo / "policies/base/team.yaml"
    team.write_text(team.read_text().replace(
        "  name: gpu\n  namespace: alpha\n",
        "  name: gpu\n  namespace: alpha\n  annotations:\n    exception.gpupolicy.io/CAP015: "
        "'{reason: \"alpha borrows past its namespace quota on purpose\", owner: alpha-lead, expires: 2099-12-31}'\n"))
    (repo / "policies/exceptions.yaml").unlink()
    result = pipeline.run(repo)
    assert not [f for f in result.findings if f.rule in ("CAP015", "EXC001", "EXC003")]
    [item] = [w for w in result.waived if w.finding.rule == "CAP015"]
    assert item.waiver.inline and item.waiver.object_ref == "ResourceQuota alpha/gpu"
    assert item.waiver.source.path == "policies/base/team.yaml"


def test_the_diff_comment_counts_the_waived_findings(repo: Path) -> None:
    base = pipeline.run(repo)
    _except(repo, "2099-12-31")
    head = pipeline.run(repo)
    result = diff.compare(base.fleet, head.fleet, base.findings, head.findings, "b", "h", (), head.waived)
    markdown = diff.to_markdown(result)
    assert "0 introduced, 1 fixed, 0 pre-existing, 1 waived by reviewed exceptions." in markdown
    assert "<details><summary>Waived by reviewed exceptions</summary>" in markdown
    assert json.loads(diff.to_json(result))["waived"][0]["exception"]["owner"] == "platform-oncall"


def test_the_site_lists_the_exceptions_in_force(repo: Path) -> None:
    from gpupolicy.docsgen import Context
    from gpupolicy.docsgen.exceptions import pages

    _except(repo, "2099-12-31")
    fleet = pipeline.load_fleet(repo)
    text = pages(Context(repo, fleet))["exceptions.md"]
    assert "| [SEC003](rules/SEC003.md) | path clusters/*/kustomization.yaml | the mini cluster runs no admission " \
           "policies yet | platform-oncall | 2099-12-31 | `policies/exceptions.yaml:4` |" in text


@pytest.mark.parametrize(("pattern", "path", "matches"), [
    ("clusters/*/queues.yaml", "clusters/prod-eu/queues.yaml", True),
    ("clusters/*/queues.yaml", "clusters/prod-eu/queues/x/queues.yaml", False),
    ("clusters/**/queues.yaml", "clusters/queues.yaml", True),
    ("clusters/**/queues.yaml", "clusters/a/b/queues.yaml", True),
    ("pools/eu-?4-shared/pool.yaml", "pools/eu-l4-shared/pool.yaml", True),
    ("pools/[a]/pool.yaml", "pools/a/pool.yaml", False),  # no character classes: brackets are literal
])
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
