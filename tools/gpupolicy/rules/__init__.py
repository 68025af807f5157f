"""The rule registry: every module in this package with an `ID` is a rule.

A rule module declares `ID`, `SEVERITY`, `SUMMARY`, a docstring that is its documentation page
(Markdown: why it matters, a bad example, the fix) and, unless the pipeline itself reports it
(`STAGE = "load"`, `"render"` or `"schema"`; `"pipeline"` for INTERNAL, the finding of a check that crashed),
a `check(fleet) -> Iterator[Finding]`. A rule the pipeline reports also defines `finding(message, path, line,
*, cluster, hint)`, which the stage that reports it calls: the stage modules import their rule modules, never
the reverse, and this package imports nothing of the pipeline.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from types import ModuleType

from ..findings import Finding, Severity

CATEGORIES = {
    "YAML": "Strict loading", "KUST": "Rendering", "SCHEMA": "Schemas", "CAP": "Capacity and quotas",
    "MIG": "MIG layouts", "SHARE": "GPU sharing", "PRIO": "Priorities and preemption",
    "SEC": "Security", "RBAC": "Access control", "UPG": "Upgrades", "OBS": "Observability",
    "DOC": "Documentation", "POOL": "Pools", "SYNC": "GitOps sync", "WL": "Workload path",
    "EXC": "Reviewed exceptions", "CFG": "Repository configuration",
    "INTERNAL": "Toolkit faults",
}


@dataclass(frozen=True)
class Rule:
    id: str
    severity: Severity
    summary: str
    doc: str
    stage: str  # "rules" for check(fleet) rules; "load", "render", "schema" or "pipeline" when the pipeline reports it
    check: Callable[..., Iterator[Finding]] | None
    module: str

    @property
    def category(self) -> str:
        prefix = self.id.rstrip("0123456789")
        return CATEGORIES.get(prefix, prefix)

def _rule_from(module: ModuleType) -> Rule:
    stage = getattr(module, "STAGE", "rules")
    check = getattr(module, "check", None)
    if stage == "rules" and check is None:
        raise TypeError(f"rule module {module.__name__} has no check()")
    return Rule(id=module.ID, severity=module.SEVERITY, summary=module.SUMMARY,
                doc=(module.__doc__ or "").strip(), stage=stage, check=check, module=module.__name__)


@cache
def all_rules() -> dict[str, Rule]:
    rules: dict[str, Rule] = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "ID"):
            rule = _rule_from(module)
            if rule.id in rules:
                raise TypeError(f"rule {rule.id} is declared twice ({rules[rule.id].module}, {rule.module})")
            rules[rule.id] = rule
    return dict(sorted(rules.items(), key=lambda item: _sort_key(item[0])))


def _sort_key(rule_id: str) -> tuple[str, int]:
    prefix = rule_id.rstrip("0123456789")
    return prefix, int(rule_id[len(prefix):] or 0)

