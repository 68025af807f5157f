"""The device plugin's DEVICE_LIST_STRATEGY contradicts the GPU Operator's CDI setting.

## Why it matters
The device list strategy decides how the device plugin hands a container its GPUs, and each strategy needs a
matching container runtime setup (NVIDIA/k8s-device-plugin `internal/plugin/server.go` `getAllocateResponse`):
`envvar` and `volume-mounts` only name the devices (`NVIDIA_VISIBLE_DEVICES`, or mounts under
`/var/run/nvidia-container-devices`) for the `nvidia` runtime to inject the device nodes and driver libraries;
`cdi-annotations` and `cdi-cri` name CDI devices that containerd / CRI-O inject themselves.

With `cdi.enabled: true` (the default from GPU Operator v25.10) the operator sets the plugin's
`DEVICE_LIST_STRATEGY=cdi-annotations,cdi-cri` (NVIDIA/gpu-operator `controllers/object_controls.go`,
`transformDevicePluginCtrForCDI`, called from `TransformDevicePlugin`) and configures the toolkit with
`NVIDIA_RUNTIME_SET_AS_DEFAULT=false` (`transformToolkitCtrForCDI`): `nvidia` is no longer the default
runtime, only a runtime class for the operator's own pods. But `TransformDevicePlugin` applies
`devicePlugin.env`
**afterwards** with `setContainerEnv`, which replaces a variable of the same name. So a `DEVICE_LIST_STRATEGY`
in the values wins: with `volume-mounts` (or `envvar`) and CDI on, the plugin answers with mounts and, because
the operator's daemonset sets `PASS_DEVICE_SPECS=true`, device nodes, and no CDI device; the team pod runs
under runc (the admission policies keep team pods off the `nvidia*` runtime classes), so it sees
`/dev/nvidia*` but no driver libraries: CUDA fails with "no CUDA-capable device" / libcuda not found.

The other way round, a `cdi-*` strategy with CDI off asks the plugin for CDI devices on nodes the operator has
not set up for CDI: the operator points the plugin's CDI hook at its own toolkit (`NVIDIA_CDI_HOOK_PATH`) only
in `transformDevicePluginCtrForCDI`, so the plugin's CDI specs name its default hook `/usr/bin/nvidia-ctk`
(k8s-device-plugin `api/config/v1/consts.go` `DefaultNvidiaCTKPath`, flag `--nvidia-cdi-hook-path` in
`cmd/nvidia-device-plugin/main.go`), which the operator-installed toolkit (under `/usr/local/nvidia`) does not
provide, and the toolkit keeps `nvidia` as the default runtime in its legacy mode.

A list that keeps a `cdi-*` strategy next to `volume-mounts` still injects through CDI (the extra mounts are
inert) and is not reported here; SEC001 reports `envvar` in any list.

## Bad example
```yaml
cdi:
  enabled: true
devicePlugin:
  env:
    - name: DEVICE_LIST_STRATEGY
      value: volume-mounts     # replaces the operator's cdi-annotations,cdi-cri
```

## Fix
With CDI on, do not set `DEVICE_LIST_STRATEGY` at all (the operator sets `cdi-annotations,cdi-cri`), or set
only `cdi-*` strategies. `volume-mounts` (with the toolkit's
`ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS=true`, SEC002) is the hardening for clusters that run with
`cdi.enabled: false`.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..domain.gpu_operator import DEVICE_LIST_STRATEGY_ENV as ENV_NAME
from ..domain.gpu_operator import (
    OPERATOR_CDI_STRATEGY,
    cdi_enabled,
    clusters_with_policy,
    policy_section,
    strategies,
)
from ..domain.workloads import env_value, values_location
from ..findings import Finding, Severity, at
from ..model import Fleet

ID = "WL002"
SEVERITY = Severity.ERROR
SUMMARY = "The device plugin's device-list strategy contradicts the CDI setting"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in clusters_with_policy(fleet):
        plugin = policy_section(cluster, "devicePlugin")
        if plugin.get("enabled") is False:
            continue
        value = env_value(plugin, ENV_NAME)
        if value is None:
            continue
        chosen = strategies(value)
        cdi_chosen = sorted(s for s in chosen if s.startswith("cdi-"))
        where = values_location(fleet, cluster, "devicePlugin", "env", *_entry(plugin, ENV_NAME), "value")
        if cdi_enabled(cluster) and not cdi_chosen:
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster.name,
                message=f"devicePlugin.env sets {ENV_NAME}={value} while CDI is enabled: it "
                f"replaces the operator's {OPERATOR_CDI_STRATEGY}, and without `nvidia` as the default "
                "runtime "
                "GPU pods get device nodes but no driver libraries",
                hint=f"remove {ENV_NAME} from devicePlugin.env (the operator sets "
                f"{OPERATOR_CDI_STRATEGY} "
                "when cdi.enabled is true)",
                **at(where),
            )
        elif not cdi_enabled(cluster) and cdi_chosen:
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster.name,
                message=f"devicePlugin.env sets {ENV_NAME}={value} while CDI is disabled: the "
                f"operator does not prepare the nodes for CDI ({', '.join(cdi_chosen)} makes the plugin "
                "write CDI specs "
                "whose hook is /usr/bin/nvidia-ctk, not the operator's toolkit)",
                hint="enable CDI (cdi.enabled: true) and remove the env, or use volume-mounts with CDI off",
                **at(where),
            )


def _entry(plugin: dict, name: str) -> tuple[int, ...]:
    """The index of the env entry `name` in devicePlugin.env (the one env_value reads), as a field path
    part."""
    env = plugin.get("env")
    for index, item in enumerate(env if isinstance(env, list) else []):
        if isinstance(item, dict) and item.get("name") == name:
            return (index,)
    return ()
