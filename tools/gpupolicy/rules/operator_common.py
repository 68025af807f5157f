"""Shared helpers of the rules that read GPU Operator settings (MIG*, SHARE*, OBS006, SEC001, SEC002, WL002, WL007,
WL008): the ClusterPolicy spec and its sections, the Helm values layers and the value Helm sees, where one of its
settings is written (the manifest, or the Helm values layer that sets it), and which device-plugin config a pool's
nodes run. Not a rule (no `ID`).

Facts restated from the GPU Operator docs (../shared/reference/gpu-operator.md): the chart turns its values into
the ClusterPolicy spec; the node label `nvidia.com/device-plugin.config` names a key of the device-plugin
ConfigMap, and an unlabelled node runs `devicePlugin.config.default`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..findings import Location
from ..model import DEVICE_PLUGIN_CONFIG_LABEL, Cluster, ConfigEntry, Fleet, Pool

# The Helm values layers, the cluster's override first (conventions.md, "GPU Operator values").
VALUES_FILES = ("clusters/{cluster}/gpu-operator-values.yaml", "policies/gpu-operator/values.yaml")


# --- the ClusterPolicy -----------------------------------------------------------------------------------------

def section(data: Any, *path: str) -> Any:
    """data[path[0]][path[1]]...; None where a level is missing or not a mapping."""
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def policy_spec(cluster: Cluster) -> dict:
    return cluster.cluster_policy.spec if cluster.cluster_policy else {}


def policy_section(cluster: Cluster, name: str) -> dict:
    """One top-level section of the ClusterPolicy spec (`devicePlugin`, `toolkit`, `cdi`...); {} when the cluster
    has no ClusterPolicy or the section is missing or not a mapping."""
    value = policy_spec(cluster).get(name)
    return value if isinstance(value, dict) else {}


def clusters_with_policy(fleet: Fleet) -> Iterator[Cluster]:
    """The clusters that run the GPU Operator (they have a ClusterPolicy)."""
    return (cluster for cluster in fleet.clusters.values() if cluster.cluster_policy is not None)


def policy_is_helm_values(cluster: Cluster) -> bool:
    """True when the ClusterPolicy is the one the Helm chart makes from the values files (Helm defaults apply)."""
    policy = cluster.cluster_policy
    return policy is not None and not cluster.memo("policy_rendered", lambda: any(o is policy for o in cluster.objects))


def policy_location(fleet: Fleet, cluster: Cluster, *spec_path: Any, nearest: bool = True) -> Location | None:
    """Where a ClusterPolicy spec field is written: the manifest, or the values layer that sets it (the cluster's
    override first). A field no layer sets points at the deepest part of it that a layer has (`nearest`), else
    at the ClusterPolicy's origin (the values ConfigMap)."""
    policy = cluster.cluster_policy
    if policy is None:
        return None
    if not policy_is_helm_values(cluster):
        return fleet.locate(policy, "spec", *spec_path)
    best: tuple[int, Location] | None = None
    for pattern in VALUES_FILES:
        path = pattern.format(cluster=cluster.name)
        docs = fleet.locator.docs(path) if fleet.locator else []
        if not docs:
            continue
        depth = next((d for d in range(len(spec_path), 0, -1) if tuple(spec_path[:d]) in docs[0].lines), 0)
        if (nearest or depth == len(spec_path)) and (best is None or depth > best[0]):
            best = (depth, Location(path, docs[0].line_of(tuple(spec_path))))
    if best is not None:
        return best[1]
    return Location(policy.origin, 0) if policy.origin else None


# --- the Helm values layers ------------------------------------------------------------------------------------

def helm_layers(fleet: Fleet, cluster: Cluster) -> list[tuple[str, Any]]:
    """The GPU Operator values layers of a cluster in Helm's order (fleet defaults, then the cluster's override):
    (path, parsed data). Empty when the ClusterPolicy is a manifest, not made by the chart."""
    if not policy_is_helm_values(cluster) or fleet.locator is None:
        return []
    layers = []
    for pattern in reversed(VALUES_FILES):
        path = pattern.format(cluster=cluster.name)
        docs = fleet.locator.docs(path)
        if docs and isinstance(docs[0].data, dict):
            layers.append((path, docs[0].data))
    return layers


def setting(fleet: Fleet, cluster: Cluster, *path: str) -> tuple[Any, Location | None]:
    """The value Helm sees at `path` (the last layer that sets it wins) and where it is written; (None, None)
    when no layer sets it."""
    found: tuple[Any, Location | None] = (None, None)
    for layer, data in helm_layers(fleet, cluster):
        parent = section(data, *path[:-1]) if len(path) > 1 else data
        if isinstance(parent, dict) and path[-1] in parent:
            found = (parent[path[-1]], fleet.locate_file(layer, *path))
    return found


# --- device-plugin configs -------------------------------------------------------------------------------------

def default_config_key(cluster: Cluster) -> str:
    default = section(policy_spec(cluster), "devicePlugin", "config", "default")
    return str(default) if default else ""


def pool_config_key(cluster: Cluster, pool: Pool) -> str:
    """The device-plugin config key the pool's nodes select ("" when none: the plugin runs without a file)."""
    return pool.node_labels.get(DEVICE_PLUGIN_CONFIG_LABEL) or default_config_key(cluster)


def pool_config(cluster: Cluster, pool: Pool) -> ConfigEntry | None:
    """The device-plugin config the pool's nodes run: their label's key, else devicePlugin.config.default."""
    return cluster.device_plugin_configs.get(pool_config_key(cluster, pool))


def plugin_config_location(fleet: Fleet, entry: ConfigEntry, *path: Any) -> Location:
    """The line of `path` inside a device-plugin config's own file; the generator's line when written inline."""
    if entry.source.path.endswith(("kustomization.yaml", "kustomization.yml", "Kustomization")):
        return entry.source
    return fleet.locate_file(entry.source.path, *path)
