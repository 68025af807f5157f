"""Strict YAML loading: every way a file can be broken becomes a Finding with file and line.

PyYAML's C parser composes the node graph (fast); before anything is constructed we walk that graph once to
reject what would hurt later (duplicate keys, alias bombs, recursion, absurd depth), and record the line of
every key and item so findings can point at the exact line of a field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from ..findings import Finding, Severity
from ..rules import yaml001_syntax as yaml001
from ..rules import yaml002_duplicate_key as yaml002
from ..rules import yaml003_encoding as yaml003
from ..rules import yaml004_file_size as yaml004
from ..rules import yaml005_tabs as yaml005
from ..rules import yaml006_not_mapping as yaml006
from ..rules import yaml007_alias_bomb as yaml007
from ..rules import yaml009_depth as yaml009

# The rules this loader reports: their IDs and severities are part of its output (the parse cache's salt).
RULES = (yaml001, yaml002, yaml003, yaml004, yaml005, yaml006, yaml007, yaml009)

MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_ALIASES = 64  # Kubernetes manifests hardly ever need anchors; a handful is generous.
MAX_EXPANDED_NODES = 250_000  # nodes after expanding aliases, per document
MAX_DEPTH = 100

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
Path = tuple  # a JSON path: keys and list indices


class _StrictLoader(_Loader):  # type: ignore[misc, valid-type]
    """SafeLoader whose timestamps and binaries stay strings, as Kubernetes' JSON model sees them."""


def _as_text(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    return loader.construct_scalar(node)


def _int(loader: yaml.SafeLoader, node: yaml.Node) -> int:
    """An integer, or a parse error at its line for one longer than Python converts (4,300 digits)."""
    try:
        return loader.construct_yaml_int(node)
    except ValueError as exc:
        raise yaml.constructor.ConstructorError(
            None, None, f"an integer of {len(node.value)} digits is too long", node.start_mark
        ) from exc


_StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", _as_text)
_StrictLoader.add_constructor("tag:yaml.org,2002:int", _int)
_StrictLoader.add_constructor("tag:yaml.org,2002:binary", _as_text)


@dataclass
class Document:
    """One YAML document of a file, its data, and the line of every key or item in it."""

    path: str
    index: int
    line: int
    data: Any
    lines: dict[Path, int] = field(default_factory=dict, repr=False)

    def line_of(self, path: Path) -> int:
        """The line of the deepest part of `path` that exists in this document."""
        for depth in range(len(path), 0, -1):
            line = self.lines.get(tuple(path[:depth]))
            if line:
                return line
        return self.line


@dataclass
class LoadResult:
    documents: list[Document] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(f.severity is Severity.ERROR for f in self.findings)


def parse_source(raw: bytes, path: str) -> LoadResult:
    """Parse every document of a source file's bytes strictly, with no cache
    (`cachestore.CacheStore.load_source`
    keeps the result); `path` is what findings name."""
    result = LoadResult()
    if len(raw) > MAX_FILE_BYTES:
        result.findings.append(
            yaml004.finding(
                f"file is {len(raw):,} bytes, over the {MAX_FILE_BYTES:,}-byte limit",
                path,
                1,
                hint="split it, or keep generated data out of the policy repository",
            )
        )
        return result
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        result.findings.append(
            yaml003.finding(
                f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})",
                path,
                line,
                hint="save the file as UTF-8",
            )
        )
        return result
    if "\x00" in text:
        result.findings.append(
            yaml003.finding(
                "binary content (NUL byte) in a YAML file", path, text[: text.index("\x00")].count("\n") + 1
            )
        )
        return result
    return load_text(text, path, result)


def load_text(text: str, path: str, result: LoadResult | None = None, lists: bool = False) -> LoadResult:
    """Every document of `text`, strictly. A document must be a mapping, unless `lists` (a JSON6902 patch or a
    replacements file is a list, as kustomize reads it)."""
    result = result if result is not None else LoadResult()
    loader = _StrictLoader(text)
    index = 0
    budget = _AliasBudget()
    has_anchors = "&" in text  # without anchors there are no aliases: a plain tree walk suffices
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                index += 1
                continue
            problem = _inspect(node, path, budget) if has_anchors else _inspect_tree(node, path)
            if problem:
                result.findings.append(problem)
                return result
            if not isinstance(node, yaml.MappingNode) and not (lists and isinstance(node, yaml.SequenceNode)):
                if not (isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null")):
                    kind = "a list" if isinstance(node, yaml.SequenceNode) else "a scalar"
                    result.findings.append(
                        yaml006.finding(
                            f"document {index + 1} is {kind}, not a mapping",
                            path,
                            node.start_mark.line + 1,
                            hint="a manifest is a mapping with apiVersion and kind",
                        )
                    )
                index += 1
                continue
            data = loader.construct_document(node)
            doc = Document(path=path, index=index, line=node.start_mark.line + 1, data=data)
            doc.lines = _line_map(node)
            result.documents.append(doc)
            index += 1
    except yaml.MarkedYAMLError as exc:
        result.findings.append(_syntax_finding(exc, path, text))
    except yaml.YAMLError as exc:
        result.findings.append(yaml001.finding(f"cannot parse YAML: {exc}", path, 1))
    except RecursionError:
        result.findings.append(yaml009.finding("nesting too deep to parse", path, 1))
    finally:
        loader.dispose()
    return result


def _syntax_finding(exc: yaml.MarkedYAMLError, path: str, text: str) -> Finding:
    mark = exc.problem_mark or exc.context_mark
    line = mark.line + 1 if mark else 1
    problem = exc.problem or str(exc)
    source_lines = text.splitlines()
    source_line = source_lines[line - 1] if 0 < line <= len(source_lines) else ""
    if "\t" in source_line[: len(source_line) - len(source_line.lstrip())]:
        return yaml005.finding(
            "tab character used for indentation", path, line, hint="YAML indentation must be spaces"
        )
    if exc.context and "found undefined alias" not in problem:
        problem = f"{exc.context}: {problem}"
    return yaml001.finding(f"cannot parse YAML: {problem}", path, line)


class _AliasBudget:
    def __init__(self) -> None:
        self.used = 0


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _inspect(root: yaml.Node, path: str, budget: _AliasBudget) -> Finding | None:
    """Walk the node graph once: duplicate keys, alias count, expanded size, depth, recursion.

    Sizes and heights are memoised per node, so a billion-laughs document costs a few hundred steps.
    """
    size: dict[int, int] = {}
    height: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_stack.discard(key)
            kids = _children(node)
            size[key] = 1 + sum(size[id(k)] for k in kids)
            height[key] = 1 + max((height[id(k)] for k in kids), default=0)
            if size[key] > MAX_EXPANDED_NODES:
                return yaml007.finding(
                    f"aliases expand this document to over {MAX_EXPANDED_NODES:,} nodes (a YAML bomb)",
                    path,
                    node.start_mark.line + 1,
                    hint="write the values out; do not nest anchors",
                )
            if height[key] > MAX_DEPTH:
                return yaml009.finding(
                    f"nested more than {MAX_DEPTH} levels deep", path, node.start_mark.line + 1
                )
            continue
        if key in size:  # seen before: this reference is an alias
            budget.used += 1
            if budget.used > MAX_ALIASES:
                return yaml007.finding(
                    f"more than {MAX_ALIASES} aliases in one file",
                    path,
                    node.start_mark.line + 1,
                    hint="anchors and aliases are rarely needed in manifests",
                )
            continue
        if key in on_stack:
            return yaml007.finding(
                "recursive alias (a node that contains itself)", path, node.start_mark.line + 1
            )
        if len(on_stack) > MAX_DEPTH:
            return yaml009.finding(
                f"nested more than {MAX_DEPTH} levels deep", path, node.start_mark.line + 1
            )
        duplicate = _duplicate_key(node, path)
        if duplicate:
            return duplicate
        on_stack.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(_children(node)))
    return None


def _inspect_tree(root: yaml.Node, path: str) -> Finding | None:
    """The cheap walk for documents without anchors: duplicate keys and depth only."""
    stack: list[tuple[yaml.Node, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            return yaml009.finding(
                f"nested more than {MAX_DEPTH} levels deep", path, node.start_mark.line + 1
            )
        if isinstance(node, yaml.MappingNode):
            duplicate = _duplicate_key(node, path)
            if duplicate:
                return duplicate
            stack.extend((value, depth + 1) for _, value in node.value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, depth + 1) for item in node.value)
    return None


def _duplicate_key(node: yaml.Node, path: str) -> Finding | None:
    if not isinstance(node, yaml.MappingNode):
        return None
    seen: dict[tuple[str, str], int] = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
            continue
        identity = (key_node.tag, key_node.value)
        line = key_node.start_mark.line + 1
        if identity in seen:
            return yaml002.finding(
                f"duplicate key {key_node.value!r} (first at line {seen[identity]})",
                path,
                line,
                hint="YAML keeps only the last value; remove one of them",
            )
        seen[identity] = line
    return None


def _line_map(root: yaml.Node) -> dict[Path, int]:
    lines: dict[Path, int] = {}
    stack: list[tuple[yaml.Node, Path]] = [(root, ())]
    visited: set[int] = set()
    while stack:
        node, at = stack.pop()
        if id(node) in visited:  # aliases: the first place is the one findings point to
            continue
        visited.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if isinstance(key_node, yaml.ScalarNode):
                    child = at + (key_node.value,)
                    lines.setdefault(child, key_node.start_mark.line + 1)
                    stack.append((value_node, child))
        elif isinstance(node, yaml.SequenceNode):
            for position, item in enumerate(node.value):
                child = at + (position,)
                lines.setdefault(child, item.start_mark.line + 1)
                stack.append((item, child))
    return lines


def mapping(value: Any) -> dict:
    """A YAML mapping, or {} for anything else: the tolerant reading of one field whose shape the schema stage
    already judged (a rule must never crash on `metadata: []`)."""
    return value if isinstance(value, dict) else {}


def mappings(value: Any) -> list[dict]:
    """The mapping items of a YAML list, ignoring anything else (and [] for a non-list): the tolerant reading
    of hand-written data whose shape the schema stage already judged."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def load_rendered(text: str) -> list[Any]:
    """Fast path for kubectl's own output: no anchors, no duplicates, one object per document."""
    return [doc for doc in yaml.load_all(text, Loader=_Loader) if doc is not None]
