"""The package layout is the architecture (issue 30, decision 0079): checked from the import statements.

- rules are leaves: only the rule registry's users import `gpupolicy.rules`; the stage rule modules (those
  with `STAGE`, whose findings a pipeline stage reports) also by the stage that reports them;
- commands never import each other (their shared helpers are `commands/_fleet.py` and the package itself),
  and nothing but `cli` imports a command;
- no import cycle between packages, counting the imports that run when a module is imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "tools" / "gpupolicy"

# Who may import the rule registry and the fleet rules: the pipeline runs them, the report and a diff
# describe them (SARIF rule metadata, CFG003), commands list and explain them, docs write their pages, a
# reviewed exception is checked against the rule IDs that exist, and org checks join the registry's rules.
RULE_USERS = (
    "gpupolicy.pipeline",
    "gpupolicy.commands",
    "gpupolicy.docsgen",
    "gpupolicy.report",
    "gpupolicy.diff",
    "gpupolicy.rules",
    "gpupolicy.cli",
    "gpupolicy.domain.waivers",
    "gpupolicy.orgchecks",
    "gpupolicy.configure",
)
# The stage rules are reported where their finding arises: also the strict loader and the configuration's
# own checks (protection names the rules nothing can silence).
STAGE_RULE_USERS = RULE_USERS + ("gpupolicy.infra.yamlload", "gpupolicy.domain.protection")
# Package cycles left, each to be removed, never added to (none today).
KNOWN_CYCLES: set[frozenset[str]] = set()


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in sorted(PACKAGE.rglob("*.py")) if "__pycache__" not in p.parts}


def _declares_stage(path: Path) -> bool:
    return any(
        isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "STAGE" for t in n.targets)
        for n in ast.parse(path.read_text(encoding="utf-8")).body
    )


STAGE_RULES = {m for m, p in MODULES.items() if m.startswith("gpupolicy.rules.") and _declares_stage(p)}


def _imports(path: Path, load_time: bool) -> list[tuple[int, str]]:
    """(line, absolute module) of every toolkit import; with load_time, only those that run at import (module
    level, outside `if TYPE_CHECKING:`)."""
    module = _module(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))

    def load_time_nodes(body):
        for node in body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, ast.If | ast.Try):
                handlers = sum((h.body for h in getattr(node, "handlers", [])), [])
                yield from load_time_nodes(node.body + node.orelse + handlers)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                yield node

    found = []
    for node in load_time_nodes(tree.body) if load_time else ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("gpupolicy")]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            target = (
                ".".join(base + ([node.module] if node.module else [])) if node.level else node.module or ""
            )
            if target.startswith("gpupolicy"):
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    found.append((node.lineno, sub if sub in MODULES else target))
    return found


def _under(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def test_rules_are_imported_only_by_the_registry_users() -> None:
    wrong = []
    for module, path in MODULES.items():
        for line, target in _imports(path, load_time=False):
            if not _under(target, ("gpupolicy.rules",)):
                continue
            users = STAGE_RULE_USERS if target in STAGE_RULES else RULE_USERS
            if not _under(module, users):
                wrong.append(f"{path.relative_to(PACKAGE)}:{line} imports {target}")
    assert not wrong, "rules are leaves; move what these need to domain/:\n" + "\n".join(wrong)


def test_commands_never_import_each_other_and_only_cli_imports_them() -> None:
    helpers = {"gpupolicy.commands", "gpupolicy.commands._fleet"}
    wrong = []
    for module, path in MODULES.items():
        for line, target in _imports(path, load_time=False):
            if not _under(target, ("gpupolicy.commands",)) or module == "gpupolicy.cli":
                continue
            if not (target in helpers and _under(module, ("gpupolicy.commands",))):
                wrong.append(f"{path.relative_to(PACKAGE)}:{line} imports {target}")
    assert not wrong, "a command's reusable code belongs in the library:\n" + "\n".join(wrong)


def _node(module: str) -> str:
    if module in STAGE_RULES:
        return "rules(stage)"  # declarations the stages report: they import nothing but findings
    return module.split(".")[1] if module.count(".") else module


def _cycles(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components of more than one package."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for v in list(edges):
        if v not in index:
            visit(v)
    return found


def test_no_new_import_cycle_between_packages() -> None:
    edges: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        for _, target in _imports(path, load_time=True):
            if _node(target) != _node(module) and target != "gpupolicy":
                edges.setdefault(_node(module), set()).add(_node(target))
    found = set(_cycles(edges))
    assert found <= KNOWN_CYCLES, f"new package cycles: {[sorted(c) for c in found - KNOWN_CYCLES]}"


def test_the_checks_see_the_layout() -> None:
    """The checks above read real imports: the pipeline imports the rules and a stage rule is recognised."""
    assert "gpupolicy.rules.yaml001_syntax" in STAGE_RULES
    assert any(_under(t, ("gpupolicy.rules",)) for _, t in _imports(MODULES["gpupolicy.pipeline"], True))
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [frozenset({"a", "b"})]
