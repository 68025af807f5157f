"""Shared helpers of the GPU sharing rules (SHARE*): a device-plugin config's sharing sections, which config a
pool's nodes run, and where a config field is in the repository. Not a rule (no `ID`).

Facts restated from the NVIDIA k8s-device-plugin config format (api/config/v1; ../shared/reference/gpu-operator.md
section 3): `sharing.timeSlicing` and `sharing.mps` each hold `renameByDefault`, `failRequestsGreaterThanOne` and
`resources[]` of `{name, replicas, rename, devices}`; the node label `nvidia.com/device-plugin.config` names a key
of the operator's device-plugin ConfigMap, and an unlabelled node runs `devicePlugin.config.default`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..findings import Location
from ..model import DEVICE_PLUGIN_CONFIG_LABEL, Cluster, ConfigEntry, Fleet, Pool

SHARING_KINDS = ("timeSlicing", "mps")


def section(data: Any, *path: str) -> Any:
    """data[path[0]][path[1]]..., or None where a level is missing or not a mapping."""
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def sharing(entry: ConfigEntry, kind: str) -> dict | None:
    """The `sharing.<kind>` block of a config (None when absent or not a mapping)."""
    block = section(entry.data, "sharing", kind)
    return block if isinstance(block, dict) else None


@dataclass(frozen=True)
class SharedResource:
    kind: str  # timeSlicing | mps
    index: int
    name: str
    replicas: Any

    @property
    def path(self) -> tuple:
        return ("sharing", self.kind, "resources", self.index)


def shared_resources(entry: ConfigEntry, kind: str) -> Iterator[SharedResource]:
    block = sharing(entry, kind) or {}
    resources = block.get("resources")
    for index, resource in enumerate(resources if isinstance(resources, list) else []):
        if isinstance(resource, dict):
            yield SharedResource(kind, index, str(resource.get("name", "")), resource.get("replicas"))


def uses(entry: ConfigEntry, kind: str) -> bool:
    """Whether a config turns on this sharing kind (the block is present)."""
    return sharing(entry, kind) is not None


def locate(fleet: Fleet, entry: ConfigEntry, *path: Any) -> Location:
    """The line of `path` inside the config's own file; the generator's line when it is written inline."""
    if entry.source.path.endswith(("kustomization.yaml", "kustomization.yml", "Kustomization")):
        return entry.source
    return fleet.locate_file(entry.source.path, *path)


def default_config_key(cluster: Cluster) -> str:
    spec = cluster.cluster_policy.spec if cluster.cluster_policy else {}
    default = section(spec, "devicePlugin", "config", "default")
    return str(default) if default else ""


def pool_config_key(cluster: Cluster, pool: Pool) -> str:
    """The device-plugin config key the pool's nodes select ("" when none: the plugin runs without a file)."""
    return pool.node_labels.get(DEVICE_PLUGIN_CONFIG_LABEL) or default_config_key(cluster)


def pool_config(cluster: Cluster, pool: Pool) -> ConfigEntry | None:
    return cluster.device_plugin_configs.get(pool_config_key(cluster, pool))


def configs(cluster: Cluster) -> list[ConfigEntry]:
    return [cluster.device_plugin_configs[key] for key in sorted(cluster.device_plugin_configs)]


VALUES_FILES = ("clusters/{cluster}/gpu-operator-values.yaml", "policies/gpu-operator/values.yaml")


def policy_location(fleet: Fleet, cluster: Cluster, *spec_path: Any) -> Location | None:
    """Where a ClusterPolicy spec field is set: in the ClusterPolicy manifest, or for a Helm-installed operator
    in the values file that sets it (the cluster's override before the fleet defaults)."""
    policy = cluster.cluster_policy
    if policy is None:
        return None
    if not policy_is_helm_values(cluster):
        return fleet.locate(policy, "spec", *spec_path)
    for pattern in VALUES_FILES:
        path = pattern.format(cluster=cluster.name)
        docs = fleet.locator.docs(path) if fleet.locator else []
        if docs and tuple(spec_path) in docs[0].lines:
            return Location(path, docs[0].lines[tuple(spec_path)])
    return Location(policy.origin, 0) if policy.origin else None


def policy_is_helm_values(cluster: Cluster) -> bool:
    policy = cluster.cluster_policy
    return policy is not None and not any(obj is policy for obj in cluster.objects)
