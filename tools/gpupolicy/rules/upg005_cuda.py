'''A team on a stage's pools needs a CUDA version the target driver does not run.

## Why it matters
A CUDA toolkit needs a minimum driver (CUDA 13.2 needs 595.45.04, CUDA 13.0 needs 580.65.06, ...). Teams
declare the CUDA versions their images need in `policies/upgrades/requirements.yaml`; a team is on a pool when
its ClusterQueue has quota (nominal or borrowing) on the pool's flavor, or the pool is isolated for it. If the
target driver is older than what one of those images needs, the team's jobs fail with
`CUDA driver version is insufficient` on every upgraded node. The table is `catalog.CUDA_MIN_DRIVER`, from the
CUDA Toolkit release notes.

## Bad example
```yaml
# policies/upgrades/requirements.yaml
spec:
  cuda:
    nlp:
      - version: "13.2"      # needs 595.45.04
# the plan
spec:
  to: "580.173.02"
```

## Fix
Plan a driver that covers every declared CUDA version, or have the team pin images to an older CUDA (and
change its entry in requirements.yaml) before the rollout.
'''

from collections.abc import Iterator

from ..findings import Finding, Severity
from ..model import Fleet
from ..upgrade.plans import Plan, cuda_problems, plans_of, stage_units, teams_on_pool

ID = "UPG005"
SEVERITY = Severity.ERROR
SUMMARY = "Target driver is too old for a CUDA version a team on the stage needs"


def check(fleet: Fleet) -> Iterator[Finding]:
    plans = plans_of(fleet)
    for plan in plans.plans:
        if plan.component == "driver" and not plan.finished:
            yield from _check_plan(fleet, plan, plans.requirements)


def _check_plan(fleet: Fleet, plan: Plan, requirements) -> Iterator[Finding]:
    reported: set = set()
    for stage in plan.stages:
        for unit in stage_units(fleet, plan, stage):
            for team in teams_on_pool(fleet.clusters[unit.cluster], unit.pool):
                for need, problem in cuda_problems(plan.to_version, requirements.needs_of(team)):
                    key = (need.team, need.version, unit.label)
                    if key in reported:
                        continue
                    reported.add(key)
                    location = plan.locate("spec", "to")
                    reason = f" ({need.reason})" if need.reason else ""
                    yield Finding(
                        rule=ID,
                        severity=SEVERITY,
                        cluster=unit.cluster,
                        path=location.path,
                        line=location.line,
                        message=f"{plan.name}: stage {stage.name}, pool {unit.pool_name}: team "
                        f"{team} needs CUDA {need.version}{reason}; {problem}, the plan installs "
                        f"{plan.to_version}",
                        hint=f"plan a newer driver, or change the team's entry at {need.location}",
                    )
