"""The counts a team ClusterQueue file's header comment states, rendered from the queue and its pools.

A queue file may open with a block that says, per GPU flavor, what the queue holds of what the flavor's pool
exposes (decision 0090):

    # Quotas per flavor (pool), devices the pool exposes:
    #   eu-h200-train (exclusive): gpu 28 of 48, borrow up to 20, lend at most 16.
    #   eu-a100-mig (mig): mig-1g.10gb 8 of 16, borrow up to 8; mig-2g.20gb 4 of 8.

This module is the one home of that text: `gpupolicy docs` rewrites a stale block with `with_header`,
`recommend --apply` and `gpupolicy new` write it after their edits, and DOC006 compares it (`stale_lines`).
The block is generated, never read: nothing takes a figure from it (the cpu/memory a GPU stands for is derived
from the YAML, `recommend/cpu_share.py`). A file without the marker line has no block, and none is added.
Lines of the block: every flavor of the queue whose pool is known (`quotas.pool_of`), in the queue's order;
per flavor every resource the pool exposes, `N of M` (nominal quota of capacity), then the borrowing and
lending limits where the queue sets them (unset: Kueue's default, unlimited borrowing, lending everything).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import Cluster, ClusterQueue, Fleet, ResourceQuota
from .quantity import number
from .quotas import pool_of

MARKER = "# Quotas per flavor (pool), devices the pool exposes:"
ITEM = "#   "  # a line of the block: the marker's items are indented under it


@dataclass(frozen=True)
class StaleLine:
    line: int  # 1-based line of the file: the stale line, or where the missing one belongs
    found: str  # "" when the line is missing
    expected: str  # "" when the line should go


def header_lines(cluster: Cluster, queue: ClusterQueue) -> list[str]:
    """The block for `queue` in `cluster`: the marker, then one line per GPU flavor with a known pool."""
    lines = [MARKER]
    for group in queue.resource_groups:
        for flavor in group.flavors:
            pool = pool_of(cluster, flavor.flavor)
            if pool is None:
                continue  # the cpu flavor, or a flavor the CAP/WL rules report
            exposed = pool.capacity
            clauses = [_clause(q, exposed[q.name]) for q in flavor.resources if exposed.get(q.name)]
            if clauses:
                lines.append(f"{ITEM}{flavor.flavor} ({pool.access_mode}): {'; '.join(clauses)}.")
    return lines


def _clause(quota: ResourceQuota, capacity: int) -> str:
    text = f"{quota.name.removeprefix('nvidia.com/')} {number(quota.nominal)} of {capacity}"
    if quota.borrowing_limit is not None:
        text += f", borrow up to {number(quota.borrowing_limit)}"
    if quota.lending_limit is not None:
        text += f", lend at most {number(quota.lending_limit)}"
    return text


def block_span(lines: list[str], first_key: int) -> tuple[int, int] | None:
    """(index of the marker, index after the block's last line) in `lines` (the file split at newlines), for
    the comment just above the document whose first key is on 1-based line `first_key`; None without one."""
    first_key = min(first_key, len(lines) + 1)  # a line past the end (the file changed since it was loaded)
    start = first_key - 1
    while start > 0 and lines[start - 1].startswith("#"):
        start -= 1
    for index in range(start, first_key - 1):
        if lines[index].rstrip() == MARKER:
            end = index + 1
            while end < first_key - 1 and lines[end].startswith(ITEM):
                end += 1
            return index, end
    return None


def stale_lines(text: str, first_key: int, expected: list[str]) -> list[StaleLine]:
    """Where the block above line `first_key` differs from `expected`; [] when it agrees or there is none."""
    lines = text.split("\n")
    span = block_span(lines, first_key)
    if span is None:
        return []
    start, end = span
    found = [line.rstrip() for line in lines[start:end]]
    stale = []
    for offset in range(max(len(found), len(expected))):
        have = found[offset] if offset < len(found) else ""
        want = expected[offset] if offset < len(expected) else ""
        if have != want:
            stale.append(StaleLine(start + 1 + min(offset, len(found)), have, want))
    return stale


def with_header(text: str, first_key: int, expected: list[str]) -> str:
    """`text` with the block above line `first_key` replaced by `expected`; unchanged without a block."""
    lines = text.split("\n")
    span = block_span(lines, first_key)
    if span is None:
        return text
    start, end = span
    return "\n".join([*lines[:start], *expected, *lines[end:]])


def rewritten(text: str, documents: list[tuple[int, list[str]]]) -> str:
    """`text` with the block of each document (first-key line, expected lines) rewritten, the last document
    first so that the earlier ones' lines stay where they were."""
    for first_key, expected in sorted(documents, reverse=True):
        text = with_header(text, first_key, expected)
    return text


def expected_blocks(fleet: Fleet) -> dict[str, dict[int, list[str]]]:
    """Source file -> first-key line of each ClusterQueue document in it -> the block that document's header
    should be, for every cluster the run loaded. A document two clusters render differently (a base several
    clusters share, patched apart) states no single truth and is left out. While a pool declaration is broken
    (reported as itself), what the pools expose is unknown: no block is expected, so none is judged stale or
    rewritten."""
    if fleet.invalid_pools:
        return {}
    found: dict[str, dict[int, list[str]]] = {}
    ambiguous: set[tuple[str, int]] = set()
    for cluster in sorted(fleet.clusters.values(), key=lambda c: c.name):
        for queue in cluster.cluster_queues.values():
            span = fleet.span(queue.obj)
            if span is None:
                continue
            path, first_key, _ = span
            expected = header_lines(cluster, queue)
            known = found.setdefault(path, {}).setdefault(first_key, expected)
            if known != expected:
                ambiguous.add((path, first_key))
    for path, first_key in ambiguous:
        del found[path][first_key]
    return {path: documents for path, documents in found.items() if documents}


def refreshed_files(fleet: Fleet) -> dict[str, str]:
    """Repo-relative path -> new text of every queue file whose header block is stale (`gpupolicy docs`
    writes them; `validate` reports them as DOC006 and writes nothing)."""
    changed = {}
    for path, documents in sorted(expected_blocks(fleet).items()):
        text = fleet.source_text(path)
        if text is None:
            continue
        new = rewritten(text, list(documents.items()))
        if new != text:
            changed[path] = new
    return changed
