"""A queue file's header comment states quotas the YAML below it no longer sets.

## Why it matters
A team ClusterQueue file may open with a block that says, per GPU flavor, what the queue holds of what the
pool exposes (`gpu 28 of 48, borrow up to 20, lend at most 16`). Reviewers read it instead of adding up the
YAML, and so does whoever answers "how much does team nlp have on the H200s?". After a hand edit of
`nominalQuota`, or a pool that grew, the comment still states the old figures, and nothing in the cluster
tells anyone: Kueue reads the YAML, people read the comment. The block is therefore generated from the queue
and its pools (`domain/queue_header.py`, decision 0090) and checked here; nothing reads a figure from it.

## Bad example
```yaml
# Quotas per flavor (pool), devices the pool exposes:
#   eu-h200-train (exclusive): gpu 28 of 48, borrow up to 20.   # the YAML says 32 nominal
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
...
        - name: eu-h200-train
          resources:
            - name: nvidia.com/gpu
              nominalQuota: 32
              borrowingLimit: 20
```

## Fix
Run `gpupolicy docs`: it rewrites every stale block (and regenerates the pages), and writes nothing else in
the queue files. Or delete the block: a file without the marker line
`# Quotas per flavor (pool), devices the pool exposes:` states no counts and is not checked. `validate`
never writes. While a pool declaration is broken, no header is judged (nor rewritten): the figures its pool
exposes are unknown until its own error is fixed.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..domain.queue_header import ITEM, expected_blocks, stale_lines
from ..domain.quotas import pool_of
from ..findings import Finding, Severity
from ..model import Fleet

ID = "DOC006"
SEVERITY = Severity.ERROR
SUMMARY = "A queue file's header comment disagrees with the quotas below it"
HINT = "run `gpupolicy docs` (it rewrites the header from the YAML), or delete the header block"


def check(fleet: Fleet) -> Iterator[Finding]:
    for path, documents in sorted(expected_blocks(fleet).items()):
        text = fleet.source_text(path)
        if text is None:
            continue  # refused or unreadable: the loader reported the file
        for first_key, expected in sorted(documents.items()):
            for stale in stale_lines(text, first_key, expected):
                yield Finding(
                    rule=ID,
                    severity=SEVERITY,
                    path=path,
                    line=stale.line,
                    hint=HINT,
                    message=_message(stale.found, stale.expected)
                    + _pool_note(fleet, stale.found or stale.expected),
                )


def _pool_note(fleet: Fleet, line: str) -> str:
    """` (pool P)` for the flavor a header line is about: a pool whose MIG layout is broken exposes other
    devices, and the root-cause report (configure/rootcause.py) nests this finding under that cause."""
    flavor = line.removeprefix(ITEM).split(" (", 1)[0]
    for cluster in fleet.clusters.values():
        pool = pool_of(cluster, flavor) if flavor in cluster.flavors else None
        if pool is not None:
            return f" (pool {pool.name})"
    return ""


def _message(found: str, expected: str) -> str:
    if not found:
        return f"the queue header lacks a line; the YAML below makes it `{expected}`"
    if not expected:
        return f"the queue header line `{found}` is one too many: the YAML below makes the block shorter"
    return f"the queue header says `{found}`; the YAML below makes it `{expected}`"
