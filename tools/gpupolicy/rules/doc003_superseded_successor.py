"""A superseded decision record does not name and link the record that replaces it.

## Why it matters
A reader who lands on a superseded decision (from a search, an old link or `affects:`) must be sent to the one
in force; otherwise they follow advice the team abandoned. The successor goes in the front matter
(`superseded-by:`), which the generated index shows, and as a link in the text, which the reader clicks.

## Bad example
```markdown
---
status: superseded
date: 2026-11-29
deciders: platform team
affects: [mkdocs.yml]
---
# 0009: Sphinx for the runbook site
```
No `superseded-by`, no link: which decision replaced it?

## Fix
```markdown
---
status: superseded
superseded-by: "0016"
...
---
# 0009: Sphinx for the runbook site

Superseded by [0016: Material for MkDocs for the runbook site](0016-runbook-site.md).
```
`superseded-by` must name an existing record by its four-digit number, and only a record whose status is
`superseded` names one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import PurePosixPath

from ..domain.decisions import SUPERSEDED_BY, Decision
from ..findings import Finding, Severity
from ..model import Fleet
from .doc_common import decision_log

ID = "DOC003"
SEVERITY = Severity.ERROR
SUMMARY = "Superseded decision record does not link its successor"

RECORD_NUMBER = re.compile(r"^\d{1,4}$")


def check(fleet: Fleet) -> Iterator[Finding]:
    log = decision_log(fleet)
    by_number = {d.number: d for d in log if d.number}
    for decision in log:
        if decision.problems:
            continue  # DOC001 reports records whose front matter cannot be read
        if decision.status == "superseded":
            yield from _successor(decision, by_number)
        elif SUPERSEDED_BY in decision.meta:
            yield _finding(
                decision,
                f"names a successor ({SUPERSEDED_BY}: {decision.superseded_by}) but its "
                f"status is {decision.status or 'missing'}",
                decision.line_of(SUPERSEDED_BY),
                "set status: superseded, or remove superseded-by",
            )


def _successor(decision: Decision, by_number: dict[str, Decision]) -> Iterator[Finding]:
    written = decision.superseded_by
    if not written:
        yield _finding(
            decision,
            f"status is superseded but no {SUPERSEDED_BY} names the successor",
            decision.line_of("status"),
            f'add {SUPERSEDED_BY}: "NNNN" (the number of the new record)',
        )
        return
    if not RECORD_NUMBER.match(written):
        yield _finding(
            decision,
            f"{SUPERSEDED_BY} {written!r} is not a record number",
            decision.line_of(SUPERSEDED_BY),
            f'write the successor\'s four-digit number, e.g. {SUPERSEDED_BY}: "0016"',
        )
        return
    number = written.zfill(4)
    successor = by_number.get(number)
    if successor is None:
        yield _finding(
            decision,
            f"{SUPERSEDED_BY} {number} names no record in docs/decisions/",
            decision.line_of(SUPERSEDED_BY),
        )
    elif successor is decision:
        yield _finding(decision, "a record cannot supersede itself", decision.line_of(SUPERSEDED_BY))
    elif not _links_to(decision, successor):
        yield _finding(
            decision,
            f"the text does not link its successor {successor.name}",
            decision.title_line or decision.body_line,
            f"add a line such as: Superseded by [{successor.number}: {successor.title}]({successor.name}).",
        )


def _links_to(decision: Decision, successor: Decision) -> bool:
    for target, _line in decision.links():
        path = target.split("#", 1)[0].split("?", 1)[0]
        if PurePosixPath(path).name == successor.name:
            return True
    return False


def _finding(decision: Decision, message: str, line: int, hint: str = "") -> Finding:
    return Finding(
        rule=ID,
        severity=SEVERITY,
        message=f"{decision.name}: {message}",
        path=decision.path,
        line=line or 1,
        hint=hint,
    )
