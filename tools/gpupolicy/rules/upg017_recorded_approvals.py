'''A plan records an approval promote could not have verified.

## Why it matters
`gpupolicy upgrade promote` records who approved a stage (`approvedBy`) and, where a second person signed,
who promoted it (`promotedBy`), only after git verified their SSH signatures against the approvers' keys
(docs/decisions/0063-signed-approvals.md). The plan is a file in a pull request, though: a hand-edited record
("approvedBy: someone on the stage") would let a production stage look approved by two people when nobody
signed anything. This rule checks the record itself on every `validate`: the approver is on the stage, the
promoter is a person of the approvers file and not the approver, and a `twoPersonApproval` stage that started
records both. Versions moved beyond the recorded stages are UPG011's.

## Bad example
```yaml
- name: fleet
  twoPersonApproval: true
  started: "2026-12-02T10:00:00Z"
  approvedBy: serving-lead        # and no promotedBy: one person, or none
```

## Fix
Revert the hand edit and let `gpupolicy upgrade promote` record the stage from the signatures on the promoting
commit and its approve/<plan>/<stage>/* tags.
'''

from collections.abc import Iterator

from ..findings import Finding, Severity
from ..model import Fleet
from ..upgrade.plans import Approvers, Plan, Stage, plans_of

ID = "UPG017"
SEVERITY = Severity.ERROR
SUMMARY = "A plan's recorded approver or promoter is not one promote could have verified"


def check(fleet: Fleet) -> Iterator[Finding]:
    plans = plans_of(fleet)
    if plans.approvers is None:
        return  # no approvers file: UPG013 reports every stage's approvers as unknown
    for plan in plans.plans:
        for stage in plan.stages:
            if stage.started is not None:
                yield from _stage_problems(plans.approvers, plan, stage)


def _stage_problems(approvers: Approvers, plan: Plan, stage: Stage) -> Iterator[Finding]:
    approver, promoter = stage.approved_by, stage.promoted_by
    if not approver:
        yield _finding(
            plan, stage, "started", f"stage {stage.name} is recorded as started with no approvedBy"
        )
        return
    # a group was what promote recorded before approvals were signatures (decision 0036); it stays readable
    on_stage = approver in stage.approvers or any(approver in approvers.members(e) for e in stage.approvers)
    if not on_stage:
        yield _finding(
            plan,
            stage,
            "approvedBy",
            f"stage {stage.name} is recorded as approved by "
            f"{approver}, who is not one of its approvers ({', '.join(stage.approvers)})",
        )
    if promoter and promoter not in approvers.people:
        yield _finding(
            plan,
            stage,
            "promotedBy",
            f"stage {stage.name} is recorded as promoted by {promoter}, who is nobody in the approvers file",
        )
    elif promoter and promoter in approvers.members(approver):
        yield _finding(
            plan,
            stage,
            "promotedBy",
            f"stage {stage.name} is recorded as promoted by "
            f"{promoter}, who is also its approver ({approver}): that is one person",
        )
    elif stage.two_person and not promoter:
        yield _finding(
            plan,
            stage,
            "approvedBy",
            f"stage {stage.name} needs two people and records one ({approver}, no promotedBy)",
        )


def _finding(plan: Plan, stage: Stage, field: str, message: str) -> Finding:
    location = plan.locate_stage(stage, field)
    return Finding(
        rule=ID,
        severity=SEVERITY,
        message=f"{plan.name}: {message}",
        path=location.path,
        line=location.line,
        hint="revert the hand edit; `gpupolicy upgrade promote` records approvals from verified signatures",
    )
