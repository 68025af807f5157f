"""A decision record's `affects:` names a path that does not exist in the repository, or one fleet instance.

## Why it matters
`affects:` ties a decision to the files it governs, so that someone changing `policies/scheduling/` can find
the decisions behind it, and the record is reviewed when those files move. A path that was renamed or never
existed breaks that link silently: the record looks current and governs nothing. A path naming one cluster,
pool or team (`clusters/prod-us/queues`) goes the same way as soon as the fleet changes, and in every fork at
once: a fork replaces `clusters/`, `pools/` and `policies/teams/` (decision 0075), while the decision still
governs every cluster's queues.

## Bad example
```markdown
---
status: accepted
date: 2026-11-29
deciders: platform team
affects: [policies/queues, tools/gpupolicy/rules/cap001.py, clusters/prod-us/queues]
---
```
Neither of the first two exists: the queues live in `policies/scheduling/`, the rule module is
`cap001_quota_over_capacity.py`. The third names one cluster's queues: it is gone in a fork.

## Fix
Name paths relative to the repository root that exist (files or folders; a glob such as `pools/*/pool.yaml`
must match at least one file). When a decision's files move, update its `affects:`; when they are deleted,
mark the record `deprecated` or `superseded`. Name fleet files by their kind, with a glob in the instance's
place: `clusters/*/queues`, `pools/*/nvidiadriver.yaml`, `policies/teams/*/limitrange.yaml`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import PurePosixPath

from ..domain.decisions import GLOB_CHARACTERS, Decision, fleet_instance
from ..findings import Finding, Severity
from ..model import Fleet
from .doc_common import decision_log

ID = "DOC002"
SEVERITY = Severity.ERROR
SUMMARY = "Decision record affects a path that does not exist, or one cluster, pool or team"


def check(fleet: Fleet) -> Iterator[Finding]:
    for decision in decision_log(fleet):
        value = decision.meta.get("affects")
        if decision.problems or not isinstance(value, list):
            continue  # DOC001 reports records whose front matter cannot be read
        for index, item in enumerate(value):
            if isinstance(item, str) and item.strip():
                problem = _problem(fleet.affected_paths, item.strip())
                if problem:
                    yield _finding(decision, index, problem)


def _problem(affected_paths: dict[str, bool], written: str) -> str:
    """Why `written` names nothing in the repository, or "" when it does (the load stage looked it up)."""
    path = PurePosixPath(written.rstrip("/") or "/")
    if path.is_absolute() or ".." in path.parts:
        return f"{written!r} is not a path inside the repository (write it relative to the repository root)"
    if GLOB_CHARACTERS & set(written):
        return "" if affected_paths.get(written) else f"{written!r} matches no file in the repository"
    if not affected_paths.get(written):
        return f"{written!r} does not exist in the repository"
    instance = fleet_instance(written)
    if instance:
        folder, name = instance
        kind = PurePosixPath(written).as_posix().replace(f"{folder}/{name}", f"{folder}/*", 1)
        return (
            f"{written!r} names one instance of {folder}/ ({name}), which a fork replaces: "
            f"write the kind, {kind!r}"
        )
    return ""


def _finding(decision: Decision, index: int, problem: str) -> Finding:
    return Finding(
        rule=ID,
        severity=SEVERITY,
        message=f"{decision.name}: affects {problem}",
        path=decision.path,
        line=decision.line_of("affects", index),
        hint="fix the path, or drop it when the decision no longer governs it",
    )
