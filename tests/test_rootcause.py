"""Root cause first (issue 14): a MIG layout with a profile the GPU does not have (MIG001) makes every quota
on its pools fail too (CAP002 x5) and the upgrade drain check (UPG008). The derived findings are reported
under MIG001 in
every output, and still count."""

from __future__ import annotations

import json

import pytest
from support import copy_repo, fleet_repo

from gpupolicy import diff, pipeline, report

LAYOUT = "policies/gpu-operator/mig-parted-config.yaml"


@pytest.fixture(scope="module")
def bad_profile(tmp_path_factory: pytest.TempPathFactory) -> tuple[pipeline.RunResult, pipeline.RunResult]:
    """The tests' own rich fleet (base, support.fleet_repo) and the same with all-balanced's 3g.40gb misspelt
    3g.45gb (head)."""
    base = fleet_repo()
    head = copy_repo(base, tmp_path_factory.mktemp("rootcause") / "repo")
    layout = head / LAYOUT
    layout.write_text(layout.read_text().replace('"3g.40gb": 1', '"3g.45gb": 1', 1))
    return pipeline.run(base), pipeline.run(head)


def test_the_derived_findings_are_linked_to_the_invalid_profile(bad_profile) -> None:
    _base, head = bad_profile
    derived = {(f.rule, f.path): cause for f, cause in head.causes.items()}
    # CAP002 per quota on the pool, UPG008 its drain, DOC006 the header of each queue that states its figures
    assert sorted(rule for rule, _path in derived) == ["CAP002"] * 5 + ["DOC006"] * 6 + ["UPG008"]
    assert {(cause.rule, cause.path, cause.line) for cause in derived.values()} == {("MIG001", LAYOUT, 45)}
    assert head.errors == 14  # nothing is dropped: the derived errors still count


def test_text_puts_the_cause_first_with_its_consequences_under_it(bad_profile) -> None:
    _base, head = bad_profile
    lines = report.as_text(head).splitlines()
    assert lines[0].startswith(
        f"{LAYOUT}:45: error MIG001: all-balanced[0]: 3g.45gb is not a MIG profile of A100-80GB"
    )
    nested = [line for line in lines if line.startswith("  -> ")]
    effects = (" error CAP002: ", " error UPG008: ", " error DOC006: ")
    assert len(nested) == 12 and all(any(effect in line for effect in effects) for line in nested)
    assert lines.index(nested[-1]) < next(i for i, line in enumerate(lines) if "MIG001" in line and i > 0)


def test_json_sarif_and_markdown_name_the_cause(bad_profile) -> None:
    base, head = bad_profile
    findings = json.loads(report.as_json(head))["findings"]
    upg008 = next(f for f in findings if f["rule"] == "UPG008")
    assert upg008["caused_by"]["rule"] == "MIG001" and upg008["caused_by"]["line"] == 45
    assert "caused_by" not in next(f for f in findings if f["rule"] == "MIG001")
    results = json.loads(report.FORMATTERS["sarif"](head, ""))["runs"][0]["results"]
    related = [r["relatedLocations"][0] for r in results if r["ruleId"] == "CAP002"]
    assert len(related) == 5 and related[0]["physicalLocation"]["region"] == {"startLine": 45}
    assert related[0]["message"]["text"].startswith("caused by MIG001: all-balanced[0]: 3g.45gb")
    compared = diff.compare(
        base.fleet, head.fleet, base.findings, head.findings, "b", "h", (), (), head.causes
    )
    rows = [line for line in diff.to_markdown(compared).splitlines() if line.startswith("| error |")]
    # each rule links to its page on the runbook site (mkdocs.yml site_url), as SARIF's helpUri does
    assert "| [MIG001](https://gpu-platform.example.com/generated/rules/MIG001/) |" in rows[0]
    assert all(any(f"| ↳ [{rule}](" in r for rule in ("CAP002", "UPG008", "DOC006")) for r in rows[1:13])
