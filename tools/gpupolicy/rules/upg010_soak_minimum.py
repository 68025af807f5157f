'''A stage plans less soak time than the platform's minimum for its phase.

## Why it matters
Soak is what makes a stage worth having: a driver fault that shows after a day of load (a memory leak in the
kernel module, XIDs under a specific kernel) is caught only if the stage runs long enough before the next one
starts. The platform sets the shortest soak per phase in `policies/upgrades/requirements.yaml`
(`minimumSoak`; without the file: test 24h, limited 72h, full 0); `gpupolicy upgrade promote` refuses to leave
a stage before the longer of the two has passed, and this rule keeps plans from promising less.

## Bad example
```yaml
# requirements.yaml: minimumSoak: {limited: 72h}
stages:
  - name: canary
    phase: limited
    minimumSoak: 4h
```

## Fix
Raise the stage's `minimumSoak` to at least the phase minimum.
'''

from collections.abc import Iterator

from ..findings import Finding, Severity
from ..model import Fleet
from ..upgrade.plans import format_duration, plans_of

ID = "UPG010"
SEVERITY = Severity.ERROR
SUMMARY = "Stage soak time below the configured minimum"


def check(fleet: Fleet) -> Iterator[Finding]:
    plans = plans_of(fleet)
    source = plans.requirements.path or "the built-in defaults"
    for plan in plans.plans:
        if plan.finished:
            continue
        for stage in plan.stages:
            minimum = plans.minimum_soak(stage.phase)
            if stage.minimum_soak < minimum:
                location = plan.locate_stage(stage, "minimumSoak")
                yield Finding(
                    rule=ID,
                    severity=SEVERITY,
                    path=location.path,
                    line=location.line,
                    message=f"{plan.name}: stage {stage.name} soaks "
                    f"{format_duration(stage.minimum_soak)}; a {stage.phase} stage needs at least "
                    f"{format_duration(minimum)} ({source})",
                    hint=f"minimumSoak: {format_duration(minimum)}",
                )
