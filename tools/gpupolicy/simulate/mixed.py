"""The mixed workload for the reference fleet: ITP training jobs and openb inference pods, sped up until congested.

Sources (read with traces.py, never copied): the Microsoft ITP trace (`microsoft-elasticflow-itp/raw-traces.tar.gz`,
whole-GPU training jobs of 10 source clusters) and the Alibaba openb default pod list
(`alibaba-clusterdata-gpu-v2023/openb_pod_list_default.csv`, mostly fractional inference pods).

Mapping to the fleet's teams and kinds of work (both reference clusters have the teams nlp, vision, serving
and research):
- ITP source cluster 09 (11,134 jobs, about 31 GPUs busy on average) -> team `nlp`, and source cluster 05
  (3,629 jobs, about 10 GPUs busy) -> team `vision`; tier and workload `training`. These two span the trace's
  first 52 days and together fit one training pool of the fleet at the trace's own pace, so congestion comes
  from the arrival rate, not from choosing the busiest source. The ITP trace has no checkpoints: a preempted
  job starts over.
- openb pods by QoS: LS (latency-sensitive) -> team `serving`, tier production, workload inference; BE and
  Burstable -> team `research` (tier experiment or batch as the trace's QoS says, workload notebook).

Time window and scale: a replay of `days` days with the training jobs arriving `training_scale` times as fast
as in ITP and the inference pods `inference_scale` times as fast as in openb takes the first
`days x training_scale` days of ITP and the last `days x inference_scale` days of openb (its pods cluster at
the end of its 150 days), and divides each submit time by its factor; durations are unchanged. No job is
invented or copied: a faster arrival rate is how the same jobs congest the fleet. The two kinds of work get a
factor each because the baseline keeps them apart (one FIFO line each, on their own pools), and the two traces
load a fleet very differently: ITP congests the training pools at its own pace, openb needs its arrivals
three or four times as fast. `congestion_scales` picks, per line, the smallest factor of SCALES at which
that line of the naive baseline is congested (CONGESTED_P95_MINUTES).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from ..model import Cluster
from . import replay
from .jobs import Job
from .metrics import summarize
from .policy import baseline
from .traces import TraceError, read_trace

ITP_TRACE = ("microsoft-elasticflow-itp", "raw-traces.tar.gz")
OPENB_TRACE = ("alibaba-clusterdata-gpu-v2023", "openb_pod_list_default.csv")
TRAINING_TEAMS = {"itp-cluster09": "nlp", "itp-cluster05": "vision"}  # ITP source cluster -> fleet team
SERVING_TEAM, RESEARCH_TEAM = "serving", "research"
DAY = 86_400
DEFAULT_DAYS = 7
SCALES = (1, 1.5, 2, 3, 4, 5, 6, 7)  # at most 7: 7 days x 7 stays inside the 52 days both ITP sources cover
# Congested: in every FIFO line of the baseline (training and inference), a job in twenty waits an hour or more.
CONGESTED_P95_MINUTES = 60.0


@dataclass
class MixedWorkload:
    jobs: list[Job]
    training_scale: float
    inference_scale: float
    days: int
    training: int  # jobs from ITP
    inference: int  # pods from openb

    def describe(self) -> str:
        return (f"mixed, {self.days} days: {self.training} ITP training jobs (cluster09 -> nlp, cluster05 -> "
                f"vision) at {self.training_scale:g}x their arrival rate + {self.inference} openb pods (LS -> "
                f"serving, BE/Burstable -> research) at {self.inference_scale:g}x")


def trace_paths(traces: Path) -> tuple[Path, Path]:
    return traces.joinpath(*ITP_TRACE), traces.joinpath(*OPENB_TRACE)


def read_sources(traces: Path) -> tuple[list[Job], list[Job]]:
    """The ITP and openb jobs under `traces` (a TraceError names a missing file)."""
    itp, openb = trace_paths(traces)
    return read_trace(itp, "itp").jobs, read_trace(openb, "openb").jobs


def build(itp: list[Job], openb: list[Job], training_scale: float, inference_scale: float,
          days: int = DEFAULT_DAYS) -> MixedWorkload:
    if min(training_scale, inference_scale, days) <= 0:
        raise TraceError(f"the mixed workload needs positive scales and days, got {training_scale}, "
                         f"{inference_scale} and {days} days")
    training = [_training(job, training_scale) for job in itp
                if job.team in TRAINING_TEAMS and job.submit < days * training_scale * DAY]
    start = max((job.submit for job in openb), default=0) - days * inference_scale * DAY
    inference = [_inference(job, inference_scale, start) for job in openb if job.submit >= start]
    jobs = sorted(training + inference, key=lambda job: job.submit)
    return MixedWorkload(jobs, training_scale, inference_scale, days, len(training), len(inference))


def _training(job: Job, scale: float) -> Job:
    return replace(job, submit=int(job.submit / scale), team=TRAINING_TEAMS[job.team], tier="training",
                   workload="training")


def _inference(job: Job, scale: float, start: float) -> Job:
    serving = job.workload == "inference"  # read_openb: QoS LS
    return replace(job, submit=int((job.submit - start) / scale), team=SERVING_TEAM if serving else RESEARCH_TEAM,
                   workload="inference" if serving else "notebook")


def line_p95(cluster: Cluster, jobs: list[Job], kind: str) -> float:
    """The p95 wait (minutes) of the baseline's FIFO line for `kind` (training or inference) of work; a cluster
    whose baseline has a single line answers for that line."""
    policy = baseline(cluster)
    lines = [q.name for q in policy.queues.values() if q.workload == kind] or list(policy.queues)
    waits = summarize(replay(policy, jobs)).wait_by_queue
    return max((waits[name].p95 for name in lines if name in waits), default=0.0)


def congestion_scales(cluster: Cluster, itp: list[Job], openb: list[Job],
                      days: int = DEFAULT_DAYS) -> MixedWorkload:
    """The mixed workload with, per kind of work, the smallest factor of SCALES whose baseline line is congested
    (the largest factor when none is)."""
    def smallest(kind: str) -> float:
        for scale in SCALES:
            only = build(itp, [], scale, 1, days).jobs if kind == "training" else build([], openb, 1, scale, days).jobs
            if line_p95(cluster, only, kind) >= CONGESTED_P95_MINUTES:
                return scale
        return SCALES[-1]
    return build(itp, openb, smallest("training"), smallest("inference"), days)
