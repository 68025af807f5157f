"""The files a MIG split (`<pool>/split`, recommend/mig_split.py) touches, edited round-trip through
`CandidateEditor` (recommend/edits.py).

For `<mig pool>/split` = N (the values come from `mig_split.with_split`, applied to the cluster the other
knobs made, so the files say what the simulator replayed):
- both pools' `pools/<pool>/pool.yaml` `spec.zones`: each zone's node count; a zone the pool leaves is
  removed, one it enters is added among the others in name order. No comment there states a count (decision
  0090); the history comments some pools carry ("the other 3 nodes became ...", decision 0071) stay;
- every ClusterQueue and Cohort with GPU quota on the two pools' flavors: nominalQuota, borrowingLimit and
  lendingLimit as scaled. A ClusterQueue's cpu and memory move with its GPUs as for a quota knob
  (`CandidateEditor._set_limit`: on the flavor itself in the old queue shape, else on its `cpu` flavor by the
  per-device share `cpu_share` derives), so the cards it gains keep the cpu/memory WL006 demands; a Cohort's
  GPU quota changes alone;
- the queue files' header blocks and the team namespaces' ResourceQuotas (CAP015) follow when the edited copy
  is re-loaded (`edits.refreshed_headers`, `CandidateEditor.set_namespace_quotas`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..domain.gpu_resources import is_nvidia_resource
from ..domain.quotas import flavors_of
from ..editing import same_style
from ..model import Cluster, K8sObject, Pool
from . import cpu_share, mig_split
from .rescale import QUOTA_KEYS
from .space import LIMIT_FIELDS, Knob, with_params

# model field -> the kind of quota knob whose `_set_limit` writes it (and moves cpu/memory with it)
FIELDS = {field: kind for kind, field in LIMIT_FIELDS.items()}
Source = Callable[
    [K8sObject, tuple[str, ...]], str
]  # the file that sets a field of an object (edits._source)


def set_splits(
    editor: Any,
    cluster: Cluster,
    knob_list: list[Knob],
    params: Mapping[str, int | str],
    found: list[tuple[Knob, int | str]],
    source_of: Source,
) -> None:
    """Every split change of `found` (knob, new value) written in `editor` (a CandidateEditor), each on the
    cluster the other knobs and the splits before it made, in `space.with_params`'s order."""
    splits = [(knob, int(value)) for knob, value in found if knob.kind == mig_split.SPLIT]
    if not splits:
        return
    others = dict(params) | {knob.name: knob.current for knob, _ in splits}
    state = with_params(cluster, knob_list, others)
    for knob, nodes in splits:
        after = mig_split.with_split(state, knob.pool, knob.sibling, nodes)
        set_split(editor, state, after, (knob.pool, knob.sibling), source_of)
        state = after


def set_split(
    editor: Any, before: Cluster, after: Cluster, pools: tuple[str, str], source_of: Source
) -> None:
    """The files of one split: both pools' zones, then every quota on their flavors (module docstring)."""
    for name in pools:
        _set_zones(editor, next(p for p in after.pools if p.name == name))
    flavors = set().union(*(flavors_of(before, name) for name in pools))
    for name, cq in before.cluster_queues.items():
        changed = after.cluster_queues[name]
        if cq.resource_groups != changed.resource_groups and cq.obj is not None:
            spec = editor._document(source_of(cq.obj, ("spec",)), "ClusterQueue", name)["spec"]
            for flavor, resource, field, value in _changes(cq, changed, flavors):
                ratio = cpu_share.per_device(before, cq, flavor, resource)
                knob = Knob("", name, FIELDS[field], 0, flavor=flavor, resource=resource)
                editor._set_limit(spec, knob, int(value), ratio)
    for name, cohort in before.cohorts.items():
        changed = after.cohorts[name]
        if cohort.resource_groups != changed.resource_groups and cohort.obj is not None:
            spec = editor._document(source_of(cohort.obj, ("spec",)), "Cohort", name)["spec"]
            for flavor, resource, field, value in _changes(cohort, changed, flavors):
                _set_in_spec(spec, flavor, resource, field, int(value))


def _changes(before: Any, after: Any, flavors: set[str]):
    """(flavor, GPU resource, model field, new value) for each quota field the split changes."""
    for old_group, new_group in zip(before.resource_groups, after.resource_groups, strict=True):
        for old_fq, new_fq in zip(old_group.flavors, new_group.flavors, strict=True):
            if old_fq.flavor not in flavors:
                continue
            for old, new in zip(old_fq.resources, new_fq.resources, strict=True):
                if not is_nvidia_resource(old.name):
                    continue
                for field in FIELDS:
                    if getattr(old, field) != getattr(new, field):
                        yield old_fq.flavor, old.name, field, getattr(new, field)


def _set_in_spec(spec: Any, flavor: str, resource: str, field: str, value: int) -> None:
    key = QUOTA_KEYS[field]
    for group in spec.get("resourceGroups") or ():
        for entry in group.get("flavors") or ():
            if entry.get("name") != flavor:
                continue
            for quota in entry.get("resources") or ():
                if quota.get("name") == resource and key in quota:
                    quota[key] = same_style(quota.get(key), value)


def _set_zones(editor: Any, pool: Pool) -> None:
    """pool.yaml's `spec.zones` made the model's: counts set, zones left removed, zones entered inserted in
    name order among the others, each in the style of its neighbours."""
    zones = editor._document(pool.path, "Pool", pool.name)["spec"]["zones"]
    for zone in [z for z in zones if z not in pool.zones]:
        del zones[zone]
    for zone, nodes in sorted(pool.zones.items()):
        if zone in zones:
            zones[zone] = same_style(zones[zone], nodes)
            continue
        keys = list(zones)
        position = next((i for i, other in enumerate(keys) if other > zone), len(keys))
        zones.insert(position, zone, nodes)
