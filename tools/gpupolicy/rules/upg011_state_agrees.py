'''The repository's versions disagree with the rollout plan's record.

## Why it matters
The plan file is the record of the rollout: stages with `started` run the target version, stages not yet
promoted run the source version. When a manifest says otherwise (someone bumped a pool's NVIDIADriver by hand,
or promoted without recording it) the plan no longer describes the fleet: its soak times, rollback and
capacity checks are about a rollout that is not the one happening. Two unfinished plans for the same
component would each claim the same pools, so only one may be open at a time.

## Bad example
```yaml
# plan: stage fleet (us-h100-train) not started -> expects 580.173.02
# pools/us-h100-train/nvidiadriver.yaml
spec:
  version: "595.91.07"
```

## Fix
Use `gpupolicy upgrade promote` / `rollback`, which edit the manifests and the record together; or restore the
version the plan expects.
'''

from collections import defaultdict
from collections.abc import Iterator

from ..findings import Finding, Severity
from ..model import Fleet
from ..upgrade.plans import Plan, expected_version, plans_of, stage_units, unit_location, unit_version

ID = "UPG011"
SEVERITY = Severity.ERROR
SUMMARY = "Repository versions disagree with the rollout plan's record"


def check(fleet: Fleet) -> Iterator[Finding]:
    open_plans = [plan for plan in plans_of(fleet).plans if not plan.finished]
    by_component: dict[str, list[Plan]] = defaultdict(list)
    for plan in open_plans:
        by_component[plan.component].append(plan)
        yield from _check_plan(fleet, plan)
    for component, plans in sorted(by_component.items()):
        for plan in plans[1:]:
            location = plan.locate("spec", "component")
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                path=location.path,
                line=location.line,
                message=f"{plan.name}: another unfinished {component} plan is open "
                f"({plans[0].path}); "
                "two plans would claim the same pools",
                hint="finish the first plan (promote its last stage) or delete one",
            )


def _check_plan(fleet: Fleet, plan: Plan) -> Iterator[Finding]:
    seen: set = set()
    for stage in plan.stages:
        expected = expected_version(plan, stage)
        recorded = "promoted" if stage.started else "not promoted"
        for unit in stage_units(fleet, plan, stage):
            if unit in seen:
                continue  # UPG003 reports a unit in two stages
            seen.add(unit)
            actual = unit_version(fleet, plan, unit)
            if actual == expected:
                continue
            location = unit_location(fleet, plan, unit)
            what = "its NVIDIADriver objects disagree" if actual is None else f"the repository has {actual}"
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=unit.cluster,
                path=location.path,
                line=location.line,
                message=f"{plan.name}: {unit.label} is in stage {stage.name} ({recorded}), so it "
                f"should run {expected}; {what}",
                hint="use `gpupolicy upgrade promote`/`rollback`, or set the version the plan expects",
            )
