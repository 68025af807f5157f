"""Workload audit: what a cluster snapshot says about GPU use, against the pools the repository declares.

A snapshot is a directory of what these commands print:
    nodes.json            kubectl get nodes -o json
    pods.json             kubectl get pods -A -o json
    workloads.json        kubectl get workloads.kueue.x-k8s.io -A -o json   (optional)
    clusterqueues.json    kubectl get clusterqueues -o json                 (optional)
    dcgm.prom             a scrape of the DCGM exporter's /metrics          (optional)
Bad input raises AuditError with the file (and line for dcgm.prom); the command turns it into exit 2.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from .model import (
    GPU_COUNT_LABEL,
    GPU_RESOURCE,
    MIG_RESOURCE_PREFIX,
    POOL_LABEL,
    PRODUCT_LABEL,
    QUEUE_LABEL,
    TIER_LABEL,
    Pool,
)
from .simulate.jobs import MIG_SLICES, mig_slices

IDLE_UTIL_PERCENT = 5.0  # DCGM_FI_DEV_GPU_UTIL at or below this counts as idle
_PROM_LINE = re.compile(r'^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)(?:\s+\d+)?$')
_PROM_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


class AuditError(ValueError):
    pass


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
class AuditReport:
    nodes_per_pool: dict[str, int] = field(default_factory=dict)
    gpus_by_namespace: dict[str, float] = field(default_factory=dict)
    gpus_by_queue: dict[str, float] = field(default_factory=dict)
    idle_gpus: list[tuple[str, str, str, float]] = field(default_factory=list)  # namespace, pod, gpu, util
    unqueued_pods: list[str] = field(default_factory=list)
    pending: list[tuple[str, str, float]] = field(default_factory=list)  # ns/name, queue, age hours
    issues: list[Issue] = field(default_factory=list)


def _items(path: Path, required: bool) -> list[dict] | None:
    if not path.is_file():
        if required:
            raise AuditError(f"{path}: missing (expected `kubectl get ... -o json` output)")
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise AuditError(f"{path}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise AuditError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
    items = data.get("items") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise AuditError(f"{path}:1: expected a Kubernetes List with `items`")
    return [item for item in items if isinstance(item, dict)]


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
        samples.append((match["name"], {key: _unescape(value) for key, value in _PROM_LABEL.findall(match["labels"] or "")}, value))
    return samples


def _unescape(value: str) -> str:
    r"""A label value of the text format: `\\`, `\"` and `\n` stand for a backslash, a quote and a newline."""
    return re.sub(r'\\(.)', lambda m: "\n" if m[1] == "n" else m[1], value)


def load_snapshot(directory: Path) -> Snapshot:
    if not directory.is_dir():
        raise AuditError(f"{directory}: not a directory")
    dcgm = directory / "dcgm.prom"
    return Snapshot(nodes=_items(directory / "nodes.json", True) or [],
                    pods=_items(directory / "pods.json", True) or [],
                    workloads=_items(directory / "workloads.json", False),
                    cluster_queues=_items(directory / "clusterqueues.json", False),
                    dcgm=parse_prometheus(dcgm) if dcgm.is_file() else None)


def _meta(obj: dict) -> dict:
    return obj.get("metadata") or {}


def _number(text) -> float:
    try:
        return float(str(text))
    except ValueError:
        return 0.0


def pod_gpus(pod: dict) -> float:
    """GPUs a pod asks for: whole cards, plus MIG instances as their share of a card's 7 compute slices."""
    total = 0.0
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        wanted = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        for name, amount in wanted.items():
            if name in (GPU_RESOURCE, f"{GPU_RESOURCE}.shared"):
                total += _number(amount)
            elif name.startswith(MIG_RESOURCE_PREFIX):
                total += _number(amount) * _slices(name) / MIG_SLICES
    return total


def _slices(resource: str) -> int:
    """Compute slices of a MIG resource; a name that is not a profile counts as a whole card."""
    try:
        return mig_slices(resource)
    except ValueError:
        return MIG_SLICES


def parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def audit(snapshot: Snapshot, pools: dict[str, Pool], now: datetime | None = None) -> AuditReport:
    now = now or datetime.now(UTC)
    report = AuditReport()
    _audit_nodes(snapshot.nodes, pools, report)
    _audit_pods(snapshot.pods, report)
    if snapshot.dcgm is not None:
        _audit_idle(snapshot.dcgm, report)
    if snapshot.workloads is not None:
        _audit_pending(snapshot.workloads, now, report)
    return report


def _audit_nodes(nodes: list[dict], pools: dict[str, Pool], report: AuditReport) -> None:
    from . import catalog

    by_pool: dict[str, list[dict]] = defaultdict(list)
    for node in nodes:
        by_pool[(_meta(node).get("labels") or {}).get(POOL_LABEL, "")].append(node)
    report.nodes_per_pool = {name or "(no pool label)": len(members) for name, members in sorted(by_pool.items())}
    for name, pool in sorted(pools.items()):
        members = by_pool.get(name, [])
        if len(members) != pool.nodes:
            report.issues.append(Issue("pool-drift", f"pool {name}: {len(members)} node(s) in the cluster, "
                                                     f"{pool.nodes} declared in {pool.path}"))
        try:
            products = tuple(catalog.gpu(pool.gpu_model).product_labels)
        except Exception:
            products = ()
        for node in members:
            _node_drift(node, pool, products, report)
    for name in sorted(set(by_pool) - set(pools)):
        if name:
            report.issues.append(Issue("pool-drift", f"{len(by_pool[name])} node(s) labelled with pool {name!r}, "
                                                     "which no pool.yaml declares"))


def _node_drift(node: dict, pool: Pool, products: tuple[str, ...], report: AuditReport) -> None:
    name = _meta(node).get("name", "?")
    labels = _meta(node).get("labels") or {}
    product = labels.get(PRODUCT_LABEL, "")
    if products and not any(product.startswith(p) for p in products):
        report.issues.append(Issue("pool-drift", f"node {name} (pool {pool.name}): GPU product {product or 'unset'!r}"
                                                 f", pool.yaml declares {pool.gpu_model}"))
    count = labels.get(GPU_COUNT_LABEL)
    if count is not None and count.isdigit() and int(count) != pool.gpus_per_node:
        report.issues.append(Issue("pool-drift", f"node {name} (pool {pool.name}): {count} GPUs, "
                                                 f"pool.yaml declares {pool.gpus_per_node} per node"))
    for key, value in pool.node_labels.items():
        if key != PRODUCT_LABEL and labels.get(key) != value:  # the product is checked above
            report.issues.append(Issue("pool-drift", f"node {name} (pool {pool.name}): label {key}="
                                                     f"{labels.get(key)!r}, pool.yaml declares {value!r}"))
    taints = {(t.get("key"), t.get("value", "") or "", t.get("effect")) for t in
              (node.get("spec") or {}).get("taints") or []}
    for taint in pool.taints:
        if (taint.key, taint.value or "", taint.effect) not in taints:
            report.issues.append(Issue("pool-drift", f"node {name} (pool {pool.name}): taint "
                                                     f"{taint.key}={taint.value}:{taint.effect} is missing"))


def _audit_pods(pods: list[dict], report: AuditReport) -> None:
    by_ns: Counter = Counter()
    by_queue: Counter = Counter()
    for pod in pods:
        phase = (pod.get("status") or {}).get("phase", "")
        gpus = pod_gpus(pod)
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
            report.issues.append(Issue("no-queue", f"pod {namespace}/{meta.get('name', '?')} requests {gpus:g} "
                                                   f"GPU(s) without a {QUEUE_LABEL} label"))
    report.gpus_by_namespace = dict(sorted(by_ns.items()))
    report.gpus_by_queue = dict(sorted(by_queue.items()))


def _audit_idle(samples, report: AuditReport) -> None:
    for name, labels, value in samples:
        if name != "DCGM_FI_DEV_GPU_UTIL" or not labels.get("pod"):
            continue
        if value <= IDLE_UTIL_PERCENT:
            namespace, pod = labels.get("namespace", ""), labels["pod"]
            gpu = labels.get("gpu", labels.get("UUID", "?"))
            report.idle_gpus.append((namespace, pod, gpu, value))
            report.issues.append(Issue("idle", f"GPU {gpu} on {labels.get('Hostname', '?')} is allocated to "
                                               f"{namespace}/{pod} but {value:g}% busy"))


def _audit_pending(workloads: list[dict], now: datetime, report: AuditReport) -> None:
    for workload in workloads:
        conditions = (workload.get("status") or {}).get("conditions") or []
        admitted = any(c.get("type") == "Admitted" and c.get("status") == "True" for c in conditions)
        finished = any(c.get("type") == "Finished" and c.get("status") == "True" for c in conditions)
        if admitted or finished:
            continue
        meta = _meta(workload)
        created = parse_time(meta.get("creationTimestamp"))
        age = (now - created).total_seconds() / 3600 if created else 0.0
        queue = (workload.get("spec") or {}).get("queueName", "")
        report.pending.append((f"{meta.get('namespace', '')}/{meta.get('name', '?')}", queue, age))
        report.issues.append(Issue("pending", f"workload {meta.get('namespace', '')}/{meta.get('name', '?')} in "
                                              f"queue {queue or '?'} pending for {age:.1f} h"))
    report.pending.sort(key=lambda item: -item[2])


def export_jobs(snapshot: Snapshot, now: datetime, default_duration: int = 3600):
    """The snapshot's GPU pods as simulator jobs: submit = creation time, duration = time run so far.

    Running pods have run at least as long as they have been up, so their duration is a lower bound;
    pending pods get `default_duration`. Team is the namespace; queue and tier come from pod labels.
    """
    from .simulate.jobs import Job

    rows = []
    for pod in snapshot.pods:
        gpus = pod_gpus(pod)
        phase = (pod.get("status") or {}).get("phase", "")
        if not gpus or phase in ("Succeeded", "Failed"):
            continue
        meta = _meta(pod)
        created = parse_time(meta.get("creationTimestamp")) or now
        started = parse_time((pod.get("status") or {}).get("startTime"))
        duration = int((now - started).total_seconds()) if started and phase == "Running" else default_duration
        labels = meta.get("labels") or {}
        whole = gpus >= 1 and float(gpus).is_integer()
        rows.append((created, Job(id=f"{meta.get('namespace', '')}/{meta.get('name', '')}", submit=0,
                                  duration=max(duration, 1), gpus=int(gpus) if whole else 1,
                                  share=0.0 if whole else min(gpus, 0.999), team=meta.get("namespace", ""),
                                  queue=labels.get(QUEUE_LABEL, ""), tier=labels.get(TIER_LABEL, ""))))
    if not rows:
        return []
    origin = min(created for created, _ in rows)
    jobs = []
    for created, job in sorted(rows, key=lambda r: (r[0], r[1].id)):
        job.submit = int((created - origin).total_seconds())
        jobs.append(job)
    return jobs
