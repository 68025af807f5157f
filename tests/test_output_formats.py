"""One table of output formats (issue 16, step 5): `report.FORMATTERS` is complete as soon as `report` is
imported, nothing registers into it, `validate --format` and `diff --format` offer exactly their tables, and a
finding's place and identity are each defined once, on Finding."""

from __future__ import annotations

import argparse
import ast
import hashlib
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from xml.etree import ElementTree

from gpupolicy import diff, report
from gpupolicy.cli import build_parser
from gpupolicy.findings import Finding, Severity
from gpupolicy.report import formats

PACKAGE = Path(__file__).resolve().parents[1] / "tools" / "gpupolicy"
ALL_FORMATS = {"text", "json", "sarif", "junit", "github"}


def _format_choices(command: str) -> list[str]:
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    option = next(a for a in commands.choices[command]._actions if "--format" in a.option_strings)
    return list(option.choices)


def _run_result(*findings: Finding) -> SimpleNamespace:
    return SimpleNamespace(
        findings=list(findings), timings={}, errors=1, warnings=0, objects=0, rendered_clusters=[]
    )


def _fresh_python(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return proc.stdout.strip()


# --- one table, no registration
# --------------------------------------------------------------------------------


def test_validate_offers_exactly_the_formatters() -> None:
    choices = _format_choices("validate")
    assert sorted(choices) == sorted(report.FORMATTERS) and len(choices) == len(set(choices))
    assert set(report.FORMATTERS) == ALL_FORMATS


def test_importing_report_alone_gives_every_format() -> None:
    """No side-effect import: a fresh interpreter that imports only `report` has the whole table."""
    names = _fresh_python("import gpupolicy.report as r; print(' '.join(sorted(r.FORMATTERS)))")
    assert set(names.split()) == ALL_FORMATS


def test_formats_does_not_call_back_into_report() -> None:
    """formats.py lives in the report package (so importing it loads the package's __init__), but it must not
    import from the package itself: the table would again be filled from two sides."""
    source = Path(report.__file__).with_name("formats.py")
    tree = ast.parse(source.read_text(encoding="utf-8"))
    back = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and (
            (node.level == 1 and node.module in (None, "__init__"))
            or node.module in ("gpupolicy.report", "gpupolicy")
        )
    ]
    assert not back, f"formats.py imports its own package at line(s) {back}"
    assert not hasattr(report, "register")


def test_no_module_writes_into_a_format_table() -> None:
    """FORMATTERS and OUTPUTS are literals in their own modules; nobody adds entries from elsewhere."""
    writes = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            target = (
                node.value if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) else None
            )
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("update", "setdefault", "__setitem__")
            ):
                target = node.func.value
            name = getattr(target, "attr", None) or getattr(target, "id", None)
            if name in ("FORMATTERS", "OUTPUTS"):
                writes.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not writes, writes


def test_diff_offers_its_table_and_reuses_the_findings_formats() -> None:
    assert _format_choices("diff") == list(diff.OUTPUTS)
    assert set(diff.FINDINGS_FORMATS) <= set(report.FORMATTERS)
    assert set(diff.OUTPUTS) == {"markdown", "json", *diff.FINDINGS_FORMATS}
    introduced = Finding("CAP001", Severity.ERROR, "new", "a.yaml", 3)
    old = Finding("CAP005", Severity.WARNING, "old", "b.yaml", 1)
    result = diff.SemanticDiff(
        "base", "head", [], diff.compare_findings([old], [old, introduced]), "headline"
    )
    for name in diff.FINDINGS_FORMATS:
        assert diff.OUTPUTS[name](result, "/repo") == report.FORMATTERS[name](
            diff.findings_view(result), "/repo"
        )


# --- one place, one identity
# ----------------------------------------------------------------------------------


def test_place_is_path_line_path_or_repository() -> None:
    assert Finding("R", Severity.ERROR, "m", "a.yaml", 3).place == "a.yaml:3"
    assert Finding("R", Severity.ERROR, "m", "a.yaml").place == "a.yaml"
    assert Finding("R", Severity.ERROR, "m").place == "<repository>"


def test_every_output_writes_the_same_place() -> None:
    finding = Finding("CAP001", Severity.ERROR, "quota too high", "clusters/mini/queues.yaml", 18)
    pathless = Finding("CAP001", Severity.INFO, "about the repository")
    run = _run_result(finding, pathless)
    text = report.FORMATTERS["text"](run, "")
    assert "clusters/mini/queues.yaml:18: error CAP001" in text and "<repository>: info CAP001" in text
    junit = "\n".join(ElementTree.fromstring(report.FORMATTERS["junit"](run, "")).itertext())
    assert (
        "clusters/mini/queues.yaml:18: quota too high" in junit
        and "<repository>: about the repository" in junit
    )
    compared = diff.SemanticDiff("b", "h", [], diff.compare_findings([], [finding, pathless]))
    markdown = diff.OUTPUTS["markdown"](compared, "")
    assert "`clusters/mini/queues.yaml:18`" in markdown and "`<repository>`" in markdown


def test_sarif_fingerprint_and_diff_matching_share_one_identity() -> None:
    one = Finding("CAP001", Severity.ERROR, "quota 24 > 16", "clusters/a/queues.yaml", 18, "a")
    variants = [
        # moved, spread
        Finding("CAP001", Severity.ERROR, "quota 24 > 16", "clusters/a/queues.yaml", 40, "a,b"),
        Finding("CAP001", Severity.WARNING, "quota 24 > 16", "clusters/a/queues.yaml", 18, "a", hint="h"),
        Finding("CAP002", Severity.ERROR, "quota 24 > 16", "clusters/a/queues.yaml", 18, "a"),
        Finding("CAP001", Severity.ERROR, "quota 25 > 16", "clusters/a/queues.yaml", 18, "a"),
        Finding("CAP001", Severity.ERROR, "quota 24 > 16", "clusters/b/queues.yaml", 18, "a"),
    ]
    assert one.identity == ("CAP001", "clusters/a/queues.yaml", "quota 24 > 16")
    assert formats.fingerprint(one) == hashlib.sha256("\0".join(one.identity).encode()).hexdigest()[:32]
    for other in variants:
        same = other.identity == one.identity
        assert (formats.fingerprint(other) == formats.fingerprint(one)) is same
        matched = diff.compare_findings([one], [other])
        assert (matched.preexisting == [other]) is same and (matched.fixed == [one]) is not same
    assert [v.identity == one.identity for v in variants] == [True, True, False, False, False]
