'''The GPU Operator release and the Kubernetes version or driver of a stage do not go together.

## Why it matters
Each GPU Operator release is validated on a range of Kubernetes minors and lists the drivers it supports
(NVIDIA's platform-support and life-cycle pages, kept in `catalog.OPERATOR_RELEASES`). For a driver plan, the
operator running on each cluster of the stage must list the target driver; for a gpu-operator plan, the target
release must support the cluster's Kubernetes version and every driver the cluster's pools run. Outside those
lists the operator may render driver DaemonSets that never become ready, and NVIDIA will not support the
combination.

## Bad example
```yaml
# clusters/prod-us/cluster.yaml: kubernetesVersion "1.33"
spec:
  component: gpu-operator
  from: v25.10.1
  to: v24.9.2          # validated on Kubernetes 1.24-1.31 only
```

## Fix
Pick a release whose validated Kubernetes range and driver list cover the stage, or upgrade Kubernetes (or
the driver) first with its own plan.
'''

from collections.abc import Iterator

from ..domain import catalog
from ..findings import Finding, Severity
from ..model import Fleet
from ..upgrade.plans import Plan, clusters_by_stage, drivers_of_pool, plans_of, stage_units

ID = "UPG007"
SEVERITY = Severity.ERROR
SUMMARY = "GPU Operator release does not support the stage's Kubernetes version or driver"


def check(fleet: Fleet) -> Iterator[Finding]:
    for plan in plans_of(fleet).plans:
        if plan.finished:
            continue
        if plan.component == "driver":
            yield from _driver_plan(fleet, plan)
        else:
            yield from _operator_plan(fleet, plan)


def _driver_plan(fleet: Fleet, plan: Plan) -> Iterator[Finding]:
    for stage, name in clusters_by_stage(fleet, plan):
        facts = fleet.clusters[name].facts
        release = catalog.operator_release(facts.gpu_operator_version)
        if release is None or not release.supported_drivers:
            continue
        if plan.to_version not in release.supported_drivers:
            location = plan.locate("spec", "to")
            yield _finding(
                location,
                name,
                f"{plan.name}: GPU Operator {release.version} on {name} (stage {stage.name}) "
                f"does not list driver {plan.to_version} as supported "
                f"({', '.join(release.supported_drivers)})",
                "choose a listed driver, or upgrade the GPU Operator first",
            )


def _operator_plan(fleet: Fleet, plan: Plan) -> Iterator[Finding]:
    release = catalog.operator_release(plan.to_version)
    if release is None:
        location = plan.locate("spec", "to")
        yield _finding(
            location,
            "",
            f"{plan.name}: GPU Operator {plan.to_version} is not in the catalog; "
            "its "
            "Kubernetes range and drivers cannot be checked",
            f"known releases: {', '.join(catalog.OPERATOR_RELEASES)}",
        )
        return
    for stage in plan.stages:
        for unit in stage_units(fleet, plan, stage):
            cluster = fleet.clusters[unit.cluster]
            location = plan.locate_stage(stage, "select")
            kubernetes = cluster.facts.kubernetes_version
            if catalog.operator_supports_kubernetes(release.version, kubernetes) is False:
                low, high = release.kubernetes
                yield _finding(
                    location,
                    unit.cluster,
                    f"{plan.name}: GPU Operator {release.version} is validated on Kubernetes "
                    f"{low}-{high}; {unit.cluster} (stage {stage.name}) runs {kubernetes}",
                    "pick a release validated on this Kubernetes version",
                )
            if not release.supported_drivers:
                continue
            for pool in cluster.pools:
                for driver in drivers_of_pool(cluster, pool):
                    if driver.version and driver.version not in release.supported_drivers:
                        yield _finding(
                            location,
                            unit.cluster,
                            f"{plan.name}: GPU Operator {release.version} does not list driver "
                            f"{driver.version} (pool {pool.name} on {unit.cluster}, stage "
                            f"{stage.name})",
                            "upgrade the pool's driver to a listed version first",
                        )


def _finding(location, cluster: str, message: str, hint: str) -> Finding:
    return Finding(
        rule=ID,
        severity=SEVERITY,
        path=location.path,
        line=location.line,
        cluster=cluster,
        message=message,
        hint=hint,
    )
