'''A stage names an approver that policies/upgrades/approvers.yaml does not define, or the file is missing.

## Why it matters
`gpupolicy upgrade promote` takes the approvers from SSH signatures git verifies against the keys in
`policies/upgrades/approvers.yaml`, which maps people to their emails, handles and signing keys and groups
them (decision 0063). A stage approver that is neither a person nor a group of that file
can never be matched: the stage could never be promoted, or (before identities) anyone typing the name could
promote it. An approvers file that is missing means no stage can be approved at all.

## Bad example
```yaml
# policies/upgrades/approvers.yaml defines groups platform-oncall and nlp-lead
stages:
  - name: canary
    approvers: [platform-oncall, vision-leads]   # no such person or group
```

## Fix
Use a person or group of `policies/upgrades/approvers.yaml`, or add it there (people need at least one git
email; groups list people).
'''

from collections.abc import Iterator

from ..findings import Finding, Severity
from ..model import Fleet
from ..upgrade.approvals import APPROVERS_FILE
from ..upgrade.plans import plans_of

ID = "UPG013"
SEVERITY = Severity.ERROR
SUMMARY = "A stage approver is no person or group of policies/upgrades/approvers.yaml"


def check(fleet: Fleet) -> Iterator[Finding]:
    plans = plans_of(fleet)
    for plan in plans.plans:
        if plan.finished:
            continue
        for stage in plan.stages:
            for index, name in enumerate(stage.approvers):
                if plans.approvers is not None and plans.approvers.members(name):
                    continue
                location = plan.locate_stage(stage, "approvers", index)
                why = (
                    f"is no person or group of {APPROVERS_FILE}"
                    if plans.approvers is not None
                    else f"cannot be checked: there is no {APPROVERS_FILE}"
                )
                yield Finding(
                    rule=ID,
                    severity=SEVERITY,
                    path=location.path,
                    line=location.line,
                    message=f"{plan.name}: stage {stage.name} approver {name} {why}",
                    hint=f"name a person or group of {APPROVERS_FILE}, or add it there",
                )
