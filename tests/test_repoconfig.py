"""gpupolicy.yaml: severity overrides and disabled rules, applied after the checks and before the report."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from gpupolicy import pipeline, report
from gpupolicy.configure import repoconfig
from gpupolicy.findings import Finding, Location, Severity
from gpupolicy.infra.yamlload import load_text

REPO = Path(__file__).resolve().parents[1]
MINIREPO = REPO / "tests" / "fixtures" / "minirepo"
KNOWN = {
    "WL012": Severity.ERROR,
    "OBS003": Severity.ERROR,
    "EXC002": Severity.ERROR,
    "EXC003": Severity.WARNING,
    "INTERNAL": Severity.ERROR,
}


def _config(text: str) -> repoconfig.RepoConfig:
    doc = load_text(text, repoconfig.CONFIG_FILE).documents[0]
    return repoconfig.parse(doc, KNOWN)


def _finding(rule: str, path: str, severity: Severity = Severity.ERROR) -> Finding:
    return Finding(rule, severity, "message", path, 3)


HEADER = "apiVersion: gpupolicy/v1\nkind: Config\n"


def test_first_matching_override_wins_and_disable_drops_only_matching_files() -> None:
    config = _config(
        HEADER
        + """severity:
  - {rule: OBS003, severity: info, paths: ["clusters/dev-*/**"]}
  - {rule: OBS003, severity: warning}
disable:
  - {rule: WL012, paths: ["clusters/dev-*/**"], reason: "dev clusters run no workload matrix"}
"""
    )
    assert not config.problems
    applied = repoconfig.apply(
        config,
        [
            _finding("OBS003", "clusters/dev-eu/a.yaml"),
            _finding("OBS003", "clusters/prod-eu/a.yaml"),
            _finding("WL012", "clusters/dev-eu/q.yaml"),
            _finding("WL012", "clusters/prod-eu/q.yaml"),
        ],
    )
    assert [(f.rule, f.path, f.severity) for f in applied.findings] == [
        ("OBS003", "clusters/dev-eu/a.yaml", Severity.INFO),
        ("OBS003", "clusters/prod-eu/a.yaml", Severity.WARNING),
        ("WL012", "clusters/prod-eu/q.yaml", Severity.ERROR),
    ]
    assert (applied.disabled, applied.rerated) == (1, 2)


def test_protected_rules_may_be_raised_but_never_lowered_or_disabled() -> None:
    raised = _config(HEADER + "severity:\n  - {rule: EXC003, severity: error}\n")
    assert not raised.problems
    lowered = _config(HEADER + "severity:\n  - {rule: EXC002, severity: info}\n")
    assert [(p.rule, p.line) for p in lowered.problems] == [("CFG001", 4)]
    assert "EXC002 cannot be lowered to info" in lowered.problems[0].message


def test_a_config_with_any_problem_applies_nothing() -> None:
    config = _config(
        HEADER
        + """disable:
  - {rule: WL012, paths: ["**"], reason: "not for this repository"}
  - {rule: NOPE001, paths: ["**"], reason: "a typo in the rule"}
"""
    )
    assert [(p.line, p.message) for p in config.problems] == [(5, "no rule NOPE001")]
    applied = repoconfig.apply(config, [_finding("WL012", "clusters/a.yaml")])
    assert [f.rule for f in applied.findings] == ["WL012", "CFG001"]
    assert applied.disabled == 0


def test_schema_errors_name_the_line() -> None:
    config = _config(HEADER + "severity:\n  - {rule: WL012, severity: fatal}\nextra: 1\n")
    lines = sorted((p.line, p.message) for p in config.problems)
    assert lines[0][0] == 4 and "fatal" in lines[0][1]
    assert lines[1] == (5, "gpupolicy.yaml: unknown field 'extra'")


def test_the_configuration_never_hides_itself() -> None:
    problem = Finding("CFG001", Severity.ERROR, "no rule X", "gpupolicy.yaml", 4)
    config = repoconfig.RepoConfig(
        problems=[problem], disabled=[repoconfig.Disabled("CFG001", ("**",), "x" * 10, Location("g", 1))]
    )
    assert repoconfig.apply(config, []).findings == [problem]


def test_validate_applies_the_config_and_says_so_in_the_summary(tmp_path: Path) -> None:
    repo = shutil.copytree(MINIREPO, tmp_path / "repo")
    before = pipeline.run(repo)
    wl012 = [f for f in before.findings if f.rule == "WL012"]
    assert len(wl012) == 2 and all(f.severity is Severity.ERROR for f in wl012)
    (repo / "gpupolicy.yaml").write_text(
        HEADER
        + """severity:
  - {rule: WL012, severity: warning, paths: ["pools/**"]}
disable:
  - {rule: WL012, paths: ["clusters/mini/queues.yaml"], reason: "the mini fixture has no CPU resource group"}
"""
    )
    after = pipeline.run(repo)
    assert [(f.path, f.severity) for f in after.findings if f.rule == "WL012"] == [
        ("pools/mini-a100/pool.yaml", Severity.WARNING)
    ]
    assert (after.disabled, after.rerated) == (1, 1)
    assert "1 disabled and 1 re-rated by gpupolicy.yaml" in report.as_text(after).splitlines()[-1]
    summary = json.loads(report.as_json(after))["summary"]
    assert (summary["disabled"], summary["rerated"]) == (1, 1)


def test_a_config_outside_the_repository_is_refused(tmp_path: Path) -> None:
    repo = shutil.copytree(MINIREPO, tmp_path / "repo")
    (tmp_path / "outside.yaml").write_text(HEADER)
    (repo / "gpupolicy.yaml").symlink_to(tmp_path / "outside.yaml")
    problems = [f for f in pipeline.run(repo).findings if f.rule == "CFG001"]
    assert [(f.path, f.line) for f in problems] == [("gpupolicy.yaml", 1)]
    assert "outside the repository" in problems[0].message
