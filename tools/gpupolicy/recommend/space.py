"""The search space of `recommend`: knobs on a cluster's ClusterQueues, and the policy a candidate simulates.

Knobs (each names a ClusterQueue and, for quotas, a flavor and its GPU resource):
- `<queue>/<flavor>/<resource>/nominal`: the GPU nominalQuota, 0 .. the pool's room: what it exposes less the
  nominal quota of production queues and Cohorts there (`nominal_rooms`). Where the searched queues together
  ask for more than the room, their quotas are scaled down to fit in whole units (`resolved`, `apportion`), so
  every candidate keeps CAP001 true by construction;
- `<queue>/<flavor>/<resource>/borrow`: the GPU borrowingLimit, 0 .. what the flavor's pools expose beyond the
  queue's nominal quota;
- `<queue>/<flavor>/<resource>/lend`: the GPU lendingLimit, 0 .. the room, brought down to the queue's nominal
  quota when above it (CAP010);
- `<queue>/cohort`: which of the cluster's non-production cohorts the queue joins, in a flat fleet and in a
  cohort tree alike: the engine lends through the whole tree as Kueue does (simulate/quota.py, decision 0054),
  so it judges a move by what the queue can borrow in the new place (decision 0058).
- `<pool>/replicas`: a pool's replica count, which is also its sharing mode: 1 exclusive, 2 or more
  time-sliced.
  A time-sliced pool goes 2 .. twice today's, or 1 .. twice today's where it may also become exclusive; an
  exclusive pool that may become time-sliced goes 1 .. 4. Only inference pools of access mode exclusive or
  time-sliced switch (`sharing.replica_range` says which and why). Every quota in the pool's replica units
  (production's too: the same cards) is rescaled with it, rounded down (`with_replicas`);
- `<pool>/layout`: a mixed-strategy MIG pool's mig-parted layout, one of the layouts the solver accepts for
  its
  GPU: the config's and the maximal per-card combinations of plain profiles (`layouts.layout_choices`); every
  mig-* quota on the pool's flavors (production's too) is converted to the new profiles, keeping each owner's
  share of the pool's cards, rounded down (`layouts.with_layout`). A pool whose layout is searched has no
  nominal/borrow/lend knobs of its own on mig-* resources: their values would be in profiles the layout may
  drop, and the conversion already sets them from today's shares. The simulator replays each layout's
  instances (simulate/migpool.py, decision 0059).
- `<queue>/<flavor>/nvidia.com/gpu/borrow` on a flavor of another class's exclusive pool the queue holds no
  quota on (a lending knob, `lending.lendings`): a borrowing limit from a small grid (0, a quarter, half or
  all of the flavor's devices), the flavor entry added at nominal 0 where the queue does not list it; the
  lenders' reclaim stays as declared (decision 0092).
- `<pool>/split`: for a MIG pool with one whole-card sibling (an exclusive pool of the same hardware in the
  cluster, `mig_split.siblings`), how many of the two pools' nodes are MIG nodes, the others whole cards: 1 ..
  both pools' nodes less 1, without the counts after which production's nominal quota on either pool no
  longer survives a node or zone loss (CAP005; `mig_split.split_values`, categorical over the counts left).
  Both pools' zones, capacity and every GPU quota on their flavors (production's too) follow the nodes,
  rounded down (`mig_split.with_split`, applied after every other knob, so it composes with the MIG pool's
  layout knob; decision 0093).
Queues of the production tier are left as they are: their reserve is what CAP005 protects.

A candidate is simulated by rebuilding the cluster's ClusterQueues with the knob values and handing the result
to `simulate.policy.from_cluster`, so the simulated policy comes from the same code as `gpupolicy simulate`'s.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass

from ..domain.gpu_resources import is_nvidia_resource
from ..domain.quotas import flavor_capacity, flavors_of, nominal_per_pool, pool_of
from ..model import MIG_RESOURCE_PREFIX, PRODUCT_LABEL, Cluster, ClusterQueue, Fleet, ResourceGroup
from ..simulate.placement import DEFAULT_PLACEMENT
from ..simulate.policy import SimPolicy, from_cluster, pool_classes, queue_class
from . import layouts, lending, mig_split, sharing
from .layouts import LAYOUT, whole_quota
from .mig_split import SPLIT
from .rescale import with_rescaled_quotas

PRODUCTION = "production"
BORROW, LEND, COHORT, NOMINAL, REPLICAS = "borrow", "lend", "cohort", "nominal", "replicas"
QUOTA_KINDS = (NOMINAL, BORROW, LEND)
LIMIT_FIELDS = {NOMINAL: "nominal", BORROW: "borrowing_limit", LEND: "lending_limit"}  # rescale.QUOTA_KEYS


@dataclass(frozen=True)
class Knob:
    name: str  # the Optuna parameter name
    queue: str
    kind: str  # borrow | lend | cohort | nominal | replicas, layout, split (queue "", pool set)
    current: int | str
    low: int = 0
    high: int = 0  # for a nominal knob: the room its pool has for all the searched queues' nominal quota
    choices: tuple[str, ...] = ()
    flavor: str = ""
    resource: str = ""
    pool: str = ""
    # the values of a knob that is not a whole range: a lending knob's (lending.py; its flavor entry may be
    # added), a split knob's node counts (mig_split.split_values)
    grid: tuple[int, ...] = ()
    sibling: str = ""  # a split knob's whole-card pool, which takes the nodes the MIG pool gives up


def knobs(cluster: Cluster, fleet: Fleet | None = None) -> list[Knob]:
    """Every knob of the cluster, in a stable order (the order Optuna samples them in). With the whole `fleet`
    (examples and every cluster loaded), knobs the rule check would refuse are not offered: a layout must keep
    the MIG profiles the repository's workloads ask for (`layouts.requested_profiles`, WL011), and a pool
    whose
    startup-check line another pool shares gets no replica knob (`sharing.tied_pools`, POOL005)."""
    requested = layouts.requested_profiles(fleet, cluster) if fleet else frozenset()
    tied = sharing.tied_pools(fleet) if fleet else frozenset()
    found: list[Knob] = []
    searched = [cq for _, cq in sorted(cluster.cluster_queues.items()) if cq.tier != PRODUCTION and cq.cohort]
    cohorts = tuple(sorted({cq.cohort for cq in searched}))
    rooms = nominal_rooms(cluster, searched)
    for cq in searched:
        if len(cohorts) > 1:
            found.append(Knob(f"{cq.name}/cohort", cq.name, COHORT, cq.cohort, choices=cohorts))
        for flavor, quota in _gpu_quotas(cq):
            found.extend(_quota_knobs(cluster, cq, flavor, quota, rooms))
    found.extend(lending_knobs(cluster, searched))
    layout = layout_knobs(cluster, requested)
    converted = {flavor for knob in layout for flavor in flavors_of(cluster, knob.pool)}
    found = [k for k in found if not (k.flavor in converted and k.resource.startswith(MIG_RESOURCE_PREFIX))]
    return found + replica_knobs(cluster, tied) + layout + split_knobs(cluster)


def split_knobs(cluster: Cluster) -> list[Knob]:
    """`<pool>/split` for each MIG pool with one whole-card sibling (`mig_split.splits`): its node count,
    today's its current value, sampled over the counts that keep CAP005 true."""
    return [
        Knob(
            f"{found.mig}/{SPLIT}",
            "",
            SPLIT,
            found.current,
            min(found.values),
            max(found.values),
            pool=found.mig,
            sibling=found.whole,
            grid=found.values,
        )
        for found in mig_split.splits(cluster)
    ]


def lending_knobs(cluster: Cluster, searched: list[ClusterQueue]) -> list[Knob]:
    """`<queue>/<flavor>/nvidia.com/gpu/borrow` where a queue may borrow another class's pool (recommend/
    lending.py), 0 (today: no borrowing there) or one of `lending.grid`'s limits."""
    policy = from_cluster(cluster)
    queue_classes = {name: queue_class(queue) for name, queue in policy.queues.items()}
    return [
        Knob(
            f"{found.queue}/{found.flavor}/{lending.GPU}/{BORROW}",
            found.queue,
            BORROW,
            0,
            0,
            found.devices,
            flavor=found.flavor,
            resource=lending.GPU,
            pool=found.pool,
            grid=lending.grid(found.devices),
        )
        for found in lending.lendings(cluster, searched, pool_classes(policy), queue_classes)
    ]


def layout_knobs(cluster: Cluster, requested: frozenset[str] = frozenset()) -> list[Knob]:
    """`<pool>/layout` for each MIG pool whose layout can be searched (`layouts.searchable_pools`), today's
    layout its current value."""
    return [
        Knob(f"{pool.name}/{LAYOUT}", "", LAYOUT, pool.mig_layout, choices=choices, pool=pool.name)
        for pool, choices in layouts.searchable_pools(cluster, requested)
    ]


def replica_knobs(cluster: Cluster, tied: frozenset[str] = frozenset()) -> list[Knob]:
    """`<pool>/replicas` for each pool some flavor selects that `sharing.replica_range` gives a range: 1
    (exclusive) or 2 (the device plugin's minimum) to twice today's count for a time-sliced pool, 1 .. 4 for
    an exclusive inference pool. Values of the other knobs stay in today's replica units; `with_params`
    rescales every quota
    on the pool when the count changes. Pools in `tied` are left out."""
    found = []
    for pool in sorted(cluster.pools, key=lambda p: p.name):
        if pool.name in tied or not flavors_of(cluster, pool.name):
            continue
        if (bounds := sharing.replica_range(cluster, pool)) is None:
            continue
        found.append(
            Knob(
                f"{pool.name}/{REPLICAS}",
                "",
                REPLICAS,
                sharing.current_replicas(pool),
                *bounds,
                pool=pool.name,
            )
        )
    return found


def with_replicas(cluster: Cluster, pool_name: str, old: int, new: int) -> Cluster:
    """The cluster with the pool at `new` time-slicing replicas (1: exclusive) instead of `old` (1:
    exclusive), its capacity and every GPU quota on it (of ClusterQueues and Cohorts alike, production's
    included: the same cards
    in the new unit) rescaled, its mode and product label switched when one side is 1 (`sharing`)."""
    flavors = flavors_of(cluster, pool_name)
    scale = dict.fromkeys(flavors, (old, new))
    pool = next(p for p in cluster.pools if p.name == pool_name)
    changed = sharing.pool_with_replicas(pool, old, new)
    pools = [changed if p.name == pool_name else p for p in cluster.pools]
    product = (pool.node_labels.get(PRODUCT_LABEL, ""), changed.node_labels.get(PRODUCT_LABEL, ""))
    selecting = {
        name: sharing.flavor_with_product(f, *product) if name in flavors else f
        for name, f in cluster.flavors.items()
    }
    return dataclasses.replace(with_rescaled_quotas(cluster, scale), pools=pools, flavors=selecting)


def _quota_knobs(cluster: Cluster, cq: ClusterQueue, flavor: str, quota, rooms: dict) -> list[Knob]:
    """The nominal quota (where its pool's room is known), borrowing and lending limits of one GPU quota."""
    exposed = int(flavor_capacity(cluster, flavor).get(quota.name, 0))
    nominal = int(quota.nominal)
    prefix = f"{cq.name}/{flavor}/{quota.name}"
    found = []
    pool = pool_of(cluster, flavor)
    room = rooms.get((pool.name, quota.name)) if pool else None
    if room is not None:
        found.append(
            Knob(
                f"{prefix}/{NOMINAL}",
                cq.name,
                NOMINAL,
                nominal,
                0,
                room,
                flavor=flavor,
                resource=quota.name,
                pool=pool.name,
            )
        )
    borrow = _whole(quota.borrowing_limit, exposed - nominal)
    found.append(
        Knob(
            f"{prefix}/{BORROW}",
            cq.name,
            BORROW,
            borrow,
            0,
            max(exposed - nominal, borrow),
            flavor=flavor,
            resource=quota.name,
        )
    )
    if nominal > 0:
        lend = _whole(quota.lending_limit, nominal)
        found.append(
            Knob(
                f"{prefix}/{LEND}",
                cq.name,
                LEND,
                lend,
                0,
                max(room or nominal, lend),
                flavor=flavor,
                resource=quota.name,
            )
        )
    return found


def nominal_rooms(cluster: Cluster, searched: list[ClusterQueue]) -> dict[tuple[str, str], int]:
    """(pool, GPU resource) -> the nominal quota the searched queues may hold there together: what the pool
    exposes less every other queue's and Cohort's nominal quota on it (production's reserve among them), the
    sum CAP001 checks. A pool whose searched quota is already over its room (a CAP001 finding) gets no nominal
    knob."""
    names = {cq.name for cq in searched}
    held = {(cq.name, flavor, quota.name) for cq in searched for flavor, quota in _gpu_quotas(cq)}
    rooms = {}
    for (pool_name, resource), entries in nominal_per_pool(cluster).items():
        mine = [
            e
            for e in entries
            if e.kind == "ClusterQueue" and e.owner in names and (e.owner, e.flavor, resource) in held
        ]
        if not mine:
            continue
        others = sum(e.quota.nominal for e in entries if e not in mine)
        room = math.floor(pool_capacity(cluster, pool_name).get(resource, 0) - others)
        if sum(int(e.quota.nominal) for e in mine) <= room:
            rooms[(pool_name, resource)] = room
    return rooms


def pool_capacity(cluster: Cluster, pool_name: str) -> dict[str, int]:
    return next((p.capacity for p in cluster.pools if p.name == pool_name), {})


def _gpu_quotas(cq: ClusterQueue):
    """(flavor, quota) of the GPU resource each flavor actually holds: the one with quota or a borrowing limit
    (a MIG flavor lists nvidia.com/gpu at 0 beside its mig-* resource)."""
    for group in cq.resource_groups:
        for fq in group.flavors:
            held = [
                q for q in fq.resources if is_nvidia_resource(q.name) and (q.nominal or q.borrowing_limit)
            ]
            if len(held) == 1 and whole_quota(held[0]):
                yield fq.flavor, held[0]


def _whole(limit: int | float | None, unlimited: int) -> int:
    return max(unlimited, 0) if limit is None else int(limit)


def current_values(knob_list: list[Knob]) -> dict[str, int | str]:
    return {knob.name: knob.current for knob in knob_list}


def params_key(params: Mapping[str, int | str]) -> tuple:
    """A candidate's parameters as a hashable key, the same whatever their order."""
    return tuple(sorted(params.items()))


def changes(knob_list: list[Knob], params: Mapping[str, int | str]) -> list[tuple[Knob, int | str]]:
    """The knobs whose value, once resolved (`resolved`), differs from the repository's, with the new
    value."""
    values = resolved(knob_list, params)
    return [(knob, values[knob.name]) for knob in knob_list if values[knob.name] != knob.current]


def resolved(knob_list: list[Knob], params: Mapping[str, int | str]) -> dict[str, int | str]:
    """The values a candidate's parameters stand for, valid by construction: knobs missing from `params` keep
    the repository's value; the searched queues' nominal quotas on a pool that together exceed its room
    (CAP001) are scaled down to fit it (`apportion`); a lending limit above its queue's nominal quota comes
    down to it
    (CAP010)."""
    values = current_values(knob_list) | dict(params)
    groups: dict[tuple[str, str], list[Knob]] = {}
    for knob in knob_list:
        if knob.kind == NOMINAL:
            groups.setdefault((knob.pool, knob.resource), []).append(knob)
    for group in groups.values():
        values.update(apportion({k.name: int(values[k.name]) for k in group}, group[0].high))
    for knob in knob_list:
        nominal = f"{knob.queue}/{knob.flavor}/{knob.resource}/{NOMINAL}"
        if knob.kind == LEND and nominal in values:
            values[knob.name] = min(int(values[knob.name]), int(values[nominal]))
    return values


def apportion(wanted: Mapping[str, int], room: int) -> dict[str, int]:
    """Whole amounts summing to at most `room`: `wanted` itself when it fits, else each share of the room in
    proportion to what was wanted, rounded down, the units left over going to the largest remainders (ties by
    name), so the result is a function of its input alone."""
    total = sum(wanted.values())
    if total <= room:
        return dict(wanted)
    exact = {name: amount * room / total for name, amount in wanted.items()}
    result = {name: math.floor(value) for name, value in exact.items()}
    left = room - sum(result.values())
    for name in sorted(exact, key=lambda n: (result[n] - exact[n], n))[:left]:
        result[name] += 1
    return result


def with_params(cluster: Cluster, knob_list: list[Knob], params: Mapping[str, int | str]) -> Cluster:
    """A shallow copy of the cluster whose ClusterQueues carry the knob values, then whose time-sliced pools
    have their new replica counts (`with_replicas`), then whose MIG pools have their new layouts
    (`layouts.with_layout`), then whose split MIG pools have their new node counts (`mig_split.with_split`);
    the model is never mutated."""
    queues = dict(cluster.cluster_queues)
    found = changes(knob_list, params)
    for knob, value in found:
        if knob.kind not in (REPLICAS, LAYOUT, SPLIT):
            queues[knob.queue] = _changed(queues[knob.queue], knob, value)
    cluster = dataclasses.replace(cluster, cluster_queues=queues, derived={})
    for knob, value in found:
        if knob.kind == REPLICAS:
            cluster = with_replicas(cluster, knob.pool, int(knob.current), int(value))
    for knob, value in found:
        if knob.kind == LAYOUT:
            cluster = layouts.with_layout(cluster, knob.pool, str(value))
    for knob, value in found:
        if knob.kind == SPLIT:
            cluster = mig_split.with_split(cluster, knob.pool, knob.sibling, int(value))
    return cluster


def _changed(cq: ClusterQueue, knob: Knob, value: int | str) -> ClusterQueue:
    if knob.kind == COHORT:
        return dataclasses.replace(cq, cohort=str(value))
    if knob.grid:  # a lending knob: the queue may not list the flavor yet
        cq = lending.with_entry(cq, knob.flavor)
    field = LIMIT_FIELDS[knob.kind]
    groups = []
    for group in cq.resource_groups:
        flavors = []
        for fq in group.flavors:
            if fq.flavor == knob.flavor:
                fq = dataclasses.replace(
                    fq,
                    resources=tuple(
                        dataclasses.replace(q, **{field: value}) if q.name == knob.resource else q
                        for q in fq.resources
                    ),
                )
            flavors.append(fq)
        groups.append(ResourceGroup(group.covered_resources, tuple(flavors)))
    return dataclasses.replace(cq, resource_groups=tuple(groups))


def candidate_policy(
    cluster: Cluster,
    knob_list: list[Knob],
    params: Mapping[str, int | str],
    placement: str = DEFAULT_PLACEMENT,
) -> SimPolicy:
    return from_cluster(with_params(cluster, knob_list, params), placement)
