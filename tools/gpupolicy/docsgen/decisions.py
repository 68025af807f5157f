"""The decision log's index: every record with its number, title, status, date and the paths it affects.

Generated from the records' front matter (see `gpupolicy.domain.decisions`), so a new or superseded record
shows up in the index without anyone editing a list; `gpupolicy docs --check` fails until the index is
regenerated.
"""

from __future__ import annotations

from ..domain import decisions
from ..domain.decisions import Decision
from . import Context, table


def pages(context: Context) -> dict[str, str]:
    log = context.fleet.decision_log  # read once by the pipeline's load stage
    text = context.header("Decision log", [decisions.DECISIONS_DIR])
    text += (
        "Why the repository is the way it is, one [MADR](https://adr.github.io/madr/) record per "
        "decision (how to write one: [the decision log](../decisions/index.md)). A superseded record names "
        "the one that replaced it.\n\n"
    )
    if not log:
        return {"decisions.md": text + "No decision records yet.\n"}
    rows = [_row(decision) for decision in log]
    text += table(["#", "decision", "status", "date", "deciders", "affects"], rows)
    text += _by_status(log)
    return {"decisions.md": text}


def _row(decision: Decision) -> list[object]:
    title = decision.title or decision.name
    link = f"[{title}](../decisions/{decision.name})"
    status = decision.status or "?"
    if decision.status == "superseded" and decision.superseded_by:
        number = decision.superseded_by.zfill(4)
        status += f" by {number}"
    affects = ", ".join(f"`{path}`" for path in decision.affects) or "-"
    return [
        decision.number or "-",
        link,
        status,
        decision.date or "?",
        ", ".join(decision.deciders) or "-",
        affects,
    ]


def _by_status(log: list[Decision]) -> str:
    counts: dict[str, int] = {}
    for decision in log:
        counts[decision.status or "unknown"] = counts.get(decision.status or "unknown", 0) + 1
    order = [*decisions.STATUSES, "unknown"]
    summary = ", ".join(f"{counts[s]} {s}" for s in order if s in counts)
    return f"\n{len(log)} records: {summary}.\n"
