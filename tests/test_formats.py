"""sarif, junit and github formatters: schema-valid SARIF, one JUnit case per rule, escaped annotations."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace
from xml.etree import ElementTree

import jsonschema
import pytest
from support import GPUPOLICY, MINIREPO, REPO

from gpupolicy import report
from gpupolicy.findings import Finding, Severity
from gpupolicy.report import formats
from gpupolicy.rules import all_rules

SARIF_SCHEMA = REPO / "tests" / "fixtures" / "sarif" / "sarif-schema-2.1.0.json"


def _known_rule() -> str:
    return next(iter(all_rules()))


def _result(*findings: Finding) -> SimpleNamespace:
    return SimpleNamespace(findings=list(findings), timings={"render": 0.5})


def _sample() -> SimpleNamespace:
    rule = _known_rule()
    return _result(
        Finding(
            rule,
            Severity.ERROR,
            "quota 24 > 16, 100%",
            "clusters/mini/queues.yaml",
            18,
            "mini,prod",
            hint="lower it",
        ),
        Finding("XYZ999", Severity.WARNING, "unregistered rule", "pools/p/pool.yaml", 0),
        Finding(rule, Severity.INFO, "no file at all"),
    )


def _sarif_validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SARIF_SCHEMA.read_text())
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    return validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)


def test_formatters_are_registered() -> None:
    assert {"sarif", "junit", "github"} <= set(report.FORMATTERS)


def test_sarif_matches_the_official_schema() -> None:
    log = json.loads(formats.as_sarif(_sample(), str(REPO)))
    errors = sorted(_sarif_validator().iter_errors(log), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors]


def test_sarif_locations_rules_and_levels() -> None:
    run = json.loads(formats.as_sarif(_sample(), str(REPO)))["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    registry = all_rules()
    assert [r["id"] for r in rules[: len(registry)]] == list(registry)
    first = registry[_known_rule()]
    assert rules[0]["shortDescription"]["text"] == first.summary
    assert rules[0]["help"]["text"] == first.doc
    assert rules[-1]["id"] == "XYZ999"
    error, warning, note = run["results"]
    assert error["level"] == "error" and warning["level"] == "warning" and note["level"] == "note"
    location = error["locations"][0]["physicalLocation"]
    assert location == {
        "artifactLocation": {"uri": "clusters/mini/queues.yaml", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 18},
    }
    assert rules[error["ruleIndex"]]["id"] == error["ruleId"]
    assert "region" not in warning["locations"][0]["physicalLocation"]  # line 0 is "unknown", not a line
    assert "locations" not in note
    assert error["properties"]["clusters"] == ["mini", "prod"]


def test_sarif_fingerprint_ignores_line_shifts() -> None:
    one = Finding("CAP001", Severity.ERROR, "m", "a.yaml", 3)
    moved = Finding("CAP001", Severity.ERROR, "m", "a.yaml", 30)
    assert formats.fingerprint(one) == formats.fingerprint(moved)
    assert formats.fingerprint(one) != formats.fingerprint(
        Finding("CAP001", Severity.ERROR, "n", "a.yaml", 3)
    )


def test_junit_one_case_per_rule_failures_per_error() -> None:
    rule = _known_rule()
    second = Finding(rule, Severity.ERROR, "another", "clusters/mini/queues.yaml", 30)
    sample = _sample()
    sample.findings.append(second)
    tree = ElementTree.fromstring(formats.as_junit(sample, str(REPO)))
    cases = tree.findall("./testsuite/testcase")
    assert len(cases) == len(all_rules()) + 1  # every rule, plus the unregistered XYZ999
    case = next(c for c in cases if c.get("name").startswith(f"{rule}:"))
    failures = case.findall("failure")
    assert [f.get("message") for f in failures] == ["quota 24 > 16, 100%", "another"]
    assert "clusters/mini/queues.yaml:18" in failures[0].text and "hint: lower it" in failures[0].text
    assert "info: <repository>: no file at all" in case.find("system-out").text
    unregistered = next(c for c in cases if c.get("name") == "XYZ999")
    assert not unregistered.findall("failure") and "warning:" in unregistered.find("system-out").text
    assert tree.get("failures") == "2" and tree.find("testsuite").get("failures") == "2"


def test_github_annotations_are_escaped() -> None:
    finding = Finding("CAP001", Severity.ERROR, "50% over\nquota", "dir,x/a:b.yaml", 7, hint="fix it")
    line = formats.as_github(_result(finding, Finding("SEC001", Severity.INFO, "note")), "")
    error, notice = line.splitlines()
    assert error == "::error file=dir%2Cx/a%3Ab.yaml,line=7,title=CAP001::50%25 over%0Aquota%0Afix it"
    assert notice == "::notice title=SEC001::note"


@pytest.fixture
def broken_minirepo(tmp_path: Path) -> Path:
    """The minirepo with alpha's quota raised past its pool (16 GPUs) and a duplicate key."""
    root = tmp_path / "repo"
    shutil.copytree(MINIREPO, root)
    queues = root / "clusters" / "mini" / "queues.yaml"
    queues.write_text(queues.read_text().replace("nominalQuota: 16", "nominalQuota: 24"))
    team = root / "policies" / "base" / "team.yaml"
    team.write_text(
        team.read_text().replace("  name: alpha\n  labels:", "  name: alpha\n  name: alpha\n  labels:", 1)
    )
    return root


@pytest.mark.parametrize("fmt", ["sarif", "junit", "github"])
def test_validate_cli_formats_on_a_real_run(broken_minirepo: Path, fmt: str) -> None:
    out = subprocess.run(
        [str(GPUPOLICY), "validate", "--repo", str(broken_minirepo), "--format", fmt],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 1, out.stderr
    expected = Path("policies/base/team.yaml").as_posix()
    if fmt == "sarif":
        log = json.loads(out.stdout)
        assert not list(_sarif_validator().iter_errors(log))
        places = {
            (
                r["ruleId"],
                r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                r["locations"][0]["physicalLocation"]["region"]["startLine"],
            )
            for r in log["runs"][0]["results"]
        }
        assert ("YAML002", expected, 5) in places
    elif fmt == "junit":
        tree = ElementTree.fromstring(out.stdout)
        case = next(c for c in tree.iter("testcase") if c.get("name").startswith("YAML002:"))
        assert f"{expected}:5" in case.find("failure").text
    else:
        assert any(
            line.startswith(f"::error file={expected},line=5,title=YAML002::")
            for line in out.stdout.splitlines()
        )
