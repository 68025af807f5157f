"""Namespaces the platform creates and owns outside any team: one home for the list KUST008 (which namespaces
exist without this repository), RBAC005 and `new team` (which a team must never be given) read.

- `default`, `kube-system`, `kube-public` and `kube-node-lease`: the API server creates them itself
  (kubernetes/kubernetes pkg/controlplane/controller/systemnamespaces; the `kubernetesservice` controller
  creates `default`). Kubernetes reserves the `kube-` prefix for its own namespaces.
- the sync engine's own namespace, by its installation (docs/operations/sync.md): `flux-system` on Flux
  clusters, `argocd` on Argo CD clusters;
- `monitoring`: the Prometheus Operator stack, installed before this repository's alerts and dashboards.
"""

from __future__ import annotations

KUBERNETES_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
KUBERNETES_PREFIX = "kube-"
SYNC_ENGINE_NAMESPACES = {"flux": "flux-system", "argocd": "argocd"}
PREREQUISITE_NAMESPACES = ("monitoring",)


def engine_namespace(sync_engine: str) -> str:
    """The namespace the cluster's sync engine (cluster.yaml spec.syncEngine) is installed in, or ""."""
    return SYNC_ENGINE_NAMESPACES.get(sync_engine, "")


def kubernetes_owns(name: str) -> bool:
    return name in KUBERNETES_NAMESPACES or name.startswith(KUBERNETES_PREFIX)


def owner(name: str) -> str:
    """Who owns namespace `name` outside any team ("Kubernetes", "the sync engine", "the monitoring stack"),
    or "" for a namespace free for a team."""
    if kubernetes_owns(name):
        return "Kubernetes"
    if name in SYNC_ENGINE_NAMESPACES.values():
        return "the sync engine"
    if name in PREREQUISITE_NAMESPACES:
        return "the monitoring stack"
    return ""
