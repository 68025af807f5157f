"""Root cause first: findings that follow from another finding are reported under it.

A MIG layout with a profile the GPU does not have (MIG001), that cannot be placed (MIG002), that does not
parse (MIG009) or that makes no instance (MIG010) leaves its pools exposing other resources than the queues
expect. Every quota check on those pools then fails too (CAP001 over capacity, CAP002 resource not exposed,
CAP005 production reserve), the queue headers that state what the pool exposes (DOC006) and the upgrade drain
check (UPG008): six errors for one typo, the typo
last in file order. The derived findings are linked to their cause (`caused_by`), and every output shows the
cause first with its consequences under it (text and Markdown nested, JSON `caused_by`, SARIF
`relatedLocations`). Nothing is dropped: a derived finding still counts, and it still fails the build until
the cause is fixed.

A cause is tied to its pools through the model: the layout the cause's line belongs to (`Cluster.mig_configs`,
each entry with the line of its key), and the pools that select that layout. A derived finding names its pool
in its message ("pool <name>"), which every derived rule does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from ..findings import Finding
from ..model import Fleet

# Findings on a MIG layout that change what its pools expose.
LAYOUT_CAUSES = ("MIG001", "MIG002", "MIG009", "MIG010")
# Findings that follow when a pool exposes other resources than its queues expect.
CAPACITY_EFFECTS = ("CAP001", "CAP002", "CAP005", "UPG008", "DOC006")
POOL_IN_MESSAGE = re.compile(r"\bpool ([a-z0-9](?:[-a-z0-9.]*[a-z0-9])?)")


def link(fleet: Fleet, findings: Iterable[Finding]) -> dict[Finding, Finding]:
    """Derived finding -> the finding that causes it (the first cause in report order, when several do)."""
    findings = list(findings)
    pools_of_cause: list[tuple[Finding, set[str]]] = []
    for finding in findings:
        if finding.rule in LAYOUT_CAUSES:
            layout = _layout_at(fleet, finding.path, finding.line)
            if layout:
                pools_of_cause.append((finding, _pools_with_layout(fleet, layout)))
    causes: dict[Finding, Finding] = {}
    for finding in findings:
        if finding.rule not in CAPACITY_EFFECTS:
            continue
        named = set(POOL_IN_MESSAGE.findall(finding.message))
        cause = next((c for c, pools in pools_of_cause if named & pools), None)
        if cause is not None:
            causes[finding] = cause
    return causes


def _layout_at(fleet: Fleet, path: str, line: int) -> str:
    """The MIG layout whose entry holds `path:line`: the last layout key at or above the line in that file."""
    best, best_line = "", 0
    for cluster in fleet.clusters.values():
        for name, entry in cluster.mig_configs.items():
            if entry.source.path == path and best_line < entry.source.line <= line:
                best, best_line = name, entry.source.line
    return best


def _pools_with_layout(fleet: Fleet, layout: str) -> set[str]:
    return {
        pool.name
        for cluster in fleet.clusters.values()
        for pool in cluster.pools
        if pool.mig_layout == layout
    }


def ordered(findings: Iterable[Finding], causes: dict[Finding, Finding]) -> Iterator[tuple[Finding, int]]:
    """(finding, depth) in report order: the causes first, each followed by what it causes (depth 1), then
    every
    other finding as before."""
    findings = list(findings)
    effects: dict[Finding, list[Finding]] = {}
    for finding in findings:
        if finding in causes:
            effects.setdefault(causes[finding], []).append(finding)
    present = set(findings)
    roots = [f for f in findings if f in effects]
    for root in roots:
        yield root, 0
        for effect in effects[root]:
            yield effect, 1
    for finding in findings:
        if finding not in effects and not (finding in causes and causes[finding] in present):
            yield finding, 0
