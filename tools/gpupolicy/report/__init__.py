"""The output formats of a run's findings: one registry, FORMATS, name -> Format(write, findings_only), where
`write(result, root) -> text`; FORMATTERS (name -> write) and FINDINGS_FORMATS are read from it.

text (people) and json (scripts) are written here; sarif, junit and github (review tools, CI) in formats.py,
which never imports this module: the registry is complete as soon as this module is imported, nothing
registers into it, and no module imports formats.py for a side effect. Adding a format is writing its function
(here or in formats.py) and adding its entry to FORMATS; `validate --format` and `report merge --format` offer
exactly these names, and a format marked `findings_only` (it reads nothing but the findings) is offered by
`gpupolicy diff` too.

A diff is a different result (sections, a headline, introduced and fixed findings): `diff.OUTPUTS` is its
table, its own markdown and json plus FINDINGS_FORMATS written on the diff's `findings_view` (see diff.py).

A sharded run's JSON report carries its shard block (`RunResult.shard`, set by `validate --shard`): `as_json`
writes it, so no caller edits the JSON text afterwards.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..configure import rootcause
from ..findings import Finding, Severity
from ..internal import crashes
from . import formats

Formatter = Callable[[Any, str], str]


def summary(result: Any) -> dict:
    return {
        "errors": result.errors,
        "warnings": result.warnings,
        "crashed": crashed(result),
        "waived": len(waived(result)),
        "disabled": getattr(result, "disabled", 0),
        "rerated": getattr(result, "rerated", 0),
        "objects": result.objects,
        "clusters": len(result.rendered_clusters),
        "unrendered_clusters": list(getattr(result, "unrendered_clusters", None) or []),
        "seconds": round(sum(result.timings.values()), 3),
    }


def waived(result: Any) -> list:
    """The findings reviewed exceptions accept (`waivers.Waived`); a result without them has none."""
    return list(getattr(result, "waived", None) or [])


def crashed(result: Any) -> int:
    """How many checks crashed (INTERNAL findings, counted among the errors too): the run is incomplete."""
    return len(crashes(result.findings))


def verdict(errors: int, crashes: int) -> str:
    """Never "ok" when a check did not run."""
    if crashes:
        return f"INCOMPLETE ({crashes} check(s) crashed, see INTERNAL)"
    return "FAILED" if errors else "ok"


def causes(result: Any) -> dict[Finding, Finding]:
    """Derived finding -> its cause (`rootcause.link`); a result without them has none."""
    return dict(getattr(result, "causes", None) or {})


def as_json(result: Any, root: str = "") -> str:
    linked = causes(result)
    payload = {
        "findings": [finding_json(f, linked.get(f)) for f in result.findings],
        "waived": [w.as_dict() for w in waived(result)],
        "summary": summary(result),
    }
    if getattr(result, "shard", None) is not None:  # a shard's report: what `report merge` needs (shards.py)
        payload["shard"] = result.shard
    return json.dumps(payload, indent=2, sort_keys=False)


def finding_json(finding: Finding, cause: Finding | None) -> dict:
    """A finding's fields; a derived one adds `caused_by`: the rule, place and message of its cause."""
    data = finding.as_dict()
    if cause is not None:
        data["caused_by"] = {
            "rule": cause.rule,
            "path": cause.path,
            "line": cause.line,
            "message": cause.message,
        }
    return data


_MARK = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "info"}


def as_text(result: Any, root: str = "") -> str:
    """Causes first, each with the findings it causes indented under it, then the rest in file order."""
    lines = []
    for finding, depth in rootcause.ordered(result.findings, causes(result)):
        indent = "  " * depth
        lines.append(indent + ("-> " if depth else "") + _text_line(finding))
        if finding.hint:
            lines.append(f"{indent}    hint: {finding.hint}")
    stats = summary(result)
    accepted = f", {stats['waived']} waived by reviewed exceptions" if stats["waived"] else ""
    accepted += configured_text(stats)
    lines.append(
        f"{verdict(stats['errors'], stats['crashed'])}: {stats['errors']} error(s), "
        f"{stats['warnings']} warning(s){accepted} in {stats['objects']} objects from "
        f"{stats['clusters']} cluster(s){_unrendered_text(stats)}, {stats['seconds']:.2f}s"
    )
    return "\n".join(lines)


def _unrendered_text(stats: dict) -> str:
    """The selected clusters left out because a file they include did not load: their objects went
    unchecked."""
    names = stats.get("unrendered_clusters") or []
    they = "a file it includes does" if len(names) == 1 else "files they include do"
    return f" ({', '.join(names)} not rendered: {they} not load)" if names else ""


def configured_text(stats: dict) -> str:
    """What gpupolicy.yaml changed, as the summary line says it ("" when nothing)."""
    parts = [
        f"{stats[key]} {word}"
        for key, word in (("disabled", "disabled"), ("rerated", "re-rated"))
        if stats.get(key)
    ]
    return f", {' and '.join(parts)} by gpupolicy.yaml" if parts else ""


def waived_text(result: Any) -> str:
    """The accepted findings, each with the exception that accepts it (`validate --show-waived`)."""
    lines = []
    for item in waived(result):
        exception = item.waiver
        lines.append(_text_line(item.finding, f"waived {_MARK[item.finding.severity]}"))
        lines.append(
            f"    exception: {exception.reason} (owner {exception.owner}, expires "
            f"{exception.expires.isoformat()}; {exception.source})"
        )
    return "\n".join(lines)


def _text_line(finding: Finding, mark: str = "") -> str:
    where = f" [{finding.cluster}]" if finding.cluster else ""
    return f"{finding.place}: {mark or _MARK[finding.severity]} {finding.rule}: {finding.message}{where}"


@dataclass(frozen=True)
class Format:
    write: Formatter
    findings_only: bool = False  # reads nothing but the findings, so a diff's findings can be written in it


FORMATS: dict[str, Format] = {
    "text": Format(as_text),
    "json": Format(as_json),
    "sarif": Format(formats.as_sarif, findings_only=True),
    "junit": Format(formats.as_junit, findings_only=True),
    "github": Format(formats.as_github, findings_only=True),
}
FORMATTERS: dict[str, Formatter] = {name: entry.write for name, entry in FORMATS.items()}
FINDINGS_FORMATS = tuple(sorted(name for name, entry in FORMATS.items() if entry.findings_only))


def exit_code(result: Any) -> int:
    """0 clean, 1 error findings, 2 when a check crashed (INTERNAL: the run is incomplete), whatever else
    was found. The crash is a finding in the report; stderr says it too, so a report sent to a file is not
    the only place it shows."""
    for crash in result.crashes:
        print(f"gpupolicy: {crash}", file=sys.stderr)
    if result.crashes:
        return 2
    return 1 if result.errors else 0
