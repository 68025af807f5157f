"""Fidelity check: the FGD paper's experiment on the Alibaba `openb` trace, re-implemented here.

Protocol (Weng et al., "Beware of Fragmentation", USENIX ATC'23; ../shared/reference/traces-and-simulators.md
§2), as the published simulator runs it (hkust-adsl/kubernetes-scheduler-simulator, pkg/simulator/core.go and
simulator.go `tuneUpPods`, read for the procedure, no code copied): every pod of the list arrives once in a
seeded random order, then pods drawn at random are appended until the next one would push the GPU requests
past `tune` x the cluster's GPUs (1.3); no pod departs. Each arrival is filtered (CPU, memory, GPU model,
cards that fit) and scored; the result is the GPU allocation ratio against arrived demand.

Scores follow the simulator's definitions, with its integer score quantisation:
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

Nodes with equal state are one class, scored once: this makes a 10k-pod run take seconds in plain Python.
"""

from __future__ import annotations

import csv
import heapq
import math
import random
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

MILLI = 1000
MAX_CPU = 128_000  # the simulator's normalisation constants (milli-CPU, milli-GPU)
MAX_GPU = 8_000
POLICIES = ("best-fit", "fgd")
EXPECTED_POLICY = {"best-fit": "05-BestFit", "fgd": "06-FGD"}


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


def read_nodes(path: Path) -> list[NodeType]:
    with path.open(encoding="utf-8", newline="") as handle:
        return [NodeType(row["model"].strip(), int(row["cpu_milli"]), int(row["memory_mib"]), int(row["gpu"]))
                for row in csv.DictReader(handle)]


def read_pods(path: Path) -> list[Pod]:
    pods = []
    with path.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            num_gpu = int(row["num_gpu"])
            milli = int(row["gpu_milli"]) if num_gpu else 0
            spec = frozenset(s for s in (row.get("gpu_spec") or "").split("|") if s)
            pods.append(Pod(int(row["cpu_milli"]), int(row["memory_mib"]), num_gpu, milli, spec))
    return pods


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


class Cluster:
    """Nodes grouped into classes of equal state: (model, cpu left, memory left, free milli per card in card order).

    Each node has a fixed rank drawn from the seeded generator. The published simulator names its nodes with a
    random-permutation prefix and its kube-scheduler fork breaks score ties by the smallest node name instead
    of at random (vendor/k8s.io/kubernetes/pkg/scheduler/core/generic_scheduler.go, `selectHost`), so among
    equal scores the same nodes keep being chosen: ties pack. Each class keeps its nodes' ranks in a heap.
    """

    def __init__(self, nodes: list[NodeType], typical: list[tuple[Pod, float]], rng: random.Random,
                 quantise: bool = True, memo: Memo | None = None):
        ranks = list(range(len(nodes)))
        rng.shuffle(ranks)
        self.classes: dict[tuple, list[int]] = {}
        for node, rank in zip(nodes, ranks, strict=True):
            key = (node.model, node.cpu, node.mem, (MILLI,) * node.cards)
            self.classes.setdefault(key, []).append(rank)
        for members in self.classes.values():
            heapq.heapify(members)
        self.capacity = sum(n.cards for n in nodes) * MILLI
        self.allocated = 0
        self.typical = typical
        self.rng = rng
        self.quantise = quantise
        memo = memo if memo is not None else Memo()
        self._frag = memo.frag
        self._choice = memo.choice

    def frag(self, model: str, cpu: int, free: tuple[int, ...]) -> float:
        """Expected GPU milli of a node that a pod drawn from the typical pods could not use (FGD's measure).

        Per typical pod: nothing when it fits (cards with enough free milli and CPU) except the cards too small
        for it; all the node's free milli when it does not fit or asks for no GPU at all.
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
        model, cpu, mem, free = key
        shared = pod.num_gpu == 1 and 0 < pod.milli < MILLI
        if policy == "best-fit":
            # the tightest card, lowest index first (the simulator's default `best` GPU selection)
            card = min((i for i, f in enumerate(free) if f >= pod.milli), key=lambda i: free[i]) if shared else None
            left = 0.5 * (cpu - pod.cpu) / MAX_CPU + 0.5 * (sum(free) - pod.gpu_demand) / MAX_GPU
            result = (self._score((1.0 - left) * 100), card)
        else:
            before = self.frag(model, cpu, free)
            result = (-1.0, None)
            for card in (i for i, f in enumerate(free) if f >= pod.milli) if shared else (None,):
                after = self.frag(model, cpu - pod.cpu, self._take(free, pod, card) if pod.num_gpu else free)
                score = self._score(_sigmoid((before - after) / 1000) * 100)
                if score > result[0]:  # strictly better: the lowest-index card wins a tie
                    result = (score, card)
        self._choice[memo] = result
        return result

    def _score(self, value: float) -> float:
        return float(int(value)) if self.quantise else value

    def schedule(self, pod: Pod, policy: str) -> bool:
        best, best_rank, chosen = -1.0, -1, None
        for key, members in self.classes.items():
            if not self._fits(key, pod):
                continue
            score, card = self._choose(key, pod, policy)
            if score > best or (score == best and members[0] < best_rank):
                best, best_rank, chosen = score, members[0], (key, card)
        if chosen is None:
            return False
        key, card = chosen
        members = self.classes[key]
        rank = heapq.heappop(members)
        if not members:
            del self.classes[key]
        model, cpu, mem, free = key
        new_key = (model, cpu - pod.cpu, mem - pod.mem, self._take(free, pod, card) if pod.num_gpu else free)
        heapq.heappush(self.classes.setdefault(new_key, []), rank)
        self.allocated += pod.gpu_demand
        return True


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def arrivals(pods: list[Pod], capacity: int, tune: float, rng: random.Random) -> Iterator[Pod]:
    """The published simulator's workload: every pod of the list once, shuffled, then pods drawn at random
    (with replacement) and appended until the next one would push the GPU requests past `tune` x capacity."""
    order = list(pods)
    rng.shuffle(order)
    target = tune * capacity
    demand = sum(p.gpu_demand for p in order)
    yield from order
    while True:
        pod = pods[rng.randrange(len(pods))]
        if demand + pod.gpu_demand > target:
            return
        demand += pod.gpu_demand
        yield pod


def run_experiment(nodes: list[NodeType], pods: list[Pod], policy: str, seed: int, tune: float = 1.3,
                   typical: list[tuple[Pod, float]] | None = None, quantise: bool = True,
                   memo: Memo | None = None) -> list[float]:
    """Allocation ratio (%) at arrived demand 0, 1, ... round(tune x 100) percent of the cluster's GPUs.

    `memo` may be shared between runs with the same typical pods (and quantisation); it only saves time."""
    rng = random.Random(seed)
    cluster = Cluster(nodes, typical if typical is not None else typical_pods(pods), rng, quantise, memo)
    columns = int(round(tune * 100))
    curve = [0.0] * (columns + 1)
    arrived = 0
    reached = 0
    for pod in arrivals(pods, cluster.capacity, tune, rng):
        cluster.schedule(pod, policy)
        arrived += pod.gpu_demand
        percent = min(columns, int(arrived * 100 // cluster.capacity))
        while reached <= percent:
            curve[reached] = 100.0 * cluster.allocated / cluster.capacity
            reached += 1
    while reached <= columns:  # the last draw stopped short of the final column
        curve[reached] = 100.0 * cluster.allocated / cluster.capacity
        reached += 1
    return curve


def expected(results_csv: Path, workload: str, policy: str) -> dict[int, list[float]]:
    """seed -> the published allocation curve for one trace and policy (analysis_allo_discrete.csv)."""
    wanted = EXPECTED_POLICY[policy]
    curves = {}
    with results_csv.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            if row["workload"] == workload and row["sc_policy"] == wanted:
                curves[int(row["seed"])] = [float(row[str(i)]) for i in range(131)]
    return curves


@dataclass
class FidelityRow:
    policy: str
    seeds: int
    ours_percent: float
    published_percent: float
    ours_unallocated: float
    published_unallocated: float

    @property
    def gap_points(self) -> float:
        return self.ours_percent - self.published_percent


def fidelity_table(traces: Path, results_csv: Path, trace: str = "default", seeds: Iterable[int] = range(42, 52),
                   policies: Iterable[str] = POLICIES, column: int = 130) -> list[FidelityRow]:
    nodes = read_nodes(traces / "openb_node_list_gpu_node.csv")
    pods = read_pods(traces / f"openb_pod_list_{trace}.csv")
    typical = typical_pods(pods)
    total_gpus = sum(n.cards for n in nodes)
    rows = []
    seeds = list(seeds)
    for policy in policies:
        memo = Memo()
        ours = [run_experiment(nodes, pods, policy, seed, typical=typical, memo=memo)[column] for seed in seeds]
        published_curves = expected(results_csv, f"openb_pod_list_{trace}", policy)
        published = [published_curves[s][column] for s in seeds if s in published_curves]
        mean_ours = sum(ours) / len(ours)
        mean_pub = sum(published) / len(published) if published else math.nan  # a variant the paper did not run
        rows.append(FidelityRow(policy, len(seeds), mean_ours, mean_pub, (1 - mean_ours / 100) * total_gpus,
                                (1 - mean_pub / 100) * total_gpus))
    return rows


def variants(traces: Path) -> list[str]:
    """Every `openb_pod_list_*` variant in the trace directory (default, cpu*, gpushare*, gpuspec*, multigpu*)."""
    prefix, suffix = "openb_pod_list_", ".csv"
    return sorted(p.name[len(prefix):-len(suffix)] for p in traces.glob(f"{prefix}*{suffix}"))


def variant_table(traces: Path, results_csv: Path, seeds: Iterable[int] = (42,),
                  policies: Iterable[str] = POLICIES) -> dict[str, list[FidelityRow]]:
    """variant -> fidelity rows, for every variant the published results cover."""
    seeds, policies = list(seeds), list(policies)
    return {trace: fidelity_table(traces, results_csv, trace, seeds, policies) for trace in variants(traces)}
