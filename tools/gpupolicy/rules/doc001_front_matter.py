"""A decision record's front matter is missing, unreadable or incomplete.

## Why it matters
The decision log is how the next engineer learns why a queue, a pool or a rule is the way it is. The front
matter is what makes it searchable and checkable: `status` says whether the decision still holds, `date` when
it was taken, `deciders` whom to ask, and `affects` which files it governs (rule DOC002 checks they exist). A
record without them is an essay nobody can trust or find. The generated index lists every record from these
fields.

## Bad example
```markdown
---
status: done
date: 29.11.2026
affects: tools/gpupolicy
---
# 0007: Quotas per team
```
`done` is not a status, the date is not ISO 8601, `deciders` is missing and `affects` is not a list.

## Fix
```markdown
---
status: accepted          # proposed | accepted | deprecated | superseded
date: 2026-11-29
deciders: platform team   # a name or a list of names
affects: [policies/teams, tools/gpupolicy/rules/cap001_quota_over_capacity.py]
---
```
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterator

from ..domain.decisions import STATUSES, Decision
from ..findings import Finding, Severity
from ..model import Fleet
from .doc_common import decision_log

ID = "DOC001"
SEVERITY = Severity.ERROR
SUMMARY = "Decision record front matter invalid"

ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def check(fleet: Fleet) -> Iterator[Finding]:
    for decision in decision_log(fleet):
        if decision.problems:
            for problem in decision.problems:
                yield _finding(decision, problem.message, problem.line, problem.hint)
            continue
        yield from _status(decision)
        yield from _date(decision)
        yield from _deciders(decision)
        yield from _affects(decision)


def _finding(decision: Decision, message: str, line: int, hint: str = "") -> Finding:
    return Finding(
        rule=ID,
        severity=SEVERITY,
        message=f"{decision.name}: {message}",
        path=decision.path,
        line=line or 1,
        hint=hint,
    )


def _missing(decision: Decision, key: str) -> bool:
    return key not in decision.meta or decision.meta[key] in ("", None)


def _status(decision: Decision) -> Iterator[Finding]:
    if _missing(decision, "status"):
        yield _finding(
            decision,
            "front matter has no status",
            decision.line_of(),
            f"add status: one of {', '.join(STATUSES)}",
        )
    elif decision.status not in STATUSES:
        yield _finding(
            decision,
            f"status {decision.meta['status']!r} is not one of {', '.join(STATUSES)}",
            decision.line_of("status"),
        )


def _date(decision: Decision) -> Iterator[Finding]:
    if _missing(decision, "date"):
        yield _finding(decision, "front matter has no date", decision.line_of(), "add date: YYYY-MM-DD")
        return
    value = decision.meta["date"]
    if (
        not isinstance(value, str)
        or not ISO_DATE.match(value.strip())
        or not _is_calendar_date(value.strip())
    ):
        yield _finding(
            decision,
            f"date {value!r} is not a calendar date written YYYY-MM-DD",
            decision.line_of("date"),
            "write the day the decision was taken, e.g. 2026-11-29",
        )


def _is_calendar_date(text: str) -> bool:
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _deciders(decision: Decision) -> Iterator[Finding]:
    value = decision.meta.get("deciders")
    if _missing(decision, "deciders") or not decision.deciders:
        yield _finding(
            decision,
            "front matter names no deciders",
            decision.line_of("deciders"),
            "add deciders: the team or people who took the decision (a name or a list)",
        )
    elif isinstance(value, list) and len(decision.deciders) != len(value):
        yield _finding(decision, "deciders must be names (strings)", decision.line_of("deciders"))


def _affects(decision: Decision) -> Iterator[Finding]:
    value = decision.meta.get("affects")
    if _missing(decision, "affects"):
        yield _finding(
            decision,
            "front matter has no affects list",
            decision.line_of(),
            "add affects: [paths the decision governs], e.g. [policies/scheduling, mkdocs.yml]",
        )
    elif not isinstance(value, list):
        yield _finding(
            decision,
            "affects must be a list of repository paths",
            decision.line_of("affects"),
            f"write affects: [{value}]" if isinstance(value, str) else "",
        )
    elif not value:
        yield _finding(
            decision,
            "affects is empty: name at least one path the decision governs",
            decision.line_of("affects"),
        )
    else:
        for index, item in enumerate(value):
            if not isinstance(item, str) or not item.strip():
                yield _finding(
                    decision, f"affects item {index + 1} is not a path", decision.line_of("affects", index)
                )
