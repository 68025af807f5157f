'''A plan's recorded history is one `upgrade promote` could not have written.

## Why it matters
`gpupolicy upgrade promote` records each stage's `started` and `completed` only after the stage before it has
soaked for its minimum and its checks passed. The plan is a file in a pull request, though: a hand-edited
record ("canary completed" an hour into a 7-day soak, a start in 2099 that makes `upgrade watch` see nothing
to watch) would pass every other rule and let the next `promote` move production on a soak that never
happened. This rule checks the record itself, on every `validate`, against the same minimum `promote` uses
(`upgrades.PlanSet.effective_soak`).

## Bad example
```yaml
stages:
  - name: canary
    phase: limited
    minimumSoak: 72h
    started: "2026-11-10T09:00:00Z"
    completed: "2026-11-10T10:00:00Z"   # 1h of 72h
```

## Fix
Revert the hand edit and let `gpupolicy upgrade promote` record stages when their soak is over.
'''

from collections.abc import Iterator
from datetime import datetime

from ..findings import Finding, Severity
from ..model import Fleet
from ..upgrade import plans as upgrades
from ..upgrade.plans import Plan, PlanSet, Stage, format_duration, format_timestamp, plans_of

ID = "UPG016"
SEVERITY = Severity.ERROR
SUMMARY = "A plan's recorded stage history is one promote could not have written"


def check(fleet: Fleet) -> Iterator[Finding]:
    plans = plans_of(fleet)
    now = upgrades.now_utc()  # the clock `upgrade` reads too (tests that replay a rollout set it)
    for plan in plans.plans:
        for stage in plan.stages:
            yield from _stage_problems(plans, plan, stage, now)


def _stage_problems(plans: PlanSet, plan: Plan, stage: Stage, now: datetime) -> Iterator[Finding]:
    for field, moment in (("started", stage.started), ("completed", stage.completed)):
        if moment is not None and moment > now:
            yield _finding(
                plan,
                stage,
                field,
                f"stage {stage.name} is recorded as {field} in the future ({format_timestamp(moment)})",
            )
    if stage.started is None:
        return  # (a stage started before the one before it completed is UPG001's)
    required = plans.effective_soak(stage)
    if stage.completed is not None and stage.completed - stage.started < required:
        yield _finding(
            plan,
            stage,
            "completed",
            f"stage {stage.name} is recorded as completed after "
            f"{format_duration(stage.completed - stage.started)} of its "
            f"{format_duration(required)} soak",
        )


def _finding(plan: Plan, stage: Stage, field: str, message: str) -> Finding:
    location = plan.locate_stage(stage, field)
    return Finding(
        rule=ID,
        severity=SEVERITY,
        message=f"{plan.name}: {message}",
        path=location.path,
        line=location.line,
        hint="revert the hand edit; `gpupolicy upgrade promote` records stages",
    )
