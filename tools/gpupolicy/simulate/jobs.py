"""The simulator's own small types: a job as a trace describes it, and how big it is in a given pool.

Everything GPU-sized is integer milli-GPUs (1000 = one whole card) so the engine never does float sums.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from ..domain import catalog

MILLI = 1000
# The card a MIG pool is simulated as when it names no GPU model the catalog knows (hand-built policies): an
# assumption of the simulator, not a hardware fact; the card's slices and profile sizes come from the catalog.
ASSUMED_MIG_GPU = "A100-80GB"


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
    # what the FGD experiment's node-class pools also place on (nodeclasses.py); other pools ignore them
    cpu: int = 0  # milli-CPU per pod
    memory_mib: int = 0  # per pod
    gpu_models: frozenset[str] = frozenset()  # GPU models the pod may run on; empty = any

    @property
    def fractional(self) -> bool:
        return bool(self.mig) or 0 < self.share < 1

    @property
    def fraction(self) -> float:
        """The part of one card a fractional job asks for."""
        if self.mig:  # the trace does not say which GPU: the profile's share on the GPUs that offer it
            return float(catalog.largest_card_fraction(self.mig))
        return self.share

    def whole_gpus(self) -> int:
        """GPUs the job holds when every request is rounded up to whole cards (the baseline)."""
        return self.pods * (1 if self.fractional else self.gpus)


def mig_card(model: str) -> catalog.GPUModel:
    """The MIG-capable catalog card of a pool's `model`, or ASSUMED_MIG_GPU when the model is unknown or has
    no MIG."""
    card = catalog.GPUS.get(model)
    return card if card is not None and card.mig_capable else catalog.gpu(ASSUMED_MIG_GPU)


def profile_share(profile: str, model: str = "") -> Fraction | None:
    """A MIG profile's (or `nvidia.com/mig-*` resource's) share of one card of the pool's `model`: exact when
    the
    model offers the profile, else the catalog's estimate for an unknown GPU; None when it is no MIG
    profile."""
    try:
        return catalog.share_of_card(profile, model)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class Shape:
    """A job's size in one pool: `pods` pods, each holding `count` cards with `milli` of each. `memory` is the
    part of a card's memory (milli) each pod needs where that is tracked apart from `milli`: a time-sliced
    replica isolates no memory, so a pod may need more than its replica's share (0 = not tracked)."""

    pods: int
    count: int
    milli: int
    memory: int = 0
    demand: tuple = ()  # (milli-CPU, memory MiB, GPU models) per pod, for node-class pools ("milli" sharing)
    profile: str = ""  # the MIG instance each pod takes, on a pool replayed per layout (migpool.py)

    @property
    def total(self) -> int:
        return self.pods * self.count * self.milli

    @property
    def per_pod(self) -> int:
        return self.count * self.milli


def request_key(job: Job) -> tuple:
    """Everything `shape_in_pool` reads of a job: jobs with equal keys take the same shape in every pool."""
    return (job.gpus, job.share, job.mig, job.pods, job.cpu, job.memory_mib, job.gpu_models)


def instance_milli(profile: str, card: catalog.GPUModel) -> int:
    """A MIG instance's part of its card in milli-GPUs (`catalog.card_fraction`), rounded down as
    `policy.quota_milli` rounds a quota, so a queue's quota of N instances always admits N of them."""
    share = catalog.card_fraction(profile, card)
    return share.numerator * MILLI // share.denominator


def smallest_instance(job: Job, card: catalog.GPUModel, offered: tuple[str, ...]) -> str | None:
    """The MIG profile of the layout (`offered`) a fractional job asks for: the profile it names when the
    layout has it, else the smallest one with at least the compute slices (and the memory of a named profile)
    it needs, as a user asks for the smallest `nvidia.com/mig-*` resource the pool exposes that holds the
    work; None when
    no profile of the layout is large enough."""
    named = catalog.profile_name(job.mig) if job.mig else ""
    if named in offered:
        return named
    asked = card.profile(named) if named else None
    fraction = (profile_share(named, card.key) if named else None) or job.fraction
    wanted = math.ceil(fraction * card.compute_slices - 1e-9)
    memory = asked.memory_gib if asked else 0
    fitting = [
        name
        for name in offered
        if card.mig_profiles[name].compute_slices >= wanted and card.mig_profiles[name].memory_gib >= memory
    ]
    return min(
        fitting,
        key=lambda n: (card.mig_profiles[n].compute_slices, card.mig_profiles[n].memory_slices, n),
        default=None,
    )


def shape_in_pool(
    job: Job,
    sharing: str,
    replicas: int,
    gpus_per_node: int,
    whole_only: bool,
    model: str = "",
    replica_per_pod: bool = False,
    profiles: tuple[str, ...] = (),
) -> Shape | None:
    """How a job occupies a pool with the given sharing mode, or None when it cannot run there at all.

    exclusive pools (and the whole-GPU baseline) round a fraction up to a card; time-sliced pools round it up
    to a multiple of 1/replicas; a MIG pool replayed per layout (`profiles`: the profiles its layout makes)
    gives each pod one instance of the smallest profile that holds it (`smallest_instance`; None when none
    does); a MIG pool without a known layout rounds it up to the next profile size of the pool's GPU `model`
    (the optimistic bound). A one-card pod on a time-sliced pool takes one replica, as Kueue admits it to a
    flavor whose quota covers `nvidia.com/gpu` (the engine bars a flavor whose quota does not); other
    whole-card jobs run only on exclusive pools (or anywhere in the baseline): a pod of several replicas is
    not modelled. With `replica_per_pod`, a pod on a time-sliced pool takes one replica, as a plain
    `nvidia.com/gpu: 1` request does, and needs its share of the card's memory (`Shape.memory`). A "milli"
    pool (the FGD simulator's cards) gives a pod exactly the milli it asks, or whole cards, and places
    CPU-only pods too: their CPU and memory count on a node.
    """
    if sharing == "milli":
        demand = (job.cpu, job.memory_mib, job.gpu_models)
        if job.fractional:
            return Shape(job.pods, 1, round(job.fraction * MILLI), demand=demand)
        return Shape(job.pods, job.gpus, MILLI if job.gpus else 0, demand=demand)
    if job.fractional and job.gpus <= 1:
        if whole_only or sharing == "exclusive":
            return Shape(job.pods, 1, MILLI)
        if sharing == "mig" and profiles:
            card = mig_card(model)
            profile = smallest_instance(job, card, profiles)
            if profile is None:
                return None
            return Shape(job.pods, 1, instance_milli(profile, card), profile=profile)
        if sharing == "mig":
            card = mig_card(model)
            fraction = (profile_share(job.mig, card.key) if job.mig else None) or job.fraction
            wanted = math.ceil(fraction * card.compute_slices - 1e-9)
            slices = next((s for s in catalog.profile_sizes(card) if s >= wanted), card.compute_slices)
            return Shape(job.pods, 1, math.ceil(slices * MILLI / card.compute_slices))
        replicas = max(replicas, 1)
        if replica_per_pod:
            return Shape(
                job.pods, 1, math.ceil(MILLI / replicas), min(MILLI, math.ceil(job.fraction * MILLI))
            )
        slots = max(1, math.ceil(job.fraction * replicas - 1e-9))
        return Shape(job.pods, 1, min(MILLI, math.ceil(slots * MILLI / replicas)))
    count, pods = max(job.gpus, 0), job.pods
    if count == 1 and sharing == "time-sliced" and not whole_only:
        # The pod asks `nvidia.com/gpu: 1`: the device plugin hands it one replica, and Kueue, which sees
        # resource names and counts only (flavorassigner.go fitsResourceQuota), charges the flavor one. A pod
        # sized for a whole card needs all of its memory where that is tracked (replica_per_pod).
        replica = math.ceil(MILLI / max(replicas, 1))
        return Shape(pods, 1, replica, MILLI if replica_per_pod else 0)
    if count == 0 or (sharing != "exclusive" and not whole_only):
        return None  # a shared or MIG-partitioned card cannot be handed out whole
    if count > gpus_per_node:
        if count % gpus_per_node:
            return None
        pods, count = pods * (count // gpus_per_node), gpus_per_node
    return Shape(pods, count, MILLI)
