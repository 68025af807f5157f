"""Every team ClusterQueue names the cost center its GPU hours are charged to.

## Why it matters
ACME's finance team charges GPU hours by the `acme.example/cost-center` label of the ClusterQueue that
admitted the work; a queue without it is charged to nobody.

## Bad example
A ClusterQueue `alpha` with labels `gpupolicy.io/team: alpha` only.

## Fix
Add `acme.example/cost-center: <code>` to the queue's labels.
"""

from collections.abc import Iterator

from gpupolicy.findings import Finding, Severity, at
from gpupolicy.model import Fleet

ID = "ACME-COST001"
SEVERITY = Severity.WARNING
SUMMARY = "Team ClusterQueue without an acme.example/cost-center label"
LABEL = "acme.example/cost-center"


def check(fleet: Fleet) -> Iterator[Finding]:
    for name, cluster in sorted(fleet.clusters.items()):
        for queue in cluster.team_queues():
            if LABEL not in queue.labels:
                yield Finding(
                    ID,
                    SEVERITY,
                    f"ClusterQueue {queue.name} has no {LABEL} label",
                    **at(fleet.locate(queue.obj, "metadata", "labels")),
                    cluster=name,
                    hint=f"add {LABEL}: <cost center code> to its labels",
                )
