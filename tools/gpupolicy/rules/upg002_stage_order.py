'''Upgrade stages are out of order: test environments first, a limited stage before production.

## Why it matters
The update procedure is test pool, then a limited (canary) stage, then the fleet. The first stage must hold
only pools of test-environment clusters, so a bad driver meets test workloads first; a production pool may
appear only in or after the limited stage, so at most the canaries meet a driver that production has never
run. Phases must not go backwards (a `test` stage after a `limited` one).

## Bad example
```yaml
stages:
  - name: first
    phase: test
    select: [{cluster: prod-us}]     # production in the test stage
  - name: rest
    phase: full                      # production pools with no limited stage before them
    select: [{cluster: prod-eu}]
```

## Fix
Start with the test cluster's pools, put the canary pools in a `limited` stage, and the rest of production
in a `full` stage after it.
'''

from collections.abc import Iterator

from ..findings import Finding, Severity
from ..model import Fleet
from ..upgrade.plans import PHASES, Plan, environment_of, plans_of, stage_units

ID = "UPG002"
SEVERITY = Severity.ERROR
SUMMARY = "Upgrade stages out of order (test first, limited before production)"


def check(fleet: Fleet) -> Iterator[Finding]:
    for plan in plans_of(fleet).plans:
        if not plan.finished:
            yield from _check_plan(fleet, plan)


def _check_plan(fleet: Fleet, plan: Plan) -> Iterator[Finding]:
    first = plan.stages[0]
    if first.phase != "test":
        yield _finding(
            plan,
            first,
            ("phase",),
            f"the first stage ({first.name}) is phase {first.phase}; an upgrade starts with a test stage",
            "add a stage with phase: test and the test pools first",
        )
    seen_limited = False
    highest = 0
    for stage in plan.stages:
        rank = PHASES.index(stage.phase)
        if rank < highest:
            yield _finding(
                plan,
                stage,
                ("phase",),
                f"stage {stage.name} is phase {stage.phase} after a {PHASES[highest]} stage",
                "order the stages test, limited, full",
            )
        highest = max(highest, rank)
        units = stage_units(fleet, plan, stage)
        if stage.phase == "test":
            others = [u.label for u in units if environment_of(fleet, u) != "test"]
            if others:
                yield _finding(
                    plan,
                    stage,
                    ("select",),
                    f"test stage {stage.name} takes pools outside test environments: {', '.join(others)}",
                    "move them to the limited or full stage",
                )
            continue
        production = [u.label for u in units if environment_of(fleet, u) == "production"]
        if production and not seen_limited and stage.phase != "limited":
            yield _finding(
                plan,
                stage,
                ("select",),
                f"stage {stage.name} upgrades production ({', '.join(production)}) before any limited stage",
                "add a limited stage with the canary pools before it",
            )
        seen_limited = seen_limited or stage.phase == "limited"


def _finding(plan: Plan, stage, field: tuple, message: str, hint: str) -> Finding:
    location = plan.locate_stage(stage, *field)
    return Finding(
        rule=ID,
        severity=SEVERITY,
        message=f"{plan.name}: {message}",
        path=location.path,
        line=location.line,
        hint=hint,
    )
