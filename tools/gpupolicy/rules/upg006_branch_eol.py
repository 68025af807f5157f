'''The target driver branch is past its end of life on a stage's planned date.

## Why it matters
NVIDIA stops shipping fixes (security ones included) for a driver branch at its end of life. Rolling a
branch out after that date means the fleet lands on a driver that will never be patched again, and the next
CVE forces an unplanned upgrade. End-of-life months come from NVIDIA's data center driver support matrix
(`catalog.DRIVER_BRANCHES`); a branch counts as alive until the last day of its EOL month.

## Bad example
```yaml
spec:
  component: driver
  to: "535.309.01"        # R535 ends 2026-06
  stages:
    - name: fleet
      planned: "2026-09-01"
```

## Fix
Target a branch that is supported past the last planned stage (a long-term support branch for production),
or finish the rollout before the end of life.
'''

from collections.abc import Iterator

from ..domain import catalog
from ..findings import Finding, Severity
from ..model import Fleet
from ..upgrade.plans import plans_of

ID = "UPG006"
SEVERITY = Severity.ERROR
SUMMARY = "Target driver branch is past end of life on a planned stage date"


def check(fleet: Fleet) -> Iterator[Finding]:
    for plan in plans_of(fleet).plans:
        if plan.component != "driver" or plan.finished:
            continue
        branch = catalog.branch_of(plan.to_version)
        eol = catalog.branch_eol(branch)
        if eol is None:
            continue
        for stage in plan.stages:
            if stage.planned > eol:
                location = plan.locate_stage(stage, "planned")
                yield Finding(
                    rule=ID,
                    severity=SEVERITY,
                    path=location.path,
                    line=location.line,
                    message=f"{plan.name}: stage {stage.name} is planned for {stage.planned}, "
                    f"after the end of life of driver branch {branch} ({eol})",
                    hint="target a branch supported past the last stage, or plan the stage earlier",
                )
