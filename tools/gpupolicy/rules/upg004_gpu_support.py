'''The target driver (or the rollback target) does not support a GPU of the stage.

## Why it matters
Each GPU architecture has a first driver that knows it, MIG has its own minimum per model (H100 MIG needs
R525 >= 525.85.12, H200 R550 >= 550.90.07, B200 R570 >= 570.133.20), and Blackwell GPUs run only the open
kernel modules. A driver below the minimum does not load on the node: the GPUs vanish from the pool in the
middle of a rollout. The rollback target must run them too, or rolling back breaks the pool a second time.
The minimums come from the GPU catalog (`tools/gpupolicy/domain/catalog.py`).

## Bad example
```yaml
# pools/prod-b200/pool.yaml: gpu.model B200 (needs 570.133.20 or newer)
spec:
  component: driver
  from: "550.163.01"
  to: "565.57.01"
```

## Fix
Choose a target driver at or above every minimum of the GPUs in the plan, or leave the pool out of the plan
until a newer driver is planned.
'''

from collections.abc import Iterator

from ..findings import Finding, Severity
from ..model import Fleet
from ..upgrade.plans import Plan, drivers_of_pool, gpu_support_problems, plans_of, stage_units, unit_location

ID = "UPG004"
SEVERITY = Severity.ERROR
SUMMARY = "Target or rollback driver does not support a GPU of the stage"


def check(fleet: Fleet) -> Iterator[Finding]:
    for plan in plans_of(fleet).plans:
        if plan.component == "driver" and not plan.finished:
            yield from _check_plan(fleet, plan)


def _check_plan(fleet: Fleet, plan: Plan) -> Iterator[Finding]:
    for stage in plan.stages:
        for unit in stage_units(fleet, plan, stage):
            cluster = fleet.clusters[unit.cluster]
            drivers = drivers_of_pool(cluster, unit.pool)
            module_type = str(drivers[0].obj.spec.get("kernelModuleType", "auto")) if drivers else "auto"
            for role, version, field in (
                ("target", plan.to_version, "to"),
                ("rollback target", plan.rollback_target, "rollback"),
            ):
                for problem in gpu_support_problems(version, unit.pool, module_type):
                    location = plan.locate("spec", field, *(("target",) if field == "rollback" else ()))
                    yield Finding(
                        rule=ID,
                        severity=SEVERITY,
                        cluster=unit.cluster,
                        path=location.path,
                        line=location.line,
                        message=f"{plan.name}: stage {stage.name}, pool {unit.pool_name}: {role} "
                        f"driver {version} cannot run it: {problem}",
                        hint=f"pick a driver that supports {unit.pool.gpu_model}, or move "
                        f"{unit.pool_name} out of this plan "
                        f"({unit_location(fleet, plan, unit)})",
                    )
