"""Shared helpers of the MIG rules (MIG*): a pool's GPU model and layout, where a layout or a ClusterPolicy
field is written, the MIG strategy a cluster runs and the driver a pool's nodes get. Not a rule (no `ID`).

Facts restated from ../shared/reference/gpu-operator.md: the Helm chart's default `mig.strategy` is `single`
(section 1.7); the operator passes `spec.mig.strategy` to the device plugin as `MIG_STRATEGY`, and with no
strategy set the plugin falls back to its config file's `flags.migStrategy`, whose own default is `none`
(sections 1.5, 3.1); the MIG manager reads the layouts from the ConfigMap named by `migManager.config.name`,
key `config.yaml`, and a node picks one with the label `nvidia.com/mig.config` (sections 1.5, 4).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..domain import catalog, mig
from ..domain.catalog import GPUModel
from ..domain.gpu_operator import (
    plugin_config_location,
    policy_is_helm_values,
    policy_location,
    policy_spec,
    pool_config,
    section,
)
from ..domain.mig import LayoutEntry
from ..findings import Location
from ..model import (
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


# --- pools
# -----------------------------------------------------------------------------------------------------


def model_of(pool: Pool) -> GPUModel | None:
    """The catalog model of the pool's GPU; None for a model the catalog does not know (reported
    elsewhere)."""
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


# --- layouts
# ---------------------------------------------------------------------------------------------------


def layout_entries(entry: ConfigEntry) -> tuple[LayoutEntry, ...]:
    """The typed entries of one layout; entries with schema problems are left out (MIG009 reports them)."""
    config, _problems = mig.parse_config({"version": "v1", "mig-configs": {entry.key: entry.data}})
    return config.layouts.get(entry.key, ()) if config else ()


def pool_layout(cluster: Cluster, pool: Pool) -> tuple[ConfigEntry, tuple[LayoutEntry, ...]] | None:
    """The layout pool.yaml selects, when the cluster's mig-parted config has it."""
    entry = cluster.mig_configs.get(pool.mig_layout or "")
    return (entry, layout_entries(entry)) if entry else None


def is_config_file(fleet: Fleet, path: str) -> bool:
    """Whether `path` is the mig-parted document itself (a configMapGenerator file), not a ConfigMap
    manifest."""
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


@dataclass(frozen=True)
class Strategy:
    """The MIG strategy the operator gives the device plugin, and where it comes from."""

    # single | mixed | none; None: the ClusterPolicy sets none (the plugin's config decides)
    value: str | None
    origin: str  # for messages: "values.yaml:52", "the Helm chart default", ...
    location: Location | None


def cluster_strategy(fleet: Fleet, cluster: Cluster) -> Strategy:
    written = section(policy_spec(cluster), "mig", "strategy")
    location = policy_location(fleet, cluster, "mig", "strategy")
    if written:
        return Strategy(
            str(written),
            f"mig.strategy at {location}" if location else "ClusterPolicy mig.strategy",
            location,
        )
    if policy_is_helm_values(cluster):
        return Strategy(HELM_DEFAULT_STRATEGY, "the GPU Operator chart's default mig.strategy", location)
    return Strategy(None, "the ClusterPolicy (mig.strategy unset)", location)


def plugin_strategy(entry: ConfigEntry | None) -> str | None:
    value = section(entry.data, "flags", "migStrategy") if entry else None
    return str(value) if value else None


def effective_strategy(fleet: Fleet, cluster: Cluster, pool: Pool) -> Strategy:
    """What the device plugin on the pool's nodes runs: the operator's MIG_STRATEGY, else the config file's
    flags.migStrategy, else the plugin default none."""
    operator = cluster_strategy(fleet, cluster)
    if operator.value:
        return operator
    entry = pool_config(cluster, pool)
    flag = plugin_strategy(entry)
    if entry is not None and flag:
        location = plugin_config_location(fleet, entry, "flags", "migStrategy")
        return Strategy(
            flag, f"flags.migStrategy of device-plugin config {entry.key} at {location}", location
        )
    return Strategy("none", "the device plugin's default, as nothing sets a strategy", operator.location)


# --- drivers
# ---------------------------------------------------------------------------------------------------


def pool_drivers(cluster: Cluster, pool: Pool) -> list[NvidiaDriver]:
    """The NVIDIADriver objects whose nodeSelector picks the pool's nodes; pool-specific ones before a
    catch-all."""
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


# --- layouts against the GPUs they are meant for
# ---------------------------------------------------------------


@dataclass(frozen=True)
class LayoutProblem:
    cluster: str
    entry: ConfigEntry
    problem: mig.Problem
    pools: tuple[str, ...]  # pools of the cluster that select the layout


def layout_targets(cluster: Cluster, name: str, entries: tuple[LayoutEntry, ...]) -> dict[str, GPUModel]:
    """GPU models a layout is meant for: those of the pools selecting it (pool.yaml or the node label) that
    have
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
            pools = tuple(
                sorted(p.name for p in cluster.pools if name in (p.mig_layout, mig_config_label(p)))
            )
            config = mig.MigConfig("v1", {name: entries})
            for problem in mig.check_config(config, list(targets)):
                if problem.kind in kinds:
                    yield LayoutProblem(cluster.name, entry, problem, pools)


def used_by(item: LayoutProblem) -> str:
    return f"used by pool {', '.join(item.pools)}" if item.pools else "no pool selects it"
