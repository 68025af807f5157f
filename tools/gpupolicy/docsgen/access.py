"""Access policies, generated from the RBAC manifests: who can launch training, change shared settings, or
only
view metrics — per persona role and per binding."""

from __future__ import annotations

from ..model import Cluster, K8sObject
from . import Context, table

PERSONA_LABEL = "gpupolicy.io/persona"
RBAC_KINDS = ("ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding")  # what the page reads


def pages(context: Context) -> dict[str, str]:
    rbac = [
        obj
        for cluster in context.fleet.clusters.values()
        for obj in cluster.objects
        if obj.kind in RBAC_KINDS
    ]
    text = context.header("Access policies", context.sources_of(rbac))
    text += (
        "Three personas: *trainers* launch training in their team's namespace, *platform admins* change "
        "shared settings (queues, flavors, GPU Operator), *viewers* only read metrics and status. The tables "
        "below are read from the ClusterRoles and bindings each cluster renders.\n\n"
    )
    roles_done: set[str] = set()
    for cluster in context.fleet.clusters.values():
        for role in cluster.of_kind("ClusterRole") + cluster.of_kind("Role"):
            persona = role.labels.get(PERSONA_LABEL)
            if not persona or role.name in roles_done:
                continue
            roles_done.add(role.name)
            text += f"## {role.kind} `{role.name}` ({persona})\n\n" + _rules_table(role) + "\n"
    text += "## Bindings\n\n"
    rows = []
    for cluster in context.fleet.clusters.values():
        rows += _binding_rows(cluster)
    text += table(["cluster", "binding", "namespace", "role", "subjects"], rows) if rows else "No bindings.\n"
    return {"access.md": text}


def _rules_table(role: K8sObject) -> str:
    rows = []
    for rule in role.body.get("rules") or []:
        if not isinstance(rule, dict):
            continue
        groups = ", ".join(g or "core" for g in rule.get("apiGroups") or []) or "-"
        resources = ", ".join(rule.get("resources") or rule.get("nonResourceURLs") or [])
        rows.append([groups, resources, ", ".join(rule.get("verbs") or [])])
    return table(["API groups", "resources", "verbs"], rows) if rows else "No rules.\n"


def _binding_rows(cluster: Cluster) -> list[list[str]]:
    rows = []
    for binding in cluster.of_kind("ClusterRoleBinding") + cluster.of_kind("RoleBinding"):
        ref = binding.body.get("roleRef") or {}
        subjects = ", ".join(
            f"{s.get('kind')} {s.get('name')}"
            for s in binding.body.get("subjects") or []
            if isinstance(s, dict)
        )
        rows.append(
            [
                cluster.name,
                binding.name,
                binding.namespace or "(cluster)",
                f"{ref.get('kind')} {ref.get('name')}",
                subjects,
            ]
        )
    return rows
