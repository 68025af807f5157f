"""A pool's nodes select a device-plugin config key that does not exist.

## Why it matters
The device plugin's config manager reads the node label `nvidia.com/device-plugin.config` and loads that key
of the operator's device-plugin ConfigMap. A key that is not there ("specified config ... does not exist")
leaves the node on whatever config it had before, or none: the pool's time-slicing or MIG exposure silently
differs from what pool.yaml and the quotas assume. The same holds for the ClusterPolicy's
`devicePlugin.config.default`.

## Bad example
```yaml
# pools/shared-l4/pool.yaml
nodeLabels:
  nvidia.com/device-plugin.config: l4-timeslice   # the ConfigMap has key shared-l4
```

## Fix
Name a key the ConfigMap has: the pool component's configMapGenerator entry `<key>=device-plugin.yaml`.
"""

from collections.abc import Iterator

from ..domain.gpu_operator import default_config_key, policy_location
from ..findings import Finding, Severity, at
from ..model import DEVICE_PLUGIN_CONFIG_LABEL, Cluster, Fleet

ID = "SHARE004"
SEVERITY = Severity.ERROR
SUMMARY = "Device-plugin config key named by a pool or the default does not exist"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        known = _known(cluster)
        for pool in cluster.pools:
            key = pool.node_labels.get(DEVICE_PLUGIN_CONFIG_LABEL)
            if key is None or key in cluster.device_plugin_configs:
                continue
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster.name,
                message=f"pool {pool.name} labels its nodes {DEVICE_PLUGIN_CONFIG_LABEL}={key}, "
                f"but the device-plugin ConfigMap has no key {key} ({known}); the nodes keep a stale or "
                "empty config",
                hint="use an existing key, or add the pool's device-plugin.yaml to the ConfigMap",
                **at(fleet.locate_file(pool.path, "spec", "nodeLabels", DEVICE_PLUGIN_CONFIG_LABEL)),
            )
        default = default_config_key(cluster)
        if default and default not in cluster.device_plugin_configs:
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster.name,
                message=f"ClusterPolicy devicePlugin.config.default is {default}, but the "
                f"device-plugin ConfigMap has no such key ({known}); unlabelled GPU nodes get no config",
                hint="name an existing key as the default",
                **at(policy_location(fleet, cluster, "devicePlugin", "config", "default", nearest=False)),
            )


def _known(cluster: Cluster) -> str:
    keys = sorted(cluster.device_plugin_configs)
    return f"keys: {', '.join(keys)}" if keys else "it has no keys, or is not rendered"
