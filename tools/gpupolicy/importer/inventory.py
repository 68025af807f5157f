"""What a running cluster holds, read from a snapshot folder or the live API, grouped into pools.

The snapshot is the folder `audit --snapshot` reads (nodes.json and pods.json required, audit.load_snapshot)
plus, each optional, `kubectl get <kind> -A -o json` of: resourceflavors.json, clusterqueues.json (already
audit's), cohorts.json, localqueues.json (Kueue), priorityclasses.json, namespaces.json, resourcequotas.json.
The node labels read are GPU feature discovery's (NVIDIA/k8s-device-plugin
docs/gpu-feature-discovery/README.md, internal/lm/*: nvidia.com/gpu.product, gpu.count, gpu.memory,
gpu.replicas, gpu.sharing-strategy, mig.strategy, cuda.driver-version.full or the deprecated
cuda.driver.major/minor/rev) and the GPU Operator's (its nvidia.com/gpu.deploy.<operand> placement labels,
`true`/`false`/`paused-for-...`, `gpu.deploy.operands=false` turning every operand off; nvidia.com/mig.config,
`all-disabled` by default). A node with no deploy label, or with operands off, is not under operator
management; one with `gpu.deploy.driver=false` runs a driver the operator did not install.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..audit import METADATA, AuditError, Snapshot, _bounded_text, check_shapes, load_snapshot
from ..domain import catalog
from ..domain.gpu_resources import is_nvidia_resource
from ..domain.quantity import parse_quantity
from ..infra.schema import inputs as inputschemas
from ..model import POOL_LABEL, PRODUCT_LABEL

EXTRA_FILES = {  # file -> (attribute, API group, version, plural) of what the live reader lists
    "resourceflavors.json": ("resource_flavors", "kueue.x-k8s.io", "v1beta1", "resourceflavors"),
    "cohorts.json": ("cohorts", "kueue.x-k8s.io", "v1alpha1", "cohorts"),
    "localqueues.json": ("local_queues", "kueue.x-k8s.io", "v1beta1", "localqueues"),
    "priorityclasses.json": ("priority_classes", "scheduling.k8s.io", "v1", "priorityclasses"),
}
DEPLOY_PREFIX = "nvidia.com/gpu.deploy."
ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
GPU_RESOURCE = "nvidia.com/gpu"
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
OPERATOR_IMAGE = re.compile(r"/gpu-operator:(v\d+\.\d+\.\d+)")


@dataclass
class Inventory:
    snapshot: Snapshot
    resource_flavors: list[dict] = field(default_factory=list)
    cohorts: list[dict] = field(default_factory=list)
    local_queues: list[dict] = field(default_factory=list)
    priority_classes: list[dict] = field(default_factory=list)
    namespaces: list[dict] = field(default_factory=list)
    resource_quotas: list[dict] = field(default_factory=list)


@dataclass
class GpuNode:
    name: str
    model: str  # catalog key, "" when the product label names no GPU the catalog knows
    product: str
    count: int
    gpu_memory: str
    cpu: int
    memory_gi: int
    zone: str
    region: str
    kubelet: str
    access: str  # exclusive | time-sliced | mig | "" (the labels do not say)
    replicas: int
    mig_config: str
    mig_strategy: str
    driver: str  # major.minor.rev from cuda.driver.*, "" when GFD does not report it
    managed: bool  # the GPU Operator runs its operands here (a deploy label, operands not off)
    operator_driver: bool  # ... and installs the driver (gpu.deploy.driver is not false)
    flavor: str  # the existing ResourceFlavor whose nodeLabels select the node, ""
    taints: list[dict]
    gpu_pods: int  # pods on the node asking for GPUs (the fewer, the cheaper to drain first)
    labels: dict[str, str]
    devices: dict[str, int]  # allocatable nvidia.com/* resources: what the node gives the scheduler now

    def hardware(self) -> tuple:
        return (
            self.model or self.product,
            self.count,
            self.gpu_memory,
            self.cpu,
            self.memory_gi,
            self.flavor,
        )

    def config(self) -> dict[str, object]:
        """What must agree across a pool's nodes."""
        return {
            "access": self.access,
            "replicas": self.replicas,
            "mig.config": self.mig_config,
            "mig.strategy": self.mig_strategy,
            "driver": self.driver,
            "managed": self.managed,
        }


def read_snapshot(directory: Path) -> Inventory:
    snapshot = load_snapshot(directory)
    inventory = Inventory(snapshot)
    for name, (attribute, *_api) in EXTRA_FILES.items():
        setattr(inventory, attribute, _extra(directory / name))
    inventory.namespaces = _extra(directory / "namespaces.json")
    inventory.resource_quotas = _extra(directory / "resourcequotas.json")
    return inventory


def read_live(context: str | None, kubeconfig: str | None = None) -> Inventory:
    """The same lists from the API server, through audit --context's reader (audit_live)."""
    from ..audit import live as audit_live

    inventory = Inventory(audit_live.load_live(context, kubeconfig))
    core, custom = audit_live._apis(context, kubeconfig)
    where = f"context {context!r}" if context else "the current context"
    for attribute, group, version, plural in EXTRA_FILES.values():
        try:
            items = audit_live._list_all(
                custom.list_cluster_custom_object,
                f"{plural}.{group} ({where})",
                group=group,
                version=version,
                plural=plural,
            )
        except audit_live._NotFound:
            items = []  # the API is not served: nothing of that kind to import
        setattr(inventory, attribute, items)
    inventory.namespaces = audit_live._list_all(core.list_namespace, f"namespaces ({where})")
    inventory.resource_quotas = audit_live._list_all(
        core.list_resource_quota_for_all_namespaces, f"resourcequotas ({where})"
    )
    return inventory


def _extra(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    try:
        data = json.loads(_bounded_text(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise AuditError(f"{path}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise AuditError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
    except (ValueError, RecursionError) as exc:
        raise AuditError(f"{path}: cannot read: {type(exc).__name__}: {str(exc)[:120]}") from None
    if not isinstance(data, dict) or not isinstance(data.get("items"), list):
        raise AuditError(f"{path}:1: expected a Kubernetes List with `items`")
    try:
        inputschemas.check(
            "snapshot-list", data, str(path), "`kubectl get ... -o json` output (a List of objects)"
        )
    except inputschemas.InputRefused as exc:
        raise AuditError(str(exc)) from None
    check_shapes(data["items"], {"metadata": METADATA}, str(path))
    return data["items"]


def meta(obj: dict) -> dict:
    return obj.get("metadata") or {}


def _int(text: object, default: int = 0) -> int:
    try:
        return int(str(text))
    except ValueError:
        return default


def gpu_nodes(inventory: Inventory) -> list[GpuNode]:
    """The snapshot's nodes that carry NVIDIA GPUs (a product label or GPU capacity), in name order."""
    pods = Counter((p.get("spec") or {}).get("nodeName") for p in inventory.snapshot.pods if _asks_gpu(p))
    found = []
    for node in inventory.snapshot.nodes:
        labels = {str(k): str(v) for k, v in (meta(node).get("labels") or {}).items()}
        status = node.get("status") or {}
        capacity = status.get("capacity") or status.get("allocatable") or {}
        count = _int(labels.get("nvidia.com/gpu.count"), _int(capacity.get(GPU_RESOURCE)))
        if PRODUCT_LABEL not in labels and not count:
            continue
        model = catalog.gpu_by_product_label(labels.get(PRODUCT_LABEL, ""))
        name = meta(node).get("name", "?")
        found.append(
            GpuNode(
                name=name,
                model=model.key if model else "",
                product=labels.get(PRODUCT_LABEL, ""),
                count=count,
                gpu_memory=labels.get("nvidia.com/gpu.memory", ""),
                cpu=_int(capacity.get("cpu")),
                memory_gi=_gibibytes(capacity.get("memory")),
                zone=labels.get(ZONE_LABEL, ""),
                region=labels.get(REGION_LABEL, ""),
                kubelet=(status.get("nodeInfo") or {}).get("kubeletVersion", ""),
                access=_access(labels),
                replicas=max(1, _int(labels.get("nvidia.com/gpu.replicas"), 1)),
                mig_config=labels.get("nvidia.com/mig.config", ""),
                mig_strategy=labels.get("nvidia.com/mig.strategy", ""),
                driver=_driver(labels),
                managed=_managed(labels),
                operator_driver=_managed(labels) and labels.get(DEPLOY_PREFIX + "driver") != "false",
                flavor=_flavor(labels, inventory.resource_flavors),
                taints=list((node.get("spec") or {}).get("taints") or []),
                gpu_pods=pods.get(name, 0),
                labels=labels,
                devices={
                    k: _int(v)
                    for k, v in (status.get("allocatable") or capacity).items()
                    if is_nvidia_resource(k) and _int(v) > 0
                },
            )
        )
    return sorted(found, key=lambda n: n.name)


def _asks_gpu(pod: dict) -> bool:
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    for container in (pod.get("spec") or {}).get("containers") or []:
        wanted = {
            **((container.get("resources") or {}).get("limits") or {}),
            **((container.get("resources") or {}).get("requests") or {}),
        }
        if any(is_nvidia_resource(k) for k in wanted):
            return True
    return False


def _gibibytes(value: object) -> int:
    try:
        return int(parse_quantity(value) / 2**30) if value is not None else 0
    except Exception:  # a quantity Kubernetes would not write: the node's memory stays unknown (a question)
        return 0


def _access(labels: dict[str, str]) -> str:
    """The access mode the labels state, "" when they state none (a node without GFD's sharing labels)."""
    layout = labels.get("nvidia.com/mig.config", "")
    if layout and layout != "all-disabled":
        return "mig"
    strategy = labels.get("nvidia.com/gpu.sharing-strategy", "")
    if strategy == "time-slicing" or _int(labels.get("nvidia.com/gpu.replicas"), 1) > 1:
        return "time-sliced"
    if strategy == "none":
        return "exclusive"
    return ""


def _managed(labels: dict[str, str]) -> bool:
    return (
        any(k.startswith(DEPLOY_PREFIX) for k in labels) and labels.get(DEPLOY_PREFIX + "operands") != "false"
    )


def _driver(labels: dict[str, str]) -> str:
    if labels.get("nvidia.com/cuda.driver-version.full"):
        return labels["nvidia.com/cuda.driver-version.full"]
    parts = [labels.get(f"nvidia.com/cuda.driver.{p}", "") for p in ("major", "minor", "rev")]
    return ".".join(parts) if parts[0] else ""


def _flavor(labels: dict[str, str], flavors: list[dict]) -> str:
    for flavor in sorted(flavors, key=lambda f: meta(f).get("name", "")):
        selector = (flavor.get("spec") or {}).get("nodeLabels") or {}
        if selector and all(labels.get(k) == str(v) for k, v in selector.items()):
            return meta(flavor).get("name", "")
    return ""


def operator_version(inventory: Inventory) -> str:
    """The GPU Operator version of its controller's image tag, "" when no such pod runs."""
    for pod in inventory.snapshot.pods:
        for container in (pod.get("spec") or {}).get("containers") or []:
            match = OPERATOR_IMAGE.search(str(container.get("image", "")))
            if match:
                return match[1]
    return ""


@dataclass
class PoolGroup:
    name: str
    nodes: list[GpuNode]
    flavor: str
    values: dict[str, object]  # the pool's config: each field's value on most of its nodes
    questions: list[str]

    @property
    def first(self) -> GpuNode:
        return self.nodes[0]

    def disagreements(self, node: GpuNode) -> list[str]:
        return [
            f"{key} {node.config()[key] or 'unset'} (pool: {value or 'unset'})"
            for key, value in self.values.items()
            if node.config()[key] != value and key != "managed"
        ]


def group_pools(cluster: str, nodes: list[GpuNode]) -> list[PoolGroup]:
    """Nodes of identical hardware (model, GPUs, GPU memory, cpu, memory) and flavor form a pool; its config
    is
    what most of its nodes have, and a field without a majority is a question."""
    groups: dict[tuple, list[GpuNode]] = {}
    for node in nodes:
        groups.setdefault(node.hardware(), []).append(node)
    pools, taken = [], set()
    for members in groups.values():
        first = members[0]
        values, questions = {}, []
        for key in first.config():
            if key == "managed":
                continue  # every pool is meant to be under operator management (set below)
            counts = Counter(n.config()[key] for n in members).most_common()
            values[key] = counts[0][0]
            if len(counts) > 1 and counts[0][1] == counts[1][1]:
                split = ", ".join(f"{value or 'unset'} x{count}" for value, count in counts)
                questions.append(
                    f"{key}: the nodes split evenly ({split}); say which the pool is meant to have"
                )
        values["managed"] = True  # every pool is meant to be under operator management
        name = (
            first.flavor
            if DNS_LABEL.match(first.flavor or "-") and first.flavor not in taken
            else _name(cluster, first, taken)
        )
        taken.add(name)
        pools.append(PoolGroup(name, members, first.flavor, values, questions))
    return pools


def _name(cluster: str, node: GpuNode, taken: set[str]) -> str:
    base = f"{cluster}-{(node.model or 'gpu').lower()}".replace(".", "-")[:55]
    name, n = base, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    return name


def pool_of_label(node: GpuNode) -> str:
    return node.labels.get(POOL_LABEL, "")
