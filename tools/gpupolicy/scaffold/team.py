"""`gpupolicy new team`: a team and every edit it needs in each cluster that serves it.

- `policies/teams/<name>/`: Namespace (label `gpupolicy.io/team`), the GPU ResourceQuota at 0 for every GPU
  resource the team's clusters expose, the LimitRange of default requests (no GPU entry, decision 0024), its
  LocalQueues, RoleBindings for the team's groups, and the startup-check component (decision 0051);
- per cluster: `clusters/<c>/queues/<name>.yaml`, a ClusterQueue modelled on the cluster's queue of the same
  tier (its cohort, preemption and resource groups, so the priority and preemption rules hold as they do for
  it) with every quota at 0 except the CPU-only flavor's; in a cluster with no queue of the tier (a new
  cluster) the queue joins the cohort labelled with the tier (else one named after it), reclaims lent quota
  (`Any` for production, `LowerPriority` otherwise), never preempts to borrow, and has the CPU-only flavor at
  0; the file in `queues/kustomization.yaml`; the team folder in the cluster's kustomization after the other
  teams; the team's namespace quota at 0 in `clusters/<c>/team-quotas.yaml` (the overlay's patch, added when
  the cluster has none yet), so quota given later is set per cluster, never in the shared base.
The queue gets no GPU quota: `gpupolicy recommend` or a reviewed edit gives it some, and CAP015 then asks for
the namespace quota to follow.
"""

from __future__ import annotations

import copy
import io
from dataclasses import dataclass

from ruamel.yaml import YAML

from ..domain import queue_header
from ..domain.platform_namespaces import owner
from ..errors import ToolError
from ..model import MIG_RESOURCE_PREFIX
from .common import Workspace, check_name, insert_list_item

GPU = "nvidia.com/gpu"
CPU_FLAVOR = "cpu"


@dataclass(frozen=True)
class TeamRequest:
    name: str
    clusters: tuple[str, ...]
    tier: str
    workload: str
    cohort: str = ""
    queues: tuple[str, ...] = ()
    description: str = ""


def steps(request: TeamRequest):
    check_name("team", request.name)
    if owned := owner(request.name):
        raise ToolError(
            f"team name {request.name!r}: {owned} owns that namespace; a team's RoleBindings there would "
            "give it rights over the platform (RBAC005)"
        )
    for queue in request.queues:
        check_name("queue", queue)

    def run(workspace: Workspace) -> None:
        fleet = workspace.fleet(list(request.clusters))
        missing = [c for c in request.clusters if c not in fleet.clusters]
        if missing:
            raise ToolError(f"--cluster {', '.join(missing)}: no such cluster")
        for cluster in fleet.clusters.values():
            if request.name in cluster.namespaces or request.name in cluster.cluster_queues:
                raise ToolError(f"{cluster.name} has a namespace or ClusterQueue {request.name} already")
        resources = sorted(
            {
                r
                for c in fleet.clusters.values()
                for p in c.pools
                for r in p.capacity
                if r == GPU or r.startswith(MIG_RESOURCE_PREFIX)
            }
            | {GPU}
        )
        files = team_files(request, resources)
        for name in request.clusters:
            files[f"clusters/{name}/queues/{request.name}.yaml"] = cluster_queue(
                fleet.clusters[name], request
            )
        quotas = {
            name: _team_quota(request.name, resources, (workspace.copy / _quota_file(name)).is_file())
            for name in request.clusters
        }
        workspace.create(files)
        workspace.edit(lambda editor: _wire(editor, request))
        workspace.write(
            {_quota_file(name): _with_quota(workspace.copy, name, text) for name, text in quotas.items()}
        )
        workspace.notes.append(
            f"ClusterQueue {request.name} has no GPU quota yet: give it some in "
            f"clusters/<cluster>/queues/{request.name}.yaml or with `gpupolicy recommend`"
        )

    return run


def _wire(editor, request: TeamRequest) -> None:
    for cluster in request.clusters:
        overlay = f"clusters/{cluster}/kustomization.yaml"
        queues = f"clusters/{cluster}/queues/kustomization.yaml"
        for rel, item, after in (
            (overlay, f"../../policies/teams/{request.name}", "../../policies/teams/"),
            (queues, f"{request.name}.yaml", ""),
        ):
            editor._load(rel)  # loaded round-trip through the trust boundary; the text edit follows
            editor.text_edits.append(
                (
                    rel,
                    lambda t, r=rel, i=item, a=after: (
                        insert_list_item(t, "resources", i, a or "\0", r) if a else _append_resource(t, i, r)
                    ),
                )
            )
        editor.text_edits.append((overlay, lambda t, r=overlay: _add_quota_patch(t, r)))


def _quota_file(cluster: str) -> str:
    return f"clusters/{cluster}/team-quotas.yaml"


def _team_quota(team: str, resources: list[str], appended: bool) -> str:
    hard = "".join(f'    requests.{resource}: "0"\n' for resource in resources)
    return (
        ("---\n" if appended else "") + f"# {team}: nominal + borrowing limit over all of its flavors "
        "here, "
        "so the namespace quota never refuses a pod\n# that Kueue admitted (CAP015).\napiVersion: "
        "v1\nkind: "
        f"ResourceQuota\nmetadata:\n  name: gpu\n  namespace: {team}\nspec:\n  hard:\n{hard}"
    )


def _with_quota(copy_root, cluster: str, document: str) -> str:
    """team-quotas.yaml with the team's document appended (the file made when missing)."""
    path = copy_root / _quota_file(cluster)
    if path.is_file():
        text = path.read_text(encoding="utf-8")
        return text + ("" if text.endswith("\n") else "\n") + document
    return document


def _add_quota_patch(text: str, rel: str) -> str:
    """The overlay with `- path: team-quotas.yaml` first under `patches:` (the list made when missing)."""
    if "- path: team-quotas.yaml\n" in text:
        return text
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.rstrip() == "patches:"), None)
    entry = "  # Team GPU quotas sized to this cluster's queues.\n  - path: team-quotas.yaml\n"
    if start is None:
        return text + ("" if text.endswith("\n") else "\n") + "patches:\n" + entry
    del rel
    lines.insert(start + 1, entry)
    return "".join(lines)


def _append_resource(text: str, item: str, rel: str) -> str:
    """`- item` as the last entry of the top-level `resources:` list."""
    lines = text.splitlines(keepends=True)
    items = [i for i, line in enumerate(lines) if line.startswith("  - ")]
    if "resources:\n" not in lines or not items:
        raise ToolError(f"{rel}: no `resources:` list to add {item} to")
    lines.insert(items[-1] + 1, f"  - {item}\n")
    return "".join(lines)


def team_files(request: TeamRequest, resources: list[str]) -> dict[str, str]:
    name, base = request.name, f"policies/teams/{request.name}"
    description = request.description or f"Team {name}: {request.workload} ({request.tier})."
    queues = request.queues or (request.workload,)
    local_queues = "---\n".join(
        f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata:\n  name: {queue}\n  namespace: "
        f"{name}\nspec:\n  clusterQueue: {name}\n"
        for queue in queues
    )
    bindings = [
        ("gpu-trainers", "gpu-trainer", [f"gpu-team-{name}"]),
        ("gpu-metrics-viewers", "gpu-metrics-viewer", [f"gpu-team-{name}", f"gpu-team-{name}-viewers"]),
    ]
    if request.tier == "production":
        bindings.append(("gpu-service-deployers", "gpu-service-deployer", [f"gpu-team-{name}"]))
    rolebindings = "---\n".join(
        f"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: {binding}\n"
        f"  namespace: {name}\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n"
        f"  name: {role}\nsubjects:\n"
        + "".join(
            f"  - apiGroup: rbac.authorization.k8s.io\n    kind: Group\n    name: {group}\n"
            for group in groups
        )
        for binding, role, groups in bindings
    )
    hard = "".join(f'    requests.{resource}: "0"\n' for resource in resources)
    return {
        f"{base}/kustomization.yaml": f"""\
# Team {name}: namespace, GPU quota, defaults, Kueue LocalQueues and role bindings (gpupolicy new team).
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: {name}
resources:
  - namespace.yaml
  - resourcequota.yaml
  - limitrange.yaml
  - localqueues.yaml
  - rolebindings.yaml
components:
  # The GPU startup check every GPU pod of the team runs first (decision 0051).
  - ../../startup-check
""",
        f"{base}/namespace.yaml": f"""\
# {description}
# The team label selects the namespace for its ClusterQueue, the admission policies and Kueue management.
apiVersion: v1
kind: Namespace
metadata:
  name: {name}
  labels:
    gpupolicy.io/team: {name}
    pod-security.kubernetes.io/enforce: baseline
    pod-security.kubernetes.io/warn: restricted
""",
        f"{base}/resourcequota.yaml": f"""\
# GPU quota of the {name} namespace. Zero unless the cluster overlay raises it
# (clusters/<name>/team-quotas.yaml) to the team's ClusterQueue nominal quota plus borrowing limit
# in that cluster.
apiVersion: v1
kind: ResourceQuota
metadata:
  name: gpu
  namespace: {name}
spec:
  hard:
{hard}""",
        f"{base}/limitrange.yaml": f"""\
# Default requests for containers that state none (no GPU entry and no default limits: decisions 0024, 0030).
apiVersion: v1
kind: LimitRange
metadata:
  name: defaults
  namespace: {name}
spec:
  limits:
    - type: Container
      defaultRequest:
        cpu: 500m
        memory: 1Gi
""",
        f"{base}/localqueues.yaml": local_queues,
        f"{base}/rolebindings.yaml": f"# Who may do what in the {name} namespace. Groups come from the "
        "identity "
        "provider.\n" + rolebindings,
    }


def cluster_queue(cluster, request: TeamRequest) -> str:
    """The new ClusterQueue, modelled on the cluster's queue of the same tier, every quota at 0 but the
    CPU-only
    flavor's (so CPU pods of the team run; GPU quota is a reviewed decision)."""
    model = next(
        (q for q in sorted(cluster.cluster_queues.values(), key=lambda q: q.name) if q.tier == request.tier),
        None,
    )
    if model is None:
        return _first_of_tier(cluster, request)
    spec = copy.deepcopy(model.obj.body.get("spec") or {})
    spec["namespaceSelector"] = {"matchLabels": {"gpupolicy.io/team": request.name}}
    if request.cohort:
        spec["cohortName"] = request.cohort
    for group in spec.get("resourceGroups") or ():
        for flavor in group.get("flavors") or ():
            for resource in flavor.get("resources") or ():
                if flavor.get("name") == CPU_FLAVOR and resource.get("name") in ("cpu", "memory"):
                    continue
                resource["nominalQuota"] = 0 if resource.get("name") != "memory" else "0Gi"
                for limit in ("borrowingLimit", "lendingLimit"):
                    if limit in resource:
                        resource[limit] = 0 if resource.get("name") != "memory" else "0Gi"
    labels = {
        "gpupolicy.io/team": request.name,
        "gpupolicy.io/tier": request.tier,
        "gpupolicy.io/workload": request.workload,
    }
    body = {
        "apiVersion": model.obj.body.get("apiVersion"),
        "kind": "ClusterQueue",
        "metadata": {"name": request.name, "labels": labels},
        "spec": spec,
    }
    # the header block's marker; `Workspace.regenerate_pages` writes the block's lines (decision 0090)
    header = (
        f"# {request.name} in {cluster.name} (gpupolicy new team): modelled on ClusterQueue "
        f"{model.name} (tier {request.tier}), made with no GPU quota.\n{queue_header.MARKER}\n"
    )
    return header + _dump(_ordered(body))


def _first_of_tier(cluster, request: TeamRequest) -> str:
    """The tier's first ClusterQueue in the cluster: no queue to model it on, so the safe settings (Kueue's
    preemption fields, apis/kueue/v1beta2/clusterqueue_types.go): reclaim what the queue lent (`Any` only
    for production, which outranks every other tier), never preempt to borrow, LowerPriority within the queue;
    only the CPU-only flavor, at 0 (`new pool --quota` adds the GPU group and the cpu that goes with it)."""
    of_tier = [
        c.name
        for c in cluster.cohorts.values()
        if c.obj is not None and c.obj.labels.get("gpupolicy.io/tier") == request.tier
    ]
    cohort = request.cohort or min(of_tier, default=request.tier)
    spec = {
        "cohortName": cohort,
        "namespaceSelector": {"matchLabels": {"gpupolicy.io/team": request.name}},
        "queueingStrategy": "BestEffortFIFO",
        "preemption": {
            "reclaimWithinCohort": "Any" if request.tier == "production" else "LowerPriority",
            "borrowWithinCohort": {"policy": "Never"},
            "withinClusterQueue": "LowerPriority",
        },
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "memory"],
                "flavors": [
                    {
                        "name": CPU_FLAVOR,
                        "resources": [
                            {"name": "cpu", "nominalQuota": 0},
                            {"name": "memory", "nominalQuota": "0Gi"},
                        ],
                    }
                ],
            }
        ],
    }
    labels = {
        "gpupolicy.io/team": request.name,
        "gpupolicy.io/tier": request.tier,
        "gpupolicy.io/workload": request.workload,
    }
    body = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": request.name, "labels": labels},
        "spec": spec,
    }
    # the header block's marker: `new pool --quota` gives the queue GPUs, and the block its lines
    header = (
        f"# {request.name} in {cluster.name} (gpupolicy new team): the first queue of tier "
        f"{request.tier} here, made with no quota.\n{queue_header.MARKER}\n"
    )
    return header + _dump(_ordered(body))


# The order the repository writes these keys in (kustomize's rendering sorts them).
KEY_ORDER = (
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "labels",
    "spec",
    "cohortName",
    "namespaceSelector",
    "queueingStrategy",
    "preemption",
    "reclaimWithinCohort",
    "borrowWithinCohort",
    "policy",
    "withinClusterQueue",
    "resourceGroups",
    "coveredResources",
    "flavors",
    "resources",
    "nominalQuota",
    "borrowingLimit",
    "lendingLimit",
)


def _ordered(value):
    if isinstance(value, dict):
        rank = {key: i for i, key in enumerate(KEY_ORDER)}
        keys = sorted(value, key=lambda k: (rank.get(k, len(KEY_ORDER)), k))
        return {key: _ordered(value[key]) for key in keys}
    if isinstance(value, list):
        return [_ordered(item) for item in value]
    return value


def _dump(body: dict) -> str:
    stream = io.StringIO()
    writer = YAML(typ="rt")
    writer.indent(mapping=2, sequence=4, offset=2)
    writer.width = 4096
    writer.dump(body, stream)
    return stream.getvalue()
