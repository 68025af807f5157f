'''A reviewed exception is incomplete or names no rule, so it accepts nothing.

## Why it matters
An exception says that a finding is known and accepted: for a reason, by an owner, until a date. Without the
reason nobody can judge it later, without the owner nobody answers for it, and without the date it never comes
back for review, so each of the three is required. An exception for a rule that does not exist (a typo) would
silently accept nothing, and one for a protected rule (a crash, the CFG and EXC rules, the security rules SEC
and RBAC and the trust-boundary rules; decision 0062) must never be accepted. Such an exception is an error
and waives no finding.

## Bad example
```yaml
# policies/exceptions.yaml
apiVersion: gpupolicy/v1
kind: Exceptions
exceptions:
  - rule: CAP005
    path: clusters/test-us/queues/*.yaml
    reason: "test cluster: no production reserve"     # owner and expires are missing
```
An annotation works the same way, for one object's findings:
`exception.gpupolicy.io/CAP005: '{reason: "test cluster: no production reserve"}'`.

## Fix
Give every exception `rule`, one selector (`path` or `object`), `reason`, `owner` and `expires` (YYYY-MM-DD):
```yaml
  - rule: CAP005
    path: clusters/test-us/queues/*.yaml
    reason: "test cluster: no production reserve"
    owner: platform-oncall
    expires: "2027-03-31"
```
'''

from collections.abc import Iterator

from ..domain.waivers import waivers_of
from ..findings import Finding, Severity
from ..model import Fleet

ID = "EXC001"
SEVERITY = Severity.ERROR
SUMMARY = "Reviewed exception without reason, owner, expiry or a known rule"


def check(fleet: Fleet) -> Iterator[Finding]:
    for problem in waivers_of(fleet).problems:
        if problem.bound:  # EXC004's
            continue
        yield Finding(
            rule=ID,
            severity=SEVERITY,
            message=problem.message,
            path=problem.location.path,
            line=problem.location.line,
            hint=problem.hint,
        )
