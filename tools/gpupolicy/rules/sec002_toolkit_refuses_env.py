"""The NVIDIA container toolkit still accepts NVIDIA_VISIBLE_DEVICES from unprivileged containers.

## Why it matters
Whatever the device plugin does, the `nvidia` runtime (used by pods with `runtimeClassName: nvidia`, and by
every pod where it is the default runtime) hands out the GPUs a container names in `NVIDIA_VISIBLE_DEVICES`.
The toolkit setting `accept-nvidia-visible-devices-envvar-when-unprivileged` defaults to **true**; only
`false` closes that door for unprivileged containers (CUDA images set the variable to `all` in the image
itself, where no admission policy can see it). Reference: `../shared/reference/gpu-operator.md` section 8.

## Bad example
```yaml
toolkit:
  env: []        # ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED defaults to true
```

## Fix
```yaml
toolkit:
  env:
    - name: ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED
      value: "false"
```
(With `DEVICE_LIST_STRATEGY=volume-mounts` also set `ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS=true`.)
"""

from __future__ import annotations

from collections.abc import Iterator

from ..domain.gpu_operator import clusters_with_policy, policy_section
from ..domain.workloads import env_value, values_location
from ..findings import Finding, Severity, at
from ..model import Fleet

ID = "SEC002"
SEVERITY = Severity.ERROR
SUMMARY = "The container toolkit refuses NVIDIA_VISIBLE_DEVICES from unprivileged containers"

ENV_NAME = "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED"
MOUNTS_ENV = "ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in clusters_with_policy(fleet):
        toolkit = policy_section(cluster, "toolkit")
        if toolkit.get("enabled") is False:
            continue  # a pre-installed toolkit is configured on the hosts, outside this repository
        value = env_value(toolkit, ENV_NAME)
        if value is None or value.strip().lower() != "false":
            shown = "unset (default true)" if value is None else f"'{value}'"
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster.name,
                message=f"toolkit env {ENV_NAME} is {shown}: unprivileged containers can pick GPUs "
                "with NVIDIA_VISIBLE_DEVICES",
                hint=f"add {{name: {ENV_NAME}, value: \"false\"}} to toolkit.env",
                **at(values_location(fleet, cluster, "toolkit", "env")),
            )
        plugin = policy_section(cluster, "devicePlugin")
        if (
            env_value(plugin, "DEVICE_LIST_STRATEGY") == "volume-mounts"
            and (env_value(toolkit, MOUNTS_ENV) or "").lower() != "true"
        ):
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster.name,
                message=f"DEVICE_LIST_STRATEGY is volume-mounts but toolkit env {MOUNTS_ENV} is "
                "not "
                "true: GPU pods get no devices",
                hint=f"add {{name: {MOUNTS_ENV}, value: \"true\"}} to toolkit.env",
                **at(values_location(fleet, cluster, "toolkit", "env")),
            )
