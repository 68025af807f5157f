"""The quota matrix: team x pool x resource, with borrowing and lending, and each team's share of the pool."""

from __future__ import annotations

from .. import quotas
from ..model import Cluster, ResourceQuota
from . import Context, table


def pages(context: Context) -> dict[str, str]:
    text = context.header("Quota matrix")
    text += ("Nominal quota is guaranteed; a queue in a cohort may borrow up to its borrowing limit from what "
             "others do not use, and lends at most its lending limit. A cohort's own quota is guaranteed too and "
             "lent to its member queues. *Share* is the nominal quota as a share of what the flavor's pools "
             "expose for that resource.\n\n")
    for cluster in context.fleet.clusters.values():
        text += f"## {cluster.name}\n\n" + _matrix(cluster) + "\n"
    return {"quotas.md": text}


def _fmt(value: object) -> str:
    return "unlimited" if value is None else str(value)


def _share(nominal: float, exposed: float) -> str:
    """The quota as a percentage of what its flavor's pools expose."""
    return quotas.share_text(nominal, exposed) or "-"


def _matrix(cluster: Cluster) -> str:
    rows = []
    for queue in cluster.cluster_queues.values():
        for flavor_name, quota in queue.quotas():
            cpu_flavor = flavor_name in cluster.flavors and cluster.flavors[flavor_name].is_cpu  # no GPU (WL013)
            if quotas.is_gpu_resource(quota.name) and not cpu_flavor:
                rows.append(_row(cluster, queue.team or queue.name, queue.name, flavor_name, quota, bool(queue.cohort)))
    for entry in quotas.quota_entries(cluster):  # a Cohort's own quota is guaranteed too (lent to its members)
        if entry.kind == "Cohort" and quotas.is_gpu_resource(entry.quota.name):
            rows.append(_row(cluster, "-", entry.label, entry.flavor, entry.quota, True))
    if not rows:
        return "No GPU quotas.\n"
    text = table(["team", "queue", "pool", "resource", "nominal", "borrowing limit", "lending limit", "share"], rows)
    sums = []
    for (flavor_name, resource), total in sorted(quotas.nominal_per_flavor(cluster).items()):
        if flavor_name in cluster.flavors and cluster.flavors[flavor_name].is_cpu:
            continue
        exposed = quotas.flavor_capacity(cluster, flavor_name).get(resource, 0)
        sums.append([flavor_name, f"`{resource}`", total, exposed, exposed - total])
    return text + "\nTotals per flavor:\n\n" + table(["flavor", "resource", "nominal total", "pool exposes",
                                                     "unassigned"], sums)


def _row(cluster: Cluster, team: str, owner: str, flavor_name: str, quota: ResourceQuota, in_cohort: bool) -> list:
    pools = quotas.pools_of(cluster, flavor_name)
    exposed = quotas.flavor_capacity(cluster, flavor_name).get(quota.name, 0)
    return [team, owner, ", ".join(p.name for p in pools) or flavor_name, f"`{quota.name}`", quota.nominal,
            _fmt(quota.borrowing_limit) if in_cohort else "-", _fmt(quota.lending_limit) if in_cohort else "-",
            _share(quota.nominal, exposed)]
