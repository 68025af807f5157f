"""Shared helpers of the security rules (SEC*): workload manifests, their pod templates, GPU Operator
values."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..findings import Location
from ..infra.yamlload import mappings
from ..model import Cluster, Fleet, K8sObject
from . import cel
from .gpu_resources import is_gpu_device_resource

WORKLOAD_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES"
HARMLESS_VISIBLE_DEVICES = ("void", "none")  # hide every GPU (nvidia-container-toolkit documentation)
WORKLOAD_KINDS = (
    "Pod",
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "ReplicaSet",
    "Job",
    "CronJob",
    "JobSet",
    "RayJob",
    "RayCluster",
    "PyTorchJob",
    "LeaderWorkerSet",
)
EXAMPLES_DIR = "docs/examples/"
BUILTIN_PRIORITY_CLASSES = ("system-node-critical", "system-cluster-critical")


@dataclass(frozen=True)
class Workload:
    """A workload manifest: rendered into a cluster, or a document under docs/examples/ (cluster None)."""

    body: dict
    path: str
    cluster: Cluster | None
    obj: K8sObject | None
    document: Any = None  # yamlload.Document for examples

    @property
    def kind(self) -> str:
        return str(self.body.get("kind", ""))

    @property
    def name(self) -> str:
        return str((self.body.get("metadata") or {}).get("name", ""))

    @property
    def namespace(self) -> str:
        return str((self.body.get("metadata") or {}).get("namespace", ""))

    @property
    def labels(self) -> dict:
        return (self.body.get("metadata") or {}).get("labels") or {}

    def ref(self) -> str:
        return f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"

    def locate(self, fleet: Fleet, *path: Any) -> Location | None:
        if self.document is not None:
            return Location(self.document.path, self.document.line_of(tuple(path)))
        return fleet.locate(self.obj, *path)

    def in_team_namespace(self) -> bool:
        """Examples are team workloads by definition; rendered ones live in a namespace labelled with a
        team."""
        if self.cluster is None:
            return True
        namespace = self.cluster.namespaces.get(self.namespace)
        return bool(namespace and namespace.team)


def workloads(fleet: Fleet) -> Iterator[Workload]:
    for cluster in fleet.clusters.values():
        for obj in cluster.objects:
            if obj.kind in WORKLOAD_KINDS:
                yield Workload(obj.body, obj.origin, cluster, obj)
    for doc in fleet.documents:
        if (
            doc.path.startswith(EXAMPLES_DIR)
            and isinstance(doc.data, dict)
            and doc.data.get("kind") in WORKLOAD_KINDS
        ):
            yield Workload(doc.data, doc.path, None, None, doc)


def pod_specs(workload: Workload) -> Iterator[tuple[tuple, dict, dict]]:
    """(path to the pod spec, pod spec, pod template metadata) of every pod template of the workload."""
    for path, template in cel.pod_templates(workload.body):
        spec = template.get("spec")
        if isinstance(spec, dict):
            yield (*path, "spec"), spec, template.get("metadata") or {}


def containers(spec: dict) -> Iterator[tuple[str, int, dict]]:
    """(field, index, container) over containers, initContainers and ephemeralContainers."""
    for kind in ("containers", "initContainers", "ephemeralContainers"):
        items = spec.get(kind)
        for index, container in enumerate(items if isinstance(items, list) else []):
            if isinstance(container, dict):
                yield kind, index, container


def gpu_resources(container: dict) -> list[str]:
    resources = container.get("resources") if isinstance(container.get("resources"), dict) else {}
    names = []
    for section in ("limits", "requests"):
        for name in (resources.get(section) or {}) if isinstance(resources.get(section), dict) else {}:
            if is_gpu_device_resource(str(name)) and name not in names:
                names.append(str(name))
    return names


def requests_gpu(spec: dict) -> bool:
    return any(gpu_resources(c) for _kind, _i, c in containers(spec))


def env_list(section: Any) -> list[dict]:
    return mappings(section.get("env") if isinstance(section, dict) else None)


def env_value(section: Any, name: str) -> str | None:
    for item in env_list(section):
        if item.get("name") == name:
            return str(item.get("value", ""))
    return None


def values_location(fleet: Fleet, cluster: Cluster, *path: Any) -> Location | None:
    """Where a ClusterPolicy field is set: the CR itself, else the deepest GPU Operator values layer."""
    policy = cluster.cluster_policy
    if policy is None:
        return None
    if policy in cluster.objects:
        return fleet.locate(policy, "spec", *path)
    best: tuple[int, Location] | None = None
    for layer in (f"clusters/{cluster.name}/gpu-operator-values.yaml", "policies/gpu-operator/values.yaml"):
        docs = fleet.locator.docs(layer) if fleet.locator else []
        if not docs:
            continue
        depth = next((d for d in range(len(path), 0, -1) if tuple(path[:d]) in docs[0].lines), 0)
        if best is None or depth > best[0]:
            best = (depth, Location(layer, docs[0].line_of(tuple(path))))
    return best[1] if best else Location(policy.origin, 1)
