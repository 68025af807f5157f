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

from dataclasses import dataclass

from ..findings import Location
from ..model import MIG_RESOURCE_PREFIX, QUEUE_LABEL, Cluster, Fleet
from ..quotas import flavor_limit
from . import WorkloadPath, incomplete, misplaced, trace

GPU = "nvidia.com/gpu"
KINDS = ("training Job", "MIG inference Deployment", "time-sliced notebook", "CPU-only Job",
         "Job with init container and sidecar", "distributed job with CPU launcher")
PREFERRED_QUEUE = {"training Job": "training", "MIG inference Deployment": "inference",
                   "time-sliced notebook": "notebooks", "Job with init container and sidecar": "training",
                   "distributed job with CPU launcher": "training", "CPU-only Job": "batch"}


@dataclass(frozen=True)
class Case:
    cluster: str
    team: str
    kind: str
    path: WorkloadPath | None  # None: the team is not offered the resource
    problem: str = ""  # why it does not land where intended ("" when it does)
    where: Location | None = None

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
    return {"name": name, "image": "registry.example/app:1", "resources": {"requests": requests, "limits": limits}}


def _pod_template(queue: str, containers: list[dict], init: list[dict] | None = None) -> dict:
    spec: dict = {"restartPolicy": "Never", "containers": containers}
    if init:
        spec["initContainers"] = init
    return {"metadata": {"labels": {QUEUE_LABEL: queue}}, "spec": spec}


def _meta(name: str, namespace: str, queue: str) -> dict:
    return {"name": name, "namespace": namespace, "labels": {QUEUE_LABEL: queue}}


def workload(kind: str, namespace: str, queue: str, mig: str) -> dict:
    """The manifest of one matrix case (GPU amounts chosen so that any offered pool can take it)."""
    gpu = {GPU: 1}
    if kind == "training Job":
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta("train", namespace, queue),
                "spec": {"suspend": True, "template": _pod_template(queue, [_container("trainer", gpu)])}}
    if kind == "MIG inference Deployment":
        template = _pod_template(queue, [_container("server", {mig: 1})])
        template["spec"]["restartPolicy"] = "Always"
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta("serve", namespace, queue),
                "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "serve"}}, "template": template}}
    if kind == "time-sliced notebook":
        template = _pod_template(queue, [_container("jupyter", gpu)])
        template["spec"]["restartPolicy"] = "Always"
        return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": _meta("notebook", namespace, queue),
                "spec": {"replicas": 1, "serviceName": "notebook", "selector": {"matchLabels": {"app": "nb"}},
                         "template": template}}
    if kind == "CPU-only Job":
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta("prep", namespace, queue),
                "spec": {"suspend": True, "template": _pod_template(queue, [_container("prep", {})])}}
    if kind == "Job with init container and sidecar":
        sidecar = {**_container("log-shipper", {}), "restartPolicy": "Always"}
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta("train-sidecar", namespace, queue),
                "spec": {"suspend": True, "template": _pod_template(
                    queue, [_container("trainer", gpu)], [_container("fetch-data", {}), sidecar])}}
    launcher = _pod_template(queue, [_container("launcher", {})])
    workers = _pod_template(queue, [_container("worker", gpu)])
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": _meta("distributed", namespace, queue),
            "spec": {"suspend": True, "replicatedJobs": [
                {"name": "launcher", "replicas": 1, "template": {"spec": {"template": launcher}}},
                {"name": "workers", "replicas": 1, "template": {"spec": {"parallelism": 2, "completions": 2,
                                                                         "template": workers}}}]}}


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
            offered[quota.name] = offered.get(quota.name, 0) + flavor_limit(cluster, queue, flavor, quota.name)[1]
    if offered and max(offered.values()) > 0:
        return max(sorted(offered), key=lambda r: offered[r])
    exposed = sorted(r for p in cluster.pools for r, n in p.capacity.items() if r.startswith(MIG_RESOURCE_PREFIX) and n)
    return exposed[0] if exposed else f"{MIG_RESOURCE_PREFIX}1g.10gb"


def cases(fleet: Fleet) -> list[Case]:
    return fleet.memo("workpath.matrix", lambda: list(_all_cases(fleet)))


def _all_cases(fleet: Fleet):
    for cluster in (c for c in fleet.clusters.values() if not incomplete(fleet, c)):
        for namespace in sorted((n for n in cluster.namespaces.values() if n.team), key=lambda n: n.name):
            for kind in KINDS:
                local = _team_queue(cluster, namespace.name, kind)
                queue_name = local.name if local else "none"
                cluster_queue = local.cluster_queue if local else ""
                mig = _mig_profile(cluster, cluster_queue)
                wanted = mig if kind == "MIG inference Deployment" else GPU if kind != "CPU-only Job" else "cpu"
                if local and not _offered(cluster, cluster_queue, wanted):
                    yield Case(cluster.name, namespace.team, kind, None)
                    continue
                body = workload(kind, namespace.name, queue_name, mig)
                path = trace(fleet, cluster, body, lambda _path: None)
                yield _judge(cluster.name, namespace.team, kind, path)



def _judge(cluster: str, team: str, kind: str, path: WorkloadPath) -> Case:
    problem, where = misplaced(path)
    return Case(cluster, team, kind, path, problem, where)
