"""A team is given rights in a namespace Kubernetes or the sync engine owns.

## Why it matters
Whoever may create pods in `kube-system` can run them as any ServiceAccount there, the control plane's
controllers' included, and so act as them on the whole cluster; rights in the sync engine's namespace
(`flux-system`, `argocd`) let a team change what the engine applies. A team namespace named
`kube-system` (a `policies/teams/kube-system/` folder) binds the team's roles there, and so does a
RoleBinding written straight into one of these namespaces. Every other access rule passes on such a binding:
the role is the team's usual one, only the namespace is wrong. (`gpupolicy new team` refuses these names.)

Kubernetes creates and owns `default`, `kube-system`, `kube-public` and `kube-node-lease`, and reserves the
`kube-` prefix (kubernetes/kubernetes pkg/controlplane/controller/systemnamespaces); the sync engine's
namespace comes with its installation (docs/operations/sync.md).

The rule flags a Namespace with the team label (`gpupolicy.io/team`) that is one of these, and a
RoleBinding in one of them whose subjects are not all platform admins (as RBAC004 finds them) or
ServiceAccounts of namespaces that are no team's (a metrics adapter that reads
`extension-apiserver-authentication` in `kube-system`, say): a team's ServiceAccount is the team's own
identity.

## Bad example
```yaml
kind: RoleBinding
metadata: {name: nlp-trainers, namespace: kube-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: gpu-trainer}
subjects:
  - {kind: Group, name: gpu-team-nlp, apiGroup: rbac.authorization.k8s.io}
```

## Fix
Give the team a namespace of its own (`gpupolicy new team NAME`) and bind its roles there; keep bindings in
the platform's namespaces for the platform admins and the platform's own ServiceAccounts.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..domain.platform_namespaces import engine_namespace, kubernetes_owns
from ..findings import Finding, Severity, at
from ..model import Cluster, Fleet, K8sObject
from .rbac_common import bindings, platform_admins, subjects_of

ID = "RBAC005"
SEVERITY = Severity.ERROR
SUMMARY = "No team rights in a namespace Kubernetes or the sync engine owns"
HINT = "give the team a namespace of its own and bind its roles there"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        owned = _platform_owned(cluster)
        for namespace in cluster.namespaces.values():
            if namespace.team and namespace.name in owned:
                yield Finding(
                    ID,
                    SEVERITY,
                    f"team {namespace.team}'s namespace is {namespace.name}, which "
                    f"{owned[namespace.name]} owns: its RoleBindings would give the team rights over the "
                    "platform",
                    cluster=cluster.name,
                    hint=HINT,
                    **at(fleet.locate(namespace.obj, "metadata", "name")),
                )
        admins = platform_admins(cluster)
        teams = {n.name for n in cluster.namespaces.values() if n.team}
        for binding in bindings(cluster):
            if binding.kind == "RoleBinding" and binding.namespace in owned:
                yield from _outsiders(fleet, cluster, binding, owned[binding.namespace], admins, teams)


def _platform_owned(cluster: Cluster) -> dict[str, str]:
    """Namespace -> its owner, for the cluster's namespaces that Kubernetes or its sync engine owns."""
    names = {o.namespace for o in cluster.objects if o.namespace} | set(cluster.namespaces)
    owned = {name: "Kubernetes" for name in names if kubernetes_owns(name)}
    if engine := engine_namespace(cluster.facts.sync_engine):
        owned[engine] = "the sync engine"
    return owned


def _outsiders(
    fleet: Fleet, cluster: Cluster, binding: K8sObject, owner: str, admins: set, teams: set[str]
) -> Iterator[Finding]:
    for index, subject in subjects_of(binding):
        kind, name, namespace = subject
        if subject in admins or (kind == "ServiceAccount" and namespace and namespace not in teams):
            continue
        yield Finding(
            ID,
            SEVERITY,
            f"RoleBinding {binding.namespace}/{binding.name} gives {kind} {name} rights in namespace "
            f"{binding.namespace}, which {owner} owns: only platform admins and the platform's own "
            "ServiceAccounts belong there",
            cluster=cluster.name,
            hint=HINT,
            **at(fleet.locate(binding, "subjects", index)),
        )
