"""An object renders into a namespace that will not exist in its cluster.

## Why it matters
A namespaced object can only be created in an existing namespace: the API server answers `namespaces "nlp" not
found`, and Flux or Argo CD stop the sync there. When a cluster overlay includes a team's LocalQueue,
ResourceQuota and RoleBindings but not its Namespace (a forgotten `namespace.yaml`, a misspelled
`metadata.namespace`), every other check passes, because each object is valid on its own; only the apply
fails.

A namespace exists when the cluster renders it as a Namespace, or when the platform creates it outside this
repository:
- `default`, `kube-system`, `kube-public` and `kube-node-lease`: the API server creates them itself
  (kubernetes/kubernetes pkg/controlplane/controller/systemnamespaces, run with `kube-system`, `kube-public`
  and `kube-node-lease`; the `kubernetesservice` controller creates `default`);
- the sync engine's own namespace, by its installation (docs/operations/sync.md): `flux-system` (`flux
  bootstrap`) on Flux clusters, `argocd` on Argo CD clusters;
- `monitoring`: the Prometheus Operator stack is installed there before this repository's alerts and
  dashboards
  (a prerequisite of policies/observability/).

The GPU Operator's and Kueue's namespaces are not in the list: their charts install into an existing
namespace, and this repository renders `gpu-operator` and `kueue-system` (policies/gpu-operator,
policies/kueue).

## Bad example
```yaml
# clusters/prod-us/kustomization.yaml includes policies/teams/nlp/localqueues.yaml but not namespace.yaml
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: training
  namespace: nlp
```

## Fix
Include the team's Namespace in the overlay (the whole `policies/teams/<team>` folder), or correct
`metadata.namespace`.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..domain.platform_namespaces import (
    KUBERNETES_NAMESPACES,
    PREREQUISITE_NAMESPACES,
    engine_namespace,
)
from ..findings import Finding, Severity, at
from ..model import Cluster, Fleet

ID = "KUST008"
SEVERITY = Severity.ERROR
SUMMARY = "An object renders into a namespace its cluster neither renders nor gets from the platform"
# Cluster-scoped kinds ignore metadata.namespace (a kustomize `namespace:` may set it on kinds it does not
# know): the core and admission kinds, and those of the CRDs this repository uses (Kueue, GPU Operator).
CLUSTER_SCOPED_KINDS = {
    "Namespace",
    "Node",
    "PersistentVolume",
    "ClusterRole",
    "ClusterRoleBinding",
    "PriorityClass",
    "StorageClass",
    "RuntimeClass",
    "IngressClass",
    "CSIDriver",
    "CustomResourceDefinition",
    "APIService",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionPolicyBinding",
    "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration",
    "ClusterQueue",
    "ResourceFlavor",
    "Cohort",
    "WorkloadPriorityClass",
    "AdmissionCheck",
    "Topology",
    "ClusterPolicy",
    "NVIDIADriver",
}


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        existing = namespaces_that_exist(cluster)
        for obj in cluster.objects:
            if obj.namespace and obj.namespace not in existing and obj.kind not in CLUSTER_SCOPED_KINDS:
                yield Finding(
                    ID,
                    SEVERITY,
                    f"{obj.ref()} renders into namespace {obj.namespace!r}, which "
                    f"cluster {cluster.name} neither renders as a Namespace nor gets from the platform; the "
                    f"apply fails with namespaces \"{obj.namespace}\" not found",
                    cluster=cluster.name,
                    hint="include the namespace's manifest in the overlay, or fix metadata.namespace",
                    **at(fleet.locate(obj, "metadata", "namespace")),
                )


def namespaces_that_exist(cluster: Cluster) -> set[str]:
    """Rendered Namespaces plus those the platform creates outside the repository."""
    existing = set(cluster.namespaces) | set(KUBERNETES_NAMESPACES) | set(PREREQUISITE_NAMESPACES)
    return (existing | {engine_namespace(cluster.facts.sync_engine)}) - {""}
