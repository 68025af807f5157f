"""`gpupolicy new cluster`: a cluster with no pools or teams yet, ready for `new pool` and `new team`.

- `clusters/<name>/cluster.yaml`: the facts manifests cannot carry (environment, region, zones, Kubernetes and
  GPU Operator versions, sync engine);
- `clusters/<name>/kustomization.yaml`: the entry overlay with the shared policy, the cluster's `queues/` and
  the sync engine's component last; the chart-version patch (UPG014) and, for Argo CD, the values patch;
- `gpu-operator-values.yaml` (no overrides yet) and `gpu-operator-chart.yaml` (the chart version patch);
- `queues/`: the production cohort (parent `fleet`, policies/scheduling/cohorts.yaml) the team queues join;
- the sync entry: Flux's bootstrap path `flux/` (flux-system/ and the two stages of decision 0010) or Argo
  CD's `argocd/` (AppProject and ApplicationSet), as the reference clusters have them
  (docs/operations/sync.md).
The Git URL, Kubernetes and GPU Operator versions default to the ones every other cluster of the repository
has; with no other cluster (or when they differ) they must be given. `new team` adds the team quota patch
(team-quotas.yaml) when the first team arrives, so no file here is an empty placeholder.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from ..domain import catalog
from ..domain.kustomization import SYNC_ENGINES
from ..errors import ToolError
from .common import Workspace, check_name

ENVIRONMENTS = ("test", "staging", "production")  # schemas/repo/cluster.yaml
URL = re.compile(r"^\s*(?:url|repoURL):\s*(\S+)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class ClusterRequest:
    name: str
    environment: str
    region: str
    zones: tuple[str, ...]
    sync_engine: str = "flux"
    kubernetes_version: str = ""
    gpu_operator_version: str = ""
    git_url: str = ""
    description: str = ""


def check(request: ClusterRequest) -> None:
    check_name("cluster", request.name)
    if request.environment not in ENVIRONMENTS:
        raise ToolError(f"--environment {request.environment}: one of {', '.join(ENVIRONMENTS)}")
    if request.sync_engine not in SYNC_ENGINES:
        raise ToolError(f"--sync-engine {request.sync_engine}: one of {', '.join(SYNC_ENGINES)}")
    if not request.zones:
        raise ToolError("--zone: give every zone of the cluster (repeat)")
    for zone in request.zones:
        check_name("zone", zone)
    if request.gpu_operator_version and request.gpu_operator_version not in catalog.OPERATOR_RELEASES:
        raise ToolError(
            f"--gpu-operator-version {request.gpu_operator_version}: not a GPU Operator release "
            f"of the catalog ({', '.join(catalog.OPERATOR_RELEASES)})"
        )


def steps(request: ClusterRequest):
    """The scaffold's steps on a workspace (see the module docstring), for `common.scaffold`."""
    check(request)

    def run(workspace: Workspace) -> None:
        if (workspace.copy / "clusters" / request.name).exists():
            raise ToolError(f"clusters/{request.name} exists already; `gpupolicy new` only adds")
        complete = _with_defaults(workspace, request)
        workspace.create(cluster_files(complete))
        workspace.notes.append(
            f"cluster {request.name} has no teams or pools yet: `gpupolicy new team TEAM "
            f"--cluster {request.name} ...`, then `gpupolicy new pool NAME --cluster "
            f"{request.name} ... --quota TEAM=N`"
        )

    return run


def _with_defaults(workspace: Workspace, request: ClusterRequest) -> ClusterRequest:
    """The request with the versions and Git URL every other cluster shares, where it leaves them out."""
    facts = [c.facts for c in workspace.fleet().clusters.values()]
    values = {}
    for field_name, flag in (
        ("kubernetes_version", "--kubernetes-version"),
        ("gpu_operator_version", "--gpu-operator-version"),
    ):
        given, seen = getattr(request, field_name), sorted({getattr(f, field_name) for f in facts})
        if not given and len(seen) != 1:
            reason = f"clusters differ ({', '.join(seen)})" if seen else "no other cluster to take it from"
            raise ToolError(f"{flag}: required ({reason})")
        values[field_name] = given or seen[0]
    urls = _git_urls(workspace.copy)
    if not request.git_url and len(urls) != 1:
        reason = f"clusters differ ({', '.join(urls)})" if urls else "no other cluster's sync entry names one"
        raise ToolError(f"--git-url: required ({reason})")
    return replace(request, **values, git_url=request.git_url or urls[0])


def _git_urls(root: Path) -> list[str]:
    """The repository URLs the clusters' sync entries name (Flux's GitRepository, Argo CD's
    ApplicationSet)."""
    entries = [
        *root.glob("clusters/*/flux/flux-system/gotk-sync.yaml"),
        *root.glob("clusters/*/argocd/applicationset.yaml"),
    ]
    urls = set()
    for path in entries:
        if path.is_file() and not path.is_symlink():
            urls.update(URL.findall(path.read_text(encoding="utf-8")))
    return sorted(urls)


# --- the new files ------------------------------------------------------------------------------------------


def cluster_files(request: ClusterRequest) -> dict[str, str]:
    name, base = request.name, f"clusters/{request.name}"
    description = (
        request.description or f"{request.environment.capitalize()} cluster {name} ({request.region})."
    )
    zones = "".join(f"    - {zone}\n" for zone in request.zones)
    entry = "  - argocd\n" if request.sync_engine == "argocd" else ""
    files = {
        f"{base}/cluster.yaml": f"""\
# Facts about {name} that Kubernetes manifests cannot carry; read by the gpupolicy toolkit.
# Written by `gpupolicy new cluster`.
apiVersion: gpupolicy/v1
kind: Cluster
metadata:
  name: {name}
  description: "{description}"
spec:
  environment: {request.environment}
  region: {request.region}
  zones:
{zones}  kubernetesVersion: "{request.kubernetes_version}"
  # The chart this cluster installs is pinned in {base}/gpu-operator-chart.yaml; keep both equal (UPG014).
  gpuOperatorVersion: {request.gpu_operator_version}
  # flux: {base}/flux is the entry (the `flux bootstrap --path`); argocd: {base}/argocd.
  syncEngine: {request.sync_engine}
""",
        f"{base}/kustomization.yaml": f"""\
# Entry overlay of {name}: what {'Argo CD' if entry else 'Flux'} syncs into the cluster (`gpupolicy new
# cluster`).
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
buildMetadata:
  - originAnnotations
resources:
{entry}  # Operators' configuration (sync stage `operators`).
  - ../../policies/gpu-operator
  - ../../policies/kueue
  # Shared policy.
  - ../../policies/scheduling
  - ../../policies/access
  - ../../policies/admission
  - ../../policies/observability
  # The teams this cluster serves (gpupolicy new team), and their queues here.
  - queues
components:
  # The GPU pools of this cluster (gpupolicy new pool), then the sync engine's operator installs, last so its
  # patches see every object.
  - ../../policies/sync/{request.sync_engine}
configMapGenerator:
  # This cluster's GPU Operator values, layered over the fleet defaults (key 00-fleet.yaml).
  - name: gpu-operator-values
    namespace: gpu-operator
    behavior: merge
    files:
      - 10-cluster.yaml=gpu-operator-values.yaml
patches:
{_patches(request)}""",
        f"{base}/gpu-operator-values.yaml": f"# {name} overrides of policies/gpu-operator/values.yaml (key "
        "10-cluster.yaml; later keys win). No overrides yet.\n{}\n",
        f"{base}/gpu-operator-chart.yaml": _chart(request),
        f"{base}/queues/kustomization.yaml": f"""\
# Kueue queues of {name}: one ClusterQueue per team (gpupolicy new team), and the production cohort.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - cohort-production.yaml
""",
        f"{base}/queues/cohort-production.yaml": f"""\
# Production cohort of {name}: the production queues' parent, under the fleet cohort
# (policies/scheduling/cohorts.yaml).
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata:
  name: production
  labels:
    gpupolicy.io/tier: production
spec:
  parentName: fleet
""",
    }
    files.update(_argocd_files(request) if entry else _flux_files(request))
    return files


def _patches(request: ClusterRequest) -> str:
    base = f"clusters/{request.name}"
    if request.sync_engine == "argocd":
        return f"""\
  # The GPU Operator chart version of this cluster (written by `gpupolicy upgrade promote|rollback`).
  - path: gpu-operator-chart.yaml
    target:
      group: argoproj.io
      kind: Application
      name: gpu-operator
  # The Argo CD Application reads this cluster's values file.
  - target:
      group: argoproj.io
      kind: Application
      name: gpu-operator
    patch: |-
      - op: replace
        path: /spec/sources/0/helm/valueFiles/1
        value: $values/{base}/gpu-operator-values.yaml
"""
    return """\
  # The GPU Operator chart version of this cluster (written by `gpupolicy upgrade promote|rollback`).
  - path: gpu-operator-chart.yaml
    target:
      group: helm.toolkit.fluxcd.io
      kind: HelmRelease
      name: gpu-operator
"""


def _chart(request: ClusterRequest) -> str:
    if request.sync_engine == "argocd":
        target, path = (
            "the Argo CD Application gpu-operator (its first source is NVIDIA's chart)",
            "/spec/sources/0/targetRevision",
        )
    else:
        target, path = "the Flux HelmRelease gpu-operator", "/spec/chart/spec/version"
    return f"""\
# The GPU Operator chart version this cluster installs: a JSON patch on {target}.
# It must equal spec.gpuOperatorVersion in cluster.yaml (UPG014); `gpupolicy upgrade promote|rollback`
# edits both.
- op: replace
  path: {path}
  value: {request.gpu_operator_version}
"""


def _flux_files(request: ClusterRequest) -> dict[str, str]:
    name, base = request.name, f"clusters/{request.name}"

    def stage(stage_name: str, keep: str, extra: str, what: str) -> str:
        return f"""\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: {stage_name}
  namespace: flux-system
spec:
  interval: 10m
  path: ./{base}
  prune: true
{extra}  sourceRef:
    kind: GitRepository
    name: flux-system
  patches:
    # {what}
    - target:
        labelSelector: gpupolicy.io/sync-stage{keep}operators
      patch: |-
        $patch: delete
        apiVersion: v1
        kind: any
        metadata:
          name: any
"""

    stages = (
        f"# The two sync stages of {name} (decision 0010): both read ./{base}, split by the label "
        "gpupolicy.io/sync-stage,\n# so the operators (and their CRDs) are ready before the objects "
        "that need them are dry-run.\n"
        + stage(f"{name}-operators", "!=", "  wait: true\n  timeout: 15m\n", "Keep only the operators stage.")
        + "---\n"
        + stage(
            name,
            "=",
            f"  timeout: 10m\n  dependsOn:\n    - name: {name}-operators\n",
            "Everything but the operators stage.",
        )
    )
    return {
        f"{base}/flux/kustomization.yaml": f"""\
# Flux bootstrap path of {name}: `flux bootstrap git ... --path={base}/flux` (docs/operations/sync.md,
# decision 0028): Flux's controllers, the GitRepository and the two stage Kustomizations of stages.yaml.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - flux-system
  - stages.yaml
""",
        f"{base}/flux/stages.yaml": stages,
        f"{base}/flux/flux-system/kustomization.yaml": """\
# Written by `flux bootstrap` (pkg/manifestgen/kustomization): gotk-components.yaml (Flux's controllers,
# committed by bootstrap) and gotk-sync.yaml. Bootstrap keeps an existing kustomization.yaml, so both must
# stay listed.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - gotk-components.yaml
  - gotk-sync.yaml
""",
        f"{base}/flux/flux-system/gotk-sync.yaml": f"""\
# This manifest is what `flux bootstrap git --url={request.git_url} --branch=main --path={base}/flux`
# writes (pkg/manifestgen/sync); bootstrap rewrites it on every run.
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 1m0s
  ref:
    branch: main
  secretRef:
    name: flux-system
  url: {request.git_url}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 10m0s
  path: ./{base}/flux
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
""",
    }


def _argocd_files(request: ClusterRequest) -> dict[str, str]:
    name, base = request.name, f"clusters/{request.name}"
    return {
        f"{base}/argocd/kustomization.yaml": f"""\
# Argo CD's entry objects for {name}. Argo CD itself and its in-cluster cluster Secret are installed at
# bootstrap (docs/operations/sync.md).
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - appproject.yaml
  - applicationset.yaml
""",
        f"{base}/argocd/appproject.yaml": f"""\
# Argo CD project of the GPU fleet: which repositories may deploy, and where.
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata:
  name: gpu-fleet
  namespace: argocd
spec:
  description: GPU fleet policy and its operators (GPU Operator, Kueue).
  sourceRepos:
    - {request.git_url}
    - https://helm.ngc.nvidia.com/nvidia
    - registry.k8s.io/kueue/charts
  destinations:
    - server: https://kubernetes.default.svc
      namespace: "*"
  # The operator charts create CRDs, webhooks, API services and RBAC: any cluster-scoped kind. The
  # project is still bounded by sourceRepos (reviewed repositories only) and the in-cluster destination.
  clusterResourceWhitelist:
    - group: "*"
      kind: "*"
  namespaceResourceWhitelist:
    - group: "*"
      kind: "*"
""",
        f"{base}/argocd/applicationset.yaml": f"""\
# Argo CD entry of {name}: one Application for the in-cluster Secret labelled
#   gpupolicy.io/cluster: {name}, gpupolicy.io/sync-engine: argocd   (name: {name}), syncing {base}.
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata:
  name: gpu-fleet-{name}
  namespace: argocd
spec:
  goTemplate: true
  goTemplateOptions: ["missingkey=error"]
  generators:
    - clusters:
        selector:
          matchLabels:
            gpupolicy.io/cluster: {name}
            gpupolicy.io/sync-engine: argocd
  template:
    metadata:
      name: "{{{{.name}}}}"
      labels:
        gpupolicy.io/cluster: "{{{{.name}}}}"
    spec:
      project: gpu-fleet
      source:
        repoURL: {request.git_url}
        targetRevision: main
        path: "clusters/{{{{.name}}}}"
      destination:
        server: "{{{{.server}}}}"
      syncPolicy:
        automated:
          prune: true
          selfHeal: true
        syncOptions:
          - ServerSideApply=true
        retry:
          limit: 10
          backoff:
            duration: 30s
            factor: 2
            maxDuration: 10m
""",
    }
