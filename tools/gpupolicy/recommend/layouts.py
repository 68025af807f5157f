"""MIG layouts as a knob of `recommend`: which layouts a pool may take, and the cluster a new layout makes.

`<pool>/layout` is a categorical knob for each MIG pool of the mixed strategy that a flavor of the cluster
selects (`searchable_pools`; `space.layout_knobs` makes the knobs). Its choices (`layout_choices`) are the
layouts the catalog's solver accepts for the pool's GPU:
- every layout of the cluster's mig-parted config whose entries apply to the GPU, put every GPU of the node in
  MIG
  mode with at least one instance, and pass the same check MIG001/MIG002 run (`mig.check_config`);
- every *maximal* per-card combination of the GPU's plain profiles (no `+me`/`+gfx` variants: one media engine
  per card, and no workload asks for them), the same on every card, that `mig.solve` places; maximal means no
  further instance of any plain profile would still place, so no slice of a card is left idle by construction.
  One equal (same per-card counts) to a config layout takes the config's name; a new one is named after its
  counts (`all-2x1g.10gb-1x2g.20gb-1x3g.40gb`), a valid label value for `nvidia.com/mig.config`.
Choices are sorted by name, so the sampler's seed gives the same candidates on every machine.

Left out: pools of the `single` strategy (one resource name for every profile: the quota arithmetic below has
no per-profile unit to convert), pools whose layout today is not itself a choice (it leaves GPUs out of MIG
mode, or does not place; trial 0 must be the repository's layout), and pools where some owner's
`nvidia.com/mig-*` quotas on a flavor set a borrowing or lending limit on some profiles and not on others (a
mix of "unlimited" and a number has no share to keep).

`with_layout` is the candidate the simulator replays: the pool's layout, its `nvidia.com/mig.config` label,
the layout's mig-parted entry (added for a generated one), its capacity recomputed as `build._with_capacity`
does, and every ClusterQueue's and Cohort's quota on the pool's flavors converted to the new profiles: each
owner keeps its *share of the pool*, each profile weighted by its compute slices (`catalog.card_fraction`),
and gets `floor(share x exposed)` of each new profile, for nominalQuota and, where set, borrowingLimit and
lendingLimit. Rounding down keeps CAP001 (nominal quotas within what the pool exposes) and CAP010 (lending
within nominal) true; production's quota is converted too (the same cards in new units), so CAP005's reserve
stays. cpu and memory quota stay as they are: the cards behind them are the same or fewer after rounding
(WL006 counts cards).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..domain import capacity, catalog, mig
from ..domain.capacity import pool_capacity
from ..domain.quotas import flavors_of
from ..domain.workloads import containers, gpu_resources, pod_specs, workloads
from ..findings import Location
from ..model import (
    MIG_CONFIG_LABEL,
    MIG_RESOURCE_PREFIX,
    Cluster,
    ConfigEntry,
    FlavorQuotas,
    Fleet,
    Pool,
    ResourceGroup,
)
from ..model import ResourceQuota as Quota

LAYOUT = "layout"
LIMITS = ("borrowing_limit", "lending_limit")
# A label value (k8s.io/apimachinery validation.IsValidLabelValue): at most 63 characters of [A-Za-z0-9._-],
# alphanumeric at both ends; mig-manager reads the layout name from the node label nvidia.com/mig.config.
_LABEL_VALUE = re.compile(r"^(?:[A-Za-z0-9](?:[A-Za-z0-9._-]{0,61}[A-Za-z0-9])?)$")

PerCard = dict[int, dict[str, int]]  # GPU index -> {profile: instances}, as mig.layout_devices returns it


@dataclass(frozen=True)
class LayoutChoice:
    name: str
    per_card: tuple[tuple[int, tuple[tuple[str, int], ...]], ...]  # hashable form of PerCard
    entries: tuple[dict, ...]  # the mig-parted entries (as build.py stores them: the parsed list)
    generated: bool  # not in the config: `--apply` appends it to the mig-parted file


def valid_label_value(name: str) -> bool:
    return bool(_LABEL_VALUE.match(name))


def plain_profiles(model: catalog.GPUModel) -> list[catalog.MigProfile]:
    """The GPU's profiles without attributes (`+me`, `+gfx`, `-me`), in the catalog's order (smallest
    first)."""
    return [profile for profile in model.mig_profiles.values() if not profile.attributes]


@functools.cache
def maximal_combinations(model_key: str) -> tuple[tuple[tuple[str, int], ...], ...]:
    """Every per-card combination of plain profiles that `mig.solve` places and that no further instance of a
    plain profile would still fit, as sorted (profile, count) pairs. Counts are tried profile by profile, and
    a
    count that does not place ends that profile's range: a larger one cannot place either."""
    model = catalog.gpu(model_key)
    profiles = [p.name for p in plain_profiles(model)]
    found: list[tuple[tuple[str, int], ...]] = []

    def places(counts: Mapping[str, int]) -> bool:
        return mig.solve(model, counts) is not None

    def extend(position: int, counts: dict[str, int]) -> None:
        if position == len(profiles):
            if counts and not any(places(counts | {p: counts.get(p, 0) + 1}) for p in profiles):
                found.append(tuple(sorted(counts.items())))
            return
        name = profiles[position]
        extend(position + 1, counts)
        for count in range(1, model.mig_profiles[name].max_count + 1):
            if not places(counts | {name: count}):
                break
            extend(position + 1, counts | {name: count})

    extend(0, {})
    return tuple(found)


def generated_name(counts: Mapping[str, int], model: catalog.GPUModel) -> str:
    """`all-2x1g.10gb-1x2g.20gb-1x3g.40gb`: every card, each profile's count, in the catalog's profile
    order."""
    order = list(model.mig_profiles)
    return "all-" + "-".join(f"{counts[p]}x{p}" for p in sorted(counts, key=order.index))


def generated_entries(counts: Mapping[str, int], model: catalog.GPUModel) -> tuple[dict, ...]:
    """The mig-parted entry of a generated layout: every GPU of the model (its PCI IDs), MIG on, these
    counts."""
    order = list(model.mig_profiles)
    return (
        {
            "device-filter": list(model.pci_device_ids),
            "devices": "all",
            "mig-enabled": True,
            "mig-devices": {p: counts[p] for p in sorted(counts, key=order.index)},
        },
    )


def accepted_per_card(name: str, entries: Any, pool: Pool, model: catalog.GPUModel) -> PerCard | None:
    """The layout's instances per GPU of the pool's node when it is a choice for the pool, else None: its
    entries apply to the GPU, every GPU is in MIG mode with at least one instance, and the MIG rules' check
    (`mig.check_config` on this GPU, with the pool's strategy) finds no error."""
    config, problems = mig.parse_config({"version": "v1", "mig-configs": {name: entries}})
    if config is None or any(p.severity == "error" for p in problems):
        return None
    if any(p.severity == "error" for p in mig.check_config(config, [model.key], pool.mig_strategy)):
        return None
    per_card = mig.layout_devices(config.layouts.get(name, ()), pool.gpus_per_node, model)
    if len(per_card) != pool.gpus_per_node or not all(per_card.values()):
        return None
    return per_card


def _frozen(per_card: PerCard) -> tuple[tuple[int, tuple[tuple[str, int], ...]], ...]:
    return tuple((index, tuple(sorted(counts.items()))) for index, counts in sorted(per_card.items()))


def layout_choices(cluster: Cluster, pool: Pool) -> dict[str, LayoutChoice]:
    """name -> choice, sorted by name (empty for a pool this knob leaves out; see the module docstring)."""
    model = catalog.GPUS.get(pool.gpu_model)
    if pool.sharing != "mig" or pool.mig_strategy != "mixed" or model is None or not model.mig_capable:
        return {}
    return dict(_choices(cluster.mig_configs, pool, model))


def _choices(configs: Mapping[str, ConfigEntry], pool: Pool, model: catalog.GPUModel):
    found: dict[str, LayoutChoice] = {}
    for name, entry in configs.items():
        per_card = accepted_per_card(name, entry.data, pool, model)
        if per_card is not None:
            found[name] = LayoutChoice(name, _frozen(per_card), tuple(entry.data), generated=False)
    known = {choice.per_card for choice in found.values()}
    for pairs in maximal_combinations(model.key):
        counts = dict(pairs)
        per_card = _frozen({index: counts for index in range(pool.gpus_per_node)})
        name = generated_name(counts, model)
        # equal to a config layout: that one is the choice; a name the config already uses for other counts
        # (or not a label value) cannot be written, so the combination is left out rather than renamed
        if per_card in known or name in configs or not valid_label_value(name):
            continue
        found[name] = LayoutChoice(name, per_card, generated_entries(counts, model), generated=True)
    return sorted(found.items())


def _mig_quotas(fq: FlavorQuotas) -> list[Quota]:
    return [q for q in fq.resources if q.name.startswith(MIG_RESOURCE_PREFIX)]


def _owners(cluster: Cluster):
    return [*cluster.cluster_queues.values(), *cluster.cohorts.values()]


def convertible(cluster: Cluster, pool_name: str) -> bool:
    """Whether every owner's mig-* quotas on the pool's flavors have a share to keep: each limit set on all of
    its profiles or on none, every amount a whole number."""
    flavors = flavors_of(cluster, pool_name)
    for owner in _owners(cluster):
        for group in owner.resource_groups:
            for fq in group.flavors:
                if fq.flavor not in flavors:
                    continue
                quotas = _mig_quotas(fq)
                for field in LIMITS:
                    if len({getattr(q, field) is None for q in quotas}) > 1:
                        return False
                if not all(whole_quota(q) for q in quotas):
                    return False
    return True


def whole_quota(quota: Quota) -> bool:
    """Whether the quota's nominal amount and limits are whole numbers of devices (an unset limit counts)."""
    return all(
        isinstance(v, int) or (isinstance(v, float) and v.is_integer())
        for v in (quota.nominal, quota.borrowing_limit, quota.lending_limit)
        if v is not None
    )


def searchable_pools(
    cluster: Cluster, requested: frozenset[str] = frozenset()
) -> list[tuple[Pool, tuple[str, ...]]]:
    """(pool, its layout choices) for each mixed-strategy MIG pool some flavor selects, whose layout today is
    a choice and whose quotas can be converted (`convertible`), by pool name. A choice must keep every profile
    of `requested` (`requested_profiles`) the pool makes today: a layout that drops one strands the workloads
    that
    ask for it (WL011 refuses it on the copy), so sampling it would only spend trials."""
    found = []
    for pool in sorted(cluster.pools, key=lambda p: p.name):
        if not flavors_of(cluster, pool.name) or not convertible(cluster, pool.name):
            continue
        choices = layout_choices(cluster, pool)
        if pool.mig_layout not in choices:
            continue
        kept = requested & profiles_of(choices[pool.mig_layout])
        choices = {name: c for name, c in choices.items() if kept <= profiles_of(c)}
        if len(choices) > 1:
            found.append((pool, tuple(choices)))
    return found


def profiles_of(choice: LayoutChoice) -> frozenset[str]:
    """The `nvidia.com/mig-*` resources a layout makes the pool expose."""
    return frozenset(capacity.mig_resource(name) for _, counts in choice.per_card for name, _ in counts)


def requested_profiles(fleet: Fleet, cluster: Cluster) -> frozenset[str]:
    """The `nvidia.com/mig-*` resources the repository's workloads for the cluster ask for: its rendered
    workloads and the examples under docs/examples/ in a namespace it has (the ones WL011 traces there)."""
    found: set[str] = set()
    for workload in workloads(fleet):
        ours = (
            workload.cluster is cluster
            if workload.cluster is not None
            else workload.namespace in cluster.namespaces
        )
        if ours:
            for _, spec, _ in pod_specs(workload):
                for _, _, container in containers(spec):
                    found.update(
                        name for name in gpu_resources(container) if name.startswith(MIG_RESOURCE_PREFIX)
                    )
    return frozenset(found)


def card_equivalents(amounts: Mapping[str, Any], model: catalog.GPUModel) -> Fraction:
    """Σ amount x the profile's share of a card, over the mig-* resources of `amounts`."""
    return sum(
        (
            Fraction(amount) * catalog.card_fraction(name, model)
            for name, amount in amounts.items()
            if name.startswith(MIG_RESOURCE_PREFIX) and amount
        ),
        Fraction(0),
    )


def converted(
    amounts: Mapping[str, Any],
    old_exposed: Mapping[str, int],
    new_exposed: Mapping[str, int],
    model: catalog.GPUModel,
) -> dict[str, int]:
    """An owner's mig-* amounts (one field: nominal, borrowing or lending) in the new layout's profiles: the
    same
    share of the pool's cards, floor(share x exposed) of each new profile (0 for a profile the layout
    drops)."""
    pool_cards = card_equivalents(old_exposed, model)
    share = card_equivalents(amounts, model) / pool_cards if pool_cards else Fraction(0)
    result = {name: 0 for name in amounts if name.startswith(MIG_RESOURCE_PREFIX)}
    for name, exposed in new_exposed.items():
        if name.startswith(MIG_RESOURCE_PREFIX):
            result[name] = math.floor(share * exposed)
    return result


def new_mig_resources(new_exposed: Mapping[str, int]) -> list[str]:
    return sorted(name for name in new_exposed if name.startswith(MIG_RESOURCE_PREFIX))


def with_layout(cluster: Cluster, pool_name: str, new_layout: str) -> Cluster:
    """The cluster with the pool cut by `new_layout` (a choice of `layout_choices`); the model is never
    mutated."""
    pool = next(p for p in cluster.pools if p.name == pool_name)
    model = catalog.gpu(pool.gpu_model)
    choice = layout_choices(cluster, pool)[new_layout]
    configs = dict(cluster.mig_configs)
    if choice.generated:
        configs[new_layout] = ConfigEntry(
            _configmap_name(cluster), new_layout, list(choice.entries), Location(mig_config_path(cluster), 0)
        )
    moved = dataclasses.replace(
        pool, mig_layout=new_layout, node_labels={**pool.node_labels, MIG_CONFIG_LABEL: new_layout}
    )
    moved = dataclasses.replace(moved, capacity=pool_capacity(moved, configs[new_layout].data, model))
    flavors = flavors_of(cluster, pool_name)
    convert = functools.partial(
        _converted_groups, flavors=flavors, old=pool.capacity, new=moved.capacity, model=model
    )
    queues = {
        name: dataclasses.replace(cq, resource_groups=convert(cq.resource_groups))
        for name, cq in cluster.cluster_queues.items()
    }
    cohorts = {
        name: dataclasses.replace(c, resource_groups=convert(c.resource_groups))
        for name, c in cluster.cohorts.items()
    }
    pools = [moved if p.name == pool_name else p for p in cluster.pools]
    return dataclasses.replace(
        cluster, pools=pools, mig_configs=configs, cluster_queues=queues, cohorts=cohorts, derived={}
    )


def mig_config_path(cluster: Cluster) -> str:
    """The file the cluster's mig-parted layouts come from (every layout of the ConfigMap shares it)."""
    return next((entry.source.path for entry in cluster.mig_configs.values() if entry.source.path), "")


def _configmap_name(cluster: Cluster) -> str:
    return next((entry.configmap for entry in cluster.mig_configs.values()), "mig-parted-config")


def _converted_groups(
    groups: tuple[ResourceGroup, ...],
    flavors: set[str],
    old: Mapping[str, int],
    new: Mapping[str, int],
    model: catalog.GPUModel,
) -> tuple[ResourceGroup, ...]:
    return tuple(_converted_group(group, flavors, old, new, model) for group in groups)


def _converted_group(
    group: ResourceGroup,
    flavors: set[str],
    old: Mapping[str, int],
    new: Mapping[str, int],
    model: catalog.GPUModel,
) -> ResourceGroup:
    """The group with its quotas on the pool's flavors converted, and the new profiles covered. Kueue requires
    every flavor of a group to list exactly the group's coveredResources, in the same order (kueue
    `apis/kueue/v1beta2/clusterqueue_types.go`, ResourceGroup: "Each flavor MUST list all the resources listed
    for this group in the same order"), so a new profile is inserted in the covered list and at the same place
    in
    every flavor (0 where the flavor is not the pool's; `covered_after`)."""
    if not any(fq.flavor in flavors and _mig_quotas(fq) for fq in group.flavors):
        return group
    covered = covered_after(group.covered_resources, new)
    fqs = []
    for fq in group.flavors:
        values = {q.name: q for q in fq.resources}
        if fq.flavor in flavors:
            values |= _converted_flavor(fq, old, new, model)
        fqs.append(
            FlavorQuotas(fq.flavor, tuple(values.get(name) or _zero_like(name, fq) for name in covered))
        )
    return ResourceGroup(covered, tuple(fqs))


def covered_after(covered: tuple[str, ...], new: Mapping[str, int]) -> tuple[str, ...]:
    """coveredResources with the new layout's mig-* resources it lacks, each inserted among the mig-* ones in
    name order (before the first that sorts after it, else after the last), the other resources where they
    were."""
    result = list(covered)
    for name in new_mig_resources(new):
        if name in result:
            continue
        migs = [i for i, other in enumerate(result) if other.startswith(MIG_RESOURCE_PREFIX)]
        later = [i for i in migs if result[i] > name]
        result.insert(later[0] if later else (migs[-1] + 1 if migs else len(result)), name)
    return tuple(result)


def _converted_flavor(
    fq: FlavorQuotas, old: Mapping[str, int], new: Mapping[str, int], model: catalog.GPUModel
) -> dict[str, Quota]:
    quotas = _mig_quotas(fq)
    names = [q.name for q in quotas] + [
        n for n in new_mig_resources(new) if n not in {q.name for q in quotas}
    ]
    fields = {"nominal": converted({q.name: q.nominal for q in quotas}, old, new, model)}
    for field in LIMITS:
        if quotas and getattr(quotas[0], field) is not None:
            fields[field] = converted({q.name: getattr(q, field) for q in quotas}, old, new, model)
    return {
        name: Quota(
            name,
            fields["nominal"].get(name, 0),
            *(fields[f].get(name, 0) if f in fields else None for f in LIMITS),
        )
        for name in names
    }


def _zero_like(name: str, fq: FlavorQuotas) -> Quota:
    """A new resource in a flavor that is not the pool's: 0, with the limits its other mig-* resources set."""
    neighbour = next(iter(_mig_quotas(fq)), None)
    limits = [0 if neighbour is not None and getattr(neighbour, f) is not None else None for f in LIMITS]
    return Quota(name, 0, *limits)
