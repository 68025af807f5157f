"""A GPU Operator `driver.*` setting that the NVIDIADriver CRD shadows: dead configuration.

## Why it matters
With `driver.nvidiaDriverCRD.enabled: true` in the Helm values (ClusterPolicy `driver.useNvidiaDriverCRD`),
the driver is no longer a ClusterPolicy operand. In NVIDIA/gpu-operator v26.7.0:

- `controllers/state_manager.go`, `ClusterPolicyController.step`: the `state-driver` (and
  `state-vgpu-manager`)
  states are skipped ("NVIDIADriver CRD is enabled, cleaning up all NVIDIA driver daemonsets owned by
  ClusterPolicy"), so `TransformDriver` and its helpers in `controllers/object_controls.go`, the only readers
  of the ClusterPolicy's `driver.repository/image/version`, `imagePullPolicy`, `imagePullSecrets`, `manager`,
  `rdma`, `repoConfig`, `certConfig`, `licensingConfig`, `kernelModuleConfig`, `kernelModuleType`,
  `usePrecompiled`, `env`, `args`, `resources`, `hostNetwork`, `secretEnv`, `virtualTopology` and the probes,
  never run;
- `controllers/upgrade_controller.go`, `Reconcile`: `if clusterPolicy == nil ||
  clusterPolicy.Spec.Driver.UseNvidiaDriverCRDType() { return r.reconcileNVIDIADriverUpgrades(...) }`, which
  applies each NVIDIADriver's own `spec.upgradePolicy` (`GetUpgradePolicyWithDefaults` in
  `api/nvidia/v1alpha1/nvidiadriver_types.go`: defaults when unset) and never reads the ClusterPolicy's
  `driver.upgradePolicy`; `controllers/nodelabeling_controller.go` (`applyDriverAutoUpgradeAnnotation`) takes
  the auto-upgrade switch from the NVIDIADriver objects as well;
- `controllers/nvidiadriver_controller.go` builds the driver DaemonSets from the NVIDIADriver's spec alone
  (plus
  the ClusterPolicy's `hostPaths.rootFS`).

The chart copies `driver.*` values into an NVIDIADriver only for its default CR, when
`driver.nvidiaDriverCRD.deployDefaultCR` is true (chart default; `deployments/gpu-operator/templates/
nvidiadriver.yaml`: `repository`, `image`, `version`, `kernelModuleType`, `usePrecompiled`,
`imagePullSecrets`, `manager`, probes, `upgradePolicy`, `rdma`, `repoConfig`, `certConfig`, `licensingConfig`,
`virtualTopology`, `kernelModuleConfig`, `secretEnv`, `resources`, `env`, `args`, `hostNetwork`). With
`deployDefaultCR: false`, or for a setting that template does not copy (`imagePullPolicy`,
`useOpenKernelModules`, ...), a `driver.*` value other than `enabled` and `nvidiaDriverCRD` does nothing.
Someone who writes it (a faster rollout on the test cluster, a driver env) believes it is in force; the
operator upgrades and configures the drivers by the NVIDIADriver objects, and the capacity arithmetic of an
upgrade (UPG008) follows those too.

## Bad example
```yaml
# policies/gpu-operator/values.yaml
driver:
  nvidiaDriverCRD: {enabled: true, deployDefaultCR: false}
# clusters/test-us/gpu-operator-values.yaml
driver:
  upgradePolicy:
    maxParallelUpgrades: 2     # ignored: each NVIDIADriver's spec.upgradePolicy rules
```

## Fix
Move the setting to where it takes effect, the `spec` of the NVIDIADriver objects of the pools it is meant for
(`pools/<pool>/nvidiadriver.yaml`, e.g. `spec.upgradePolicy`), and delete it from the values; or delete it.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..domain.gpu_operator import helm_layers, policy_is_helm_values, section, setting
from ..findings import Finding, Severity, at
from ..model import Cluster, Fleet

ID = "WL008"
SEVERITY = Severity.ERROR
SUMMARY = "A GPU Operator driver.* setting is dead configuration: the NVIDIADriver CRD shadows it"

LIVE_KEYS = {"enabled", "nvidiaDriverCRD", "useNvidiaDriverCRD"}  # still read with the CRD on
# driver.* values the chart copies into its default NVIDIADriver (templates/nvidiadriver.yaml, v26.7.0).
COPIED_TO_DEFAULT_CR = {
    "repository",
    "image",
    "version",
    "kernelModuleType",
    "usePrecompiled",
    "imagePullSecrets",
    "manager",
    "startupProbe",
    "livenessProbe",
    "readinessProbe",
    "upgradePolicy",
    "rdma",
    "repoConfig",
    "certConfig",
    "licensingConfig",
    "virtualTopology",
    "kernelModuleConfig",
    "secretEnv",
    "resources",
    "env",
    "args",
    "hostNetwork",
}


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        if cluster.cluster_policy is None:
            continue
        if policy_is_helm_values(cluster):
            yield from _values(fleet, cluster)
        else:
            yield from _manifest(fleet, cluster)


def _values(fleet: Fleet, cluster: Cluster) -> Iterator[Finding]:
    enabled, _ = setting(fleet, cluster, "driver", "nvidiaDriverCRD", "enabled")
    if enabled is not True:
        return
    default_cr, _ = setting(fleet, cluster, "driver", "nvidiaDriverCRD", "deployDefaultCR")
    default_cr = default_cr is not False  # chart default: true
    for layer, data in helm_layers(fleet, cluster):
        driver = data.get("driver")
        for key in driver if isinstance(driver, dict) else ():
            if key in LIVE_KEYS or (default_cr and key in COPIED_TO_DEFAULT_CR):
                continue
            why = (
                "deployDefaultCR is false, so the chart copies no driver.* value into an NVIDIADriver"
                if key in COPIED_TO_DEFAULT_CR
                else "the chart does not copy it into its default NVIDIADriver either"
            )
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster.name,
                message=f"dead configuration: driver.{key} is set while the NVIDIADriver CRD is "
                f"enabled (driver.nvidiaDriverCRD.enabled): the operator configures and upgrades each "
                f"driver by its NVIDIADriver's spec and ignores the ClusterPolicy's "
                f"driver.{key}; {why}",
                hint=f"move the setting to spec.{_crd_field(key)} of the NVIDIADriver objects it "
                f"is meant for (pools/<pool>/nvidiadriver.yaml) and delete it here, or delete it",
                **at(fleet.locate_file(layer, "driver", key)),
            )


def _manifest(fleet: Fleet, cluster: Cluster) -> Iterator[Finding]:
    driver = section(cluster.cluster_policy.spec, "driver")
    if not isinstance(driver, dict) or driver.get("useNvidiaDriverCRD") is not True:
        return
    for key in driver:
        if key in LIVE_KEYS:
            continue
        yield Finding(
            rule=ID,
            severity=SEVERITY,
            cluster=cluster.name,
            message=f"dead configuration: ClusterPolicy driver.{key} is set while "
            "driver.useNvidiaDriverCRD is true: the operator configures and upgrades each driver by its "
            "NVIDIADriver's spec",
            hint=f"move the setting to spec.{_crd_field(key)} of the NVIDIADriver objects, or delete it",
            **at(fleet.locate(cluster.cluster_policy, "spec", "driver", key)),
        )


def _crd_field(key: str) -> str:
    return {"virtualTopology": "virtualTopologyConfig"}.get(key, key)
