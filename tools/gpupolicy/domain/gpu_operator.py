"""GPU Operator facts shared by the rules (MIG*, SHARE*, OBS006, SEC001, SEC002, WL002, WL007, WL008),
`explain`'s workload path and the docs: the ClusterPolicy spec and its sections, the Helm values layers and
the value Helm sees, where one of its settings is written (the manifest, or the Helm values layer that sets
it), which device-plugin config a pool's nodes run, the device-list strategy and CDI, and the components that
must run on every GPU node with the tolerations each is given. Not a rule (no `ID`).

Facts restated from the GPU Operator docs (../shared/reference/gpu-operator.md): the chart turns its values
into the ClusterPolicy spec; the node label `nvidia.com/device-plugin.config` names a key of the device-plugin
ConfigMap, and an unlabelled node runs `devicePlugin.config.default`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..findings import Location
from ..infra.yamlload import mappings
from ..model import DEVICE_PLUGIN_CONFIG_LABEL, Cluster, ConfigEntry, Fleet, Pool
from .kustomization import KUSTOMIZATION_NAMES

# The Helm values layers, the cluster's override first (conventions.md, "GPU Operator values").
OPERATOR_NAMESPACE = "gpu-operator"  # the chart's namespace in every cluster of the repository
VALUES_FILES = ("clusters/{cluster}/gpu-operator-values.yaml", "policies/gpu-operator/values.yaml")


# --- the ClusterPolicy
# -----------------------------------------------------------------------------------------


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
    """One top-level section of the ClusterPolicy spec (`devicePlugin`, `toolkit`, `cdi`...); {} when the
    cluster
    has no ClusterPolicy or the section is missing or not a mapping."""
    value = policy_spec(cluster).get(name)
    return value if isinstance(value, dict) else {}


def clusters_with_policy(fleet: Fleet) -> Iterator[Cluster]:
    """The clusters that run the GPU Operator (they have a ClusterPolicy)."""
    return (cluster for cluster in fleet.clusters.values() if cluster.cluster_policy is not None)


def policy_is_helm_values(cluster: Cluster) -> bool:
    """True when the ClusterPolicy is the one the Helm chart makes from the values files (Helm defaults
    apply)."""
    policy = cluster.cluster_policy
    return policy is not None and not cluster.memo(
        "policy_rendered", lambda: any(o is policy for o in cluster.objects)
    )


def policy_location(fleet: Fleet, cluster: Cluster, *spec_path: Any, nearest: bool = True) -> Location | None:
    """Where a ClusterPolicy spec field is written: the manifest, or the values layer that sets it (the
    cluster's override first). A field no layer sets points at the deepest part of it that a layer has
    (`nearest`), else
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


# --- the Helm values layers
# ------------------------------------------------------------------------------------


def helm_layers(fleet: Fleet, cluster: Cluster) -> list[tuple[str, Any]]:
    """The GPU Operator values layers of a cluster in Helm's order (fleet defaults, then the cluster's
    override):
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


# --- device-plugin configs
# -------------------------------------------------------------------------------------


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
    """The line of `path` inside a device-plugin config's own file; the generator's line when written
    inline."""
    if entry.source.path.endswith(KUSTOMIZATION_NAMES):
        return entry.source
    return fleet.locate_file(entry.source.path, *path)


# --- the device-list strategy and CDI (SEC001, WL002, workpath)
# ------------------------------------------------

DEVICE_LIST_STRATEGY_ENV = "DEVICE_LIST_STRATEGY"
OPERATOR_CDI_STRATEGY = "cdi-annotations,cdi-cri"
CDI_DEFAULT_FROM = (25, 10)  # GPU Operator release that turned cdi.enabled on by default


def strategies(value: str) -> set[str]:
    """The strategies a DEVICE_LIST_STRATEGY value names (a comma-separated list, as the device plugin reads
    it)."""
    return {s.strip() for s in value.split(",") if s.strip()}


def cdi_enabled(cluster: Cluster) -> bool:
    """Whether the operator runs the cluster with CDI: `cdi.enabled` when the ClusterPolicy states it, else
    the
    operator's default (on from v25.10; `CDIConfigSpec.IsEnabled` in NVIDIA/gpu-operator api/nvidia/v1)."""
    cdi = policy_section(cluster, "cdi")
    if "enabled" in cdi:
        return cdi["enabled"] is True
    return _version(cluster.facts.gpu_operator_version) >= CDI_DEFAULT_FROM


def _version(text: str) -> tuple[int, int]:
    match = re.match(r"v?(\d+)\.(\d+)", text or "")
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


# --- the components that must run on every GPU node (WL007, workpath)
# -------------------------------------------

# The GPU Operator chart's defaults (NVIDIA/gpu-operator deployments/gpu-operator/values.yaml, v26.7.0).
CHART_DAEMONSET_TOLERATIONS = ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},)
CHART_NFD_WORKER_TOLERATIONS = (
    {
        "key": "node-role.kubernetes.io/control-plane",
        "operator": "Equal",
        "value": "",
        "effect": "NoSchedule",
    },
    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
)
NFD_WORKER_PATH = ("node-feature-discovery", "worker", "tolerations")
DAEMONSETS_PATH = ("daemonsets", "tolerations")


@dataclass(frozen=True)
class Component:
    name: str
    values_path: tuple[str, ...]
    tolerations: tuple[dict, ...]
    location: Location | None


def operator_components(fleet: Fleet, cluster: Cluster) -> list[Component]:
    """The GPU Operator components that must run on every GPU node, with the tolerations each is given."""
    found = []
    spec = policy_spec(cluster)
    if policy_is_helm_values(cluster):
        nfd_enabled, _ = setting(fleet, cluster, "nfd", "enabled")
        if nfd_enabled is not False:  # chart default: nfd.enabled true
            written, place = setting(fleet, cluster, *NFD_WORKER_PATH)
            tolerations = tuple(mappings(written)) if written is not None else CHART_NFD_WORKER_TOLERATIONS
            found.append(
                Component(
                    "node-feature-discovery worker (NFD subchart)",
                    NFD_WORKER_PATH,
                    tolerations,
                    place or _fallback(fleet, cluster, NFD_WORKER_PATH),
                )
            )
        written, place = setting(fleet, cluster, *DAEMONSETS_PATH)
        tolerations = tuple(mappings(written)) if written is not None else CHART_DAEMONSET_TOLERATIONS
        found.append(
            Component(
                _operands(spec),
                DAEMONSETS_PATH,
                tolerations,
                place or _fallback(fleet, cluster, DAEMONSETS_PATH),
            )
        )
    elif cluster.cluster_policy is not None:
        written = section(spec, *DAEMONSETS_PATH)
        found.append(
            Component(
                _operands(spec),
                DAEMONSETS_PATH,
                tuple(mappings(written)),
                fleet.locate(cluster.cluster_policy, "spec", *DAEMONSETS_PATH),
            )
        )
    return found


def _operands(spec: dict) -> str:
    names = [
        "container toolkit",
        "device plugin",
        "GPU feature discovery",
        "MIG manager",
        "DCGM exporter",
        "validator",
    ]
    if not section(spec, "driver", "useNvidiaDriverCRD"):
        names.insert(0, "driver")
    return f"operand DaemonSets ({', '.join(names)})"


def _fallback(fleet: Fleet, cluster: Cluster, path: tuple[str, ...]) -> Location | None:
    """Where to add a setting no layer writes: the deepest part of it in the fleet layer, else its first
    line."""
    layers = helm_layers(fleet, cluster)
    if not layers:
        return None
    docs = fleet.locator.docs(layers[0][0]) if fleet.locator else []
    if path == NFD_WORKER_PATH and docs and ("nfd",) in docs[0].lines and path[:1] not in docs[0].lines:
        return fleet.locate_file(layers[0][0], "nfd")  # the NFD subchart's switch: its values go next to it
    return fleet.locate_file(layers[0][0], *path)
