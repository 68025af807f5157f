"""A team role can change cluster-wide scheduling or GPU objects, or bind and escalate roles.

## Why it matters
ClusterQueues, ResourceFlavors, Cohorts, (Workload)PriorityClasses, the GPU Operator's ClusterPolicy and
NVIDIADrivers are shared by every team. A team that can edit them can raise its own quota, reorder the
priority ladder, or roll a driver under everyone's jobs; with `bind` or `escalate` on roles it can grant
itself anything. These objects change through pull requests to this repository, applied by Argo CD or Flux.

## Bad example
```yaml
kind: ClusterRole
metadata:
  name: team-a-trainer
  labels: {gpupolicy.io/persona: trainer}
rules:
  - apiGroups: [kueue.x-k8s.io]
    resources: [clusterqueues]
    verbs: [get, list, update]
```

## Fix
Give teams read access (`get`, `list`, `watch`) to these kinds, and write access only to namespaced kinds such
as Jobs and LocalQueues' workloads.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..findings import Finding, Severity, at
from ..model import Fleet
from .rbac_common import WRITE_VERBS, rules_of, strings, team_roles

ID = "RBAC001"
SEVERITY = Severity.ERROR
SUMMARY = "Team roles cannot change scheduling and GPU objects nor bind or escalate roles"

PROTECTED = {  # API group -> resources teams must not write
    "kueue.x-k8s.io": {"clusterqueues", "resourceflavors", "cohorts", "workloadpriorityclasses"},
    "scheduling.k8s.io": {"priorityclasses"},
    "nvidia.com": {"clusterpolicies", "nvidiadrivers"},
}
ESCALATION_VERBS = {"bind", "escalate", "impersonate"}


def protected_hits(rule: dict) -> list[str]:
    groups, resources = strings(rule, "apiGroups"), strings(rule, "resources")
    hits = []
    for group, names in PROTECTED.items():
        if group in groups or "*" in groups:
            hits += sorted(names if "*" in resources else names & set(resources))
    return hits


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for role in team_roles(cluster):
            for index, rule in rules_of(role):
                verbs = set(strings(rule, "verbs"))
                writes = sorted(verbs & WRITE_VERBS)
                hits = protected_hits(rule)
                if writes and hits:
                    yield Finding(
                        rule=ID,
                        severity=SEVERITY,
                        cluster=cluster.name,
                        message=f"team {role.ref()} may {', '.join(writes)} {', '.join(hits)}",
                        hint="teams change scheduling and GPU objects through pull requests; grant "
                        "get/list/watch only",
                        **at(fleet.locate(role, "rules", index, "verbs")),
                    )
                escalation = sorted(verbs & ESCALATION_VERBS) or (
                    ["*"]
                    if "*" in verbs and "rbac.authorization.k8s.io" in strings(rule, "apiGroups")
                    else []
                )
                if escalation:
                    yield Finding(
                        rule=ID,
                        severity=SEVERITY,
                        cluster=cluster.name,
                        message=f"team {role.ref()} has {', '.join(escalation)} on "
                        f"{', '.join(strings(rule, 'resources')) or 'roles'}: it can grant "
                        "itself any permission",
                        hint="remove bind/escalate/impersonate from team roles",
                        **at(fleet.locate(role, "rules", index, "verbs")),
                    )
