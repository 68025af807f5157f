"""A flavor's GPU quota has too little cpu or memory quota beside it for the jobs it admits.

## Why it matters
Kueue admits a workload only when every resource it requests fits the quota of the flavor it is assigned, cpu
and memory included (its flavor assigner checks each requested resource of a pod set against the flavor's
quota: `fitsResourceQuota` in kubernetes-sigs/kueue `pkg/scheduler/flavorassigner/flavorassigner.go`). A GPU
job asks for CPU cores and memory in proportion to its GPUs (data loaders, tokenizers, host-side buffers); the
usual size is the node's share per GPU, `node.cpu / gpu.perNode`. When a queue's GPU quota on a flavor is
raised but its cpu/memory quota in the same flavor is not, the GPU quota cannot be used: jobs wait in the
queue for cpu or memory quota while GPUs stand idle, and nothing reports why.

The per-GPU shape comes from the pool's `node: {cpu, memory}` in `pool.yaml` (the instance type or server its
nodes are; the reference pools cite theirs). A queue need not hand out the full share, so the rule demands
**50 %** of it (`MIN_SHARE`): 50 % covers every reference queue's deliberate ratio (20 cpu + 200 Gi per H100
on a
192-vCPU, 2 TiB p5.48xlarge is 83 % / 78 %; 1 cpu + 12 Gi per 1g.10gb slice on a p4de.24xlarge is 58 %) and
still catches GPU quota raised alone. The GPUs a quota stands for are counted in cards: a MIG device is its
profile's share of the card (`catalog.card_fraction`: 1g.10gb is 1/7 of an A100), a time-sliced or MPS device
1/replicas of a card. Quota entries of ClusterQueues and Cohort objects are both checked (both are
guaranteed); only nominal quota is compared, in a resource group that covers cpu or memory. A pool that does
not declare `node` is not checked.

## Bad example
```yaml
# pools/prod-h100/pool.yaml: node: {cpu: 192, memory: 2048Gi}, gpu.perNode: 8 -> 24 cpu, 256Gi per GPU
    - name: prod-h100
      resources:
      - {name: cpu, nominalQuota: 320}        # needs at least 64 x 24 x 50 % = 768
      - {name: memory, nominalQuota: 3200Gi}
      - {name: nvidia.com/gpu, nominalQuota: 64}   # raised from 16 without its cpu/memory
```

## Fix
Raise the cpu and memory quota of the flavor with its GPU quota (the reference queues give 20 cpu + 200 Gi per
H100), or lower the GPU quota. If the pool's nodes are larger or smaller than declared, correct `node` in its
`pool.yaml`.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from fractions import Fraction

from ..domain.gpu_resources import is_nvidia_resource
from ..domain.quantity import number
from ..domain.quotas import QuotaEntry, cards, pool_of, quota_entries
from ..findings import Finding, Severity, at
from ..model import Cluster, Fleet, Pool

ID = "WL006"
SEVERITY = Severity.ERROR
SUMMARY = "GPU quota without the cpu/memory quota its jobs need on the pool's nodes"

MIN_SHARE = Fraction(1, 2)  # of the node's per-GPU cpu and memory, see the docstring
GIB = 1024**3


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        by_flavor: dict[tuple, list[QuotaEntry]] = {}
        for entry in quota_entries(cluster):
            by_flavor.setdefault((entry.kind, entry.owner, entry.path[:5]), []).append(entry)
        for entries in by_flavor.values():
            yield from _check_flavor(fleet, cluster, entries)


def _check_flavor(fleet: Fleet, cluster: Cluster, entries: list[QuotaEntry]) -> Iterator[Finding]:
    pool = pool_of(cluster, entries[0].flavor)
    if pool is None or pool.node_cpu is None or pool.node_memory is None:
        return
    gpu_entries = [e for e in entries if is_nvidia_resource(e.quota.name) and e.quota.nominal > 0]
    shares = [(e, cards(pool, e.quota.name)) for e in gpu_entries]
    shares = [(e, s) for e, s in shares if s is not None]
    if not shares:
        return
    gpus = sum(Fraction(e.quota.nominal) * s for e, s in shares)
    largest = max(shares, key=lambda item: Fraction(item[0].quota.nominal) * item[1])[0]
    group = _group_covers(cluster, entries[0])
    per_gpu = {
        "cpu": Fraction(pool.node_cpu) / pool.gpus_per_node,
        "memory": Fraction(pool.node_memory) / pool.gpus_per_node,
    }
    have = {e.quota.name: e.quota.nominal for e in entries}
    for resource in ("cpu", "memory"):
        if resource not in group:
            continue  # another resource group (another flavor) serves it
        needed = gpus * per_gpu[resource] * MIN_SHARE
        quota = Fraction(have.get(resource, 0))
        if quota >= needed:
            continue
        yield _finding(
            fleet,
            cluster,
            pool,
            [e for e, _ in shares],
            largest,
            resource,
            gpus,
            per_gpu[resource],
            quota,
            needed,
        )


def _group_covers(cluster: Cluster, entry: QuotaEntry) -> set[str]:
    owner = (
        cluster.cluster_queues.get(entry.owner)
        if entry.kind == "ClusterQueue"
        else cluster.cohorts.get(entry.owner)
    )
    group_index = entry.path[2]
    groups = owner.resource_groups if owner else ()
    return set(groups[group_index].covered_resources) if group_index < len(groups) else set()


def _dec(amount: Fraction) -> Decimal:
    """Exact enough for a message, and never an OverflowError for a quota of 1e400."""
    value = Decimal(amount.numerator) / Decimal(amount.denominator)
    return value if abs(value) >= 10**12 else value.quantize(Decimal("0.01"))


def _show(resource: str, amount: Fraction) -> str:
    if resource == "memory":
        return f"{number(_dec(amount / GIB))}Gi"
    return number(_dec(amount))


def _finding(
    fleet: Fleet,
    cluster: Cluster,
    pool: Pool,
    gpu_entries: list[QuotaEntry],
    largest: QuotaEntry,
    resource: str,
    gpus: Fraction,
    per_gpu: Fraction,
    quota: Fraction,
    needed: Fraction,
) -> Finding:
    first = gpu_entries[0]
    gpu_quota = ", ".join(f"{e.quota.name} {number(e.quota.nominal)}" for e in gpu_entries)
    message = (
        f"{largest.label} on flavor {first.flavor}: GPU quota ({gpu_quota}; {number(_dec(gpus))} "
        f"GPU(s) of {pool.gpu_model}) needs at least {_show(resource, needed)} {resource} quota but has "
        f"{_show(resource, quota)}: assumed per-GPU shape {_show(resource, per_gpu)} {resource} "
        f"(pool {pool.name} node "
        f"{_show(resource, Fraction(pool.node_cpu if resource == 'cpu' else pool.node_memory))} "
        f"/ {pool.gpus_per_node} GPUs) x {int(MIN_SHARE * 100)}% minimum share; admitted GPU jobs "
        f"wait for {resource} quota while the GPUs stay idle"
    )
    return Finding(
        rule=ID,
        severity=SEVERITY,
        message=message,
        cluster=cluster.name,
        hint=f"raise the {resource} quota of flavor {first.flavor} to at least "
        f"{_show(resource, needed)} with the GPU quota, or lower the GPU quota; if the nodes differ, correct "
        f"`node` in {pool.path}",
        **at(largest.locate(fleet, "nominalQuota")),
    )
