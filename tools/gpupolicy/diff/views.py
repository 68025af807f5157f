"""One side of a fleet flattened to `{key: value}` for the diff sections the typed model does not cover:
namespace ResourceQuotas and LimitRanges, node selection (labels, taints, tolerations, selectors), labels with
meaning, pool declarations and upgrade plans. `diff.changed` compares two such dicts; each function here reads
one side.

Values are text (a quantity as written, a list as one sorted line), so equal meaning with equal text compares
equal; the quota views compare parsed amounts (see `diff`), where "48" and 48 are the same quota.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from ..model import Fleet, K8sObject
from ..upgrade.plans import PLAN_DIR

# Fields that decide which nodes a pod, a flavor or a driver lands on (ResourceFlavor nodeLabels/nodeTaints/
# tolerations, NVIDIADriver nodeSelector/tolerations, a ClusterQueue's namespaceSelector, a pod template's
# nodeSelector/tolerations/affinity), wherever they sit in an object.
PLACEMENT_FIELDS = (
    "nodeLabels",
    "nodeTaints",
    "tolerations",
    "nodeSelector",
    "namespaceSelector",
    "affinity",
)
# Label prefixes the fleet gives meaning to (conventions: "Labels with meaning"): gpupolicy.io/*, the GPU
# Operator's and Kueue's.
MEANINGFUL_LABELS = ("gpupolicy.io/", "nvidia.com/", "kueue.x-k8s.io/")
# pool.yaml fields the "Pool hardware" section already shows (model, GPUs per node, access mode, layout,
# replicas).
POOL_HARDWARE_FIELDS = ("gpu", "accessMode", "mig", "timeSlicing")


def _objects(fleet: Fleet, kinds: Iterable[str] | None = None) -> Iterator[tuple[str, K8sObject]]:
    wanted = set(kinds) if kinds is not None else None
    for name, cluster in sorted(fleet.clusters.items()):
        for obj in cluster.objects:
            if wanted is None or obj.kind in wanted:
                yield name, obj


def _where(obj: K8sObject) -> str:
    return f"{obj.namespace}/{obj.name}" if obj.namespace else obj.name


def namespace_quotas(fleet: Fleet) -> dict[tuple, Any]:
    """(cluster, namespace, quota, resource) -> the ResourceQuota's `spec.hard` value."""
    found: dict[tuple, Any] = {}
    for cluster, obj in _objects(fleet, ("ResourceQuota",)):
        hard = obj.spec.get("hard")
        for resource, value in hard.items() if isinstance(hard, dict) else ():
            found[(cluster, obj.namespace, obj.name, str(resource))] = value
    return found


def limit_ranges(fleet: Fleet) -> dict[tuple, Any]:
    """(cluster, namespace, limit range, type, setting, resource) -> the LimitRange value."""
    found: dict[tuple, Any] = {}
    for cluster, obj in _objects(fleet, ("LimitRange",)):
        limits = obj.spec.get("limits")
        for item in limits if isinstance(limits, list) else ():
            if not isinstance(item, dict):
                continue
            for setting, values in item.items():
                for resource, value in values.items() if isinstance(values, dict) else ():
                    found[
                        (cluster, obj.namespace, obj.name, str(item.get("type", "")), setting, str(resource))
                    ] = value
    return found


def placement(fleet: Fleet) -> dict[tuple, str]:
    """(cluster, kind, object, field path) -> the node-selection field as one line of text."""
    found: dict[tuple, str] = {}
    for cluster, obj in _objects(fleet):
        for path, value in _placement_fields(obj.body, ()):
            found[(cluster, obj.kind, _where(obj), ".".join(path))] = _text(value)
    return found


def _placement_fields(value: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            if key in PLACEMENT_FIELDS:
                yield (*path, str(key)), inner
            elif key != "metadata":
                yield from _placement_fields(inner, (*path, str(key)))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _placement_fields(inner, (*path, str(index)))


def meaningful_labels(fleet: Fleet) -> dict[tuple, str]:
    """(cluster, kind, object, label) -> value, for the labels the fleet gives meaning to."""
    return {
        (cluster, obj.kind, _where(obj), str(label)): str(value)
        for cluster, obj in _objects(fleet)
        for label, value in obj.labels.items()
        if str(label).startswith(MEANINGFUL_LABELS)
    }


def pool_declarations(fleet: Fleet) -> dict[tuple, str]:
    """(pool, field path) -> value of every pool.yaml field outside the hardware section's: zones, node
    labels,
    taints, node shape, owner, description."""
    found: dict[tuple, str] = {}
    for doc in fleet.documents:
        if not (
            doc.path.startswith("pools/") and doc.path.endswith("/pool.yaml") and isinstance(doc.data, dict)
        ):
            continue
        pool = doc.path.split("/")[1]
        spec = doc.data.get("spec")
        for key, value in spec.items() if isinstance(spec, dict) else ():
            if key not in POOL_HARDWARE_FIELDS:
                found.update({(pool, path): text for path, text in flatten(value, str(key)).items()})
        description = (doc.data.get("metadata") or {}).get("description")
        if description is not None:
            found[(pool, "description")] = str(description)
    return found


def upgrade_plans(fleet: Fleet) -> dict[tuple, str]:
    """(plan file, field path) -> value of every field of the rollout plans and requirements (stages by
    name)."""
    found: dict[tuple, str] = {}
    for doc in fleet.documents:
        if doc.path.startswith(PLAN_DIR + "/") and isinstance(doc.data, dict):
            where = doc.path if not doc.index else f"{doc.path}#{doc.index}"
            found.update(
                {(where, path): text for path, text in flatten(doc.data.get("spec"), "spec").items()}
            )
    return found


def flatten(value: Any, prefix: str) -> dict[str, str]:
    """Dotted paths to leaf text; a list of named mappings by name (`stages[canary].minimumSoak`), so moving
    one
    item is not every item changing, and any other list as one sorted line."""
    if isinstance(value, dict):
        flat: dict[str, str] = {}
        for key, inner in value.items():
            flat.update(flatten(inner, f"{prefix}.{key}"))
        return flat
    if (
        isinstance(value, list)
        and value
        and all(isinstance(i, dict) and isinstance(i.get("name"), str) for i in value)
    ):
        flat = {}
        for item in value:
            flat.update(flatten({k: v for k, v in item.items() if k != "name"}, f"{prefix}[{item['name']}]"))
        return flat
    return {prefix: _text(value)}


def _text(value: Any) -> str:
    """One line for a value: a taint or toleration list as `key=value:Effect` items, sorted (their order means
    nothing), any other structure as compact JSON."""
    if isinstance(value, list):
        return ", ".join(sorted(_item(item) for item in value)) or "[]"
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, default=str)
    return "null" if value is None else str(value)


def _item(item: Any) -> str:
    if isinstance(item, dict) and ("key" in item or "effect" in item):
        operator = item.get("operator")
        text = str(item.get("key", "*"))
        if operator == "Exists":
            text += " exists"
        elif "value" in item:
            text += f"={item['value']}"
        return f"{text}:{item['effect']}" if item.get("effect") else text
    return json.dumps(item, sort_keys=True, default=str) if isinstance(item, dict | list) else str(item)
