"""The node side of a GPU pod's path once it has a pool: are the GPU Operator's components there, and how does
the runtime give the container its devices. See `nodes.py` for the sources; the rules that check the same
declarations fleet-wide are WL005 (NVIDIADriver tolerations), WL007 (operand tolerations) and WL002
(device-list
strategy vs CDI)."""

from __future__ import annotations

from dataclasses import dataclass

from ..domain.gpu_operator import DEVICE_LIST_STRATEGY_ENV as ENV_NAME
from ..domain.gpu_operator import (
    OPERATOR_CDI_STRATEGY,
    cdi_enabled,
    operator_components,
    policy_section,
    policy_spec,
    section,
    strategies,
)
from ..domain.tolerations import BLOCKING_EFFECTS, show, tolerates
from ..domain.workloads import env_value, values_location
from ..findings import Location
from ..model import Cluster, Fleet, Pool, selects

NVIDIA_RUNTIME_CLASSES = ("nvidia", "nvidia-cdi", "nvidia-legacy")


@dataclass(frozen=True)
class Check:
    ok: bool
    text: str
    where: Location | None = None


def operands_on(fleet: Fleet, cluster: Cluster, pool: Pool) -> list[Check]:
    """One Check per operator component that must run on the pool's nodes (the same for every pod: computed
    once per pool and run)."""
    return cluster.memo(("workpath.operands", pool.name), lambda: _operands_on(fleet, cluster, pool))


def _operands_on(fleet: Fleet, cluster: Cluster, pool: Pool) -> list[Check]:
    if cluster.cluster_policy is None:
        return [
            Check(
                True,
                "no GPU Operator ClusterPolicy in the repository: the driver and device plugin "
                "are assumed to be installed another way",
            )
        ]
    checks = []
    taints = [t for t in pool.taints if t.effect in BLOCKING_EFFECTS]
    for component in operator_components(fleet, cluster):
        missing = [show(t) for t in taints if not any(tolerates(x, t) for x in component.tolerations)]
        checks.append(
            Check(
                not missing,
                f"{component.name} tolerates pool {pool.name}'s taints"
                if not missing
                else f"{component.name} does not tolerate {', '.join(missing)}: it never runs on "
                f"pool {pool.name}'s nodes",
                component.location,
            )
        )
    if section(policy_spec(cluster), "driver", "useNvidiaDriverCRD"):
        checks.append(_driver(fleet, cluster, pool, taints))
    return checks


def _driver(fleet: Fleet, cluster: Cluster, pool: Pool, taints: list) -> Check:
    drivers = [d for d in cluster.nvidia_drivers if selects(d.node_selector, pool.node_labels)]
    if not drivers:
        return Check(
            False,
            f"no NVIDIADriver selects pool {pool.name}'s nodes: no driver is installed there",
            fleet.locate_file(pool.path, "spec", "nodeLabels"),
        )
    driver = drivers[0]
    missing = [show(t) for t in taints if not any(tolerates(x, t) for x in driver.tolerations)]
    where = fleet.locate(driver.obj, "spec", "tolerations")
    if missing:
        return Check(
            False,
            f"NVIDIADriver {driver.name} does not tolerate {', '.join(missing)}: its driver "
            f"pods never run on pool {pool.name}",
            where,
        )
    return Check(True, f"NVIDIADriver {driver.name} ({driver.version}) installs the driver", where)


def runtime(fleet: Fleet, cluster: Cluster, spec: dict) -> Check:
    """How the container gets its GPU: CDI, or the legacy nvidia runtime and the plugin's device-list
    strategy."""
    runtime_class = str(spec.get("runtimeClassName") or "")
    return cluster.memo(("workpath.runtime", runtime_class), lambda: _runtime(fleet, cluster, runtime_class))


def _runtime(fleet: Fleet, cluster: Cluster, runtime_class: str) -> Check:
    if cluster.cluster_policy is None:
        return Check(True, "no GPU Operator ClusterPolicy in the repository: the runtime is not modelled")
    plugin = policy_section(cluster, "devicePlugin")
    value = env_value(plugin, ENV_NAME)
    if not cdi_enabled(cluster):
        return Check(
            True, f"CDI off: the nvidia runtime injects the devices the plugin lists ({value or 'envvar'})"
        )
    if value is None or any(s.startswith("cdi-") for s in strategies(value)):
        return Check(
            True, f"CDI: devices and driver libraries from the CDI spec ({value or OPERATOR_CDI_STRATEGY})"
        )
    if runtime_class in NVIDIA_RUNTIME_CLASSES:
        return Check(True, f"runtime class {runtime_class} reads the {value} device list")
    return Check(
        False,
        f"CDI is on but devicePlugin.env sets {ENV_NAME}={value}: without the nvidia "
        "runtime class "
        "the container gets device nodes and no driver libraries",
        values_location(fleet, cluster, "devicePlugin", "env"),
    )
