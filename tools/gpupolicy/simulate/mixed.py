"""The mixed workload for the reference fleet: ITP training jobs and openb inference pods, sped up until
congested.

Sources (read with traces.py, never copied): the Microsoft ITP trace
(`microsoft-elasticflow-itp/raw-traces.tar.gz`, whole-GPU training jobs of 10 source clusters) and the Alibaba
openb default pod list (`alibaba-clusterdata-gpu-v2023/openb_pod_list_default.csv`, mostly fractional
inference pods).

Mapping to the fleet's teams and kinds of work, read from the cluster's ClusterQueues (`teams_of`: their
`gpupolicy.io/team` and `gpupolicy.io/workload` labels), so a fork with other teams gets its own:
- ITP source cluster 09 (11,134 jobs, about 31 GPUs busy on average) and source cluster 05 (3,629 jobs, about
  10 GPUs busy) -> the teams whose queues are labelled `workload: training`, in name order (09 to the first,
  05 to the second; one training team takes both; with more than two, the jobs of both sources are dealt
  round-robin in arrival order); tier and workload `training`. These two span the trace's first 52 days and
  together fit one training pool of the fleet at the trace's own pace, so congestion comes from the arrival
  rate, not from choosing the busiest source. The ITP trace records no checkpoints: a preempted job
  checkpoints at its workload's default interval (`checkpoints.py`, `simulate --checkpoint`).
- openb pods by QoS: LS (latency-sensitive) -> the team of the `workload: inference` queue (tier production
  preferred), workload inference; BE and Burstable -> the team of the `workload: notebook` queue (else
  `batch`; tier experiment or batch as the trace's QoS says), workload notebook.
On the reference fleet that is cluster09 -> nlp, cluster05 -> vision, LS -> serving, BE/Burstable -> research.

Time window and scale: a replay of `days` days with the training jobs arriving `training_scale` times as fast
as in ITP and the inference pods `inference_scale` times as fast as in openb takes `days x training_scale`
days of ITP and `days x inference_scale` days of openb, and divides each submit time (from the window's start)
by its factor; durations are unchanged. No job is invented or copied: a faster arrival rate is how the same
jobs congest the fleet. Seed 0 takes the first days of ITP and the last days of openb (its pods cluster at the
end of its 150 days); another `seed` draws where each window starts inside its trace (`random.Random(seed)`),
so three seeds replay three stretches of the same public traces at the same arrival rates.

The two kinds of work get a factor each because the fleet's pools are split between them
(`policy.pool_classes`, as the baseline's two FIFO lines are), and the two traces load a fleet very
differently. `sustained_scales` picks, per kind of work, the smallest factor (in steps of SCALE_STEP) at which
the work arriving in the window asks for at least TARGET_LOAD of that pool class's cards over the window
(`offered_load`: sustained congestion, not a burst), the largest factor the trace's span allows when none
does.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..model import WORKLOAD_LABEL, Cluster
from .jobs import Job
from .policy import from_cluster, job_class, pool_classes
from .traces import TraceError, read_trace

ITP_TRACE = ("microsoft-elasticflow-itp", "raw-traces.tar.gz")
OPENB_TRACE = ("alibaba-clusterdata-gpu-v2023", "openb_pod_list_default.csv")
ITP_SOURCES = ("itp-cluster09", "itp-cluster05")  # the ITP source clusters replayed, busiest first
DAY = 86_400
DEFAULT_DAYS = 7
TARGET_LOAD = 0.9  # offered load per pool class over the replayed window (issue 31, item 5)
SCALE_STEP = 0.25
RECORDED_QUANTILE = 0.05  # a seeded window is drawn after the first 5% of a trace's arrivals (`_recorded`)


@dataclass(frozen=True)
class Teams:
    """The fleet's teams the mixed workload's jobs go to (`teams_of`)."""

    training: tuple[str, ...]
    serving: str
    research: str

    def training_team(self, source: str, ordinal: int) -> str:
        """The team of the `ordinal`-th replayed ITP job (arrival order) from ITP `source`."""
        if len(self.training) > len(ITP_SOURCES):
            return self.training[ordinal % len(self.training)]
        return self.training[min(ITP_SOURCES.index(source), len(self.training) - 1)]


def teams_of(cluster: Cluster) -> Teams:
    """The training, serving and research teams of the cluster's ClusterQueues, by their workload labels (a
    TraceError names the label no queue has)."""
    queues = sorted(cluster.cluster_queues.values(), key=lambda q: q.name)

    def team(*workloads: str) -> str:
        for workload in workloads:
            found = [q for q in queues if q.workload == workload and (q.team or q.name)]
            found.sort(key=lambda q: (q.tier != "production", q.name))
            if found:
                return found[0].team or found[0].name
        raise TraceError(
            f"cluster {cluster.name}: no ClusterQueue labelled {WORKLOAD_LABEL}: "
            f"{' or '.join(workloads)}; the mixed workload maps its jobs to teams by that label"
        )

    training = tuple(sorted({q.team or q.name for q in queues if q.workload == "training"}))
    if not training:
        team("training")  # raises: no training queue
    return Teams(training, team("inference"), team("notebook", "batch"))


@dataclass
class MixedWorkload:
    jobs: list[Job]
    training_scale: float
    inference_scale: float
    days: int
    training: int  # jobs from ITP
    inference: int  # pods from openb
    teams: Teams
    offered: dict[str, float] = field(default_factory=dict)  # kind of work -> offered load (offered_load)
    seed: int = 0

    def describe(self) -> str:
        sources = ", ".join(f"{s.removeprefix('itp-')} -> {t}" for s, t in self._sources())
        load = ", ".join(f"{kind} {value:.2f}" for kind, value in sorted(self.offered.items()))
        return (
            f"mixed, {self.days} days, --scale {self.training_scale:g}:{self.inference_scale:g} --seed "
            f"{self.seed}: "
            f"{self.training} ITP training jobs ({sources}) at {self.training_scale:g}x their arrival "
            f"rate + {self.inference} openb pods (LS -> {self.teams.serving}, BE/Burstable -> "
            f"{self.teams.research}) at {self.inference_scale:g}x"
            + (f"; offered load of capacity per pool class: {load}" if load else "")
        )

    def _sources(self) -> list[tuple[str, str]]:
        if len(self.teams.training) > len(ITP_SOURCES):
            return [("+".join(ITP_SOURCES), "round-robin over " + "/".join(self.teams.training))]
        return [(source, self.teams.training_team(source, 0)) for source in ITP_SOURCES]


def trace_paths(traces: Path) -> tuple[Path, Path]:
    return traces.joinpath(*ITP_TRACE), traces.joinpath(*OPENB_TRACE)


def read_sources(traces: Path) -> tuple[list[Job], list[Job]]:
    """The ITP and openb jobs under `traces` (a TraceError names a missing file)."""
    itp, openb = trace_paths(traces)
    return read_trace(itp, "itp").jobs, read_trace(openb, "openb").jobs


def build(
    itp: list[Job],
    openb: list[Job],
    training_scale: float,
    inference_scale: float,
    days: int = DEFAULT_DAYS,
    *,
    teams: Teams,
    cluster: Cluster | None = None,
    seed: int = 0,
) -> MixedWorkload:
    """The replay; with `cluster`, its offered load per pool class is measured (`offered_load`)."""
    if min(training_scale, inference_scale, days) <= 0:
        raise TraceError(
            f"the mixed workload needs positive scales and days, got {training_scale}, "
            f"{inference_scale} and {days} days"
        )
    sources = [job for job in itp if job.team in ITP_SOURCES]
    training_start, openb_end = windows(
        sources, openb, days * training_scale * DAY, days * inference_scale * DAY, seed
    )
    chosen = sorted(
        (
            job
            for job in sources
            if training_start <= job.submit < training_start + days * training_scale * DAY
        ),
        key=lambda job: (job.submit, job.id),
    )
    training = [
        _training(job, training_scale, training_start, teams.training_team(job.team, i))
        for i, job in enumerate(chosen)
    ]
    start = openb_end - days * inference_scale * DAY
    inference = [
        _inference(job, inference_scale, start, teams) for job in openb if start <= job.submit <= openb_end
    ]
    jobs = sorted(training + inference, key=lambda job: job.submit)
    offered = offered_load(cluster, jobs, days) if cluster is not None else {}
    return MixedWorkload(
        jobs, training_scale, inference_scale, days, len(training), len(inference), teams, offered, seed
    )


def windows(
    itp: list[Job], openb: list[Job], itp_span: float, openb_span: float, seed: int
) -> tuple[float, float]:
    """(where the ITP window starts, where the openb window ends) in trace seconds: seed 0 the first ITP days
    and the last openb days; another seed a draw inside each trace's span (a window longer than its trace
    starts at
    the trace's start)."""
    first, last = _recorded(itp)
    openb_first, openb_last = _recorded(openb)
    if seed == 0:
        return 0.0, float(openb_last)
    draw = random.Random(seed)
    itp_start = first + draw.random() * max(0.0, last - first - itp_span)
    openb_end = openb_last - draw.random() * max(0.0, openb_last - openb_first - openb_span)
    return itp_start, openb_end


def _recorded(jobs: list[Job]) -> tuple[int, int]:
    """(first, last) submit time of the stretch a seed may draw a window in: from the RECORDED_QUANTILE-th
    submit time to the last, so a window does not fall where the trace barely records anything (openb's first
    115 days hold under 3% of its pods)."""
    times = sorted(j.submit for j in jobs)
    if not times:
        return 0, 0
    return times[int(len(times) * RECORDED_QUANTILE)], times[-1]


def _training(job: Job, scale: float, start: float, team: str) -> Job:
    return replace(
        job, submit=int((job.submit - start) / scale), team=team, tier="training", workload="training"
    )


def _inference(job: Job, scale: float, start: float, teams: Teams) -> Job:
    serving = job.workload == "inference"  # read_openb: QoS LS
    return replace(
        job,
        submit=int((job.submit - start) / scale),
        team=teams.serving if serving else teams.research,
        workload="inference" if serving else "notebook",
    )


def offered_load(cluster: Cluster, jobs: list[Job], days: int) -> dict[str, float]:
    """Kind of work (training, inference: `policy.job_class`) -> the card-hours its jobs arriving in the
    replayed window ask for (whole cards, or the part of a card a fractional pod asks for, x duration) over
    the cards of the pools for that kind of work (`policy.pool_classes`, as the baseline splits them) x the
    window. Work
    that runs past the window counts in full: it was offered in it."""
    return _load(class_cards(cluster), jobs, days)


def class_cards(cluster: Cluster) -> dict[str, int]:
    """Kind of work -> the cards of the pools for it (`policy.pool_classes`)."""
    proposed = from_cluster(cluster)
    purpose = pool_classes(proposed)
    capacity: dict[str, int] = {}
    for pool in proposed.pools.values():
        kind = purpose.get(pool.name, "training")
        capacity[kind] = capacity.get(kind, 0) + pool.nodes * pool.gpus_per_node
    return capacity


def _load(capacity: dict[str, int], jobs: list[Job], days: int) -> dict[str, float]:
    asked: dict[str, float] = {}
    for job in jobs:
        if job.submit >= days * DAY:
            continue
        cards = job.pods * (job.fraction if job.fractional else job.gpus)
        kind = job_class(job)
        asked[kind] = asked.get(kind, 0.0) + cards * job.duration
    return {kind: asked.get(kind, 0.0) / (cards * days * DAY) for kind, cards in capacity.items() if cards}


def sustained_scales(
    cluster: Cluster, itp: list[Job], openb: list[Job], days: int = DEFAULT_DAYS, seed: int = 0
) -> MixedWorkload:
    """The mixed workload with, per kind of work, the smallest factor (a multiple of SCALE_STEP from 1) at
    which
    its offered load reaches TARGET_LOAD; the largest factor whose window fits the trace when none does."""
    teams = teams_of(cluster)
    capacity = class_cards(cluster)
    spans = {"training": _span([j for j in itp if j.team in ITP_SOURCES]), "inference": _span(openb)}

    def smallest(kind: str) -> float:
        largest = max(1.0, math.floor(spans[kind] / (days * DAY) / SCALE_STEP) * SCALE_STEP)
        scale = 1.0
        while True:
            only = (
                build(itp, [], scale, 1, days, teams=teams, seed=seed)
                if kind == "training"
                else build([], openb, 1, scale, days, teams=teams, seed=seed)
            ).jobs
            if _load(capacity, only, days).get(kind, 0.0) >= TARGET_LOAD or scale >= largest:
                return scale
            scale = min(largest, scale + SCALE_STEP)

    return build(
        itp, openb, smallest("training"), smallest("inference"), days, teams=teams, cluster=cluster, seed=seed
    )


def _span(jobs: list[Job]) -> float:
    return max((j.submit for j in jobs), default=0) - min((j.submit for j in jobs), default=0)
