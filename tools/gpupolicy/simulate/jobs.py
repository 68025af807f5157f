"""The simulator's own small types: a job as a trace describes it, and how big it is in a given pool.

Everything GPU-sized is integer milli-GPUs (1000 = one whole card) so the engine never does float sums.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MILLI = 1000
MIG_SLICES = 7  # compute slices of an A100/H100-class card; a profile "3g.40gb" uses 3 of them
MIG_SIZES = (1, 2, 3, 4, 7)  # compute-slice counts NVIDIA's MIG profiles come in (MIG user guide)


@dataclass(slots=True)
class Job:
    """One job of a trace. `gpus` is per pod; `share` (0..1) or `mig` asks for part of one card instead."""

    id: str
    submit: int  # seconds from the trace origin
    duration: int  # seconds of work
    gpus: int = 1
    share: float = 0.0
    mig: str = ""
    pods: int = 1
    team: str = ""
    queue: str = ""
    tier: str = ""
    workload: str = ""
    checkpoint: int = 0  # seconds between checkpoints; 0 = a preempted job starts over

    @property
    def fractional(self) -> bool:
        return bool(self.mig) or 0 < self.share < 1

    @property
    def fraction(self) -> float:
        """The part of one card a fractional job asks for."""
        if self.mig:
            return mig_slices(self.mig) / MIG_SLICES
        return self.share

    def whole_gpus(self) -> int:
        """GPUs the job holds when every request is rounded up to whole cards (the baseline)."""
        return self.pods * (1 if self.fractional else self.gpus)


def mig_slices(profile: str) -> int:
    """Compute slices of a MIG profile name such as `1g.10gb` or `mig-3g.40gb`."""
    head = profile.removeprefix("nvidia.com/").removeprefix("mig-").split(".", 1)[0]
    if not head.endswith("g") or not head[:-1].isdigit():
        raise ValueError(f"not a MIG profile: {profile!r} (expected e.g. 1g.10gb)")
    return int(head[:-1])


@dataclass(frozen=True, slots=True)
class Shape:
    """A job's size in one pool: `pods` pods, each holding `count` cards with `milli` of each."""

    pods: int
    count: int
    milli: int

    @property
    def total(self) -> int:
        return self.pods * self.count * self.milli

    @property
    def per_pod(self) -> int:
        return self.count * self.milli


def shape_in_pool(job: Job, sharing: str, replicas: int, gpus_per_node: int, whole_only: bool) -> Shape | None:
    """How a job occupies a pool with the given sharing mode, or None when it cannot run there at all.

    exclusive pools (and the whole-GPU baseline) round a fraction up to a card; time-sliced pools round it up
    to a multiple of 1/replicas; MIG pools round it up to the next profile size (placement rules are ignored,
    so this is the optimistic bound). Whole-card jobs run only on exclusive pools (or anywhere in the baseline).
    """
    if job.fractional and job.gpus <= 1:
        if whole_only or sharing == "exclusive":
            return Shape(job.pods, 1, MILLI)
        if sharing == "mig":
            wanted = math.ceil(job.fraction * MIG_SLICES - 1e-9)
            slices = next((s for s in MIG_SIZES if s >= wanted), MIG_SLICES)
            return Shape(job.pods, 1, math.ceil(slices * MILLI / MIG_SLICES))
        replicas = max(replicas, 1)
        slots = max(1, math.ceil(job.fraction * replicas - 1e-9))
        return Shape(job.pods, 1, min(MILLI, math.ceil(slots * MILLI / replicas)))
    count, pods = max(job.gpus, 0), job.pods
    if count == 0 or (sharing != "exclusive" and not whole_only):
        return None  # a shared or MIG-partitioned card cannot be handed out whole
    if count > gpus_per_node:
        if count % gpus_per_node:
            return None
        pods, count = pods * (count // gpus_per_node), gpus_per_node
    return Shape(pods, count, MILLI)
