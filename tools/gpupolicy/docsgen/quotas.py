"""The quota matrix: team x pool x resource, with borrowing and lending, and each team's share of the pool."""

from __future__ import annotations

from decimal import Decimal

from ..model import Cluster
from . import Context, table


def pages(context: Context) -> dict[str, str]:
    text = context.header("Quota matrix")
    text += ("Nominal quota is guaranteed; a queue in a cohort may borrow up to its borrowing limit from what "
             "others do not use, and lends at most its lending limit. *Share* is the nominal quota as a share of "
             "what the pool exposes for that resource.\n\n")
    for cluster in context.fleet.clusters.values():
        text += f"## {cluster.name}\n\n" + _matrix(cluster) + "\n"
    return {"quotas.md": text}


def _fmt(value: object) -> str:
    return "unlimited" if value is None else str(value)


def _share(nominal: float, exposed: float) -> str:
    """The quota as a percentage of what its pools expose; exact, so a quota of 1e400 cannot overflow a float."""
    if not exposed:
        return "-"
    percent = 100 * Decimal(nominal) / Decimal(exposed)
    return f"{percent:.0f}%" if abs(percent) < 10**6 else f"{percent:.1e}%"


def _matrix(cluster: Cluster) -> str:
    rows = []
    totals: dict[tuple[str, str], float] = {}
    for queue in cluster.cluster_queues.values():
        for flavor_name, quota in queue.quotas():
            if not quota.name.startswith("nvidia.com/"):
                continue
            flavor = cluster.flavors.get(flavor_name)
            pools = cluster.pools_of_flavor(flavor) if flavor else []
            exposed = sum(p.capacity.get(quota.name, 0) for p in pools)
            share = _share(quota.nominal, exposed)
            totals[(flavor_name, quota.name)] = totals.get((flavor_name, quota.name), 0) + quota.nominal
            rows.append([queue.team or queue.name, queue.name, ", ".join(p.name for p in pools) or flavor_name,
                         f"`{quota.name}`", quota.nominal, _fmt(quota.borrowing_limit) if queue.cohort else "-",
                         _fmt(quota.lending_limit) if queue.cohort else "-", share])
    if not rows:
        return "No GPU quotas.\n"
    text = table(["team", "queue", "pool", "resource", "nominal", "borrowing limit", "lending limit", "share"], rows)
    sums = []
    for (flavor_name, resource), total in sorted(totals.items()):
        flavor = cluster.flavors.get(flavor_name)
        exposed = sum(p.capacity.get(resource, 0) for p in (cluster.pools_of_flavor(flavor) if flavor else []))
        sums.append([flavor_name, f"`{resource}`", total, exposed, exposed - total])
    return text + "\nTotals per flavor:\n\n" + table(["flavor", "resource", "nominal total", "pool exposes",
                                                     "unassigned"], sums)
