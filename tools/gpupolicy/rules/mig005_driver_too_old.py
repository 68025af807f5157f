"""A MIG pool's driver is older than the first driver that supports MIG on its GPU.

## Why it matters
MIG support arrived per GPU generation: R450 (450.80.02) for A100, R460 for A30, 525.85.12 for H100, 550.90.07
for H200, 570.133.20 for B200 and GB200 (NVIDIA MIG User Guide, "Deployment Considerations"; the facts are in
`gpupolicy.domain.catalog`). On an older driver the MIG manager cannot enable MIG mode or create the profiles,
the node ends in `nvidia.com/mig.config.state=failed`, and every quota on the pool's slices is unusable. The
driver is the one the `NVIDIADriver` whose `nodeSelector` picks the pool's nodes installs; without one, the
ClusterPolicy's `driver.version`, or the default driver of the cluster's GPU Operator release. The driver must
also be at least the GPU's own minimum driver.

## Bad example
```yaml
# pools/h100-mig/nvidiadriver.yaml, for an H100-80GB pool with a MIG layout
apiVersion: nvidia.com/v1alpha1
kind: NVIDIADriver
spec:
  version: "520.61.05"   # runs an H100, but MIG on H100 needs 525.85.12
  nodeSelector:
    gpupolicy.io/pool: h100-mig
```

## Fix
Move the pool to a driver at least the minimum the finding names, preferably a long-term support branch
(R580).
"""

from collections.abc import Iterator
from dataclasses import dataclass

from ..domain import catalog
from ..domain.catalog import GPUModel
from ..domain.gpu_operator import policy_location, policy_spec, section
from ..findings import Finding, Location, Severity, at
from ..model import Cluster, Fleet, Pool
from .mig_common import mig_pools, model_of, pool_drivers

ID = "MIG005"
SEVERITY = Severity.ERROR
SUMMARY = "MIG pool's driver is older than the first driver with MIG on its GPU"


@dataclass(frozen=True)
class PoolDriver:
    version: str
    source: str  # for messages
    location: Location | None


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for pool in mig_pools(cluster):
            model = model_of(pool)
            if model is None or not model.mig_capable:
                continue  # an unknown model or one without MIG is reported elsewhere (MIG006)
            for driver in drivers_of(fleet, cluster, pool):
                finding = _too_old(cluster, pool, model, driver)
                if finding is not None:
                    yield finding


def drivers_of(fleet: Fleet, cluster: Cluster, pool: Pool) -> list[PoolDriver]:
    """The driver versions the pool's nodes get; [] when the repository does not say (driver managed
    outside)."""
    objects = pool_drivers(cluster, pool)
    if objects:
        return [
            PoolDriver(d.version, f"NVIDIADriver {d.name}", fleet.locate(d.obj, "spec", "version"))
            for d in objects
        ]
    spec = policy_spec(cluster)
    if cluster.cluster_policy is None or section(spec, "driver", "enabled") is False:
        return []
    if section(spec, "driver", "useNvidiaDriverCRD"):
        return []  # drivers come only from NVIDIADriver objects, and none selects this pool
    version = section(spec, "driver", "version")
    if version:
        return [
            PoolDriver(
                str(version),
                "ClusterPolicy driver.version",
                policy_location(fleet, cluster, "driver", "version"),
            )
        ]
    release = catalog.operator_release(cluster.facts.gpu_operator_version)
    if release is None:
        return []
    return [
        PoolDriver(
            release.default_driver,
            f"the default driver of GPU Operator {release.version}",
            fleet.locate_file(cluster.facts.path, "spec", "gpuOperatorVersion"),
        )
    ]


def _too_old(cluster: Cluster, pool: Pool, model: GPUModel, driver: PoolDriver) -> Finding | None:
    needed = [(model.min_mig_driver, "the first driver with MIG"), (model.min_driver, "the first driver")]
    for minimum, what in needed:
        if minimum is None:
            continue
        try:
            old = not catalog.driver_at_least(driver.version, minimum)
        except ValueError:
            return None  # not a plain version (a digest or a tag); nothing to compare
        if old:
            return Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster.name,
                message=f"pool {pool.name} ({model.key}, MIG layout {pool.mig_layout}) runs driver "
                f"{driver.version} ({driver.source}), older than {minimum}, {what} for {model.key}",
                hint=f"use a driver >= {minimum} for this pool",
                **at(driver.location),
            )
    return None
