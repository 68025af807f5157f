"""Shared helpers of the GPU sharing rules (SHARE*): a device-plugin config's sharing sections. Which config a
pool's nodes run and where a config field is written are in operator_common. Not a rule (no `ID`).

Facts restated from the NVIDIA k8s-device-plugin config format (api/config/v1;
../shared/reference/gpu-operator.md section 3): `sharing.timeSlicing` and `sharing.mps` each hold
`renameByDefault`, `failRequestsGreaterThanOne` and `resources[]` of `{name, replicas, rename, devices}`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..domain.gpu_operator import section
from ..model import Cluster, ConfigEntry

SHARING_KINDS = ("timeSlicing", "mps")


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


def configs(cluster: Cluster) -> list[ConfigEntry]:
    return [cluster.device_plugin_configs[key] for key in sorted(cluster.device_plugin_configs)]
