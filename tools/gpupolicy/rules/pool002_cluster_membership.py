"""A pool belongs to no cluster, or to more than one.

## Why it matters
A pool is a set of physical nodes; they join exactly one cluster. A pool component included by two cluster
overlays double-counts its GPUs (both clusters hand out quota for the same cards), and a pool included by none
is hardware the fleet pays for and nobody can schedule on.

## Bad example
```yaml
# clusters/prod-eu/kustomization.yaml and clusters/prod-us/kustomization.yaml both contain
components:
  - ../../pools/eu-h200-train
```

## Fix
Include the pool's component in the one cluster that owns its nodes; delete pools that were decommissioned.
"""

from collections.abc import Iterator
from pathlib import PurePosixPath

from ..findings import Finding, Severity, at
from ..model import Fleet, Pool

ID = "POOL002"
SEVERITY = Severity.ERROR
SUMMARY = "A pool is included by no cluster, or by several"
# membership across every cluster: in a sharded run, the first shard (which reads every overlay)
FLEET_LEVEL = True


def check(fleet: Fleet) -> Iterator[Finding]:
    if not fleet.clusters:
        return  # nothing rendered (a narrower run, or an earlier error): membership is unknown
    every_cluster_known = fleet.pool_includers is not None or len(fleet.clusters) == len(
        fleet.repository_clusters
    )
    for pool in fleet.pools.values():
        location = fleet.locate_file(pool.path, "metadata", "name")
        includers = _includers(fleet, pool)
        if len(includers) > 1:
            yield Finding(
                ID,
                SEVERITY,
                f"pool {pool.name} is included by {len(includers)} clusters "
                f"({', '.join(includers)}); its GPUs are counted in each",
                **at(location),
                hint="a pool's nodes belong to one cluster: keep the component in one overlay",
            )
        elif not includers and every_cluster_known:
            yield Finding(
                ID,
                Severity.WARNING,
                f"pool {pool.name} is included by no cluster overlay",
                **at(location),
                hint="add `../../pools/<name>` to a cluster's components, or delete it",
            )


def _includers(fleet: Fleet, pool: Pool) -> tuple[str, ...]:
    """Every cluster including the pool when the run read every overlay, else those of this run."""
    if fleet.pool_includers is None:
        return pool.clusters
    return fleet.pool_includers.get(str(PurePosixPath(pool.path).parent), ())
