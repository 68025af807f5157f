"""Placement on heterogeneous nodes (GPU model, CPU, memory, cards) as the FGD paper's simulator places pods.

The engine uses this pool for the FGD experiment (fidelity.py drives it); PoolState (placement.py) is the
pool of the policy replays, where every node of a pool is alike and CPU is not modelled.

Scores follow the published simulator's definitions (hkust-adsl/kubernetes-scheduler-simulator, read for the
procedure, no code copied), with its integer score quantisation:
- best-fit: 0.5 x CPU left / 128 cores + 0.5 x GPU milli left / 8000, lower is better, as a 0..100 integer;
  a shared pod takes the tightest card;
- FGD (pkg/utils/frag.go, pkg/simulator/plugin/fgd_score.go): the typical pods are the most popular
  (CPU, GPU count, milli per GPU, GPU model) request shapes of the whole pod list, CPU-only pods included,
  covering 95% of pods, weighted by popularity. A node's fragmentation is the expected free GPU milli a pod
  drawn from them could not use: all of it when the pod cannot run there (too few fitting cards, too little
  CPU, wrong GPU model, or no GPU request), else the cards with less free than the pod asks. The score is
  sigmoid(fragmentation decrease / 1000) as a 0..100 integer; a shared pod is scored on each card that fits
  and goes to the best (lowest index on a tie); whole cards are the lowest-index idle ones.
- ties between nodes go to the node with the lowest fixed random rank, not to a random one (see Cluster):
  this, not the score, is what made an earlier version of this module land 4.7 points below the paper.
- frag-aware (OWN_POLICY): the project's own score, the one `gpupolicy simulate` places with
  (placement.fragmentation over placement.typical_sizes of the GPU pods, no CPU in the measure): least growth
  of the node's fragmentation, then the tightest card or node, as PoolState breaks ties. Nodes are still
  filtered on CPU, memory and GPU model, as every policy here is.

Nodes with equal state are one class, scored once: this makes a 10k-pod run take seconds in plain Python.
The pool only takes pods (the FGD experiment has no departures): it has no `release`.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from .jobs import Shape
from .placement import DEFAULT_PLACEMENT, fragmentation

MILLI = 1000
MAX_CPU = 128_000  # the simulator's normalisation constants (milli-CPU, milli-GPU)
MAX_GPU = 8_000
POLICIES = ("best-fit", "fgd")  # the published simulator's policies
OWN_POLICY = DEFAULT_PLACEMENT  # the project's own, the one `gpupolicy simulate` places with


@dataclass(frozen=True, slots=True)
class Pod:
    cpu: int
    mem: int
    num_gpu: int
    milli: int  # per card
    spec: frozenset[str]  # allowed GPU models; empty = any

    @property
    def gpu_demand(self) -> int:
        return self.num_gpu * self.milli


@dataclass(frozen=True, slots=True)
class NodeType:
    model: str
    cpu: int
    mem: int
    cards: int


def typical_pods(pods: Iterable[Pod], threshold: float = 0.95) -> list[tuple[Pod, float]]:
    """The most popular pod sizes covering `threshold` of pods, weights renormalised to sum to 1."""
    counts = Counter((p.cpu, p.num_gpu, p.milli, p.spec) for p in pods)
    total = sum(counts.values())
    chosen, covered = [], 0
    for (cpu, num, milli, spec), n in counts.most_common():
        chosen.append((Pod(cpu, 0, num, milli, spec), n))
        covered += n
        if covered >= threshold * total:
            break
    return [(pod, n / covered) for pod, n in chosen]


@dataclass
class Memo:
    """Fragmentation and score of node states; valid for one typical-pod set, so seeds can share it."""

    frag: dict[tuple, float] = field(default_factory=dict)
    choice: dict[tuple, tuple[float, int | None]] = field(default_factory=dict)
    own: dict[tuple, float] = field(default_factory=dict)  # OWN_POLICY's fragmentation of a node's free cards


class Cluster:
    """Nodes grouped into classes of equal state: (model, cpu left, memory left, free milli per card in card
    order).

    Each node has a fixed rank drawn from the seeded generator. The published simulator names its nodes with a
    random-permutation prefix and its kube-scheduler fork breaks score ties by the smallest node name instead
    of at random (vendor/k8s.io/kubernetes/pkg/scheduler/core/generic_scheduler.go, `selectHost`), so among
    equal scores the same nodes keep being chosen: ties pack. Each class keeps its nodes' ranks in a heap.
    """

    def __init__(
        self,
        nodes: list[NodeType],
        typical: list[tuple[Pod, float]],
        rng: random.Random,
        quantise: bool = True,
        memo: Memo | None = None,
        own_typical: list[tuple[int, int, float]] | None = None,
        policy: str = "fgd",
    ):
        ranks = list(range(len(nodes)))
        rng.shuffle(ranks)
        self.classes: dict[tuple, list[int]] = {}
        for node, rank in zip(nodes, ranks, strict=True):
            key = (node.model, node.cpu, node.mem, (MILLI,) * node.cards)
            self.classes.setdefault(key, []).append(rank)
        for members in self.classes.values():
            heapq.heapify(members)
        self.capacity = sum(n.cards for n in nodes) * MILLI
        self.full_capacity = self.capacity  # no node fails in the FGD experiment
        if policy not in SCORES:
            raise ValueError(f"unknown node-class policy {policy!r}: one of {', '.join(sorted(SCORES))}")
        self.policy = policy  # the score `place` uses
        self.memory_check = False  # the engine's busy-device model does not apply: no time-slicing here
        self.allocated = 0
        self.typical = typical
        self.rng = rng
        self.quantise = quantise
        memo = memo if memo is not None else Memo()
        self._frag = memo.frag
        self._choice = memo.choice
        self._own = memo.own
        self.own_typical = own_typical or []

    def frag(self, model: str, cpu: int, free: tuple[int, ...]) -> float:
        """Expected GPU milli of a node that a pod drawn from the typical pods could not use (FGD's measure).

        Per typical pod: nothing when it fits (cards with enough free milli and CPU) except the cards too
        small for it; all the node's free milli when it does not fit or asks for no GPU at all.
        """
        free = tuple(sorted(free))
        key = (model, cpu, free)
        value = self._frag.get(key)
        if value is not None:
            return value
        total = sum(free)
        value = 0.0
        if total:
            for pod, weight in self.typical:
                if pod.milli == 0 or (pod.spec and model not in pod.spec) or cpu < pod.cpu:
                    value += weight * total
                    continue
                usable = sum(1 for f in free if f >= pod.milli)
                if usable < pod.num_gpu:
                    value += weight * total
                else:
                    value += weight * sum(f for f in free if f < pod.milli)
        self._frag[key] = value
        return value

    @staticmethod
    def _fits(key: tuple, pod: Pod) -> bool:
        model, cpu, mem, free = key
        if cpu < pod.cpu or mem < pod.mem:
            return False
        if pod.num_gpu == 0:
            return True
        if pod.spec and model not in pod.spec:
            return False
        return sum(1 for f in free if f >= pod.milli) >= pod.num_gpu

    @staticmethod
    def _take(free: tuple[int, ...], pod: Pod, card: int | None) -> tuple[int, ...]:
        """Cards after placing `pod`: a shared pod on `card`, whole cards on the lowest-index idle ones."""
        cards = list(free)
        if card is not None:
            cards[card] -= pod.milli
            return tuple(cards)
        taken = 0
        for i, f in enumerate(cards):
            if taken < pod.num_gpu and f == MILLI:
                cards[i] = 0
                taken += 1
        return tuple(cards)

    def _choose(self, key: tuple, pod: Pod, policy: str) -> tuple[float, int | None]:
        """(score, card for a shared pod) of placing `pod` on a node of class `key`; higher is better."""
        memo = (key, pod, policy)
        cached = self._choice.get(memo)
        if cached is not None:
            return cached
        shared = pod.num_gpu == 1 and 0 < pod.milli < MILLI
        result = SCORES[policy](self, key, pod, shared)
        self._choice[memo] = result
        return result

    def _best_fit_choice(self, key: tuple, pod: Pod, shared: bool) -> tuple[float, int | None]:
        """The published best-fit: least CPU and GPU left; the tightest card, lowest index first (the
        simulator's default `best` GPU selection)."""
        model, cpu, mem, free = key
        fitting = (i for i, f in enumerate(free) if f >= pod.milli)
        card = min(fitting, key=lambda i: free[i]) if shared else None
        left = 0.5 * (cpu - pod.cpu) / MAX_CPU + 0.5 * (sum(free) - pod.gpu_demand) / MAX_GPU
        return (self._score((1.0 - left) * 100), card)

    def _fgd_choice(self, key: tuple, pod: Pod, shared: bool) -> tuple[float, int | None]:
        """FGD: the sigmoid of the fragmentation decrease; a shared pod on each card that fits."""
        model, cpu, mem, free = key
        before = self.frag(model, cpu, free)
        result: tuple[float, int | None] = (-1.0, None)
        for card in (i for i, f in enumerate(free) if f >= pod.milli) if shared else (None,):
            after = self.frag(model, cpu - pod.cpu, self._take(free, pod, card) if pod.num_gpu else free)
            score = self._score(_sigmoid((before - after) / 1000) * 100)
            if score > result[0]:  # strictly better: the lowest-index card wins a tie
                result = (score, card)
        return result

    def _own_frag(self, free: tuple[int, ...]) -> float:
        key = tuple(sorted(free))
        value = self._own.get(key)
        if value is None:
            value = self._own[key] = fragmentation(key, self.own_typical)
        return value

    def _own_choice(self, key: tuple, pod: Pod, shared: bool) -> tuple[tuple, int | None]:
        """OWN_POLICY: (fragmentation decrease, tightness) and the card for a shared pod; higher is better."""
        free = key[3]
        before = self._own_frag(free)
        best: tuple[tuple, int | None] | None = None
        for card in (i for i, f in enumerate(free) if f >= pod.milli) if shared else (None,):
            after = self._take(free, pod, card) if pod.num_gpu else free
            left = after[card] if card is not None else sum(after)
            score = (before - self._own_frag(after), -left)
            if best is None or score > best[0]:
                best = (score, card)
        return best

    def _score(self, value: float) -> float:
        return float(int(value)) if self.quantise else value

    def place(self, shape: Shape) -> list[tuple[int, int, int, int]] | None:
        """The engine's placement call for one pod (`Shape.demand` carries its CPU, memory and GPU models):
        a single slot (node rank, card or -1, milli, 0), or None when no node can take it."""
        if shape.pods != 1:
            raise ValueError("a node-class pool places single pods, as the FGD experiment's are")
        cpu, mem, spec = shape.demand
        pod = Pod(cpu, mem, shape.count, shape.milli, spec)
        placed = self.schedule(pod, self.policy)
        return (
            None
            if placed is None
            else [(placed[0], -1 if placed[1] is None else placed[1], pod.gpu_demand, 0)]
        )

    def schedule(self, pod: Pod, policy: str) -> tuple[int, int | None] | None:
        """Place `pod` on the best node under `policy`: (node rank, card of a shared pod), or None."""
        best, best_rank, chosen = None, -1, None
        for key, members in self.classes.items():
            if not self._fits(key, pod):
                continue
            score, card = self._choose(key, pod, policy)
            if best is None or score > best or (score == best and members[0] < best_rank):
                best, best_rank, chosen = score, members[0], (key, card)
        if chosen is None:
            return None
        key, card = chosen
        members = self.classes[key]
        rank = heapq.heappop(members)
        if not members:
            del self.classes[key]
        model, cpu, mem, free = key
        new_key = (model, cpu - pod.cpu, mem - pod.mem, self._take(free, pod, card) if pod.num_gpu else free)
        heapq.heappush(self.classes.setdefault(new_key, []), rank)
        self.allocated += pod.gpu_demand
        return rank, card


# The scores a node-class pool places with, by policy name: POLICIES and OWN_POLICY.
SCORES = {"best-fit": Cluster._best_fit_choice, "fgd": Cluster._fgd_choice, OWN_POLICY: Cluster._own_choice}


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))
