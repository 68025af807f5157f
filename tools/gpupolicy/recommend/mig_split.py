"""The MIG-split knob of `recommend`: how many of the nodes a MIG pool shares with its whole-card sibling are
cut into MIG instances, the others serving whole cards.

Decision 0071 made this split by hand. mig-manager applies one `nvidia.com/mig.config` per node, from its
node label (NVIDIA/mig-parted `cmd/nvidia-mig-manager/main.go`, `ContinuouslySyncMigConfigChanges`), and a
pool is one set of node labels, so a split pool is two pools: the MIG pool and an exclusive pool of the same
hardware. The knob moves whole nodes between them; why nodes and not cards: decision 0093.

Which pools get the knob (`siblings`): a MIG pool (any strategy) and its *whole-card sibling* in the same
cluster: access mode and sharing `exclusive` (not isolated: a team's dedicated pool is not the search's to
shrink), the same GPU model, GPUs per node and node shape (`node: {cpu, memory}`: the nodes are the same
machines), both with at least one node, both selected by a flavor some ClusterQueue lists, every GPU quota on
their flavors a whole number. A MIG pool with several such siblings, or a sibling two MIG pools could take
nodes from, gets no knob: which pool a node leaves would be a guess.

`<mig pool>/split` = N, the MIG pool's node count, takes values from 1 to all nodes of both pools less 1:
- at least 1: a MIG pool with no node keeps its flavors, layout and device-plugin config as dead
  configuration, strands the workloads that ask for its profiles (the MIG examples: WL011, as
  `layouts.requested_profiles` keeps a layout's profiles) and has no share of anything left to scale back
  from, so the knob could not undo it;
- the whole-card side keeps at least 1 node for the same reasons;
- a value after which some production ClusterQueue's nominal quota on either pool no longer survives losing
  a node or the pool's largest zone (CAP005, `quotas.surviving_capacity`) is left out (`split_values`), the
  way the layout knob leaves out layouts WL011 would refuse: the rescaled reserve is proportional to the
  nodes, the bound is not. The values left need not be contiguous, so the knob is categorical over them.

Moving nodes (`moved_zones`): a node keeps its zone. Each node moved leaves the giving pool's zone with the
most of its nodes among the zones the receiving pool already has (so each pool stays within the zones it has
where it can, and the giver's largest zone shrinks first, which is what CAP005's zone loss measures), else the
giver's zone with the most nodes; ties by zone name. A zone left with no node is dropped from the pool.

The candidate (`with_split`): both pools' zones, their capacity (exposed devices per node x nodes: exact, in
whatever unit the pool exposes, MIG profiles and time-slicing replicas included) and every GPU quota on their
flavors, of ClusterQueues and Cohorts alike (production's too: the same share of the pool), scaled by the
pool's new over old node count and rounded down, for nominalQuota and, where set, borrowingLimit and
lendingLimit. Rounding down keeps CAP001 (the sum of floors is at most the floor of the sum) and CAP010
(a lending limit at most its nominal quota stays so) true by construction. cpu and memory quota are the files'
business (`split_edits`: moved with the GPUs, so WL006 holds); the simulator does not replay them.

Composes with the other knobs: `space.with_params` applies it last, on the cluster the quota, replica and
layout knobs made, so a new layout's per-node instances are what the moved nodes are cut into, and quota
values the other knobs set are scaled with the nodes like today's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from ..domain.gpu_resources import is_nvidia_resource
from ..domain.quotas import (
    capacity_known,
    flavors_of,
    production_nominal,
    quota_entries,
    surviving_capacity,
)
from ..model import Cluster, Pool
from .layouts import whole_quota
from .rescale import with_rescaled_quotas

SPLIT = "split"


@dataclass(frozen=True)
class Split:
    mig: str  # the MIG pool, whose node count the knob is
    whole: str  # its whole-card sibling, which takes the other nodes
    current: int  # the MIG pool's nodes today
    values: tuple[int, ...]  # the node counts the knob may take (`split_values`), today's among them


def splits(cluster: Cluster) -> list[Split]:
    """Every split the cluster can search, by MIG pool name (see the module docstring)."""
    found = []
    for mig, whole in siblings(cluster):
        values = split_values(cluster, mig, whole)
        if len(values) > 1:
            found.append(Split(mig.name, whole.name, mig.nodes, values))
    return found


def siblings(cluster: Cluster) -> list[tuple[Pool, Pool]]:
    """(MIG pool, its one whole-card sibling) pairs, by MIG pool name; ambiguous pairings are left out."""
    listed = {flavor for cq in cluster.cluster_queues.values() for flavor in cq.flavors()}
    candidates = [p for p in cluster.pools if _searchable(cluster, p, listed)]
    migs = [p for p in candidates if p.sharing == "mig"]
    wholes = [p for p in candidates if p.access_mode == "exclusive" and p.sharing == "exclusive"]
    pairs = {mig.name: [w for w in wholes if _same_hardware(mig, w)] for mig in migs}
    takers = {w.name: sum(w in found for found in pairs.values()) for w in wholes}
    return [
        (mig, found[0])
        for mig in sorted(migs, key=lambda p: p.name)
        if len(found := pairs[mig.name]) == 1 and takers[found[0].name] == 1
    ]


def _searchable(cluster: Cluster, pool: Pool, listed: set[str]) -> bool:
    flavors = flavors_of(cluster, pool.name)
    return (
        pool.nodes > 0
        and capacity_known(cluster, pool)
        and bool(flavors & listed)
        and all(whole_quota(q) for q in _pool_quotas(cluster, flavors))
    )


def _same_hardware(mig: Pool, whole: Pool) -> bool:
    return (mig.gpu_model, mig.gpus_per_node, mig.node_cpu, mig.node_memory) == (
        whole.gpu_model,
        whole.gpus_per_node,
        whole.node_cpu,
        whole.node_memory,
    )


def _pool_quotas(cluster: Cluster, flavors: set[str]):
    return (
        e.quota for e in quota_entries(cluster) if e.flavor in flavors and is_nvidia_resource(e.quota.name)
    )


def split_values(cluster: Cluster, mig: Pool, whole: Pool) -> tuple[int, ...]:
    """The MIG pool's node counts from 1 to both pools' nodes less 1 after which production's nominal quota on
    both pools still survives losing a node or the largest zone (CAP005); today's count always."""
    total = mig.nodes + whole.nodes
    return tuple(
        nodes
        for nodes in range(1, total)
        if nodes == mig.nodes
        or reserve_survives(with_split(cluster, mig.name, whole.name, nodes), (mig, whole))
    )


def reserve_survives(cluster: Cluster, pools: tuple[Pool, ...]) -> bool:
    """Whether production ClusterQueues' nominal quota on each of `pools` fits what the pool exposes after its
    worst failure (the check CAP005 makes)."""
    names = {pool.name for pool in pools}
    by_name = {pool.name: pool for pool in cluster.pools}
    return all(
        sum(entry.quota.nominal for entry in entries) <= surviving_capacity(by_name[pool], resource)[1]
        for (pool, resource), entries in production_nominal(cluster).items()
        if pool in names
    )


def moved_zones(giver: Mapping[str, int], receiver: Mapping[str, int], count: int):
    """(giver's zones, receiver's zones) after `count` nodes move from giver to receiver, one at a time as the
    module docstring says; zones left without a node are dropped."""
    give, take = dict(giver), dict(receiver)
    for _ in range(count):
        zone = min(
            (z for z, n in give.items() if n > 0),
            key=lambda z: (take.get(z, 0) == 0, -give[z], z),
        )
        give[zone] -= 1
        take[zone] = take.get(zone, 0) + 1
    return _kept(give), _kept(take)


def _kept(zones: dict[str, int]) -> dict[str, int]:
    return {zone: nodes for zone, nodes in zones.items() if nodes > 0}


def split_zones(mig: Pool, whole: Pool, nodes: int) -> tuple[dict[str, int], dict[str, int]]:
    """(MIG pool's zones, whole pool's zones) with `nodes` nodes on the MIG side."""
    if nodes >= mig.nodes:
        whole_zones, mig_zones = moved_zones(whole.zones, mig.zones, nodes - mig.nodes)
    else:
        mig_zones, whole_zones = moved_zones(mig.zones, whole.zones, mig.nodes - nodes)
    return mig_zones, whole_zones


def with_split(cluster: Cluster, mig_name: str, whole_name: str, nodes: int) -> Cluster:
    """The cluster with `nodes` of the two pools' nodes on the MIG side (see the module docstring); the model
    is never mutated."""
    mig = next(p for p in cluster.pools if p.name == mig_name)
    whole = next(p for p in cluster.pools if p.name == whole_name)
    if nodes == mig.nodes:
        return cluster
    mig_zones, whole_zones = split_zones(mig, whole, nodes)
    moved = {mig_name: _with_zones(mig, mig_zones), whole_name: _with_zones(whole, whole_zones)}
    scale = {
        flavor: (before.nodes, moved[name].nodes)
        for name, before in ((mig_name, mig), (whole_name, whole))
        for flavor in flavors_of(cluster, name)
    }
    pools = [moved.get(p.name, p) for p in cluster.pools]
    return dataclasses.replace(with_rescaled_quotas(cluster, scale), pools=pools)


def _with_zones(pool: Pool, zones: dict[str, int]) -> Pool:
    """The pool on these zones: what it exposes per node times its new node count (exact: capacity is built
    per node, `capacity.pool_capacity`)."""
    return dataclasses.replace(pool, zones=zones, capacity=pool.capacity_at(sum(zones.values())))
