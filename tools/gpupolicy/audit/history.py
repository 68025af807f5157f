"""A cluster's job history over a window, read from Prometheus, as simulator jobs with the wait each one had.

kube-state-metrics exports one series per pod and fact (kubernetes/kube-state-metrics
docs/metrics/workload/pod-metrics.md, internal/store/pod.go), each labelled `namespace`, `pod`, `uid`:
    kube_pod_created                      the pod's creationTimestamp (unix seconds)
    kube_pod_start_time                   status.startTime: the kubelet acknowledged the pod (it was bound)
    kube_pod_completion_time              the latest `finishedAt` of its terminated containers
    kube_pod_container_resource_requests  per container; `resource` is the resource name with every character
                                          outside [a-zA-Z0-9_] turned into `_` (SanitizeLabelName):
                                          nvidia_com_gpu, nvidia_com_gpu_shared, nvidia_com_mig_1g_10gb
    kube_pod_labels                       `label_<key>` only for keys on --metric-labels-allowlist
    kube_pod_owner                        owner_kind, owner_name
and one per Job (docs/metrics/workload/job-metrics.md): kube_job_created{namespace, job_name}.

Kueue keeps a batch/v1 Job suspended until it is admitted (kubernetes-sigs/kueue
pkg/controller/jobs/job/job_controller.go `Suspend`), so its pods are created only after the wait in the
queue: a pod a Job owns is submitted when the Job was created. Every value is read once, at the window's end,
as the largest sample over the window (`max_over_time(...[W])`, a one-point `query_range`), so one query
answers for every pod of the window however long it is. See
docs/decisions/0087-job-history-from-kube-state-metrics.md and 0088-history-without-a-completion.md (how a
pod without a completion time or a start is treated).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from ..domain import catalog
from ..errors import ToolError
from ..model import QUEUE_LABEL, Cluster, Pool
from ..upgrade.gates import GPU_REQUEST_RESOURCES, ksm_label
from ..upgrade.promclient import MAX_TIMESTAMP, Prometheus, Series
from . import MAX_DEVICES

DEFAULT_QUEUE_LABEL = QUEUE_LABEL
# Kueue's own pod labels (AssignQueueLabelsForPods, beta and on by default since v0.17; pkg/constants):
# set on the pods of every admitted workload, so Jobs whose pods carry no queue-name label still name theirs.
CLUSTER_QUEUE_LABEL = "kueue.x-k8s.io/cluster-queue-name"
LAST_SEEN_STEP = 60  # seconds: the resolution of "the last time kube-state-metrics exported the pod"
LOOKBACK = 300  # Prometheus' default lookback delta: a pod seen this close to the end is still there
PENDING_DURATION = 3600  # seconds of work for a pod still waiting at the end (its work is not known yet)
_POD = ("namespace", "pod", "uid")


class HistoryError(ToolError):
    """The history cannot be read (no series, the queue label not exported): exit 2 with the reason."""


@dataclass
class History:
    jobs: list  # simulator Jobs, submit in seconds from `origin`
    observed_waits: dict[str, int]  # job id -> seconds from submission to start, for the jobs that started
    origin: datetime | None
    pending_at_end: int = 0  # GPU pods still waiting when the window closed (in the trace, no observed wait)
    notes: list[str] = field(default_factory=list)


@dataclass
class _Pod:
    namespace: str
    name: str
    uid: str
    requests: dict[str, float] = field(default_factory=dict)  # sanitized resource name -> devices
    created: float | None = None
    started: float | None = None
    completed: float | None = None
    last_seen: float | None = None
    queue: str = ""
    job: str = ""  # the batch/v1 Job that owns it


def read_history(
    client: Prometheus,
    end: datetime,
    window: timedelta,
    queue_label: str = DEFAULT_QUEUE_LABEL,
    cluster: Cluster | None = None,
) -> History:
    """The GPU pods submitted within `window` before `end`, as jobs with their observed waits."""
    seconds = int(window.total_seconds())
    if seconds < LAST_SEEN_STEP:
        raise HistoryError(f"--window {window} is shorter than a minute")

    def ask(expr: str) -> list[Series]:
        return client.query_range(expr, end, end, LAST_SEEN_STEP)

    def over(selector: str, by: tuple[str, ...] = _POD) -> str:
        return f"max by ({', '.join(by)}) (max_over_time({selector}[{seconds}s]))"

    pods = _gpu_pods(ask(_requests_query(seconds)))
    if not pods:
        if not ask(f"count(max_over_time(kube_pod_created[{seconds}s]))"):
            raise HistoryError(
                f"Prometheus {client.url} has no kube_pod_created series in the {seconds}s "
                f"before {end.isoformat()}: is kube-state-metrics scraped there?"
            )
        raise HistoryError(
            f"Prometheus {client.url}: no pod requested a GPU in the {seconds}s before "
            f"{end.isoformat()} (kube_pod_container_resource_requests{{resource=~"
            f"\"{GPU_REQUEST_RESOURCES}\"}})"
        )
    for name, attribute in (
        ("kube_pod_created", "created"),
        ("kube_pod_start_time", "started"),
        ("kube_pod_completion_time", "completed"),
    ):
        _assign(pods, ask(over(name)), attribute)
    _assign(
        pods,
        ask(
            f"max by (namespace, pod, uid) (max_over_time(timestamp(kube_pod_created)"
            f"[{seconds}s:{LAST_SEEN_STEP}s]))"
        ),
        "last_seen",
    )
    series_label = ksm_label(queue_label)
    labelled = ask(over(f'kube_pod_labels{{{series_label}!=""}}', (*_POD, series_label)))
    if not labelled:
        raise HistoryError(_no_queue_label(queue_label, series_label))
    for series in labelled:
        pod = pods.get(_key(series.labels))
        if pod is not None:
            pod.queue = series.labels[series_label]
    for series in ask(over('kube_pod_owner{owner_kind="Job"}', (*_POD, "owner_name"))):
        pod = pods.get(_key(series.labels))
        if pod is not None:
            pod.job = series.labels["owner_name"]
    jobs_created = {
        (s.labels.get("namespace", ""), s.labels.get("job_name", "")): _value(s, MAX_TIMESTAMP)
        for s in ask(over("kube_job_created", ("namespace", "job_name")))
    }
    return _history(list(pods.values()), jobs_created, end, seconds, queue_label, cluster)


def _requests_query(seconds: int) -> str:
    """GPU devices per pod and resource: the largest over the window per container (a pod's series change
    their `node` label when it is scheduled, so the same container has two series), summed over its
    containers."""
    per_container = (
        f'max by (namespace, pod, uid, container, resource) (max_over_time('
        f'kube_pod_container_resource_requests{{resource=~"{GPU_REQUEST_RESOURCES}"}}[{seconds}s]))'
    )
    return f"sum by (namespace, pod, uid, resource) ({per_container})"


def _no_queue_label(queue_label: str, series_label: str) -> str:
    return (
        f"no kube_pod_labels series in the window carries {series_label} (the pod label {queue_label}): "
        "kube-state-metrics exports only the pod labels on its allowlist; start it with "
        f"--metric-labels-allowlist=pods=[{queue_label}] (the kube-prometheus-stack chart: "
        "kube-state-metrics.metricLabelsAllowlist), or pass --queue-label for the label your pods carry "
        f"(Kueue sets {CLUSTER_QUEUE_LABEL} on the pods it admits)"
    )


def _value(series: Series, largest: float) -> float | None:
    """The series' one sample, or None when it has none or it is not a number from 0 to `largest` (a Unix time
    before year 10000, a device count a node can hold): the answer comes from a server we do not control."""
    if not series.samples:
        return None
    value = series.samples[-1][1]
    return value if math.isfinite(value) and 0 <= value <= largest else None


def _key(labels: dict[str, str]) -> tuple[str, str, str]:
    return labels.get("namespace", ""), labels.get("pod", ""), labels.get("uid", "")


def _gpu_pods(series: list[Series]) -> dict[tuple[str, str, str], _Pod]:
    pods: dict[tuple[str, str, str], _Pod] = {}
    for item in series:
        count = _value(item, MAX_DEVICES)
        if not count:
            continue
        key = _key(item.labels)
        pod = pods.setdefault(key, _Pod(*key))
        pod.requests[item.labels.get("resource", "")] = count
    return pods


def _assign(pods: dict, series: list[Series], attribute: str) -> None:
    for item in series:
        pod = pods.get(_key(item.labels))
        if pod is not None:
            setattr(pod, attribute, _value(item, MAX_TIMESTAMP))


def _history(
    pods: list[_Pod],
    jobs_created: dict,
    end: datetime,
    seconds: int,
    queue_label: str,
    cluster: Cluster | None,
) -> History:
    end_time = end.timestamp()
    start_time = end_time - seconds
    rows: list[tuple[float, _Pod]] = []
    cancelled = outside = unqueued = 0
    for pod in pods:
        submitted = _submitted(pod, jobs_created)
        if submitted is None or not start_time <= submitted <= end_time:
            outside += 1
            continue
        if pod.started is None and (pod.last_seen or 0) < end_time - LOOKBACK:
            cancelled += 1  # deleted before it ever started: demand that went away, not a job that ran
            continue
        unqueued += not pod.queue
        rows.append((submitted, pod))
    if not rows:
        raise HistoryError(
            f"none of the {len(pods)} GPU pod(s) in the window was submitted within it and "
            "ran or still waits at its end"
        )
    rows.sort(key=lambda row: (row[0], row[1].namespace, row[1].name, row[1].uid))
    origin = rows[0][0]
    history = History([], {}, datetime.fromtimestamp(origin, end.tzinfo))
    names = _job_ids([pod for _, pod in rows])
    shared = _shared_replicas(cluster)
    queues = _queue_map(cluster, queue_label)
    unknown: set[str] = set()
    for (submitted, pod), job_id in zip(rows, names, strict=True):
        job = _job(pod, job_id, int(submitted - origin), shared, queues, unknown, history.notes)
        history.jobs.append(job)
        if pod.started is None:
            history.pending_at_end += 1
        else:
            history.observed_waits[job_id] = max(0, int(pod.started - submitted))
    _notes(history, cancelled, outside, unqueued, unknown, queue_label, cluster)
    return history


def _submitted(pod: _Pod, jobs_created: dict) -> float | None:
    """When the work was submitted: the owning Job's creation (Kueue held the Job suspended until admission),
    else the pod's own."""
    owner = jobs_created.get((pod.namespace, pod.job)) if pod.job else None
    return min((t for t in (pod.created, owner) if t is not None), default=None)


def _job_ids(pods: list[_Pod]) -> list[str]:
    """namespace/pod, with the uid's start where two pods of the window share a name (a recreated pod)."""
    seen: dict[tuple[str, str], int] = {}
    for pod in pods:
        seen[(pod.namespace, pod.name)] = seen.get((pod.namespace, pod.name), 0) + 1
    return [
        f"{pod.namespace}/{pod.name}" + (f"@{pod.uid[:8]}" if seen[(pod.namespace, pod.name)] > 1 else "")
        for pod in pods
    ]


def _job(
    pod: _Pod, job_id: str, submit: int, shared: int | None, queues: dict, unknown: set[str], notes: list[str]
):
    from ..simulate.jobs import Job

    if pod.started is None:
        duration = PENDING_DURATION
    else:  # no completion time: the last time kube-state-metrics exported the pod (0088)
        finished = pod.completed if pod.completed is not None else pod.last_seen
        duration = int((finished or pod.started) - pod.started)
    gpus, share, mig = _size(pod.requests, shared, notes, job_id)
    return Job(
        id=job_id,
        submit=submit,
        duration=max(duration, 1),
        gpus=gpus,
        share=share,
        mig=mig,
        team=pod.namespace,
        queue=_cluster_queue(pod, queues, unknown),
    )


def _cluster_queue(pod: _Pod, queues: dict[tuple[str, str], str], unknown: set[str]) -> str:
    """The ClusterQueue the pod's queue label leads to in the cluster (its LocalQueue first); the label's
    value as it is when the cluster is not known or has no such queue (`simulate` then sends the job by
    team)."""
    if not queues or not pod.queue:
        return pod.queue
    found = queues.get((pod.namespace, pod.queue)) or queues.get(("", pod.queue))
    if found is None:
        unknown.add(pod.queue)
        return pod.queue
    return found


_MIG_RESOURCE = re.compile(r"^nvidia_com_mig_(?P<compute>\d+g)_(?P<memory>\d+gb)(?P<rest>(_me)?)$")


def _size(
    requests: dict[str, float], shared: int | None, notes: list[str], job_id: str
) -> tuple[int, float, str]:
    """(whole GPUs, share of one card, MIG profile) of a pod's sanitized GPU requests."""
    whole = int(requests.get("nvidia_com_gpu", 0))
    if whole:
        return whole, 0.0, ""
    replicas = int(requests.get("nvidia_com_gpu_shared", 0))
    if replicas:
        if shared and replicas < shared:
            return 1, replicas / shared, ""
        why = "a card's worth or more" if shared else "the cluster's pools give no one replica count"
        notes.append(f"{job_id}: {replicas} nvidia.com/gpu.shared replica(s) replayed as whole GPUs ({why})")
        return replicas, 0.0, ""
    for resource, count in sorted(requests.items()):
        match = _MIG_RESOURCE.match(resource)
        if match:
            profile = f"{match['compute']}.{match['memory']}" + ("+me" if match["rest"] else "")
            try:
                catalog.largest_card_fraction(profile)
            except ValueError:
                break
            if count > 1:
                notes.append(f"{job_id} asks for {int(count)} {profile} instances: replayed as one")
            return 1, 0.0, profile
    notes.append(f"{job_id}: GPU request {', '.join(sorted(requests))} replayed as one whole GPU")
    return 1, 0.0, ""


def _shared_replicas(cluster: Cluster | None) -> int | None:
    """The replicas of the cluster's pools that expose nvidia.com/gpu.shared, when they agree (None otherwise:
    a shared replica is then replayed as a whole card)."""
    if cluster is None:
        return None
    values = {pool.time_slicing_replicas for pool in cluster.pools if _renames_shared(pool)}
    return values.pop() if len(values) == 1 and None not in values else None


def _renames_shared(pool: Pool) -> bool:
    return pool.rename_shared and bool(pool.time_slicing_replicas)


def _queue_map(cluster: Cluster | None, queue_label: str) -> dict[tuple[str, str], str]:
    """(namespace, LocalQueue) -> ClusterQueue of the cluster; ("", name) for its ClusterQueues."""
    if cluster is None:
        return {}
    found = {("", name): name for name in cluster.cluster_queues}
    if queue_label != CLUSTER_QUEUE_LABEL:
        found.update({(lq.namespace, lq.name): lq.cluster_queue for lq in cluster.local_queues})
    return found


def _notes(
    history: History,
    cancelled: int,
    outside: int,
    unqueued: int,
    unknown: set[str],
    queue_label: str,
    cluster: Cluster | None,
) -> None:
    if cancelled:
        history.notes.append(f"{cancelled} GPU pod(s) were deleted before they started: left out")
    if outside:
        history.notes.append(f"{outside} GPU pod(s) seen in the window were submitted before it: left out")
    if unqueued:
        history.notes.append(
            f"{unqueued} GPU pod(s) carry no {queue_label} label: their queue is left to `simulate` (by team)"
        )
    if unknown and cluster is not None:
        history.notes.append(
            f"queue(s) {', '.join(sorted(unknown))} are no LocalQueue or ClusterQueue of "
            f"cluster {cluster.name}: `simulate` sends their jobs by team"
        )
