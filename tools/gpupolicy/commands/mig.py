"""`gpupolicy mig check FILE`: check a mig-parted config on its own and draw each layout's placement.

FILE is a mig-parted config (`version: v1`, `mig-configs: ...`) or a ConfigMap whose data holds one (as the
GPU Operator's `default-mig-parted-config` does). Each layout is checked against the GPU models its
device-filter names, or `--gpu`, or else every catalog model that offers all of its profiles.
Exit codes: 0 clean, 1 an invalid layout, 2 the file could not be read or is not a mig-parted config.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..domain import catalog
from ..domain.mig import LayoutReport, MigConfig, Problem, diagram, evaluate, parse_config
from ..errors import ToolError
from ..infra import yamlload
from ..infra.inputs import read_given
from ..infra.yamlload import MAX_FILE_BYTES
from . import COMMANDS, FORMAT_HELP

NAME = "mig"
HELP = COMMANDS[NAME]  # one home for the help text: the table `--help` reads
NEEDS_REPO = False  # checks FILE on its own: a config from anywhere (the operator's default one, a draft)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="mig_action", metavar="ACTION")
    actions.required = True
    check = actions.add_parser(
        "check",
        help="check a mig-parted config file and draw each layout's placement",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    check.add_argument("file", metavar="FILE", help="mig-parted config YAML, or a ConfigMap holding one")
    check.add_argument(
        "--gpu",
        metavar="MODEL",
        action="append",
        help=f"check against this catalog model (repeatable): {', '.join(catalog.GPUS)}",
    )
    check.add_argument(
        "--strategy",
        choices=("single", "mixed"),
        help="the cluster's MIG strategy; single also requires one profile type per node",
    )
    check.add_argument("--format", choices=("text", "json"), default="text", help=FORMAT_HELP)
    # Every command takes --repo (cli.py adds it to `mig`); a sub-action's parser sees only the words after
    # its name, so `mig check FILE --repo DIR` needs it here too. SUPPRESS keeps `mig --repo DIR check FILE`
    # working.
    check.add_argument(
        "--repo",
        type=Path,
        default=argparse.SUPPRESS,
        help="policy repository root (accepted for symmetry; FILE is read on its own)",
    )


def run(args: argparse.Namespace) -> int:
    if getattr(args, "mig_action", "check") != "check":
        return _fail(f"unknown mig action {args.mig_action!r}")
    repo = getattr(args, "repo", None)  # SUPPRESS: absent unless given
    if repo is not None and not Path(repo).is_dir():
        return _fail(f"--repo {repo}: not a directory")
    unknown = [key for key in args.gpu or [] if key not in catalog.GPUS]
    if unknown:
        return _fail(f"unknown GPU model {', '.join(unknown)}; known: {', '.join(catalog.GPUS)}")
    source, error = _load(Path(args.file))
    if source is None:
        return _fail(error)
    config, problems = parse_config(source.data)
    reports = evaluate(config, args.gpu, args.strategy) if config else []
    problems = problems + [problem for report in reports for problem in report.problems]
    if args.format == "json":
        print(json.dumps(_as_json(source, config, reports, problems), indent=2))
    else:
        print(_as_text(source, config, reports, problems, args.gpu))
    return 1 if any(problem.severity == "error" for problem in problems) else 0


def _fail(message: str) -> int:
    print(f"gpupolicy mig check: {message}", file=sys.stderr)
    return 2


# --------------------------------------------------------------------------------------------------
# Loading: the config itself, or a ConfigMap whose data value is one
# --------------------------------------------------------------------------------------------------


@dataclass
class Source:
    path: str
    data: Any
    document: yamlload.Document
    line_offset: int = 0  # lines before the config inside its file (ConfigMap data value)
    where: str = ""  # "ConfigMap x key config.yaml" when embedded

    def line(self, path: tuple) -> int:
        return self.document.line_of(path) + self.line_offset


def _load(path: Path) -> tuple[Source | None, str]:
    try:
        raw = read_given(path, MAX_FILE_BYTES)
    except ToolError as exc:
        return None, str(exc)
    loaded = yamlload.parse_source(raw, str(path))
    if loaded.findings:
        return None, "; ".join(f"{f.place}: {f.message} [{f.rule}]" for f in loaded.findings)
    for document in loaded.documents:
        if isinstance(document.data, dict) and "mig-configs" in document.data:
            return Source(str(path), document.data, document), ""
        embedded = _from_configmap(document, str(path))
        if isinstance(embedded, str):
            return None, embedded
        if embedded is not None:
            return embedded, ""
    return None, f"{path}: not a mig-parted config (no mig-configs) nor a ConfigMap holding one"


def _from_configmap(document: yamlload.Document, path: str) -> Source | str | None:
    data = document.data
    if not (
        isinstance(data, dict) and data.get("kind") == "ConfigMap" and isinstance(data.get("data"), dict)
    ):
        return None
    for key, value in data["data"].items():
        if not isinstance(value, str) or "mig-configs" not in value:
            continue
        # A block scalar's content starts on the line after its key: inner line n is file line key_line + n.
        offset = document.line_of(("data", key))
        inner = yamlload.load_text(value, path)
        if inner.findings:
            return "; ".join(f"{path}:{f.line + offset}: {f.message} [{f.rule}]" for f in inner.findings)
        if inner.documents:
            name = (data.get("metadata") or {}).get("name", "?")
            return Source(
                path, inner.documents[0].data, inner.documents[0], offset, f"ConfigMap {name} key {key}"
            )
    return None


# --------------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------------


def _as_text(
    source: Source,
    config: MigConfig | None,
    reports: list[LayoutReport],
    problems: list[Problem],
    gpus: list[str] | None,
) -> str:
    lines = (
        [f"{source.path}:{source.line_offset + 1}: mig-parted config in {source.where}"]
        if source.where
        else []
    )
    for report in reports:
        lines.append(
            f"{source.path}:{source.line(('mig-configs', report.layout))}: layout {report.layout}: "
            f"{_checked_against(report, gpus)}"
        )
        for gpu_list, entry, placement_text in _grouped_diagrams(report):
            lines.append(f"  entry {entry} on {gpu_list}:")
            lines.extend("    " + row for row in placement_text.splitlines())
    for problem in sorted(problems, key=lambda p: (source.line(p.path), _rank(p.severity), p.message)):
        lines.append(f"{source.path}:{source.line(problem.path)}: {problem.severity}: {problem.message}")
    errors = sum(p.severity == "error" for p in problems)
    warnings = sum(p.severity == "warning" for p in problems)
    layouts = len(config.layouts) if config else 0
    lines.append(f"{layouts} layout(s) checked: {errors} error(s), {warnings} warning(s)")
    return "\n".join(lines)


def _checked_against(report: LayoutReport, gpus: list[str] | None) -> str:
    if not report.gpus:
        return "not checked against any GPU model"
    how = (
        "--gpu"
        if gpus
        else (
            "no device-filter: every catalog GPU offering its profiles"
            if report.inferred
            else "named by its device-filter"
        )
    )
    return f"checked on {', '.join(report.gpus)} ({how})"


def _grouped_diagrams(report: LayoutReport) -> list[tuple[str, int, str]]:
    """One diagram per entry and distinct picture, listing every GPU model that shares it."""
    groups: dict[tuple[int, str], list[str]] = {}
    for result in report.results:
        if result.placement is None:
            continue
        picture = diagram(catalog.gpu(result.gpu), result.placement)
        groups.setdefault((result.entry, picture), []).append(result.gpu)
    return [(", ".join(gpus), entry, picture) for (entry, picture), gpus in groups.items()]


def _rank(severity: str) -> int:
    return {"error": 0, "warning": 1}.get(severity, 2)


def _as_json(
    source: Source, config: MigConfig | None, reports: list[LayoutReport], problems: list[Problem]
) -> dict:
    return {
        "file": source.path,
        "layouts": [
            {
                "name": report.layout,
                "line": source.line(("mig-configs", report.layout)),
                "gpus": report.gpus,
                "inferred_gpus": report.inferred,
                "entries": [
                    {"entry": r.entry, "gpu": r.gpu, "placement": r.placement.starts if r.placement else None}
                    for r in report.results
                ],
            }
            for report in reports
        ],
        "problems": [
            {
                "severity": p.severity,
                "kind": p.kind,
                "message": p.message,
                "path": source.path,
                "line": source.line(p.path),
                "layout": p.layout,
                "gpu": p.gpu,
            }
            for p in problems
        ],
        "errors": sum(p.severity == "error" for p in problems),
        "valid": config is not None and not any(p.severity == "error" for p in problems),
    }
