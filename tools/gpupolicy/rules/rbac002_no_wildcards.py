"""A role outside the platform-admin persona uses a wildcard verb or resource.

## Why it matters
`verbs: ["*"]` or `resources: ["*"]` grants everything the API has today and everything a future CRD adds:
a trainer role with `resources: ["*"]` in `kueue.x-k8s.io` can edit ClusterQueues the day Kueue adds a new
cluster-scoped kind. Wildcards belong only to the platform-admin role (label
`gpupolicy.io/persona: platform-admin`).

## Bad example
```yaml
kind: Role
metadata: {name: trainer, namespace: team-a}
rules:
  - apiGroups: [batch]
    resources: ["*"]
    verbs: ["*"]
```

## Fix
List the resources and verbs the persona needs (`jobs`, `pods/log`; `create`, `delete`, `get`, `list`,
`watch`).
"""

from __future__ import annotations

from collections.abc import Iterator

from ..findings import Finding, Severity, at
from ..model import Fleet
from .rbac_common import PLATFORM_ADMIN, persona, roles, rules_of, strings

ID = "RBAC002"
SEVERITY = Severity.ERROR
SUMMARY = "No wildcard verbs or resources outside the platform-admin role"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for role in roles(cluster):
            if persona(role) == PLATFORM_ADMIN:
                continue
            for index, rule in rules_of(role):
                for field in ("verbs", "resources"):
                    if "*" in strings(rule, field):
                        yield Finding(
                            rule=ID,
                            severity=SEVERITY,
                            cluster=cluster.name,
                            message=f"{role.ref()} rule {index} has {field}: ['*']",
                            hint="list the verbs and resources explicitly, or label the role "
                            "gpupolicy.io/persona: platform-admin if it is the admin role",
                            **at(fleet.locate(role, "rules", index, field)),
                        )
