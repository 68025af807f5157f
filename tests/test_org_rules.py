"""Organization rules without forking (issue 14): a plugin package found through the `gpupolicy.rules` entry
point, and a declarative check under policies/checks/. The sample package (tests/orgrules/acme_gpu_rules) is
installed the way pip leaves a package: its folder and a `*.dist-info` with `entry_points.txt` on the import
path of a fresh `gpupolicy` process, so discovery is importlib.metadata's own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import guardfleet
import pytest
from support import MINIREPO

from gpupolicy import pipeline

HERE = Path(__file__).resolve().parent
SAMPLE_PACKAGE = HERE / "orgrules" / "acme_gpu_rules"
SAMPLE_CHECK = (
    HERE / "rules" / "CFG002" / "good" / "declarative-check" / "policies" / "checks" / "team-quota.yaml"
)


def _install(site: Path, extra_modules: dict[str, str] | None = None) -> Path:
    """The sample package and its distribution metadata in `site` (what `pip install` would leave there)."""
    package = shutil.copytree(SAMPLE_PACKAGE, site / "acme_gpu_rules")
    for name, text in (extra_modules or {}).items():
        (package / f"{name}.py").write_text(text)
    dist_info = site / "acme_gpu_rules-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-gpu-rules\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text("[gpupolicy.rules]\nacme = acme_gpu_rules\n")
    return site


def _gpupolicy(site: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "gpupolicy", *args], capture_output=True, text=True, env=env, timeout=300
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = shutil.copytree(MINIREPO, tmp_path / "repo")
    (repo / "policies" / "checks").mkdir()
    shutil.copyfile(SAMPLE_CHECK, repo / "policies" / "checks" / "team-quota.yaml")
    return repo


def test_a_declarative_check_reports_at_the_objects_line(repo: Path) -> None:
    found = [f for f in pipeline.run(repo).findings if f.rule == "ACME-QUOTA001"]
    assert [(f.path, f.line, f.severity.value, f.cluster) for f in found] == [
        ("policies/base/team.yaml", 16, "warning", "mini")
    ]
    assert found[0].message == "team GPU quota above 8 in a test cluster (ResourceQuota alpha/gpu)"
    quota = repo / "policies" / "base" / "team.yaml"
    quota.write_text(
        quota.read_text().replace('requests.nvidia.com/gpu: "16"', 'requests.nvidia.com/gpu: "8"')
    )
    assert not [f for f in pipeline.run(repo).findings if f.rule == "ACME-QUOTA001"]


def test_the_config_can_rerate_a_declarative_check(repo: Path) -> None:
    (repo / "gpupolicy.yaml").write_text(
        "apiVersion: gpupolicy/v1\nkind: Config\nseverity:\n  - {rule: ACME-QUOTA001, severity: error}\n"
    )
    found = [f for f in pipeline.run(repo).findings if f.rule.startswith(("ACME", "CFG"))]
    assert [(f.rule, f.severity.value) for f in found] == [("ACME-QUOTA001", "error")]


def test_an_installed_plugin_runs_and_is_listed_with_the_declarative_checks(
    repo: Path, tmp_path: Path
) -> None:
    site = _install(tmp_path / "site")
    listed = _gpupolicy(site, "rules", "--repo", str(repo), "--format", "json")
    assert listed.returncode == 0, listed.stderr
    org = {r["id"]: r for r in json.loads(listed.stdout) if r["id"].startswith("ACME-")}
    assert set(org) == {"ACME-COST001", "ACME-QUOTA001"}
    assert org["ACME-COST001"]["category"] == "Organization rules (ACME)"
    run = _gpupolicy(site, "validate", "--repo", str(repo), "--no-cache", "--format", "json")
    findings = json.loads(run.stdout)["findings"]
    cost = [f for f in findings if f["rule"] == "ACME-COST001"]
    assert [(f["path"], f["line"], f["message"]) for f in cost] == [
        ("clusters/mini/queues.yaml", 5, "ClusterQueue alpha has no acme.example/cost-center label")
    ]
    assert not [f for f in findings if f["rule"] in ("CFG002", "INTERNAL")]


CRASHING_RULE = '''"""Crashes, as a buggy plugin rule would."""
from gpupolicy.findings import Severity

ID = "ACME-CRASH001"
SEVERITY = Severity.ERROR
SUMMARY = "always crashes"


def check(fleet):
    raise RuntimeError("plugin bug")
    yield
'''

UNPREFIXED_RULE = CRASHING_RULE.replace('ID = "ACME-CRASH001"', 'ID = "CAP001"')


def test_a_crashing_plugin_rule_is_internal_and_an_unprefixed_one_is_refused(
    repo: Path, tmp_path: Path
) -> None:
    site = _install(tmp_path / "site", {"crashing": CRASHING_RULE, "shadowing": UNPREFIXED_RULE})
    run = _gpupolicy(site, "validate", "--repo", str(repo), "--no-cache", "--format", "json")
    assert run.returncode == 2, run.stderr  # a check did not run: the run is incomplete
    findings = json.loads(run.stdout)["findings"]
    internal = [f["message"] for f in findings if f["rule"] == "INTERNAL"]
    assert internal == ["rule ACME-CRASH001 crashed: RuntimeError: plugin bug"]
    refused = [f["message"] for f in findings if f["rule"] == "CFG002"]
    assert len(refused) == 1 and "rule ID 'CAP001' has no organization prefix" in refused[0]
    assert any(f["rule"] == "ACME-COST001" for f in findings)  # the package's sound rules still run


def test_a_plugin_module_that_does_not_import_is_internal(repo: Path, tmp_path: Path) -> None:
    site = _install(tmp_path / "site", {"broken": "import acme_dependency_that_is_missing\n"})
    run = _gpupolicy(site, "validate", "--repo", str(repo), "--no-cache", "--format", "json")
    assert run.returncode == 2
    findings = json.loads(run.stdout)["findings"]
    assert [f["message"] for f in findings if f["rule"] == "INTERNAL"] == [
        "plugin acme (acme_gpu_rules): module acme_gpu_rules.broken cannot be imported: ModuleNotFoundError: "
        "No module named 'acme_dependency_that_is_missing'"
    ]
    assert any(f["rule"] == "ACME-COST001" for f in findings)  # the package's other rules still run


def test_a_reviewed_exception_can_accept_a_declarative_checks_finding(repo: Path) -> None:
    (repo / "docs").mkdir()
    (repo / "docs" / "CODEOWNERS").write_text(guardfleet.CODEOWNERS)
    (repo / "policies" / "exceptions.yaml").write_text(
        "apiVersion: gpupolicy/v1\nkind: Exceptions\nexceptions:\n  - rule: ACME-QUOTA001\n"
        "    path: policies/base/team.yaml\n    reason: alpha's quota is raised for the benchmark week\n"
        f"    owner: alpha-lead\n    expires: '{guardfleet.in_days(30)}'\n"
    )
    result = pipeline.run(repo)
    assert not [f for f in result.findings if f.rule.startswith(("ACME", "EXC"))]
    assert [item.finding.rule for item in result.waived if item.finding.rule.startswith("ACME")] == [
        "ACME-QUOTA001"
    ]
