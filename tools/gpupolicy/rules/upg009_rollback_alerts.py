'''Rollback criteria name an alert that no PrometheusRule of the stage's clusters defines.

## Why it matters
Rollback criteria are written down before the rollout starts so nobody argues about them at 3 a.m.: "roll back
if GPUXidCriticalError fires". An alert name that does not exist (a typo, an alert renamed since) never fires,
so the criterion is silently always met. Every alert named under `rollback.criteria.silentAlerts` must be an
alerting rule in a `PrometheusRule` rendered into every cluster the plan touches.

## Bad example
```yaml
rollback:
  target: "580.173.02"
  criteria:
    silentAlerts: [GPUXidCritical]    # the alert is GPUXidCriticalError
```

## Fix
Use the alert names from `policies/observability/alerts/` (the generated alert page lists them), or add the
alert with its runbook first.
'''

from collections.abc import Iterator

from ..domain.observability import alerts_of_cluster
from ..findings import Finding, Severity
from ..model import Fleet
from ..upgrade.plans import Plan, plans_of, stage_units

ID = "UPG009"
SEVERITY = Severity.ERROR
SUMMARY = "Rollback criteria name an alert that does not exist"


def check(fleet: Fleet) -> Iterator[Finding]:
    for plan in plans_of(fleet).plans:
        if not plan.finished:
            yield from _check_plan(fleet, plan)


def _check_plan(fleet: Fleet, plan: Plan) -> Iterator[Finding]:
    criteria = plan.criteria
    if not criteria.silent_alerts:
        location = plan.locate("spec", "rollback", "criteria")
        yield Finding(
            rule=ID,
            severity=SEVERITY,
            path=location.path,
            line=location.line,
            message=f"{plan.name}: the rollback criteria name no alert that must stay silent",
            hint="list the alerts that mean roll back under silentAlerts (e.g. GPUXidCriticalError)",
        )
        return
    clusters = sorted({unit.cluster for stage in plan.stages for unit in stage_units(fleet, plan, stage)})
    defined = {name: {alert.name for alert in alerts_of_cluster(fleet.clusters[name])} for name in clusters}
    for index, alert in enumerate(criteria.silent_alerts):
        missing = [name for name in clusters if alert not in defined[name]]
        if missing:
            location = plan.locate("spec", "rollback", "criteria", "silentAlerts", index)
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                path=location.path,
                line=location.line,
                cluster=",".join(missing),
                message=f"{plan.name}: rollback alert {alert} is defined by no PrometheusRule in "
                f"{', '.join(missing)}",
                hint="use an alert from policies/observability/alerts/, or add it there first",
            )
