"""The quota matrix: per cluster, one row per team's queue and one column per flavor (named by its pools),
each cell the GPU quota in the pool's own units with what the queue may borrow; zeros are left blank. The last
rows add up the quota of each column and set it against what the pools expose. A cluster with more than
COLUMNS_PER_TABLE flavors gets one table per group of them."""

from __future__ import annotations

from ..domain import quotas
from ..domain.gpu_resources import is_nvidia_resource
from ..model import Cluster, ClusterQueue, Pool, ResourceQuota
from . import Context, table

MIG_PREFIX = "nvidia.com/mig-"
# flavor columns per table: a cluster with more pools gets several tables, each with the team and cohort
# columns, so that the page fits a laptop screen (tests/test_site.py) whatever the number of pools
COLUMNS_PER_TABLE = 4


def pages(context: Context) -> dict[str, str]:
    text = context.header("Quota matrix")
    text += (
        "One table per cluster (several for a cluster with many pools): a row per team's cluster queue, "
        "a column per flavor (headed by the pool it selects). Each cell is the queue's **nominal** quota "
        "there, which is guaranteed, in the pool's units: whole GPUs, MIG instances (`16 × 1g.10gb`) or "
        "time-slices (`48 × 1/4 GPU`: shares of a card that time-slicing hands out). In brackets: what a "
        "queue in a cohort may **borrow** on top when others leave quota unused (`+12`; `+any`: no borrowing "
        "limit), and the most it **lends** (`lends ≤ 16`; no note: all of it). An empty cell is no quota. "
        "The last rows add up each column and set it against what its pools expose.\n\n"
    )
    for cluster in context.fleet.clusters.values():
        text += f"## {cluster.name}\n\n" + _matrix(cluster) + "\n"
    return {"quotas.md": text}


def amount_text(resource: str, amount: float, pools: list[Pool], shown: str = "") -> str:
    """An amount of a GPU resource in words a person reads at a glance: `28 GPUs`, `16 × 1g.10gb`,
    `48 × 1/8 GPU` (a time-slice of a card replicated eight times). `shown` replaces the number (`+8`)."""
    shown = shown or f"{amount:g}"
    if resource.startswith(MIG_PREFIX):
        return f"{shown} × {resource.removeprefix(MIG_PREFIX)}"
    replicas = {p.time_slicing_replicas or p.mps_replicas for p in pools} - {None}
    if len(replicas) == 1:
        return f"{shown} × 1/{replicas.pop()} GPU"
    return f"{shown} GPU" if amount == 1 else f"{shown} GPUs"


def _matrix(cluster: Cluster) -> str:
    columns = _flavor_columns(cluster)
    if not columns:
        return "No GPU quotas.\n"
    return "\n".join(
        _table(cluster, columns[start : start + COLUMNS_PER_TABLE])
        for start in range(0, len(columns), COLUMNS_PER_TABLE)
    )


def _table(cluster: Cluster, columns: list[str]) -> str:
    rows = [_queue_row(cluster, queue, columns) for queue in cluster.cluster_queues.values()]
    rows += _cohort_rows(cluster, columns)
    rows = [row for row in rows if any(row[2:])]  # a queue with no GPU quota anywhere says nothing here
    rows += _total_rows(cluster, columns)
    return table(["team (queue)", "cohort", *(_column_title(cluster, flavor) for flavor in columns)], rows)


def _flavor_columns(cluster: Cluster) -> list[str]:
    """Flavors that carry GPU quota, in the order of the pools they select (a pool's flavors side by side);
    the
    CPU flavor (decision 0029) has none by construction (WL013) and no column."""
    used = {
        flavor
        for flavor, _ in quotas.nominal_per_flavor(cluster)
        if not (flavor in cluster.flavors and cluster.flavors[flavor].is_cpu)
    }
    order = {pool.name: index for index, pool in enumerate(cluster.pools)}
    return sorted(
        used, key=lambda f: (min((order[p.name] for p in quotas.pools_of(cluster, f)), default=len(order)), f)
    )


def _column_title(cluster: Cluster, flavor: str) -> str:
    pools = [pool.name for pool in quotas.pools_of(cluster, flavor)]
    if pools == [flavor]:
        return flavor
    return f"{', '.join(pools) or 'no pool'} (flavor {flavor})"


def _queue_row(cluster: Cluster, queue: ClusterQueue, columns: list[str]) -> list[str]:
    label = queue.team if queue.team == queue.name else f"{queue.team or '-'} ({queue.name})"
    cells = {flavor: [] for flavor in columns}
    for flavor, quota in queue.quotas():
        if flavor in cells:
            cells[flavor] += _quota_text(cluster, flavor, quota, bool(queue.cohort))
    return [label, queue.cohort or "-", *("; ".join(cells[flavor]) for flavor in columns)]


def _cohort_rows(cluster: Cluster, columns: list[str]) -> list[list[str]]:
    """A Cohort object's own quota is guaranteed too, and lent to its member queues."""
    cells: dict[str, dict[str, list[str]]] = {}
    for entry in quotas.quota_entries(cluster):
        if entry.kind == "Cohort" and entry.flavor in columns:
            row = cells.setdefault(entry.owner, {flavor: [] for flavor in columns})
            row[entry.flavor] += _quota_text(cluster, entry.flavor, entry.quota, False)
    return [
        [f"cohort {owner} (its own quota)", owner, *("; ".join(row[f]) for f in columns)]
        for owner, row in sorted(cells.items())
    ]


def _quota_text(cluster: Cluster, flavor: str, quota: ResourceQuota, in_cohort: bool) -> list[str]:
    """`28 GPUs (+12, lends ≤ 16)`; nothing for a resource the pools do not expose or for a zero quota that
    cannot borrow either."""
    if not is_nvidia_resource(quota.name) or not quotas.flavor_capacity(cluster, flavor).get(quota.name):
        return []
    borrow = _borrowing(quota.borrowing_limit) if in_cohort else ""
    lend = _lending(quota.lending_limit) if in_cohort else ""
    if not quota.nominal and not borrow:
        return []
    pools = quotas.pools_of(cluster, flavor)
    if not quota.nominal:  # the queue holds nothing here, but may borrow
        return [f"{amount_text(quota.name, 0, pools, shown=borrow)} borrowed only"]
    notes = ", ".join(note for note in (borrow, lend) if note)
    return [amount_text(quota.name, quota.nominal, pools) + (f" ({notes})" if notes else "")]


def _lending(limit: float | None) -> str:
    """`lends ≤ 16`; nothing without a lending limit (it lends all it does not use)."""
    if limit is None:
        return ""
    return f"lends ≤ {limit:g}" if limit else "lends nothing"


def _borrowing(limit: float | None) -> str:
    """`+12`: what the queue may borrow beyond its nominal quota; `+any` without a borrowing limit."""
    if limit is None:
        return "+any"
    return f"+{limit:g}" if limit else ""


def _total_rows(cluster: Cluster, columns: list[str]) -> list[list[str]]:
    nominal = quotas.nominal_per_flavor(cluster)
    totals, exposed, unassigned = [], [], []
    for flavor in columns:
        pools = quotas.pools_of(cluster, flavor)
        capacity = quotas.flavor_capacity(cluster, flavor)
        resources = [r for r in capacity if (flavor, r) in nominal]
        totals.append(", ".join(amount_text(r, nominal[(flavor, r)], pools) for r in resources))
        exposed.append(", ".join(amount_text(r, capacity[r], pools) for r in capacity))
        unassigned.append(
            ", ".join(
                _unassigned(r, capacity[r] - nominal.get((flavor, r), 0), pools)
                for r in capacity
                if capacity[r] != nominal.get((flavor, r), 0)
            )
        )
    return [
        ["**nominal total**", "", *totals],
        ["**pools expose**", "", *exposed],
        ["**not in any quota**", "", *unassigned],
    ]


def _unassigned(resource: str, amount: float, pools: list[Pool]) -> str:
    if amount < 0:
        return f"over-promised by {amount_text(resource, -amount, pools)}"
    return amount_text(resource, amount, pools)
