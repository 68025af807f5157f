"""Someone other than the platform admins is bound to `cluster-admin`.

## Why it matters
`cluster-admin` can do anything, in every namespace, including reading every Secret and editing every GPU and
scheduling object. Only the platform admin group, declared by the binding labelled
`gpupolicy.io/persona: platform-admin`, may hold it; any other subject (a team group, a CI service account, a
person) is an escalation path.

## Bad example
```yaml
kind: ClusterRoleBinding
metadata: {name: team-a-admin}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects:
  - {kind: Group, name: team-a, apiGroup: rbac.authorization.k8s.io}
```

## Fix
Bind team groups to their trainer or viewer role; keep `cluster-admin` for the platform admin group.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..findings import Finding, Severity, at
from ..model import Fleet
from .rbac_common import bindings, platform_admins, subjects_of

ID = "RBAC004"
SEVERITY = Severity.ERROR
SUMMARY = "Only platform admins are bound to cluster-admin"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        admins = platform_admins(cluster)
        for binding in bindings(cluster):
            if (binding.body.get("roleRef") or {}).get("name") != "cluster-admin":
                continue
            for index, subject in subjects_of(binding):
                if subject in admins:
                    continue
                kind, name, namespace = subject
                who = f"{kind} {namespace + '/' if namespace else ''}{name}"
                yield Finding(
                    rule=ID,
                    severity=SEVERITY,
                    cluster=cluster.name,
                    message=f"{binding.ref()} gives cluster-admin to {who}, who is not a platform "
                    "admin"
                    + ("" if admins else " (no binding declares gpupolicy.io/persona: platform-admin)"),
                    hint="bind cluster-admin only to the platform admin group",
                    **at(fleet.locate(binding, "subjects", index)),
                )
