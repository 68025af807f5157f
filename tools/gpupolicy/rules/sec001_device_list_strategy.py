"""The GPU device plugin passes devices through NVIDIA_VISIBLE_DEVICES (or the NRI plugin re-enables it).

## Why it matters
With the legacy `envvar` device-list strategy the container runtime trusts `NVIDIA_VISIBLE_DEVICES`: any
unprivileged pod that sets `NVIDIA_VISIBLE_DEVICES=all` (or runs a CUDA image that bakes it in) gets every GPU
of the node without requesting one, bypassing quotas and other tenants' isolation (k8s-device-plugin #87,
#548,
#1605; gpu-operator #700). The `volume-mounts` strategy or CDI (`cdi-annotations`, `cdi-cri`; the default
once `cdi.enabled` is true, which it is by default from GPU Operator v25.10) pass the allocation in a way a
pod cannot forge. `cdi.nriPluginEnabled: true` brings env-var injection back for every container. See
`../shared/reference/gpu-operator.md` section 8.

Which of the safe strategies is *right* depends on CDI, and WL002 checks that: with CDI on, the operator sets
`cdi-annotations,cdi-cri` itself (NVIDIA/gpu-operator `controllers/object_controls.go`
`transformDevicePluginCtrForCDI`) and `nvidia` is not the default runtime, so `volume-mounts` — safe, but
meant for the `nvidia` runtime — leaves GPU pods without driver libraries. `volume-mounts` is the hardening
for clusters with `cdi.enabled: false` only.

## Bad example
```yaml
devicePlugin:
  env:
    - name: DEVICE_LIST_STRATEGY
      value: envvar
```

## Fix
Keep CDI enabled (`cdi.enabled: true`, `cdi.nriPluginEnabled: false`) and leave `DEVICE_LIST_STRATEGY` unset;
or, with CDI disabled, set `DEVICE_LIST_STRATEGY=volume-mounts` together with the toolkit settings (SEC002).
"""

from __future__ import annotations

from collections.abc import Iterator

from ..domain.gpu_operator import cdi_enabled, clusters_with_policy, policy_section, strategies
from ..domain.workloads import env_value, values_location
from ..findings import Finding, Severity, at
from ..model import Cluster, Fleet

ID = "SEC001"
SEVERITY = Severity.ERROR
SUMMARY = "The device plugin does not honour NVIDIA_VISIBLE_DEVICES from pods"

SAFE_STRATEGIES = {"volume-mounts", "cdi-annotations", "cdi-cri"}


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in clusters_with_policy(fleet):
        plugin = policy_section(cluster, "devicePlugin")
        cdi = policy_section(cluster, "cdi")
        strategy = env_value(plugin, "DEVICE_LIST_STRATEGY")
        if strategy is not None:
            unsafe = sorted(strategies(strategy) - SAFE_STRATEGIES) or (
                ["(empty)"] if not strategy.strip() else []
            )
            if unsafe:
                yield _finding(
                    fleet,
                    cluster,
                    ("devicePlugin", "env"),
                    f"device plugin DEVICE_LIST_STRATEGY={strategy} lets pods pick GPUs with "
                    f"NVIDIA_VISIBLE_DEVICES ({', '.join(unsafe)} is not volume-mounts or CDI)",
                )
        elif not cdi_enabled(cluster):
            yield _finding(
                fleet,
                cluster,
                ("cdi", "enabled") if "enabled" in cdi else ("devicePlugin",),
                "CDI is off and DEVICE_LIST_STRATEGY is not set: the device plugin uses the "
                "envvar strategy, so any pod can take GPUs with NVIDIA_VISIBLE_DEVICES",
            )
        if cdi.get("nriPluginEnabled") is True:
            yield _finding(
                fleet,
                cluster,
                ("cdi", "nriPluginEnabled"),
                "cdi.nriPluginEnabled: true injects GPUs into any container that sets "
                "NVIDIA_VISIBLE_DEVICES, without the nvidia runtime class",
            )


def _finding(fleet: Fleet, cluster: Cluster, path: tuple, message: str) -> Finding:
    return Finding(
        rule=ID,
        severity=SEVERITY,
        cluster=cluster.name,
        message=message,
        hint="enable CDI (cdi.enabled: true, nriPluginEnabled: false) and leave "
        "DEVICE_LIST_STRATEGY unset, or with CDI off set DEVICE_LIST_STRATEGY=volume-mounts",
        **at(values_location(fleet, cluster, *path)),
    )
