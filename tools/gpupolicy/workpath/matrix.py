"""The team x workload matrix: for each team namespace of each cluster, the workloads a team typically runs,
traced with `workpath.trace`, and whether each lands where the policy intends (rule WL012, the generated
matrix page, the closing table of issue 12).

A case lands where the policy intends when:
- it is not blocked at any step, if the team's ClusterQueue offers the GPU resource it requests (nominal quota
  or borrowing in some flavor); a workload whose resource the team is not offered is expected to stay out, and
  is shown as "not offered";
- every pod set that requests no GPU runs on the cluster's CPU nodes: no GPU flavor, no GPU pool.
The workloads are deliberately small (one GPU, one MIG slice of the team's first offered profile, one
time-slice replica) so that quota size is never the reason a case fails: WL006 and the CAP rules measure size.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field

from ..domain.quotas import flavor_limit, flavor_limits
from ..domain.startupcheck import with_check
from ..findings import Location
from ..model import MIG_RESOURCE_PREFIX, QUEUE_LABEL, Cluster, Fleet, Namespace
from . import Step, WorkloadPath, incomplete, misplaced, trace

GPU = "nvidia.com/gpu"
KINDS = (
    "training Job",
    "MIG inference Deployment",
    "time-sliced notebook",
    "CPU-only Job",
    "Job with init container and sidecar",
    "distributed job with CPU launcher",
)
PREFERRED_QUEUE = {
    "training Job": "training",
    "MIG inference Deployment": "inference",
    "time-sliced notebook": "notebooks",
    "Job with init container and sidecar": "training",
    "distributed job with CPU launcher": "training",
    "CPU-only Job": "batch",
}


@dataclass(frozen=True)
class Case:
    cluster: str
    team: str
    kind: str
    path: WorkloadPath | None  # None: the team is not offered the resource
    problem: str = ""  # why it does not land where intended ("" when it does)
    where: Location | None = None
    body: dict | None = field(default=None, compare=False, repr=False)  # the manifest traced

    @property
    def outcome(self) -> str:
        if self.path is None:
            return "not offered"
        if self.problem:
            blocked = self.path.blocked
            return f"blocked at {blocked.stage}" if blocked else "lands on a GPU pool without using a GPU"
        return "; ".join(_landing(p) for p in self.path.pod_sets)


def _landing(pod_set) -> str:
    return pod_set.pool or "CPU nodes"


def _container(name: str, resources: dict) -> dict:
    requests = {"cpu": "1", "memory": "4Gi", **resources}
    limits = {k: v for k, v in requests.items() if k not in ("cpu",)}
    return {
        "name": name,
        "image": "registry.example/app:1",
        "resources": {"requests": requests, "limits": limits},
    }


def _pod_template(queue: str, containers: list[dict], init: list[dict] | None = None) -> dict:
    spec: dict = {"restartPolicy": "Never", "containers": containers}
    if init:
        spec["initContainers"] = init
    # A team's GPU pods carry the GPU startup check, as the examples do (decision 0051).
    return {"metadata": {"labels": {QUEUE_LABEL: queue}}, "spec": with_check(spec)}


def _meta(name: str, namespace: str, queue: str) -> dict:
    return {"name": name, "namespace": namespace, "labels": {QUEUE_LABEL: queue}}


def workload(kind: str, namespace: str, queue: str, mig: str) -> dict:
    """The manifest of one matrix case (GPU amounts chosen so that any offered pool can take it)."""
    gpu = {GPU: 1}
    if kind == "training Job":
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": _meta("train", namespace, queue),
            "spec": {"suspend": True, "template": _pod_template(queue, [_container("trainer", gpu)])},
        }
    if kind == "MIG inference Deployment":
        template = _pod_template(queue, [_container("server", {mig: 1})])
        template["spec"]["restartPolicy"] = "Always"
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": _meta("serve", namespace, queue),
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "serve"}}, "template": template},
        }
    if kind == "time-sliced notebook":
        template = _pod_template(queue, [_container("jupyter", gpu)])
        template["spec"]["restartPolicy"] = "Always"
        return {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": _meta("notebook", namespace, queue),
            "spec": {
                "replicas": 1,
                "serviceName": "notebook",
                "selector": {"matchLabels": {"app": "nb"}},
                "template": template,
            },
        }
    if kind == "CPU-only Job":
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": _meta("prep", namespace, queue),
            "spec": {"suspend": True, "template": _pod_template(queue, [_container("prep", {})])},
        }
    if kind == "Job with init container and sidecar":
        sidecar = {**_container("log-shipper", {}), "restartPolicy": "Always"}
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": _meta("train-sidecar", namespace, queue),
            "spec": {
                "suspend": True,
                "template": _pod_template(
                    queue, [_container("trainer", gpu)], [_container("fetch-data", {}), sidecar]
                ),
            },
        }
    launcher = _pod_template(queue, [_container("launcher", {})])
    workers = _pod_template(queue, [_container("worker", gpu)])
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": _meta("distributed", namespace, queue),
        "spec": {
            "suspend": True,
            "replicatedJobs": [
                {"name": "launcher", "replicas": 1, "template": {"spec": {"template": launcher}}},
                {
                    "name": "workers",
                    "replicas": 1,
                    "template": {"spec": {"parallelism": 2, "completions": 2, "template": workers}},
                },
            ],
        },
    }


def _team_queue(cluster: Cluster, namespace: str, kind: str):
    queues = sorted((q for q in cluster.local_queues if q.namespace == namespace), key=lambda q: q.name)
    preferred = PREFERRED_QUEUE[kind]
    return next((q for q in queues if q.name == preferred), queues[0] if queues else None)


def _offered(cluster: Cluster, queue_name: str, resource: str) -> bool:
    queue = cluster.cluster_queues.get(queue_name)
    if queue is None:
        return True  # the path reports the missing queue
    return any(flavor_limit(cluster, queue, flavor, resource)[1] > 0 for flavor in queue.flavors())


def _mig_profile(cluster: Cluster, queue_name: str) -> str:
    """The MIG resource this team is offered most of (else the first the cluster's pools expose)."""
    queue = cluster.cluster_queues.get(queue_name)
    offered: dict[str, float] = {}
    for flavor, quota in queue.quotas() if queue else ():
        if quota.name.startswith(MIG_RESOURCE_PREFIX):
            offered[quota.name] = (
                offered.get(quota.name, 0) + flavor_limit(cluster, queue, flavor, quota.name)[1]
            )
    if offered and max(offered.values()) > 0:
        return max(sorted(offered), key=lambda r: offered[r])
    exposed = sorted(
        r for p in cluster.pools for r, n in p.capacity.items() if r.startswith(MIG_RESOURCE_PREFIX) and n
    )
    return exposed[0] if exposed else f"{MIG_RESOURCE_PREFIX}1g.10gb"


def cases(fleet: Fleet) -> list[Case]:
    return fleet.memo("workpath.matrix", lambda: list(_all_cases(fleet)))


def _all_cases(fleet: Fleet):
    for cluster in (c for c in fleet.clusters.values() if not incomplete(fleet, c)):
        landed: dict[str, dict[str, Case]] = {}  # team signature -> kind -> a case that landed
        for namespace in sorted((n for n in cluster.namespaces.values() if n.team), key=lambda n: n.name):
            same = landed.setdefault(_team_signature(cluster, namespace), {})
            for kind in KINDS:
                if kind in same:  # an identical team landed: so does this one (see _team_signature)
                    yield dataclasses.replace(same[kind], team=namespace.team)
                    continue
                case = _case(fleet, cluster, namespace, kind)
                if not case.problem:
                    same[kind] = case
                yield case


def _case(fleet: Fleet, cluster: Cluster, namespace: Namespace, kind: str) -> Case:
    local = _team_queue(cluster, namespace.name, kind)
    if local is None:  # say so at the namespace, never trace a made-up queue name
        return _judge(cluster.name, namespace.team, kind, _no_local_queue(fleet, cluster, namespace, kind))
    queue_name = local.name
    cluster_queue = local.cluster_queue
    mig = _mig_profile(cluster, cluster_queue)
    wanted = mig if kind == "MIG inference Deployment" else GPU if kind != "CPU-only Job" else "cpu"
    if local and not _offered(cluster, cluster_queue, wanted):
        return Case(cluster.name, namespace.team, kind, None)
    body = workload(kind, namespace.name, queue_name, mig)
    path = trace(fleet, cluster, body, lambda _path: None)
    return dataclasses.replace(_judge(cluster.name, namespace.team, kind, path), body=body)


def _no_local_queue(fleet: Fleet, cluster: Cluster, namespace: Namespace, kind: str) -> WorkloadPath:
    path = WorkloadPath(f"{kind} {namespace.name}", cluster.name, namespace.name)
    path.steps.append(
        Step(
            "queue",
            False,
            f"namespace {namespace.name} has no LocalQueue: a {kind} of team "
            f"{namespace.team} cannot be queued",
            fleet.locate(namespace.obj, "metadata", "name"),
        )
    )
    return path


def _team_signature(cluster: Cluster, namespace: Namespace) -> str:
    """Everything a matrix case reads that differs between the teams of one cluster — the namespace's labels,
    LimitRanges and ResourceQuotas, its LocalQueues, their ClusterQueues (resource groups, what each flavor
    lets the queue use, fungibility, namespace selector) and those flavors — with the team's own names
    replaced by placeholders. Teams with equal signatures get the same verdicts; a case that lands is traced
    once for them (a fleet of 100 clusters x 50 identical teams traces 600 cases, not 30,000). A failing case
    is always
    traced for its own team, so its finding names that team's objects."""
    local_queues = sorted(
        (q for q in cluster.local_queues if q.namespace == namespace.name), key=lambda q: q.name
    )
    queues = []
    for name in sorted({q.cluster_queue for q in local_queues}):
        queue = cluster.cluster_queues.get(name)
        if queue is None:
            queues.append(None)
            continue
        groups = [[g.covered_resources, [f.flavor for f in g.flavors]] for g in queue.resource_groups]
        # Flavors are the cluster's, the same for every team, but a dedicated pool's toleration names its
        # team.
        tolerations = [
            cluster.flavors[f].tolerations if f in cluster.flavors else None for f in queue.flavors()
        ]
        limits = sorted((f, r, str(n), str(m)) for (f, r), (n, m) in flavor_limits(cluster, queue).items())
        queues.append(
            [
                queue.name,
                queue.namespace_selector,
                queue.obj.spec.get("flavorFungibility"),
                groups,
                limits,
                tolerations,
            ]
        )
    parts = [
        namespace.labels,
        [o.spec for o in cluster.of_kind("LimitRange") if o.namespace == namespace.name],
        [o.spec for o in cluster.of_kind("ResourceQuota") if o.namespace == namespace.name],
        [(q.name, q.cluster_queue) for q in local_queues],
        queues,
    ]
    text = json.dumps(parts, sort_keys=True, default=str)
    for own in {namespace.name, namespace.team}:
        text = text.replace(json.dumps(own), '"<team>"')
    return hashlib.sha256(text.encode()).hexdigest()


def _judge(cluster: str, team: str, kind: str, path: WorkloadPath) -> Case:
    problem, where = misplaced(path)
    return Case(cluster, team, kind, path, problem, where)
