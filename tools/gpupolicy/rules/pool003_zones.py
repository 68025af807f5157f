"""A pool declares nodes in a zone its cluster does not have.

## Why it matters
The production-reserve and upgrade-capacity rules reason about losing a failure zone. A pool whose zones are
not the cluster's zones (a typo, or a pool moved between clusters) makes those numbers wrong, and usually
means the pool's nodes are not where the platform team thinks they are.

## Bad example
```yaml
# clusters/prod-eu/cluster.yaml: zones [europe-west4-a, europe-west4-b]
# pools/eu-h200-train/pool.yaml:
spec:
  zones: {europe-west4-a: 2, europe-west4-c: 2}
```

## Fix
Use the cluster's zone names in pool.yaml, or add the zone to cluster.yaml if the cluster really spans it.
"""

from collections.abc import Iterator

from ..findings import Finding, Severity, at
from ..model import Fleet

ID = "POOL003"
SEVERITY = Severity.ERROR
SUMMARY = "A pool declares nodes in a zone its cluster does not list"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        zones = set(cluster.facts.zones)
        if not zones:
            continue
        for pool in cluster.pools:
            for zone in pool.zones:
                if zone not in zones:
                    yield Finding(
                        ID,
                        SEVERITY,
                        f"pool {pool.name} has nodes in zone {zone!r}, which cluster "
                        f"{cluster.name} does not list ({', '.join(sorted(zones))})",
                        cluster=cluster.name,
                        **at(fleet.locate_file(pool.path, "spec", "zones", zone)),
                        hint="fix the zone name in pool.yaml or cluster.yaml",
                    )
