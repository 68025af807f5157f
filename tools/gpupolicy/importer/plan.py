"""The migration plan: the nodes to drain and return under operator management (or into line with their pool),
one at a time, in an order that keeps each pool's online capacity at or above what production is promised.

A step takes one node out: cordon, drain (the GPU Operator's drain settings of the pool's NVIDIADriver), label
it as its pool says, let the operator install its driver and operands, return it. While it is out, the pool's
online capacity must cover the nominal quota of its production queues (UPG008's check of an upgrade's worst
moment, rules/upg008_capacity_during_upgrade.py); and to keep CAP005's reserve
(rules/cap005_production_reserve .py: production survives losing one more node) it must still cover it after
one more node fails. A queue whose tier the cluster does not say is counted as production: the safe side,
until its question is answered. A step that breaks the first condition is `blocked` (lower that quota or add a
node first), one that only breaks the second is `no-reserve`; both are listed and the plan says so.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from ..domain.gpu_resources import is_nvidia_resource
from .inventory import GpuNode, PoolGroup, meta

PRODUCTION = "production"
TIER_LABEL = "gpupolicy.io/tier"


@dataclass
class Step:
    number: int
    node: str
    pool: str
    reasons: list[str]
    during: dict[str, int]  # the pool's online devices while the node is out
    after: dict[str, int]  # ... once it is back with the pool's configuration
    need: dict[str, int]  # production nominal quota on the pool's flavor
    reserve: dict[str, int]  # online while out, minus the largest other node (CAP005's one more node lost)
    verdict: str  # ok | no-reserve | blocked


def reasons(pool: PoolGroup, node: GpuNode) -> list[str]:
    found = (
        []
        if node.managed
        else ["not under GPU Operator management (no nvidia.com/gpu.deploy.* label, or operands off)"]
    )
    if node.managed and not node.operator_driver:
        found.append("driver not installed by the operator (nvidia.com/gpu.deploy.driver=false)")
    return found + [f"label disagrees with its pool: {d}" for d in pool.disagreements(node)]


def production_need(cluster_queues: list[dict], flavor: str) -> dict[str, int]:
    """Nominal quota of production (or unknown-tier) ClusterQueues on `flavor`, per resource."""
    need: Counter = Counter()
    for queue in cluster_queues:
        if (meta(queue).get("labels") or {}).get(TIER_LABEL, PRODUCTION) != PRODUCTION:
            continue
        for group in (queue.get("spec") or {}).get("resourceGroups") or ():
            for item in group.get("flavors") or ():
                if item.get("name") != flavor:
                    continue
                for resource in item.get("resources") or ():
                    if is_nvidia_resource(resource.get("name")):
                        need[resource["name"]] += _count(resource.get("nominalQuota"))
    return dict(need)


def _count(value: object) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0


def migration_plan(pools: list[PoolGroup], cluster_queues: list[dict]) -> list[Step]:
    """The steps, pools with the most headroom first; in a pool, the node running the fewest GPU pods
    first."""
    candidates = []
    for pool in pools:
        need = production_need(cluster_queues, pool.flavor or pool.name)
        online = _total(n.devices for n in pool.nodes)
        movers = [n for n in pool.nodes if reasons(pool, n)]
        headroom = min((online.get(r, 0) - v for r, v in need.items()), default=sum(online.values()))
        candidates.append((-headroom, pool.name, pool, need, movers))
    steps, number = [], 0
    for _rank, _name, pool, need, movers in sorted(candidates, key=lambda c: c[:2]):
        current = {n.name: dict(n.devices) for n in pool.nodes}
        target = _target_devices(pool)
        for node in sorted(movers, key=lambda n: (n.gpu_pods, n.name)):
            number += 1
            out = {k: v for k, v in current.items() if k != node.name}
            during = _total(out.values())
            largest = max(out.values(), key=lambda d: sum(d.values()), default={})
            reserve = {r: during.get(r, 0) - largest.get(r, 0) for r in set(during) | set(need)}
            current[node.name] = dict(target)
            verdict = (
                "blocked"
                if any(during.get(r, 0) < v for r, v in need.items())
                else "no-reserve"
                if any(reserve.get(r, 0) < v for r, v in need.items())
                else "ok"
            )
            steps.append(
                Step(
                    number,
                    node.name,
                    pool.name,
                    reasons(pool, node),
                    during,
                    _total(current.values()),
                    need,
                    reserve,
                    verdict,
                )
            )
    return steps


def _target_devices(pool: PoolGroup) -> dict[str, int]:
    """What a returned node gives: the devices of the pool's nodes that already have the pool's
    configuration."""
    model = next((n for n in pool.nodes if n.managed and not pool.disagreements(n)), pool.first)
    return dict(model.devices)


def _total(device_maps) -> dict[str, int]:
    total: defaultdict[str, int] = defaultdict(int)
    for devices in device_maps:
        for resource, count in devices.items():
            total[resource] += count
    return dict(sorted(total.items()))


def show(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {r}" for r, n in sorted(counts.items())) or "nothing"


def plan_yaml(cluster: str, steps: list[Step]) -> str:
    """The plan file (imports/<cluster>/migration-plan.yaml, format in
    docs/operations/start-your-own-fleet.md)."""
    lines = [
        f"# Migration plan of {cluster}, written by `gpupolicy import`: drain and return one node at a time,",
        "# in this order. Capacity is the pool's online device count (allocatable) during and after "
        "the step;",
        "# need is production nominal quota on the pool (queues of unknown tier counted as production);",
        "# reserve is online-during minus the largest other node (CAP005: one more node lost).",
        "apiVersion: gpupolicy/v1",
        "kind: MigrationPlan",
        "metadata:",
        f"  name: {cluster}-import",
        "spec:",
        f"  cluster: {cluster}",
        "  maxNodesOut: 1",
        "  steps:" if steps else "  steps: []",
    ]
    for step in steps:
        if step.verdict != "ok":
            what = "online capacity" if step.verdict == "blocked" else "CAP005's reserve"
            lines.append(
                f"    # QUESTION(import): step {step.number} takes {what} below production's need "
                f"({show(step.need)}); lower that quota or add a node first"
            )
        lines += [f"    - node: {step.node}", f"      pool: {step.pool}", "      reasons:"]
        lines += [f"        - \"{r}\"" for r in step.reasons]
        lines += [
            f"      capacityDuring: {{{_flow(step.during)}}}",
            f"      capacityAfter: {{{_flow(step.after)}}}",
            f"      productionNeed: {{{_flow(step.need)}}}",
            f"      reserve: {{{_flow(step.reserve)}}}",
            f"      verdict: {step.verdict}",
        ]
    return "\n".join(lines) + "\n"


def _flow(counts: dict[str, int]) -> str:
    return ", ".join(f"{r}: {n}" for r, n in sorted(counts.items()))
