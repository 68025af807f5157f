"""The latest recommendation of a cluster, committed as docs/recommendations/<cluster>.json and .png, from
which `gpupolicy docs` generates the cluster's recommendation page (docsgen/recommendations.py).

The record holds only what the replays determine (no timings, no dates), with floats rounded, so recording
again with the same command, seed and repository writes the same bytes and the generated page stays
reproducible.
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from pathlib import Path

from ..errors import ToolError
from ..infra import repopath
from ..infra.transaction import write_files
from ..simulate.metrics import Summary, WaitStats

RECORD_DIR = "docs/recommendations"
SUMMARY_KEYS = ("baseline", "repository", "recommended")


def _rounded(value):
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_rounded(v) for v in value]
    return value


def record_text(
    cluster: str,
    command: str,
    summaries: list[Summary],
    changes: list[str],
    files: list[str],
    points: list[dict],
    trials: int,
    targets: list[dict] = (),
) -> str:
    """`points`: the candidates replayed whole (trial, useful, worst wait, on the Pareto front); `trials`:
    all;
    `targets`: each target's bound and worst waits (targets.target_report)."""
    data = {
        "cluster": cluster,
        "command": command,
        "changes": changes,
        "files": files,
        "candidates": points,
        "trials": trials,
        "targets": list(targets),
        **{key: asdict(summary) for key, summary in zip(SUMMARY_KEYS, summaries, strict=False)},
    }
    return json.dumps(_rounded(data), indent=2, sort_keys=True) + "\n"


def write_record(root: Path, cluster: str, text: str, png: bytes) -> list[Path]:
    """Write <cluster>.json and <cluster>.png under docs/recommendations/, both or neither; the cluster name
    comes from content, so the targets go through the trust boundary."""
    folder = Path(root) / RECORD_DIR
    if not repopath.within(root, folder):
        raise ToolError(f"{RECORD_DIR} resolves outside the repository; refusing to record there")
    try:
        targets = [
            repopath.output_path(folder, f"{cluster}.json"),
            repopath.output_path(folder, f"{cluster}.png"),
        ]
    except repopath.Refused as refusal:
        raise ToolError(f"refusing to record cluster {cluster!r}: {refusal}") from None
    write_files({targets[0]: text, targets[1]: png})
    return targets


def summary_from(data: object, where: str) -> Summary:
    """A Summary back from its record; a ToolError naming the file when the record is not one."""
    try:
        values = dict(data)
        values["wait"] = WaitStats(**values["wait"])
        for key in ("wait_by_queue", "wait_by_tier"):
            values[key] = {name: WaitStats(**stats) for name, stats in values.get(key, {}).items()}
        known = {f.name for f in fields(Summary)}
        return Summary(**{k: v for k, v in values.items() if k in known})
    except (TypeError, KeyError, ValueError, AttributeError) as exc:
        raise ToolError(
            f"{where}: not a recommendation record's summary ({exc}); record it again with "
            "`gpupolicy recommend --record`"
        ) from None
