"""Workload audit: what a cluster snapshot says about GPU use, against the pools the repository declares.

A snapshot is a directory of what these commands print:
    nodes.json            kubectl get nodes -o json
    pods.json             kubectl get pods -A -o json
    workloads.json        kubectl get workloads.kueue.x-k8s.io -A -o json   (optional)
    clusterqueues.json    kubectl get clusterqueues -o json                 (optional)
    dcgm.prom             a scrape of the DCGM exporter's /metrics          (optional)
Bad input raises AuditError with the file (and line for dcgm.prom, and the field for a wrong shape: a list
where a mapping belongs, a word where a number or a time belongs); the command turns it into exit 2. Each JSON
file is first checked against `schemas/inputs/snapshot-list.yaml` (a List of objects) and read only up to
`MAX_SNAPSHOT_FILE_BYTES`.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path

from ..domain import catalog
from ..domain.gpu_resources import is_gpu_device_resource
from ..errors import ToolError
from ..infra.schema import inputs as inputschemas
from ..model import (
    GPU_COUNT_LABEL,
    GPU_RESOURCES,
    MIG_RESOURCE_PREFIX,
    POOL_LABEL,
    PRODUCT_LABEL,
    QUEUE_LABEL,
    TIER_LABEL,
    Pool,
)
from ..workpath.pods import pod_requests

NO_POOL = "(no pool label)"
IDLE_UTIL_PERCENT = 5.0  # DCGM_FI_DEV_GPU_UTIL at or below this counts as idle
_PROM_LINE = re.compile(
    r'^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)(?:\s+\d+)?$'
)
_PROM_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


class AuditError(ToolError, ValueError):
    """A snapshot the audit cannot read: the message names the file and, where it can, the line or field."""


@dataclass
class Issue:
    kind: str  # pool-drift | no-queue | idle | pending
    message: str


@dataclass
class Snapshot:
    nodes: list[dict]
    pods: list[dict]
    workloads: list[dict] | None = None
    cluster_queues: list[dict] | None = None
    dcgm: list[tuple[str, dict[str, str], float]] | None = None


@dataclass
class IdleGPU:
    namespace: str
    pod: str
    gpu: str  # the exporter's `gpu` index, else the card's UUID
    node: str
    utilization_percent: float


@dataclass
class PendingWorkload:
    workload: str  # namespace/name
    queue: str
    age_hours: float | None  # None: the workload has no creationTimestamp


@dataclass
class AuditReport:
    nodes_per_pool: dict[str, int] = field(default_factory=dict)
    # names of the nodes counted as "(no pool label)"
    nodes_without_pool: list[str] = field(default_factory=list)
    # exact shares of a card: whole GPUs plus MIG instances as compute slices over the card's (1/7, 3/7, 1/2)
    gpus_by_namespace: dict[str, Fraction] = field(default_factory=dict)
    gpus_by_queue: dict[str, Fraction] = field(default_factory=dict)
    idle_gpus: list[IdleGPU] = field(default_factory=list)
    unqueued_pods: list[str] = field(default_factory=list)
    pending: list[PendingWorkload] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)


def _items(path: Path, required: bool) -> list[dict] | None:
    if not path.is_file():
        if required:
            raise AuditError(f"{path}: missing (expected `kubectl get ... -o json` output)")
        return None
    try:
        data = json.loads(_bounded_text(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise AuditError(f"{path}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise AuditError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
    # an integer of 5,000 digits; nesting deeper than Python's stack
    except (ValueError, RecursionError) as exc:
        raise AuditError(f"{path}: cannot read: {type(exc).__name__}: {str(exc)[:120]}") from None
    items = data.get("items") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise AuditError(f"{path}:1: expected a Kubernetes List with `items`")
    try:
        inputschemas.check(
            "snapshot-list", data, str(path), "`kubectl get ... -o json` output (a List of objects)"
        )
    except inputschemas.InputRefused as exc:
        raise AuditError(str(exc)) from None
    check_shapes(items, SHAPES[path.name], str(path))
    return items


# pods.json of a 5,000-node cluster at the 150,000-pod threshold, at a few KiB a pod, stays well under this.
MAX_SNAPSHOT_FILE_BYTES = 1024 * 1024 * 1024


def _bounded_text(path: Path, limit: int = MAX_SNAPSHOT_FILE_BYTES) -> str:
    """The file's text, refused over `limit` bytes before it is read whole."""
    with open(path, "rb") as handle:
        raw = handle.read(limit + 1)
    if len(raw) > limit:
        raise AuditError(f"{path}: over {limit:,} bytes, more than a snapshot file of any cluster")
    return raw.decode("utf-8")


def parse_prometheus(path: Path) -> list[tuple[str, dict[str, str], float]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise AuditError(f"{path}: cannot read: {exc}") from None
    return parse_prometheus_text(text, str(path))


def parse_prometheus_text(text: str, source: str) -> list[tuple[str, dict[str, str], float]]:
    """Samples of the Prometheus text format (an exporter's /metrics, or Prometheus' /federate)."""
    samples = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _PROM_LINE.match(line)
        if not match:
            raise AuditError(f"{source}:{number}: not a Prometheus sample line")
        try:
            value = float(match["value"])
        except ValueError:
            raise AuditError(f"{source}:{number}: sample value {match['value']!r} is not a number") from None
        samples.append(
            (
                match["name"],
                {key: _unescape(value) for key, value in _PROM_LABEL.findall(match["labels"] or "")},
                value,
            )
        )
    return samples


def _unescape(value: str) -> str:
    r"""A label value of the text format: `\\`, `\"` and `\n` stand for a backslash, a quote and a newline."""
    return re.sub(r'\\(.)', lambda m: "\n" if m[1] == "n" else m[1], value)


def load_snapshot(directory: Path) -> Snapshot:
    if not directory.is_dir():
        raise AuditError(f"{directory}: not a directory")
    dcgm = directory / "dcgm.prom"
    return Snapshot(
        nodes=_items(directory / "nodes.json", True) or [],
        pods=_items(directory / "pods.json", True) or [],
        workloads=_items(directory / "workloads.json", False),
        cluster_queues=_items(directory / "clusterqueues.json", False),
        dcgm=parse_prometheus(dcgm) if dcgm.is_file() else None,
    )


def _meta(obj: dict) -> dict:
    return obj.get("metadata") or {}


def _number(text) -> float:
    try:
        return float(str(text))
    except ValueError:
        return 0.0


def pod_gpus(pod: dict, model: str = "") -> float:
    """GPUs a pod asks for: whole cards, plus MIG instances as their share of a card (`catalog.card_fraction`)
    of the pod's GPU `model` where known, else of the GPUs that offer the profile."""
    return float(pod_gpu_share(pod, model))


def pod_gpu_share(pod: dict, model: str = "") -> Fraction:
    """`pod_gpus` exactly: a MIG instance is a whole number of compute slices, so 1g.10gb is 1/7, never
    0.142857."""
    total = Fraction(0)
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        wanted = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        for name, amount in wanted.items():
            if name in GPU_RESOURCES:
                total += _count(amount)
            elif name.startswith(MIG_RESOURCE_PREFIX):
                total += _count(amount) * _share(name, model)
    return total


def _count(amount) -> Fraction:
    """A device count as an exact number (the shape check admits only whole counts; inf/nan count as none)."""
    number = _number(amount)
    return Fraction(number) if math.isfinite(number) else Fraction(0)


def _share(resource: str, model: str) -> Fraction:
    """A MIG resource's share of a card; a name that is not a profile counts as a whole card."""
    try:
        return catalog.share_of_card(resource, model)
    except ValueError:
        return Fraction(1)


def format_gpus(share: Fraction) -> str:
    """Whole GPUs and the rest in the card's slices: `12`, `1/7`, `2 3/7`."""
    whole, rest = divmod(share, 1)
    if not rest:
        return str(whole)
    return f"{whole} {rest}" if whole else str(rest)


def node_models(nodes: list[dict], pools: dict[str, Pool]) -> dict[str, str]:
    """Node name -> catalog GPU model: from its `nvidia.com/gpu.product` label, else its pool's declared
    model."""
    found: dict[str, str] = {}
    for node in nodes:
        labels = _meta(node).get("labels") or {}
        model = catalog.gpu_by_product_label(labels.get(PRODUCT_LABEL, ""))
        pool = pools.get(labels.get(POOL_LABEL, ""))
        key = model.key if model else (pool.gpu_model if pool else "")
        if key:
            found[_meta(node).get("name", "")] = key
    return found


def _pod_model(pod: dict, models: dict[str, str]) -> str:
    return models.get((pod.get("spec") or {}).get("nodeName") or "", "")


def parse_time(text: str | None) -> datetime | None:
    """An aware datetime (UTC when the text names no zone), or None when `text` is empty or not a time."""
    if not text or not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def snapshot_time(snapshot: Snapshot) -> datetime | None:
    """When the snapshot was taken, as near as it says: its newest timestamp (an object created, a pod
    started, a condition changed). Auditing an old snapshot against today's clock would age every pending
    workload by
    the months since; None when the snapshot holds no timestamp at all."""
    stamps = []
    for obj in _objects(snapshot):
        status = obj.get("status") if isinstance(obj.get("status"), dict) else {}
        conditions = status.get("conditions") if isinstance(status.get("conditions"), list) else []
        stamps += [parse_time(_meta(obj).get("creationTimestamp")), parse_time(status.get("startTime"))]
        stamps += [parse_time(c.get("lastTransitionTime")) for c in conditions if isinstance(c, dict)]
    known = [stamp for stamp in stamps if stamp is not None]
    return max(known) if known else None


def snapshot_clusters(snapshot: Snapshot, fleet) -> list[str]:
    """The clusters some of whose pools the snapshot's nodes are labelled with: a snapshot of one cluster is
    compared with that cluster's pools, not with the other clusters' (which it would report as missing)."""
    labelled = {(_meta(node).get("labels") or {}).get(POOL_LABEL, "") for node in snapshot.nodes}
    return sorted(
        name for name, cluster in fleet.clusters.items() if labelled & {p.name for p in cluster.pools}
    )


def _objects(snapshot: Snapshot) -> list[dict]:
    return [*snapshot.nodes, *snapshot.pods, *(snapshot.workloads or []), *(snapshot.cluster_queues or [])]


def audit(snapshot: Snapshot, pools: dict[str, Pool], now: datetime | None = None) -> AuditReport:
    now = now or snapshot_time(snapshot) or datetime.now(UTC)
    report = AuditReport()
    _audit_nodes(snapshot.nodes, pools, report)
    _audit_pods(snapshot.pods, node_models(snapshot.nodes, pools), report)
    if snapshot.dcgm is not None:
        _audit_idle(snapshot.dcgm, report)
    if snapshot.workloads is not None:
        _audit_pending(snapshot.workloads, now, report)
    return report


def _audit_nodes(nodes: list[dict], pools: dict[str, Pool], report: AuditReport) -> None:
    by_pool: dict[str, list[dict]] = defaultdict(list)
    for node in nodes:
        by_pool[(_meta(node).get("labels") or {}).get(POOL_LABEL, "")].append(node)
    report.nodes_per_pool = {name or NO_POOL: len(members) for name, members in sorted(by_pool.items())}
    report.nodes_without_pool = sorted(_meta(node).get("name", "?") for node in by_pool.get("", []))
    for name, pool in sorted(pools.items()):
        members = by_pool.get(name, [])
        if len(members) != pool.nodes:
            report.issues.append(
                Issue(
                    "pool-drift",
                    f"pool {name}: {len(members)} node(s) in the cluster, "
                    f"{pool.nodes} declared in {pool.path}",
                )
            )
        try:
            products = tuple(catalog.gpu(pool.gpu_model).product_labels)
        except Exception:
            products = ()
        for node in members:
            _node_drift(node, pool, products, report)
    for name in sorted(set(by_pool) - set(pools)):
        if name:
            report.issues.append(
                Issue(
                    "pool-drift",
                    f"{len(by_pool[name])} node(s) labelled with pool {name!r}, which no pool.yaml declares",
                )
            )


def _node_drift(node: dict, pool: Pool, products: tuple[str, ...], report: AuditReport) -> None:
    name = _meta(node).get("name", "?")
    labels = _meta(node).get("labels") or {}
    product = labels.get(PRODUCT_LABEL, "")
    if products and not any(product.startswith(p) for p in products):
        report.issues.append(
            Issue(
                "pool-drift",
                f"node {name} (pool {pool.name}): GPU product "
                f"{product or 'unset'!r}, pool.yaml declares {pool.gpu_model}",
            )
        )
    count = labels.get(GPU_COUNT_LABEL)
    if count is not None and count.isdigit() and int(count) != pool.gpus_per_node:
        report.issues.append(
            Issue(
                "pool-drift",
                f"node {name} (pool {pool.name}): {count} GPUs, "
                f"pool.yaml declares {pool.gpus_per_node} per node",
            )
        )
    for key, value in pool.node_labels.items():
        if key != PRODUCT_LABEL and labels.get(key) != value:  # the product is checked above
            report.issues.append(
                Issue(
                    "pool-drift",
                    f"node {name} (pool {pool.name}): label {key}="
                    f"{labels.get(key)!r}, pool.yaml declares {value!r}",
                )
            )
    taints = {
        (t.get("key"), t.get("value", "") or "", t.get("effect"))
        for t in (node.get("spec") or {}).get("taints") or []
    }
    for taint in pool.taints:
        if (taint.key, taint.value or "", taint.effect) not in taints:
            report.issues.append(
                Issue(
                    "pool-drift",
                    f"node {name} (pool {pool.name}): taint "
                    f"{taint.key}={taint.value}:{taint.effect} is missing",
                )
            )


def _audit_pods(pods: list[dict], models: dict[str, str], report: AuditReport) -> None:
    by_ns: Counter[str] = Counter()
    by_queue: Counter[str] = Counter()
    for pod in pods:
        phase = (pod.get("status") or {}).get("phase", "")
        gpus = pod_gpu_share(pod, _pod_model(pod, models))
        if not gpus or phase in ("Succeeded", "Failed"):
            continue
        meta = _meta(pod)
        namespace = meta.get("namespace", "")
        by_ns[namespace] += gpus
        queue = (meta.get("labels") or {}).get(QUEUE_LABEL)
        if queue:
            by_queue[f"{namespace}/{queue}"] += gpus
        else:
            report.unqueued_pods.append(f"{namespace}/{meta.get('name', '?')}")
            report.issues.append(
                Issue(
                    "no-queue",
                    f"pod {namespace}/{meta.get('name', '?')} requests "
                    f"{format_gpus(gpus)} GPU(s) without a {QUEUE_LABEL} "
                    "label",
                )
            )
    report.gpus_by_namespace = dict(sorted(by_ns.items()))
    report.gpus_by_queue = dict(sorted(by_queue.items()))


def _audit_idle(samples, report: AuditReport) -> None:
    for name, labels, value in samples:
        if name != "DCGM_FI_DEV_GPU_UTIL" or not labels.get("pod"):
            continue
        if value <= IDLE_UTIL_PERCENT:
            idle = IdleGPU(
                labels.get("namespace", ""),
                labels["pod"],
                labels.get("gpu", labels.get("UUID", "?")),
                labels.get("hostname") or labels.get("Hostname", "?"),
                value,
            )
            report.idle_gpus.append(idle)
            report.issues.append(
                Issue(
                    "idle",
                    f"GPU {idle.gpu} on {idle.node} is allocated to "
                    f"{idle.namespace}/{idle.pod} but {value:g}% busy",
                )
            )


def _audit_pending(workloads: list[dict], now: datetime, report: AuditReport) -> None:
    for workload in workloads:
        conditions = (workload.get("status") or {}).get("conditions") or []
        admitted = any(c.get("type") == "Admitted" and c.get("status") == "True" for c in conditions)
        finished = any(c.get("type") == "Finished" and c.get("status") == "True" for c in conditions)
        if admitted or finished:
            continue
        meta = _meta(workload)
        created = parse_time(meta.get("creationTimestamp"))  # the shape check refused a malformed one
        # never below 0: a live read's clock may lag the API server's by a moment
        age = max(0.0, (now - created).total_seconds() / 3600) if created else None
        queue = (workload.get("spec") or {}).get("queueName", "")
        report.pending.append(
            PendingWorkload(f"{meta.get('namespace', '')}/{meta.get('name', '?')}", queue, age)
        )
        report.issues.append(
            Issue(
                "pending",
                f"workload {meta.get('namespace', '')}/{meta.get('name', '?')} "
                f"in queue {queue or '?'} pending for {format_age(age)}",
            )
        )
    report.pending.sort(key=lambda item: -(item.age_hours if item.age_hours is not None else float("inf")))


def free_by_pool(snapshot: Snapshot, pools: dict[str, Pool]) -> dict[str, dict[str, int]]:
    """Devices free now per pool and resource: what the pool's nodes in the snapshot can allocate, less what
    the pods bound to them request. A node's `status.allocatable` is what the scheduler counts (a card fallen
    off the bus is already missing there); a node without it counts the pool's declared share of one node. A
    cordoned node frees nothing: nothing new lands there. A pod counts while it is not Succeeded or Failed,
    with
    its effective request (init containers and sidecars, as the scheduler adds them: workpath.pods)."""
    used = _requests_by_node(snapshot.pods)
    free: dict[str, dict[str, int]] = {name: dict.fromkeys(pool.capacity, 0) for name, pool in pools.items()}
    for node in snapshot.nodes:
        pool = pools.get((_meta(node).get("labels") or {}).get(POOL_LABEL, ""))
        if pool is None or (node.get("spec") or {}).get("unschedulable"):
            continue
        allocatable = (node.get("status") or {}).get("allocatable")
        taken = used.get(_meta(node).get("name", ""), {})
        for resource in pool.capacity:
            offered = (
                _count(allocatable[resource])
                if allocatable and resource in allocatable
                else Fraction(pool.capacity[resource], max(pool.nodes, 1))
            )
            free[pool.name][resource] += max(int(offered - taken.get(resource, 0)), 0)
    return free


def _requests_by_node(pods: list[dict]) -> dict[str, Counter[str]]:
    """Node name -> GPU devices requested by the live pods bound to it."""
    by_node: dict[str, Counter[str]] = defaultdict(Counter)
    for pod in pods:
        spec = pod.get("spec") or {}
        if not spec.get("nodeName") or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        for resource, amount in pod_requests(spec).items():
            if is_gpu_device_resource(resource):
                by_node[spec["nodeName"]][resource] += int(amount)
    return by_node


def report_json(report: AuditReport, now: datetime) -> dict:
    """The report for scripts: every list entry a keyed object; GPU shares as a number and as exact text."""
    data = asdict(report)
    for key in ("gpus_by_namespace", "gpus_by_queue"):
        data[key] = {
            name: {"gpus": round(float(share), 6), "exact": format_gpus(share)}
            for name, share in getattr(report, key).items()
        }
    return {"snapshot_time": now.isoformat().replace("+00:00", "Z"), **data}


def format_age(hours: float | None) -> str:
    return "an unknown time (no creationTimestamp)" if hours is None else f"{hours:.1f} h"


def export_jobs(
    snapshot: Snapshot, now: datetime, default_duration: int = 3600, pools: dict[str, Pool] | None = None
):
    """The snapshot's GPU pods as simulator jobs: submit = creation time, duration = time run so far.

    Running pods have run at least as long as they have been up, so their duration is a lower bound;
    pending pods get `default_duration`. Team is the namespace; queue and tier come from pod labels.
    """
    from ..simulate.jobs import Job

    models = node_models(snapshot.nodes, pools or {})
    rows = []
    for pod in snapshot.pods:
        gpus = pod_gpus(pod, _pod_model(pod, models))
        phase = (pod.get("status") or {}).get("phase", "")
        if not gpus or phase in ("Succeeded", "Failed"):
            continue
        meta = _meta(pod)
        created = parse_time(meta.get("creationTimestamp")) or now
        started = parse_time((pod.get("status") or {}).get("startTime"))
        duration = (
            int((now - started).total_seconds()) if started and phase == "Running" else default_duration
        )
        labels = meta.get("labels") or {}
        whole = gpus >= 1 and float(gpus).is_integer()
        rows.append(
            (
                created,
                Job(
                    id=f"{meta.get('namespace', '')}/{meta.get('name', '')}",
                    submit=0,
                    duration=max(duration, 1),
                    gpus=int(gpus) if whole else 1,
                    share=0.0 if whole else min(gpus, 0.999),
                    team=meta.get("namespace", ""),
                    queue=labels.get(QUEUE_LABEL, ""),
                    tier=labels.get(TIER_LABEL, ""),
                ),
            )
        )
    if not rows:
        return []
    origin = min(created for created, _ in rows)
    jobs = []
    for created, job in sorted(rows, key=lambda r: (r[0], r[1].id)):
        job.submit = int((created - origin).total_seconds())
        jobs.append(job)
    return jobs


# --- snapshot shapes
# -----------------------------------------------------------------------------------------
# What the audit reads of each object, and the type it must have. A snapshot is untrusted input (a file
# someone saved or edited): a wrong shape is an AuditError naming the file and field, never a crash deep in
# the audit, and a malformed time is an error, never an age of 0.0 h. Fields not listed here are not read.

MAX_DEVICES = 1_000_000  # per container: far above any node (16 GPUs x 7 MIG slices); keeps the sums exact
TEXT, TIME, RESOURCES, FLAG = "text", "time", "resources", "flag"
CONTAINER = {"restartPolicy": TEXT, "resources": {"limits": RESOURCES, "requests": RESOURCES}}
LABELS = {"*": TEXT}  # a mapping of strings to strings
METADATA = {"name": TEXT, "namespace": TEXT, "labels": LABELS, "creationTimestamp": TIME}
SHAPES: dict[str, dict] = {
    "nodes.json": {
        "metadata": METADATA,
        "spec": {"unschedulable": FLAG, "taints": [{"key": TEXT, "value": TEXT, "effect": TEXT}]},
        "status": {"allocatable": RESOURCES},
    },
    "pods.json": {
        "metadata": METADATA,
        "spec": {"nodeName": TEXT, "containers": [CONTAINER], "initContainers": [CONTAINER]},
        "status": {"phase": TEXT, "startTime": TIME},
    },
    "workloads.json": {
        "metadata": METADATA,
        "spec": {"queueName": TEXT},
        "status": {"conditions": [{"type": TEXT, "status": TEXT}]},
    },
    "clusterqueues.json": {"metadata": METADATA},
}


def check_shapes(items: list, shape: dict, source: str) -> None:
    """Raise AuditError at the first item whose read fields have the wrong type."""
    for index, item in enumerate(items):
        _check(item, shape, source, f"items[{index}]")


def _check(value: object, shape: object, source: str, where: str) -> None:
    if value is None:
        return  # an absent or null field: the audit reads it as empty
    if isinstance(shape, dict):
        _expect(isinstance(value, dict), value, "a mapping", source, where)
        for key, item in value.items():
            if key in shape or "*" in shape:
                _check(item, shape.get(key, shape.get("*")), source, f"{where}.{key}")
    elif isinstance(shape, list):
        _expect(isinstance(value, list), value, "a list", source, where)
        for index, item in enumerate(value):
            _check(item, shape[0], source, f"{where}[{index}]")
    elif shape == TEXT:
        _expect(isinstance(value, str), value, "a string", source, where)
    elif shape == FLAG:
        _expect(isinstance(value, bool), value, "true or false", source, where)
    elif shape == TIME:
        _expect(
            isinstance(value, str) and parse_time(value) is not None,
            value,
            "an RFC 3339 time such as 2025-06-01T12:00:00Z",
            source,
            where,
        )
    elif shape == RESOURCES:
        _expect(isinstance(value, dict), value, "a mapping", source, where)
        for name, amount in value.items():
            if is_gpu_device_resource(name):  # the only amounts the audit adds up
                _expect(
                    _is_device_count(amount),
                    amount,
                    f"a number of devices from 0 to {MAX_DEVICES:,}",
                    source,
                    f"{where}.{name}",
                )


def _is_device_count(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return False
    try:
        amount = float(str(value))
    except (ValueError, OverflowError):
        return False
    return math.isfinite(amount) and 0 <= amount <= MAX_DEVICES


def _expect(ok: bool, value: object, wanted: str, source: str, where: str) -> None:
    if not ok:
        shown = repr(value) if isinstance(value, str | int | float) else type(value).__name__
        raise AuditError(f"{source}: {where}: expected {wanted}, got {shown[:80]}")
