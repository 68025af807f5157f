"""Shared helpers of the MIG rules (MIG*): a pool's GPU model and layout, where a layout or a ClusterPolicy field
is written, the MIG strategy a cluster runs and the driver a pool's nodes get. Not a rule (no `ID`).

Facts restated from ../shared/reference/gpu-operator.md: the Helm chart's default `mig.strategy` is `single`
(section 1.7); the operator passes `spec.mig.strategy` to the device plugin as `MIG_STRATEGY`, and with no strategy
set the plugin falls back to its config file's `flags.migStrategy`, whose own default is `none` (sections 1.5, 3.1);
the MIG manager reads the layouts from the ConfigMap named by `migManager.config.name`, key `config.yaml`, and a
node picks one with the label `nvidia.com/mig.config` (sections 1.5, 4).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .. import catalog, mig
from ..catalog import GPUModel
from ..findings import Location
from ..mig import LayoutEntry
from ..model import (
    DEVICE_PLUGIN_CONFIG_LABEL,
    MIG_CONFIG_LABEL,
    Cluster,
    ConfigEntry,
    Fleet,
    NvidiaDriver,
    Pool,
    selects,
)

HELM_DEFAULT_STRATEGY = "single"
DEFAULT_MIG_CONFIGMAP = "mig-parted-config"
VALUES_FILES = ("clusters/{cluster}/gpu-operator-values.yaml", "policies/gpu-operator/values.yaml")


# --- pools -----------------------------------------------------------------------------------------------------

def model_of(pool: Pool) -> GPUModel | None:
    """The catalog model of the pool's GPU; None for a model the catalog does not know (reported elsewhere)."""
    try:
        return catalog.gpu(pool.gpu_model)
    except KeyError:
        return None


def is_mig_pool(pool: Pool) -> bool:
    return bool(pool.mig_layout) or pool.access_mode == "mig"


def mig_pools(cluster: Cluster) -> list[Pool]:
    return [pool for pool in cluster.pools if is_mig_pool(pool)]


def pool_location(fleet: Fleet, pool: Pool, *path: Any) -> Location:
    return fleet.locate_file(pool.path, "spec", *path)


def mig_config_label(pool: Pool) -> str | None:
    return pool.node_labels.get(MIG_CONFIG_LABEL)


# --- layouts ---------------------------------------------------------------------------------------------------

def layout_entries(entry: ConfigEntry) -> tuple[LayoutEntry, ...]:
    """The typed entries of one layout; entries with schema problems are left out (MIG009 reports them)."""
    config, _problems = mig.parse_config({"version": "v1", "mig-configs": {entry.key: entry.data}})
    return config.layouts.get(entry.key, ()) if config else ()


def pool_layout(cluster: Cluster, pool: Pool) -> tuple[ConfigEntry, tuple[LayoutEntry, ...]] | None:
    """The layout pool.yaml selects, when the cluster's mig-parted config has it."""
    entry = cluster.mig_configs.get(pool.mig_layout or "")
    return (entry, layout_entries(entry)) if entry else None


def is_config_file(fleet: Fleet, path: str) -> bool:
    """Whether `path` is the mig-parted document itself (a configMapGenerator file), not a ConfigMap manifest."""
    docs = fleet.locator.docs(path) if fleet.locator and path else []
    return bool(docs) and isinstance(docs[0].data, dict) and "mig-configs" in docs[0].data


def config_location(fleet: Fleet, entry: ConfigEntry, *path: Any) -> Location:
    """The line of `path` (from the document root: "mig-configs", layout, ...) in the mig-parted file; the
    layout's own line when the config is written inline in a ConfigMap manifest."""
    if is_config_file(fleet, entry.source.path):
        return fleet.locate_file(entry.source.path, *path)
    return entry.source


def mig_configmap_name(cluster: Cluster) -> str:
    name = section(policy_spec(cluster), "migManager", "config", "name")
    return str(name) if name else DEFAULT_MIG_CONFIGMAP


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


def policy_from_values(cluster: Cluster) -> bool:
    """True when the ClusterPolicy is the one the Helm chart makes from the values files (Helm defaults apply)."""
    policy = cluster.cluster_policy
    return policy is not None and not any(obj is policy for obj in cluster.objects)


def policy_location(fleet: Fleet, cluster: Cluster, *spec_path: str) -> Location | None:
    """Where a ClusterPolicy spec field is written: the manifest, or the values layer that sets it (the cluster's
    override first). A field no layer sets points at the deepest part that exists, or the values ConfigMap."""
    policy = cluster.cluster_policy
    if policy is None:
        return None
    if not policy_from_values(cluster):
        return fleet.locate(policy, "spec", *spec_path)
    best: tuple[int, Location] | None = None
    for pattern in VALUES_FILES:
        path = pattern.format(cluster=cluster.name)
        docs = fleet.locator.docs(path) if fleet.locator else []
        if not docs:
            continue
        depth = next((d for d in range(len(spec_path), 0, -1) if tuple(spec_path[:d]) in docs[0].lines), 0)
        if best is None or depth > best[0]:
            best = (depth, Location(path, docs[0].line_of(tuple(spec_path))))
    if best is not None:
        return best[1]
    return Location(policy.origin, 0) if policy.origin else None


@dataclass(frozen=True)
class Strategy:
    """The MIG strategy the operator gives the device plugin, and where it comes from."""

    value: str | None  # single | mixed | none; None: the ClusterPolicy sets none (the plugin's config decides)
    origin: str  # for messages: "values.yaml:52", "the Helm chart default", ...
    location: Location | None


def cluster_strategy(fleet: Fleet, cluster: Cluster) -> Strategy:
    written = section(policy_spec(cluster), "mig", "strategy")
    location = policy_location(fleet, cluster, "mig", "strategy")
    if written:
        return Strategy(str(written), f"mig.strategy at {location}" if location else "ClusterPolicy mig.strategy",
                        location)
    if policy_from_values(cluster):
        return Strategy(HELM_DEFAULT_STRATEGY, "the GPU Operator chart's default mig.strategy", location)
    return Strategy(None, "the ClusterPolicy (mig.strategy unset)", location)


def plugin_config(cluster: Cluster, pool: Pool) -> ConfigEntry | None:
    """The device-plugin config the pool's nodes run: their label's key, else devicePlugin.config.default."""
    key = pool.node_labels.get(DEVICE_PLUGIN_CONFIG_LABEL) or section(policy_spec(cluster), "devicePlugin",
                                                                        "config", "default")
    return cluster.device_plugin_configs.get(str(key)) if key else None


def plugin_strategy(entry: ConfigEntry | None) -> str | None:
    value = section(entry.data, "flags", "migStrategy") if entry else None
    return str(value) if value else None


def plugin_location(fleet: Fleet, entry: ConfigEntry, *path: Any) -> Location:
    """A field of a device-plugin config in its own file; the generator's line when written inline."""
    if entry.source.path.endswith(("kustomization.yaml", "kustomization.yml", "Kustomization")):
        return entry.source
    return fleet.locate_file(entry.source.path, *path)


def effective_strategy(fleet: Fleet, cluster: Cluster, pool: Pool) -> Strategy:
    """What the device plugin on the pool's nodes runs: the operator's MIG_STRATEGY, else the config file's
    flags.migStrategy, else the plugin default none."""
    operator = cluster_strategy(fleet, cluster)
    if operator.value:
        return operator
    entry = plugin_config(cluster, pool)
    flag = plugin_strategy(entry)
    if entry is not None and flag:
        location = plugin_location(fleet, entry, "flags", "migStrategy")
        return Strategy(flag, f"flags.migStrategy of device-plugin config {entry.key} at {location}", location)
    return Strategy("none", "the device plugin's default, as nothing sets a strategy", operator.location)


# --- drivers ---------------------------------------------------------------------------------------------------

def pool_drivers(cluster: Cluster, pool: Pool) -> list[NvidiaDriver]:
    """The NVIDIADriver objects whose nodeSelector picks the pool's nodes; pool-specific ones before a catch-all."""
    specific = [d for d in cluster.nvidia_drivers if selects(d.node_selector, pool.node_labels)]
    if specific:
        return specific
    return [d for d in cluster.nvidia_drivers if not d.node_selector]


def models_named_by_filters(entries: tuple[LayoutEntry, ...]) -> Iterator[GPUModel]:
    for entry in entries:
        for pci in entry.device_filter:
            model = catalog.gpu_by_pci_id(pci)
            if model is not None:
                yield model


# --- layouts against the GPUs they are meant for ---------------------------------------------------------------

@dataclass(frozen=True)
class LayoutProblem:
    cluster: str
    entry: ConfigEntry
    problem: mig.Problem
    pools: tuple[str, ...]  # pools of the cluster that select the layout


def layout_targets(cluster: Cluster, name: str, entries: tuple[LayoutEntry, ...]) -> dict[str, GPUModel]:
    """GPU models a layout is meant for: those of the pools selecting it (pool.yaml or the node label) that have
    MIG (a pool without MIG is MIG006's), and those its device-filters name."""
    targets: dict[str, GPUModel] = {}
    for pool in cluster.pools:
        model = model_of(pool)
        if model is not None and model.mig_capable and name in (pool.mig_layout, mig_config_label(pool)):
            targets.setdefault(model.key, model)
    for model in models_named_by_filters(entries):
        targets.setdefault(model.key, model)
    return targets


def layout_problems(fleet: Fleet, kinds: tuple[str, ...]) -> Iterator[LayoutProblem]:
    """Problems of `kinds` (mig.Problem.kind) of every layout of every cluster, each on its target GPUs."""
    for cluster in fleet.clusters.values():
        for name, entry in sorted(cluster.mig_configs.items()):
            entries = layout_entries(entry)
            targets = layout_targets(cluster, name, entries)
            if not entries or not targets:  # an empty GPU list would make mig.evaluate guess the models
                continue
            pools = tuple(sorted(p.name for p in cluster.pools if name in (p.mig_layout, mig_config_label(p))))
            config = mig.MigConfig("v1", {name: entries})
            for problem in mig.check_config(config, list(targets)):
                if problem.kind in kinds:
                    yield LayoutProblem(cluster.name, entry, problem, pools)


def used_by(item: LayoutProblem) -> str:
    return f"used by pool {', '.join(item.pools)}" if item.pools else "no pool selects it"
