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
from ..model import Cluster, Fleet, K8sObject
from .rbac_common import PLATFORM_ADMIN, bindings, persona, roles

ID = "RBAC004"
SEVERITY = Severity.ERROR
SUMMARY = "Only platform admins are bound to cluster-admin"


def _subjects(binding: K8sObject) -> list[tuple[int, tuple[str, str, str]]]:
    items = binding.body.get("subjects")
    return [
        (i, (str(s.get("kind", "")), str(s.get("name", "")), str(s.get("namespace", ""))))
        for i, s in enumerate(items if isinstance(items, list) else [])
        if isinstance(s, dict)
    ]


def platform_admins(cluster: Cluster) -> set[tuple[str, str, str]]:
    """Subjects of the bindings that declare the platform-admin persona (by label or by role)."""
    admin_roles = {r.name for r in roles(cluster) if persona(r) == PLATFORM_ADMIN}
    admins: set[tuple[str, str, str]] = set()
    for binding in bindings(cluster):
        ref = binding.body.get("roleRef") or {}
        if persona(binding) == PLATFORM_ADMIN or ref.get("name") in admin_roles:
            admins |= {subject for _i, subject in _subjects(binding)}
    return admins


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        admins = platform_admins(cluster)
        for binding in bindings(cluster):
            if (binding.body.get("roleRef") or {}).get("name") != "cluster-admin":
                continue
            for index, subject in _subjects(binding):
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
