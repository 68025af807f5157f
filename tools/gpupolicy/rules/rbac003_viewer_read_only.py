"""A viewer role can do more than read.

## Why it matters
Viewers (label `gpupolicy.io/persona: viewer`, or a specialised `<something>-viewer`) are dashboards, on-call
read access and auditors. A `delete` or `create` slipped into the role lets a read-only token evict running
training jobs or submit GPU work outside the team's process.

## Bad example
```yaml
kind: ClusterRole
metadata:
  name: gpu-viewer
  labels: {gpupolicy.io/persona: viewer}
rules:
  - apiGroups: [batch]
    resources: [jobs]
    verbs: [get, list, watch, delete]
```

## Fix
Keep viewer verbs to `get`, `list` and `watch`.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..findings import Finding, Severity, at
from ..model import Fleet
from .rbac_common import READ_VERBS, VIEWER, persona, roles, rules_of, strings


def is_viewer(label: str) -> bool:
    """`viewer`, or a specialised viewer such as `metrics-viewer`."""
    return label == VIEWER or label.endswith("-" + VIEWER)


ID = "RBAC003"
SEVERITY = Severity.ERROR
SUMMARY = "Viewer roles are read-only"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for role in roles(cluster):
            if not is_viewer(persona(role)):
                continue
            for index, rule in rules_of(role):
                extra = sorted(set(strings(rule, "verbs")) - READ_VERBS)
                if extra:
                    yield Finding(
                        rule=ID,
                        severity=SEVERITY,
                        cluster=cluster.name,
                        message=f"viewer {role.ref()} may {', '.join(extra)} "
                        f"{', '.join(strings(rule, 'resources'))}",
                        hint="viewer roles use only get, list and watch",
                        **at(fleet.locate(role, "rules", index, "verbs")),
                    )
