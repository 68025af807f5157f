"""Shared helpers of the access rules (RBAC*): personas, team roles and their rules."""

from __future__ import annotations

from collections.abc import Iterator

from ..model import TEAM_LABEL, Cluster, K8sObject

PERSONA_LABEL = "gpupolicy.io/persona"
PLATFORM_ADMIN = "platform-admin"  # may do anything, including cluster-admin
TRAINER = "trainer"  # runs workloads in its team's namespaces
VIEWER = "viewer"  # reads only
PERSONAS = (PLATFORM_ADMIN, TRAINER, VIEWER)
ROLE_KINDS = ("Role", "ClusterRole")
BINDING_KINDS = ("RoleBinding", "ClusterRoleBinding")
READ_VERBS = {"get", "list", "watch"}
WRITE_VERBS = {"create", "update", "patch", "delete", "deletecollection", "*"}


def persona(obj: K8sObject) -> str:
    return obj.labels.get(PERSONA_LABEL, "")


def roles(cluster: Cluster) -> list[K8sObject]:
    return [o for o in cluster.objects if o.kind in ROLE_KINDS and o.group == "rbac.authorization.k8s.io"]


def bindings(cluster: Cluster) -> list[K8sObject]:
    return [o for o in cluster.objects if o.kind in BINDING_KINDS and o.group == "rbac.authorization.k8s.io"]


def rules_of(role: K8sObject) -> Iterator[tuple[int, dict]]:
    items = role.body.get("rules")
    for index, rule in enumerate(items if isinstance(items, list) else []):
        if isinstance(rule, dict):
            yield index, rule


def strings(rule: dict, key: str) -> list[str]:
    value = rule.get(key)
    return [str(v) for v in value] if isinstance(value, list) else []


def team_roles(cluster: Cluster) -> list[K8sObject]:
    """Roles meant for teams: labelled with a team or a non-admin persona, or bound in a team namespace."""
    team_namespaces = {n.name for n in cluster.namespaces.values() if n.team}
    bound_in_team: set[tuple[str, str]] = set()
    for binding in bindings(cluster):
        if binding.kind == "RoleBinding" and binding.namespace in team_namespaces:
            ref = binding.body.get("roleRef") or {}
            scope = "" if ref.get("kind") == "ClusterRole" else binding.namespace
            bound_in_team.add((str(ref.get("name", "")), scope))
    found = []
    for role in roles(cluster):
        if persona(role) == PLATFORM_ADMIN:
            continue
        if (
            role.labels.get(TEAM_LABEL)
            or persona(role) in (TRAINER, VIEWER)
            or (role.name, role.namespace) in bound_in_team
        ):
            found.append(role)
    return found


def subjects_of(binding: K8sObject) -> list[tuple[int, tuple[str, str, str]]]:
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
            admins |= {subject for _i, subject in subjects_of(binding)}
    return admins
