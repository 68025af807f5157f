"""A ClusterQueue or Cohort names a ResourceFlavor that does not exist, or a cohort nobody else is in.

## Why it matters
Kueue accepts a ClusterQueue that names a missing ResourceFlavor; the queue just stays inactive
(`FlavorNotFound`) and every workload in it waits, with nothing failing in the GitOps sync. A `cohortName` (or
a Cohort's `parentName`) that names no Cohort object is legal (an implicit cohort), but when no other queue or
cohort joins it, it is almost always a typo: the queue borrows from and lends to nobody.

## Bad example
```yaml
kind: ClusterQueue
metadata: {name: nlp}
spec:
  cohortName: reserch        # every other queue says "research"
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: prod-h100-typo   # no such ResourceFlavor
```

## Fix
Correct the name, or add the missing ResourceFlavor / Cohort to the cluster's overlay.
"""

from collections.abc import Iterator

from ..domain.queues import group_owners
from ..findings import Finding, Severity, at
from ..model import Cluster, Fleet

ID = "CAP006"
SEVERITY = Severity.ERROR
SUMMARY = "Reference to an unknown ResourceFlavor, or to a cohort with no other member"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        yield from _unknown_flavors(fleet, cluster)
        yield from _lonely_cohorts(fleet, cluster)


def _unknown_flavors(fleet: Fleet, cluster: Cluster) -> Iterator[Finding]:
    known = ", ".join(sorted(cluster.flavors)) or "none"
    for kind, name, obj, groups in group_owners(cluster):
        for g, group in enumerate(groups):
            for f, flavor in enumerate(group.flavors):
                if flavor.flavor in cluster.flavors:
                    continue
                yield Finding(
                    rule=ID,
                    severity=SEVERITY,
                    cluster=cluster.name,
                    message=f"{kind} {name} uses ResourceFlavor {flavor.flavor}, which does not "
                    f"exist in this cluster (flavors: {known}); the queue stays inactive",
                    hint="fix the flavor name or include the pool component that defines it",
                    **at(fleet.locate(obj, "spec", "resourceGroups", g, "flavors", f, "name")),
                )


def _lonely_cohorts(fleet: Fleet, cluster: Cluster) -> Iterator[Finding]:
    members: dict[str, list[tuple]] = {}
    for name, cq in sorted(cluster.cluster_queues.items()):
        if cq.cohort:
            members.setdefault(cq.cohort, []).append(("ClusterQueue", name, cq.obj, "cohortName"))
    for name, cohort in sorted(cluster.cohorts.items()):
        if cohort.parent and cohort.obj is not None:
            members.setdefault(cohort.parent, []).append(("Cohort", name, cohort.obj, "parentName"))
    declared = sorted(n for n, c in cluster.cohorts.items() if c.obj is not None)
    for cohort, refs in sorted(members.items()):
        if len(refs) > 1 or cluster.cohorts.get(cohort) is None or cluster.cohorts[cohort].obj is not None:
            continue
        kind, name, obj, field = refs[0]
        field_name = field if field in obj.spec else ("cohort" if field == "cohortName" else "parent")
        yield Finding(
            rule=ID,
            severity=SEVERITY,
            cluster=cluster.name,
            message=f"{kind} {name} joins cohort {cohort}, which no Cohort object defines and no "
            f"other queue joins: it can neither borrow nor lend (declared cohorts: "
            f"{', '.join(declared) or 'none'})",
            hint="fix the cohort name, or remove it if the queue should stand alone",
            **at(fleet.locate(obj, "spec", field_name)),
        )
