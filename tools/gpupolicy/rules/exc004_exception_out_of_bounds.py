'''A reviewed exception is wider, longer or owned by someone other than the guardrail allows, so it accepts
nothing.

## Why it matters
An exception is a reviewed hole in the guardrail; its size is the risk. `path: "**"` accepts a rule's findings
everywhere (the rule is off), `expires: 9999-12-31` never comes back for review, and an `owner` nobody can be
held to is no owner. So an exception must be bounded:
- its `path` names a concrete top-level folder and at least one more literal folder or file name, with at most
  one `**` and `**` only as a whole folder part (`clusters/test-us/queues/*.yaml`, `clusters/**/queues.yaml`;
  not `**`, `clusters/**`, `clusters/**/*.yaml` or `*/queues.yaml`);
- it expires at most 90 days after the day it is checked (`waivers.MAX_EXPIRY_DAYS`);
- its `owner` is one of the owners CODEOWNERS names for `policies/exceptions.yaml` (`@org/team`, `org/team` or
  `team`), read from the base revision when one is given.
An exception that breaks a bound is this error at its line. Decision 0062.

## Bad example
```yaml
  - rule: CAP001
    path: "**"
    reason: "quotas are checked elsewhere"
    owner: anyone
    expires: "9999-12-31"
```

## Fix
Select the findings' own folder or file, set an expiry within 90 days, and name a guardrail owner:
```yaml
  - rule: CAP001
    path: clusters/test-us/queues.yaml
    reason: "test-us overcommits until the ordered nodes arrive (PLAT-123)"
    owner: "@gpu-platform/guardrail-owners"
    expires: "2027-02-15"
```
'''

from collections.abc import Iterator

from ..domain.waivers import waivers_of
from ..findings import Finding, Severity
from ..model import Fleet

ID = "EXC004"
SEVERITY = Severity.ERROR
SUMMARY = "Reviewed exception unbounded: glob too wide, expiry too far, or owner not a guardrail owner"


def check(fleet: Fleet) -> Iterator[Finding]:
    for problem in waivers_of(fleet).problems:
        if problem.bound:
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                message=problem.message,
                path=problem.location.path,
                line=problem.location.line,
                hint=problem.hint,
            )
