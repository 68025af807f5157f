"""The rule registry: every module in this package with an `ID` is a rule.

A rule module declares `ID`, `SEVERITY`, `SUMMARY`, a docstring that is its documentation page (Markdown: why
it matters, a bad example, the fix) and, unless the pipeline itself reports it (`STAGE = "load"`, `"render"`
or `"schema"`; `"pipeline"` for INTERNAL, the finding of a check that crashed), a `check(fleet) ->
Iterator[Finding]`. `FLEET_LEVEL = True` marks a rule whose findings need every cluster (pool membership
across overlays): `validate --shard` runs it in the first shard only. A rule the pipeline reports also defines
`finding(message, path, line,
*, cluster, hint)`, which the stage that reports it calls: the stage modules import their rule modules, never
the reverse, and this package imports nothing of the pipeline.

Organization rules live outside the toolkit. An installed Python package adds rules through the entry-point
group `gpupolicy.rules` (each entry point names a rule module, or a package whose modules are rules), with the
same contract as the built-in modules; `all_rules()` holds them after the built-in ones. Their IDs carry an
organization prefix (`ACME-NET001`, `ORG_RULE_ID`), which no built-in ID has, so they can never clash. A
plugin that breaks the contract is refused and listed in `plugins().problems`. Declarative checks under
`policies/checks/` are repository content, not installed code: `orgchecks` reads them per repository.

A plugin is trusted code, so it must come from the trusted side (decision 0061): an entry point of the
toolkit's own distribution (which declares none: a pull request that adds one to `pyproject.toml` gets it
installed by `make validate`'s editable install), or one whose module file or editable source lies inside a
policy repository (a folder with clusters/ or pools/, as `reporoot` finds one), is refused before anything of
it is imported, and listed in `plugins().problems` (CFG002, an error). Packages installed from an index into
the environment keep working.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import pkgutil
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from types import ModuleType

from ..findings import Finding, Severity
from ..internal import describe

PLUGIN_GROUP = "gpupolicy.rules"
# declares no plugin of its own: an entry point on it came from the checkout
TOOLKIT_DISTRIBUTION = "gpupolicy"
# An organization rule's ID: its organization's prefix, a dash, then a built-in-style ID (ACME-NET001).
ORG_RULE_ID = re.compile(r"^[A-Z][A-Z0-9]{1,15}-[A-Z]{1,12}[0-9]{1,4}$")
ORG_CATEGORY = "Organization rules"

CATEGORIES = {
    "YAML": "Strict loading",
    "KUST": "Rendering",
    "SCHEMA": "Schemas",
    "CAP": "Capacity and quotas",
    "MIG": "MIG layouts",
    "SHARE": "GPU sharing",
    "PRIO": "Priorities and preemption",
    "SEC": "Security",
    "RBAC": "Access control",
    "UPG": "Upgrades",
    "OBS": "Observability",
    "DOC": "Documentation",
    "POOL": "Pools",
    "SYNC": "GitOps sync",
    "WL": "Workload path",
    "EXC": "Reviewed exceptions",
    "CFG": "Repository configuration",
    "IMP": "Imported clusters",
    "INTERNAL": "Toolkit faults",
}


@dataclass(frozen=True)
class Rule:
    id: str
    severity: Severity
    summary: str
    doc: str
    # "rules" for check(fleet) rules; "load", "render", "schema" or "pipeline" when the pipeline reports it
    stage: str
    check: Callable[..., Iterator[Finding]] | None
    module: str
    fleet_level: bool = False  # FLEET_LEVEL: its findings need every cluster; one shard of a split runs it

    @property
    def category(self) -> str:
        if ORG_RULE_ID.match(self.id):
            return f"{ORG_CATEGORY} ({self.id.partition('-')[0]})"
        prefix = self.id.rstrip("0123456789")
        return CATEGORIES.get(prefix, prefix)


@dataclass
class Plugins:
    """The rules installed packages add, and why any plugin module was refused (the run reports those)."""

    rules: dict[str, Rule] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # a module that broke the contract (CFG002)
    broken: list[str] = field(default_factory=list)  # a module that did not import: its checks never ran


def _rule_from(module: ModuleType) -> Rule:
    stage = getattr(module, "STAGE", "rules")
    check = getattr(module, "check", None)
    if stage == "rules" and check is None:
        raise TypeError(f"rule module {module.__name__} has no check()")
    return Rule(
        id=module.ID,
        severity=module.SEVERITY,
        summary=module.SUMMARY,
        doc=inspect.cleandoc(module.__doc__ or ""),
        stage=stage,
        check=check,
        module=module.__name__,
        fleet_level=bool(getattr(module, "FLEET_LEVEL", False)),
    )


@cache
def all_rules() -> dict[str, Rule]:
    """Every rule: the built-in ones, then those of installed organization packages (`plugins()`)."""
    return {**builtin_rules(), **plugins().rules}


@cache
def builtin_rules() -> dict[str, Rule]:
    """The toolkit's own rules, the modules of this package (the rule pages document these)."""
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
    return prefix, int(rule_id[len(prefix) :] or 0)


@cache
def plugins() -> Plugins:
    """The rules of every entry point of `PLUGIN_GROUP`, each checked against the rule contract."""
    found = Plugins()
    for entry in sorted(entry_points(group=PLUGIN_GROUP), key=lambda e: (e.name, e.value)):
        where = f"plugin {entry.name} ({entry.value})"
        untrusted = untrusted_origin(entry)
        if untrusted:
            found.problems.append(
                f"{where} was not loaded: {untrusted}; only plugins installed into the "
                "environment from a package index run (decision 0061)"
            )
            continue
        try:
            loaded = entry.load()
        except Exception as exc:  # noqa: BLE001 - an installed package is code we do not control
            found.broken.append(f"{where} cannot be imported: {describe(exc)}")
            continue
        for module in _rule_modules(loaded, where, found):
            try:
                rule = _rule_from(module)
            except (AttributeError, TypeError) as exc:
                found.problems.append(f"{where}: module {module.__name__} is not a rule: {describe(exc)}")
                continue
            problem = _plugin_problem(rule, {**builtin_rules(), **found.rules})
            if problem:
                found.problems.append(f"{where}: {problem}")
            else:
                found.rules[rule.id] = rule
    return found


def untrusted_origin(entry: EntryPoint) -> str:
    """Why the plugin's code is repository content rather than installed code, or "" when it is not. Looks
    only at metadata and at where the import system would find the top-level module (`find_spec` of a
    top-level name runs nothing of it)."""
    dist = getattr(entry, "dist", None)
    name = (dist.metadata["Name"] or "") if dist is not None else ""
    if name.lower().replace("_", "-") == TOOLKIT_DISTRIBUTION:
        return (
            "it is declared by the toolkit's own distribution, which has no plugins (an edit of "
            "pyproject.toml)"
        )
    editable = _editable_source(dist)
    if editable and _policy_repository_of(editable):
        return (
            "its distribution is an editable install from the policy repository "
            f"{_policy_repository_of(editable)}"
        )
    top = entry.value.partition(":")[0].strip().partition(".")[0]
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return ""  # entry.load() reports it as a module that does not import
    places = [*(spec.submodule_search_locations or []), spec.origin or ""] if spec else []
    for place in filter(None, places):
        repo = _policy_repository_of(Path(place))
        if repo:
            return f"its module {top} lies inside the policy repository {repo}"
    return ""


def _editable_source(dist) -> Path | None:
    """The folder an editable (`pip install -e`) distribution points at (PEP 610 direct_url.json), or None."""
    text = dist.read_text("direct_url.json") if dist is not None else None
    try:
        direct = json.loads(text or "{}")
    except ValueError:
        return None
    url = direct.get("url", "") if isinstance(direct, dict) else ""
    editable = isinstance(direct, dict) and (direct.get("dir_info") or {}).get("editable")
    return Path(url.removeprefix("file://")) if editable and url.startswith("file://") else None


def _policy_repository_of(path: Path) -> Path | None:
    """The policy repository (a folder with clusters/ or pools/, as reporoot.find_repo_root) holding
    `path`."""
    try:
        path = path.resolve()
    except OSError:
        return None
    for candidate in (path, *path.parents):
        if (candidate / "clusters").is_dir() or (candidate / "pools").is_dir():
            return candidate
    return None


def _rule_modules(module: ModuleType, where: str, found: Plugins) -> list[ModuleType]:
    """The module itself when it is a rule, else the rule modules of the package; a module that does not
    import is recorded in `found.broken` and the package's other rules still run."""
    if hasattr(module, "ID") or not hasattr(module, "__path__"):
        return [module]
    modules = []
    for info in sorted(pkgutil.iter_modules(module.__path__), key=lambda i: i.name):
        name = f"{module.__name__}.{info.name}"
        try:
            modules.append(importlib.import_module(name))
        except Exception as exc:  # noqa: BLE001 - as in plugins()
            found.broken.append(f"{where}: module {name} cannot be imported: {describe(exc)}")
    return [m for m in modules if hasattr(m, "ID")]


def _plugin_problem(rule: Rule, taken: dict[str, Rule]) -> str:
    if not isinstance(rule.id, str) or not ORG_RULE_ID.match(rule.id):
        return (
            f"rule ID {rule.id!r} has no organization prefix (ACME-NET001): built-in IDs are the "
            "toolkit's, "
            "and a plugin must not be able to shadow one"
        )
    if rule.id in taken:
        return f"rule {rule.id} is declared twice ({taken[rule.id].module}, {rule.module})"
    if rule.stage != "rules" or rule.check is None:
        return f"rule {rule.id} has no check(fleet): only the pipeline reports stage rules"
    if not isinstance(rule.severity, Severity):
        return f"rule {rule.id}: SEVERITY must be a gpupolicy.findings.Severity, not {rule.severity!r}"
    return ""
