"""A page under docs/generated/ is not what `gpupolicy docs` writes for the repository as it is.

## Why it matters
The generated pages (quota tables, the cluster pages, how nodes join each pool, the alert and metric
catalogs) are what the on-call engineer reads at 3 a.m.; the runbook site is built from the committed files.
A page that was not regenerated after a manifest changed describes a fleet that no longer exists: a quota
table with last week's numbers, a pool page that still shows a taint the pool dropped. A page no generator
makes any more (a removed pool's join page) stays on the site and in search results. `validate` regenerates
the pages in memory on every run over the whole repository whose model built without errors (a broken file
is reported as itself first) and compares them with the committed files;
a fork that does not commit generated pages (it builds them with the site) has no `docs/generated/` folder,
and nothing is compared.

## Bad example
```text
pools/us-a100/pool.yaml        # replicas: 4 -> 6 in this change
docs/generated/sharing.md      # still says 4 replicas: not regenerated
docs/generated/pools/old.md    # a page for a pool that was removed
```

## Fix
Run `gpupolicy docs` and commit the pages it writes (it writes only the pages whose content changed and
removes the ones no generator makes). After a merge whose only conflicts are under `docs/generated/`, take
either side and run `gpupolicy docs`: the pages follow from the merged manifests
([decision 0089](../../decisions/0089-generated-pages-stamp-paths-and-validate-checks-them.md)).
"""

from __future__ import annotations

from collections.abc import Iterator

from ..findings import Finding, Severity
from ..model import Fleet

ID = "DOC005"
SEVERITY = Severity.ERROR
SUMMARY = "Generated page differs from what `gpupolicy docs` writes"
FLEET_LEVEL = True  # the pages describe every cluster: only a run over the whole fleet can regenerate them

_SAYS = {
    "stale": "differs from what `gpupolicy docs` writes for the repository now",
    "missing": "is not committed, but `gpupolicy docs` writes it",
    "not generated": "is under docs/generated/ but no generator writes it any more",
}


def check(fleet: Fleet) -> Iterator[Finding]:
    for rel, state in sorted((fleet.page_drift or {}).items()):
        yield finding(
            f"{rel} {_SAYS.get(state, state)}",
            rel,
            hint="run `gpupolicy docs` and commit the pages it writes (or removes)",
        )


def finding(message: str, path: str, hint: str = "") -> Finding:
    return Finding(rule=ID, severity=SEVERITY, message=message, path=path, line=1, hint=hint)
