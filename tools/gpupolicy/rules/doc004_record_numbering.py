"""Decision records are not named `NNNN-slug.md`, reuse a number, or carry another number in their title.

## Why it matters
Records are cited by number ("see decision 0005") in code comments, reviews and other records, and
`superseded-by:` points at a number. Two records with one number make every such citation ambiguous; a file
named `caching.md` has no number to cite at all; a heading `# 0007: ...` in file `0008-...md` sends readers
to the wrong record.

## Bad example
```text
docs/decisions/0007-kueue-fair-sharing.md
docs/decisions/0007-upgrade-waves.md      # number 0007 twice
docs/decisions/Render Cache.md            # no number, spaces, capitals
```

## Fix
Give each record the next free four-digit number and a lower-case, hyphenated slug:
`docs/decisions/0017-render-cache.md`, with the heading `# 0017: Render cache`. `index.md` and `template.md`
are the only other pages allowed in the folder.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..domain.decisions import RECORD_NAME, Decision
from ..findings import Finding, Severity
from ..model import Fleet
from .doc_common import decision_log

ID = "DOC004"
SEVERITY = Severity.ERROR
SUMMARY = "Decision record file name or number invalid or duplicated"


def check(fleet: Fleet) -> Iterator[Finding]:
    first_with: dict[str, Decision] = {}
    for decision in decision_log(fleet):
        if not RECORD_NAME.match(decision.name):
            yield _finding(
                decision,
                f"file name {decision.name!r} is not NNNN-slug.md (four digits, a "
                "hyphen, a "
                "lower-case hyphenated slug)",
                1,
                "rename it, e.g. 0017-render-cache.md",
            )
        if decision.number is None:
            continue
        earlier = first_with.setdefault(decision.number, decision)
        if earlier is not decision:
            yield _finding(
                decision,
                f"number {decision.number} is already used by {earlier.name}",
                1,
                "give this record the next free number",
            )
        yield from _title(decision)


def _title(decision: Decision) -> Iterator[Finding]:
    if not decision.title_line:
        yield _finding(
            decision,
            "the record has no title heading (`# NNNN: Title`)",
            decision.body_line,
            f"add `# {decision.number}: <the decision in a few words>` below the front matter",
        )
    elif decision.title_number is not None and decision.title_number.zfill(4) != decision.number:
        yield _finding(
            decision,
            f"the title says {decision.title_number} but the file is number {decision.number}",
            decision.title_line,
            f"write `# {decision.number}: {decision.title}`",
        )


def _finding(decision: Decision, message: str, line: int, hint: str = "") -> Finding:
    return Finding(
        rule=ID,
        severity=SEVERITY,
        message=f"{decision.name}: {message}",
        path=decision.path,
        line=line or 1,
        hint=hint,
    )
