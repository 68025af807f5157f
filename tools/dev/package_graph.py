#!/usr/bin/env python3
"""Package tree with line counts and the import graph between packages of tools/gpupolicy.

Run at a repository root:  python3 tools/dev/package_graph.py [--modules] [--depth N]
Prints Markdown: a tree of packages with their line counts, then the package import graph (edges with the
number of import statements) and any cycle. Standard library only.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from pathlib import Path

PKG = Path("tools/gpupolicy")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def load_time_nodes(tree: ast.Module):
    """The import statements that run when the module is imported: module level, outside `if TYPE_CHECKING:`
    (an import inside a function runs when it is called, and cannot make an import cycle)."""
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        if isinstance(node, (ast.If, ast.Try)):
            yield from load_time_nodes(
                ast.Module(
                    body=node.body
                    + getattr(node, "orelse", [])
                    + sum((h.body for h in getattr(node, "handlers", [])), []),
                    type_ignores=[],
                )
            )
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node


def imports(path: Path, load_time: bool = False) -> list[str]:
    """Every gpupolicy module a file imports (absolute dotted names; `from X import y` yields X.y when X.y is
    a
    module); with load_time, only the imports that run when the module is imported."""
    mod = module_name(path)
    pkg = mod if is_package(path) else mod.rpartition(".")[0]
    out = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in load_time_nodes(tree) if load_time else ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names if a.name.startswith("gpupolicy")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("gpupolicy"):
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.append(sub if MODULES.get(sub) else target)
    return out


MODULES: dict[str, Path] = {}


# rule modules a pipeline stage reports (`STAGE = ...`): declarations, no checks
STAGE_RULES: set[str] = set()


def declares_stage(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(
        isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "STAGE" for t in n.targets)
        for n in tree.body
    )


def node_of(mod: str, depth: int) -> str:
    """The graph node a module belongs to: its package `depth` levels below gpupolicy (a top-level module is
    its own node). The rule modules a stage reports are one node of their own, `rules(stage)`: they declare an
    ID, a
    severity and a page, import nothing but `findings`, and the stages that report them import them."""
    if mod in STAGE_RULES:
        return "rules(stage)"
    parts = mod.split(".")[1:]
    if not parts:
        return "gpupolicy"
    node = parts[:depth]
    name = ".".join(node)
    full = "gpupolicy." + name
    if full in MODULES and not is_package(MODULES[full]) and len(node) == len(parts):
        return name + ".py" if len(parts) == 1 else name
    return name


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in list(edges):
        if v not in index:
            visit(v)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--depth", type=int, default=1, help="package depth of a graph node (1: gpupolicy.X)")
    ap.add_argument(
        "--all-imports",
        action="store_true",
        help="count imports inside functions too (default: only those that run at import time)",
    )
    args = ap.parse_args()
    for path in sorted(PKG.rglob("*.py")):
        MODULES[module_name(path)] = path
        if module_name(path).startswith("gpupolicy.rules.") and declares_stage(path):
            STAGE_RULES.add(module_name(path))
    lines: dict[str, int] = defaultdict(int)
    files: dict[str, int] = defaultdict(int)
    for mod, path in MODULES.items():
        node = node_of(mod, args.depth)
        lines[node] += len(path.read_text(encoding="utf-8").splitlines())
        files[node] += 1
    print("| package | modules | lines |\n|---|---:|---:|")
    for node in sorted(lines):
        print(f"| `{node}` | {files[node]} | {lines[node]:,} |")
    print(f"| total | {sum(files.values())} | {sum(lines.values()):,} |\n")
    edges: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for mod, path in MODULES.items():
        src = node_of(mod, args.depth)
        for target in imports(path, load_time=not args.all_imports):
            dst = node_of(target, args.depth)
            if dst != src and dst != "gpupolicy":
                edges[src][dst] += 1
    print("| package | imports (import statements) |\n|---|---|")
    for src in sorted(edges):
        print(f"| `{src}` | " + ", ".join(f"{d} ({n})" for d, n in sorted(edges[src].items())) + " |")
    found = cycles({k: set(v) for k, v in edges.items()})
    print("\ncycles:", "none" if not found else "; ".join(" <-> ".join(c) for c in found))
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
