"""Every rule ID the toolkit emits is registered, with the severity it is emitted with (issue 16, step 4).

The stages (loader, graph, pipeline) report YAML/KUST/SCHEMA findings through the `finding` helper of the
rule module that declares them, so an ID and its severity are written once. This reads the toolkit's sources:
a stage rule ID spelt as a string outside the rules package fails here, and so does a rule module's finding
whose ID is not registered or whose written severity differs from the registered one.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import gpupolicy
from gpupolicy.findings import Severity
from gpupolicy.rules import all_rules

PACKAGE = Path(gpupolicy.__file__).parent
STAGES = ("load", "render", "schema")  # rules the pipeline reports itself, through their finding() helper
RULES = PACKAGE / "rules"
SOURCES = sorted(PACKAGE.rglob("*.py"))


def _calls(tree: ast.AST, name: str) -> list[ast.Call]:
    """Calls of `name(...)` or `x.name(...)`."""
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (getattr(node.func, "id", None) == name or getattr(node.func, "attr", None) == name)
    ]


def _rule_argument(call: ast.Call) -> ast.expr | None:
    keyword = next((k.value for k in call.keywords if k.arg == "rule"), None)
    return keyword if keyword is not None else (call.args[0] if call.args else None)


def _severity_argument(call: ast.Call) -> Severity | None:
    """The severity a call passes as `Severity.X` (positionally second, or by keyword), if it is written
    so."""
    value = next((k.value for k in call.keywords if k.arg == "severity"), None)
    if value is None and len(call.args) > 1:
        value = call.args[1]
    if isinstance(value, ast.Attribute) and getattr(value.value, "id", None) == "Severity":
        return Severity[value.attr]
    return None


def _rule_modules_imported(tree: ast.AST) -> dict[str, str]:
    """alias -> module name for `from .rules import yaml001_syntax as yaml001` (and `from . import ...`)."""
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("rules"):
            for alias in node.names:
                if (RULES / f"{alias.name}.py").is_file():  # a rule module, not a function of the registry
                    aliases[alias.asname or alias.name] = f"gpupolicy.rules.{alias.name}"
    return aliases


@pytest.mark.parametrize("source", [p for p in SOURCES if RULES not in p.parents], ids=lambda p: p.name)
def test_stage_rule_ids_are_spelt_only_in_their_rule_modules(source: Path) -> None:
    """Outside the rules package a stage rule is named through its module (`yaml004.finding(...)`,
    `yaml006.ID`), never as a string: a literal would carry its own copy of the ID, and its severity beside
    it."""
    stage_ids = {rule.id for rule in all_rules().values() if rule.stage in STAGES}
    tree = ast.parse(source.read_text(encoding="utf-8"))
    spelt = [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in stage_ids
    ]
    assert not spelt, f"{source.name} spells stage rule IDs: {spelt}"
    registered = {rule.module for rule in all_rules().values()}
    for module in _rule_modules_imported(tree).values():
        assert module in registered, f"{source.name} imports {module}, which declares no registered rule"


@pytest.mark.parametrize("source", sorted(RULES.glob("*.py")), ids=lambda p: p.name)
def test_rule_modules_emit_their_registered_id(source: Path) -> None:
    """A rule module's findings carry its own ID, at its declared severity unless the call says otherwise."""
    module = f"gpupolicy.rules.{source.stem}"
    registered = {rule.module: rule for rule in all_rules().values()}.get(module)
    tree = ast.parse(source.read_text(encoding="utf-8"))
    for call in _calls(tree, "Finding"):
        rule = _rule_argument(call)
        if isinstance(rule, ast.Constant):
            assert rule.value in all_rules(), f"{source.name}:{call.lineno}: {rule.value} is not registered"
            severity = _severity_argument(call)
            assert severity is None or severity == all_rules()[rule.value].severity
        elif isinstance(rule, ast.Name) and rule.id == "ID":
            assert registered is not None, f"{source.name} emits its ID but is not a registered rule"


def test_stage_rules_declare_a_finding_helper_with_their_severity() -> None:
    import importlib

    for rule in all_rules().values():
        if rule.stage in STAGES:
            helper = getattr(importlib.import_module(rule.module), "finding", None)
            assert helper is not None, f"{rule.id} is reported by a stage but has no finding() helper"
            emitted = helper("message", "path.yaml", 1)
            assert (emitted.rule, emitted.severity) == (rule.id, rule.severity)


@pytest.mark.parametrize(
    "first",
    [
        "gpupolicy.rules",
        "gpupolicy.infra.yamlload",
        "gpupolicy.pipeline.render.kustomize",
        "gpupolicy.pipeline",
    ],
)
def test_stage_modules_and_rules_import_in_one_direction(first: str) -> None:
    """Whichever is imported first, the stages and the rule registry load without an import cycle."""
    code = f"import {first}; from gpupolicy.rules import all_rules; import gpupolicy.pipeline; all_rules()"
    subprocess.run([sys.executable, "-c", code], check=True)
