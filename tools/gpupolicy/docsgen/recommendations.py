"""One page per cluster with its latest recorded recommendation (docs/recommendations/<cluster>.json, written
by `gpupolicy recommend --record`): the command that rebuilds it, the before/after table (baseline, repository
policy, recommended), the change, and the Pareto plot recorded beside it."""

from __future__ import annotations

import json

from ..errors import ToolError
from ..infra import repopath
from ..recommend.record import RECORD_DIR, SUMMARY_KEYS, summary_from
from ..recommend.targets import target_rows
from ..simulate.report import summary_rows
from . import Context, table

PAGES_FOLDER = "recommendations"
HEADERS = {"baseline": "baseline", "repository": "repository policy", "recommended": "recommended"}


def pages(context: Context) -> dict[str, str]:
    reader = repopath.Reader(context.root)
    found = {}
    for name in sorted(context.fleet.clusters):
        rel = f"{RECORD_DIR}/{name}.json"
        try:
            raw = reader.read(rel)
        except repopath.Refused:
            continue  # no record (or one the boundary refuses): no page
        found[f"{PAGES_FOLDER}/{name}.md"] = _page(context, name, rel, _load(raw, rel))
    return found


def _load(raw: bytes, rel: str) -> dict:
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ToolError(
            f"{rel}: not JSON ({exc}); record it again with `gpupolicy recommend --record`"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("changes"), list):
        raise ToolError(
            f"{rel}: not a recommendation record; record it again with `gpupolicy recommend --record`"
        )
    return data


def _page(context: Context, cluster: str, rel: str, data: dict) -> str:
    png = f"{RECORD_DIR}/{cluster}.png"
    keys = [key for key in SUMMARY_KEYS if key in data]
    summaries = [summary_from(data[key], rel) for key in keys]
    rows = [list(row) for row in summary_rows(summaries)]
    changes = "\n".join(f"- `{change}`" for change in data["changes"]) or (
        "- none: the repository's policy is the best found"
    )
    files = ", ".join(f"`{f}`" for f in data.get("files") or ()) or "none"
    return (
        context.header(f"Recommendation for {cluster}", [rel, png])
        + f"Rebuild with:\n\n```sh\n{data.get('command', '')}\n```\n\n"
        + "## Before and after\n\n"
        + table(["metric", *(HEADERS[k] for k in keys)], rows)
        + _targets(data, rel)
        + f"\n## The change\n\n{changes}\n\nFiles: {files}. `--apply` writes them; `gpupolicy diff` "
        "shows them.\n\n"
        + f"## Candidates\n\n{data.get('trials', '?')} candidates, {len(data.get('candidates') or ())} "
        "replayed "
        + "whole (the others pruned on the first half of the workload); useful utilization against the "
        "worst " + f"target wait:\n\n![Pareto front of {cluster}](../../recommendations/{cluster}.png)\n"
    )


def _targets(data: dict, rel: str) -> str:
    """Each target's worst wait against its bound, under the repository's policy and the recommended one."""
    entries = data.get("targets") or []
    if not entries:
        return ""
    policies = [key for key in ("repository", "recommended") if key in data]
    try:
        rows = target_rows(entries, policies)
    except (TypeError, KeyError, ValueError, AttributeError) as exc:
        raise ToolError(
            f"{rel}: not a recommendation record's targets ({exc}); record it again with "
            "`gpupolicy recommend --record`"
        ) from None
    return "\n## Wait targets\n\nThe worst wait among each target's queues, against its bound:\n\n" + table(
        ["target", "bound", *(HEADERS[k] for k in policies)], rows
    )
