"""Faster loaders for kubectl's output, against PyYAML's C loader, on every rendered document of a bench
fleet.

A candidate is adoptable only if it builds identical Python objects for every document (same types too:
`True` is not `1`, a `datetime` is not its text), both of the fleet and of kubectl's output for a source full
of YAML 1.1 scalars (`EDGE_SOURCE`), and parses at least `ADOPT_SPEEDUP` times faster.
Decision 0047 records the outcome. Candidates that are not installed are listed as such (they are not
dependencies of the toolkit): `pip install rapidyaml oryaml pyyaml-rs fastyaml-rs` into the venv first.

    python bench/compare_parsers.py                       # the 100-cluster fleet (render ~2 minutes on 2
    cores) python bench/compare_parsers.py --fleet DIR           # an existing fleet (bench/generate_fleet.py)
    python bench/compare_parsers.py --clusters 6 --pools 60 --teams 24 --teams-per-cluster 20   # quick
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import generate_fleet  # noqa: E402

from gpupolicy import pipeline  # noqa: E402
from gpupolicy.infra import yamlload  # noqa: E402
from gpupolicy.infra.cache.store import CacheStore  # noqa: E402
from gpupolicy.pipeline.render import kustomize  # noqa: E402

ADOPT_SPEEDUP = 3.0
REPEATS = 3

# A source object whose values are the plain scalars YAML 1.1 (PyYAML, and the API server's sigs.k8s.io/yaml)
# and YAML 1.2 read differently. kubectl reads it and prints it again: what the rendered-output loader sees is
# kubectl's rewrite (it quotes `yes`, turns 0777 into 511 and a date into an RFC 3339 text, but prints 1e+21
# and a space-separated timestamp plain). `.inf`/`.nan` are left out (kubectl cannot print them), and so are a
# plain `=` and `<<`, which kubectl prints plain and PyYAML itself refuses (the YAML 1.1 value and merge
# tags).
EDGE_SOURCE = """\
apiVersion: example.com/v1
kind: Scalars
metadata:
  name: yaml-1-1
  annotations:
    quoted-yes: "yes"
    quoted-octal: "0777"
spec:
  plain-yes: yes
  plain-on: on
  plain-off: Off
  plain-y: y
  plain-n: n
  octal: 0777
  octal-1-2: 0o17
  hex: 0x1F
  binary: 0b101
  underscored: 1_000
  sexagesimal: 1:20
  date: 2002-12-14
  timestamp: 2001-12-14t21:59:43.10-05:00
  spaced-timestamp: 2001-12-14 21:59:43.10 -5
  exponent: 1e3
  large-exponent: 1.0e+21
  small-exponent: 1.5e-7
  tiny: 0.0000001
  big-int: 12345678901234567890123
  float: 2.50
  whole-float: 100.0
  tilde: ~
  upper-null: NULL
  title-true: True
  binary-tag: !!binary aGVsbG8=
  list: [1, 2.5, null, no, "no", 1e-10]
"""


@dataclass(frozen=True)
class Candidate:
    name: str
    distribution: str  # the PyPI name, for its version
    module: str
    load_all: Callable[[Any, str], list[Any]]  # (imported module, text) -> the documents


def _pyyaml(module: Any, text: str) -> list[Any]:
    return [doc for doc in module.load_all(text, Loader=module.CSafeLoader) if doc is not None]


def _oryaml(module: Any, text: str) -> list[Any]:
    return [doc for doc in _split(text) for doc in [module.loads(doc)] if doc is not None]


def _pyyaml_rs(module: Any, text: str) -> list[Any]:
    return [doc for doc in module.safe_load_all(text) if doc is not None]


def _fast_yaml(module: Any, text: str) -> list[Any]:
    return [doc for doc in module.safe_load_all(text) if doc is not None]


def _split(text: str) -> list[str]:
    """kubectl's document separators (a loader without a multi-document call gets one document at a time)."""
    from gpupolicy.infra.cache.parsed import _RENDERED_DOCUMENT_SEPARATOR

    return [chunk for chunk in _RENDERED_DOCUMENT_SEPARATOR.split(text) if chunk.strip()]


def _rapidyaml(module: Any, text: str) -> list[Any]:
    """rapidyaml parses to its own tree; its Python API has no loader, so the tree is walked here and each
    plain
    scalar resolved with PyYAML's own YAML 1.1 resolvers and constructors (what CSafeLoader would build)."""
    tree = module.parse_in_arena(text.encode())
    root = tree.root_id()
    documents = [root] if not tree.is_stream(root) else _children(tree, root)
    return [doc for doc in (_ryml_value(tree, node) for node in documents) if doc is not None]


_RESOLVER = yaml.resolver.Resolver()
_CONSTRUCTOR = yaml.constructor.SafeConstructor()


def _children(tree: Any, node: int) -> list[int]:
    found, child = [], tree.first_child(node)
    while child < tree.size():  # rapidyaml's "no node" is the largest size_t
        found.append(child)
        child = tree.next_sibling(child)
    return found


def _ryml_value(tree: Any, node: int) -> Any:
    if tree.is_map(node):
        return {
            _ryml_scalar(tree, child, key=True): _ryml_value(tree, child) for child in _children(tree, node)
        }
    if tree.is_seq(node):
        return [_ryml_value(tree, child) for child in _children(tree, node)]
    return _ryml_scalar(tree, node, key=False)


def _ryml_scalar(tree: Any, node: int, key: bool) -> Any:
    quoted = tree.is_key_quoted(node) if key else tree.is_val_quoted(node)
    if (tree.key_is_null(node) if key else tree.val_is_null(node)) and not quoted:
        return None
    text = bytes(tree.key(node) if key else tree.val(node)).decode()
    literal = (
        tree.is_key_literal(node) or tree.is_key_folded(node)
        if key
        else tree.is_val_literal(node) or tree.is_val_folded(node)
    )
    explicit = tree.has_key_tag(node) if key else tree.has_val_tag(node)
    if explicit:  # `!!str 12`: the tag decides, as in PyYAML
        tag = (
            bytes(tree.key_tag(node) if key else tree.val_tag(node))
            .decode()
            .replace("!!", "tag:yaml.org,2002:")
        )
    elif quoted or literal:
        return text
    else:
        tag = _RESOLVER.resolve(yaml.ScalarNode, text, (True, False))
    return _CONSTRUCTOR.yaml_constructors[tag](_CONSTRUCTOR, yaml.ScalarNode(tag, text))


CANDIDATES = (
    Candidate("PyYAML CSafeLoader (reference)", "PyYAML", "yaml", _pyyaml),
    Candidate("rapidyaml (C++) + PyYAML 1.1 resolution", "rapidyaml", "ryml", _rapidyaml),
    Candidate("oryaml (Rust)", "oryaml", "oryaml", _oryaml),
    Candidate("pyyaml-rs (Rust)", "pyyaml-rs", "pyyaml_rs", _pyyaml_rs),
    Candidate("fastyaml-rs (Rust)", "fastyaml-rs", "fast_yaml", _fast_yaml),
)


# --- identity
# ----------------------------------------------------------------------------------------------------


def identical(expected: Any, actual: Any) -> bool:
    """Equal values of the same types all the way down (Python's == says True == 1 and 1 == 1.0)."""
    if type(expected) is not type(actual):
        return False
    if isinstance(expected, dict):
        return list(expected) == list(actual) and all(identical(expected[k], actual[k]) for k in expected)
    if isinstance(expected, list):
        return len(expected) == len(actual) and all(
            identical(e, a) for e, a in zip(expected, actual, strict=True)
        )
    if isinstance(expected, float) and math.isnan(expected):
        return math.isnan(actual)
    if isinstance(expected, datetime.datetime):
        return expected == actual and expected.tzinfo == actual.tzinfo
    return expected == actual


def first_difference(expected: Any, actual: Any, where: str = "") -> str:
    """Where two values first differ, and how (for the table)."""
    if type(expected) is not type(actual):
        return (
            f"{where or '.'}: {expected!r} ({type(expected).__name__}) became {actual!r} "
            f"({type(actual).__name__})"
        )
    if isinstance(expected, dict):
        for key in expected:
            if key not in actual:
                return f"{where}.{key}: missing"
            if not identical(expected[key], actual[key]):
                return first_difference(expected[key], actual[key], f"{where}.{key}")
        return f"{where or '.'}: other keys {sorted(set(actual) - set(expected))!r}"
    if isinstance(expected, list):
        if len(expected) != len(actual):
            return f"{where or '.'}: {len(expected)} items became {len(actual)}"
        for position, (e, a) in enumerate(zip(expected, actual, strict=True)):
            if not identical(e, a):
                return first_difference(e, a, f"{where}[{position}]")
    return f"{where or '.'}: {expected!r} became {actual!r}"


def compare(reference: list[list[Any]], texts: list[str], candidate: Candidate, module: Any) -> dict:
    """Parse every text with `candidate`; compare with the reference's documents one by one."""
    documents = sum(len(docs) for docs in reference)
    identical_documents, difference, error = 0, "", ""
    parsed: list[list[Any]] = []
    try:
        parsed = [candidate.load_all(module, text) for text in texts]
    except Exception as exc:  # noqa: BLE001 - a candidate that fails to parse is a result, not a crash
        error = f"{type(exc).__name__}: {str(exc)[:200]}"
    for expected_docs, actual_docs in zip(reference, parsed, strict=False):
        if len(expected_docs) != len(actual_docs):
            difference = difference or f"{len(expected_docs)} documents became {len(actual_docs)}"
        for expected, actual in zip(expected_docs, actual_docs, strict=False):
            if identical(expected, actual):
                identical_documents += 1
            elif not difference:
                difference = first_difference(expected, actual)
    return {
        "documents": documents,
        "identical_documents": identical_documents,
        "identical": not error
        and identical_documents == documents
        and all(len(e) == len(a) for e, a in zip(reference, parsed, strict=False))
        and len(parsed) == len(reference),
        "first_difference": difference,
        "error": error,
    }


def parse_seconds(
    texts: list[str], loaders: list[tuple[Candidate, Any]], repeats: int = REPEATS
) -> list[list[float]]:
    """Each loader's seconds to parse every text, `repeats` times, taking turns (one round parses with each
    loader once), so that other work on a shared machine slows them alike."""
    seconds: list[list[float]] = [[] for _ in loaders]
    for _ in range(repeats):
        for position, (candidate, module) in enumerate(loaders):
            start = time.perf_counter()
            for text in texts:
                candidate.load_all(module, text)
            seconds[position].append(round(time.perf_counter() - start, 3))
    return seconds


def kubectl_output(source: str, workdir: Path) -> str:
    """What `kubectl kustomize` prints for `source` (one resource file)."""
    folder = workdir / "edge"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "scalars.yaml").write_text(source, encoding="utf-8")
    (folder / "kustomization.yaml").write_text("resources:\n  - scalars.yaml\n", encoding="utf-8")
    return subprocess.run(
        [kustomize.kubectl_path(), "kustomize", str(folder)], capture_output=True, text=True, check=True
    ).stdout


def edge_cases(edge_text: str, candidates: tuple[Candidate, ...] = CANDIDATES) -> dict[str, dict]:
    """Each installed candidate on kubectl's output of EDGE_SOURCE, against the C loader."""
    reference = [yamlload.load_rendered(edge_text)]
    results = {}
    for candidate in candidates:
        try:
            module = __import__(candidate.module)
        except ImportError:
            continue
        results[candidate.name] = compare(reference, [edge_text], candidate, module)
    return results


def evaluate(
    texts: list[str], candidates: tuple[Candidate, ...] = CANDIDATES, edge_text: str = ""
) -> list[dict]:
    """One row per candidate (the first is the reference): identity on every document, then parse times."""
    reference = [yamlload.load_rendered(text) for text in texts]
    edges = edge_cases(edge_text, candidates) if edge_text else {}
    rows, timed = [], []
    for candidate in candidates:
        row: dict[str, Any] = {"parser": candidate.name, "distribution": candidate.distribution}
        try:
            module = __import__(candidate.module)
        except ImportError:
            rows.append({**row, "installed": False})
            continue
        row.update(
            installed=True,
            version=_version(candidate.distribution),
            **compare(reference, texts, candidate, module),
        )
        if candidate.name in edges:
            edge = edges[candidate.name]
            row.update(
                edge_identical=edge["identical"],
                edge_first_difference=edge["first_difference"] or edge["error"],
            )
        rows.append(row)
        if not row["error"]:
            timed.append((candidate, module, row))
    runs = parse_seconds(texts, [(candidate, module) for candidate, module, _ in timed])
    reference_median = statistics.median(runs[0]) if timed and timed[0][0] is candidates[0] else None
    for (candidate, _, row), seconds in zip(timed, runs, strict=True):
        median = statistics.median(seconds)
        row.update(parse_seconds=seconds, parse_seconds_median=round(median, 3))
        if reference_median is not None:
            row["speedup_vs_cloader"] = round(reference_median / max(median, 1e-9), 2)
            row["adoptable"] = bool(
                row["identical"]
                and row.get("edge_identical", False)
                and row["speedup_vs_cloader"] >= ADOPT_SPEEDUP
                and candidate is not candidates[0]
            )
    return rows


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return ""


def table(rows: list[dict]) -> str:
    lines = [
        "| parser | version | fleet documents | identical | kubectl's output of YAML 1.1 scalars | "
        "parse s (median of 3) | vs C loader |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        if not row.get("installed"):
            lines.append(f"| {row['parser']} | not installed | | | | | |")
            continue
        verdict = (
            "yes" if row["identical"] else (f"no ({row['identical_documents']:,} of {row['documents']:,})")
        )
        seconds = f"{row['parse_seconds_median']:.2f}" if "parse_seconds_median" in row else row["error"]
        speed = f"{row['speedup_vs_cloader']:.2f}x" if "speedup_vs_cloader" in row else ""
        if not row["identical"]:
            verdict += f": {row['first_difference'] or row['error']}"
        edge = (
            "identical"
            if row.get("edge_identical")
            else (f"differs: {row.get('edge_first_difference', 'not run')}")
        )
        lines.append(
            f"| {row['parser']} | {row['version']} | {row['documents']:,} | {_cell(verdict)} | "
            f"{_cell(edge)} | {seconds} | {speed} |"
        )
    return "\n".join(lines)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")[:140]


def rendered_texts(root: Path) -> list[str]:
    names = pipeline.cluster_names(root)
    overlays = [f"clusters/{name}" for name in names]
    outputs = kustomize.render(root, overlays, kustomize.build_graph(root, overlays), CacheStore.off())
    return [output.text for output in outputs.values()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fleet", type=Path, help="an existing fleet (default: generate one)")
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--pools", type=int, default=1000)
    parser.add_argument("--teams", type=int, default=200)
    parser.add_argument("--teams-per-cluster", type=int, default=50)
    parser.add_argument("--output", type=Path, default=HERE / "results-parsers.json")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="gpupolicy-parsers-") as workdir:
        root = args.fleet
        if root is None:
            root = Path(workdir) / "fleet"
            print(f"compare_parsers: generating {args.clusters} clusters in {root}", file=sys.stderr)
            generate_fleet.generate(root, args.clusters, args.pools, args.teams, args.teams_per_cluster)
        print("compare_parsers: rendering every cluster", file=sys.stderr)
        texts = rendered_texts(root)
        edge_text = kubectl_output(EDGE_SOURCE, Path(workdir))
    print("compare_parsers: parsing and comparing", file=sys.stderr)
    rows = evaluate(texts, edge_text=edge_text)
    print(table(rows))
    args.output.write_text(
        json.dumps(
            {
                "fleet": {"clusters": len(texts), "bytes": sum(len(t) for t in texts)},
                "adopt_speedup_min": ADOPT_SPEEDUP,
                "edge_source": EDGE_SOURCE,
                "edge_kubectl_output": edge_text,
                "parsers": rows,
                "machine": {"python": platform.python_version(), "platform": platform.platform()},
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"compare_parsers: wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
