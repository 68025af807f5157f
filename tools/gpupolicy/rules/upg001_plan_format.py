'''An upgrade plan or the upgrade requirements file does not match its format.

## Why it matters
Every other UPG rule, `gpupolicy upgrade promote` and the update-procedure page read the plans under
`policies/upgrades/`. A plan that does not parse as written (an unknown field, a stage without a soak time, a
driver version with a `v`, a stage recorded as started while the one before it is not completed) cannot be
checked, so it is reported here and left out of the other checks. The format is the JSON Schema
`tools/gpupolicy/schemas/repo/plan.yaml`; `policies/upgrades/README.md` explains it.

## Bad example
```yaml
apiVersion: gpupolicy/v1
kind: RolloutPlan
metadata: {name: driver-r580-to-r595}
spec:
  component: driver
  from: "580.173.02"
  to: "595.91.07"
  stages:
    - name: test
      phase: test
      soak: 2d          # the field is minimumSoak; planned and approvers are missing
      select: [{cluster: test-us}]
```

## Fix
Write the plan in the documented format: every stage has `name`, `phase`, `planned`, `minimumSoak`,
`approvers` and `select`; the plan has `rollback.target` and `rollback.criteria`.
'''

from collections.abc import Iterator

from ..findings import Finding, Severity
from ..model import Fleet
from ..upgrade.plans import plans_of

ID = "UPG001"
SEVERITY = Severity.ERROR
SUMMARY = "Upgrade plan or requirements file does not match its format"


def check(fleet: Fleet) -> Iterator[Finding]:
    for problem in plans_of(fleet).problems:
        yield Finding(
            rule=ID,
            severity=SEVERITY,
            message=problem.message,
            path=problem.location.path,
            line=problem.location.line,
            hint=problem.hint,
        )
