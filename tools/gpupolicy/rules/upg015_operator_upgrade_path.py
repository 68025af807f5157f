'''A GPU Operator upgrade skips a major release, or a plan's rollback target does not support the stage.

## Why it matters
NVIDIA supports GPU Operator upgrades within a major release (26.7.0 -> 26.7.1) or to the next one (26.3 ->
26.7), not across several (`life-cycle-policy.rst`, kept in `catalog.operator_upgrade_supported`): CRD and
operand changes in between are not migrated. And the rollback target is where a failed stage goes back in a
hurry: an operator release that is not validated on the cluster's Kubernetes version, or does not list the
drivers the cluster runs, turns a rollback into a second incident; for a driver plan, the cluster's operator
must list the driver the pools roll back to. UPG007 checks the target of the rollout; this rule checks the way
there and the way back.

## Bad example
```yaml
spec:
  component: gpu-operator
  from: v25.10.1
  to: v26.7.0          # skips 26.3
  rollback:
    target: v24.9.2    # validated on Kubernetes 1.24-1.31; the clusters run 1.33
```

## Fix
Upgrade one major at a time (a plan per step), and roll back to the release the clusters ran before (`from`).
'''

from collections.abc import Iterator

from ..domain import catalog
from ..findings import Finding, Severity
from ..model import Fleet
from ..upgrade.plans import Plan, clusters_by_stage, drivers_of_pool, plans_of, stage_units

ID = "UPG015"
SEVERITY = Severity.ERROR
SUMMARY = "Operator upgrade skips a major release, or the rollback target does not support the stage"


def check(fleet: Fleet) -> Iterator[Finding]:
    for plan in plans_of(fleet).plans:
        if plan.finished:
            continue
        if plan.component == "gpu-operator":
            yield from _upgrade_path(plan)
            yield from _operator_rollback(fleet, plan)
        else:
            yield from _driver_rollback(fleet, plan)


def _upgrade_path(plan: Plan) -> Iterator[Finding]:
    if catalog.operator_upgrade_supported(plan.from_version, plan.to_version) is False:
        yield _finding(
            plan,
            ("spec", "to"),
            "",
            f"{plan.name}: GPU Operator {plan.from_version} -> {plan.to_version} skips a major "
            f"release; NVIDIA supports upgrades within a major or to the next one",
            "upgrade one major release at a time, one plan per step",
        )


def _operator_rollback(fleet: Fleet, plan: Plan) -> Iterator[Finding]:
    target = catalog.operator_release(plan.rollback_target)
    if target is None:
        # UPG007 already asks for releases in the catalog; an unknown target is reported there for `to`
        return
    for stage in plan.stages:
        for unit in stage_units(fleet, plan, stage):
            cluster = fleet.clusters[unit.cluster]
            kubernetes = cluster.facts.kubernetes_version
            if catalog.operator_supports_kubernetes(target.version, kubernetes) is False:
                low, high = target.kubernetes
                yield _finding(
                    plan,
                    ("spec", "rollback", "target"),
                    unit.cluster,
                    f"{plan.name}: rollback target GPU Operator {target.version} is validated on "
                    f"Kubernetes {low}-{high}; {unit.cluster} (stage {stage.name}) runs {kubernetes}",
                    "roll back to a release validated on the cluster's Kubernetes version",
                )
            if not target.supported_drivers:
                continue
            for pool in cluster.pools:
                for driver in drivers_of_pool(cluster, pool):
                    if driver.version and driver.version not in target.supported_drivers:
                        yield _finding(
                            plan,
                            ("spec", "rollback", "target"),
                            unit.cluster,
                            f"{plan.name}: rollback target GPU Operator {target.version} does not "
                            f"list driver {driver.version} (pool {pool.name} on {unit.cluster}, stage "
                            f"{stage.name})",
                            "roll back to a release that lists the cluster's drivers",
                        )


def _driver_rollback(fleet: Fleet, plan: Plan) -> Iterator[Finding]:
    for stage, name in clusters_by_stage(fleet, plan):
        release = catalog.operator_release(fleet.clusters[name].facts.gpu_operator_version)
        if release is None or not release.supported_drivers:
            continue
        if plan.rollback_target not in release.supported_drivers:
            yield _finding(
                plan,
                ("spec", "rollback", "target"),
                name,
                f"{plan.name}: GPU Operator {release.version} on {name} (stage {stage.name}) "
                f"does not list the rollback driver {plan.rollback_target}",
                "roll back to a driver the cluster's operator lists",
            )


def _finding(plan: Plan, path: tuple, cluster: str, message: str, hint: str) -> Finding:
    location = plan.locate(*path)
    return Finding(
        rule=ID,
        severity=SEVERITY,
        path=location.path,
        line=location.line,
        cluster=cluster,
        message=message,
        hint=hint,
    )
