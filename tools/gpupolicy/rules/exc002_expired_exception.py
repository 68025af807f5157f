'''A reviewed exception has expired: the finding it accepted is reported again, and the build fails.

## Why it matters
An exception's `expires` date is when the accepted risk must be looked at again. After that day the exception
accepts nothing (its finding shows again) and this error fails the build, so an exception cannot quietly
outlive the reason it was granted for. The date is inclusive: an exception expiring 2027-03-31 holds through
that day (UTC).

## Bad example
```yaml
  - rule: CAP005
    path: clusters/test-us/queues/*.yaml
    reason: "test cluster: no production reserve until the new nodes arrive"
    owner: platform-oncall
    expires: "2026-01-31"      # past
```

## Fix
Fix the finding and delete the exception; or, when the reason still holds, review it again and set a new
`expires` date in the same pull request (the reviewer sees both).
'''

from collections.abc import Iterator

from ..domain import waivers
from ..domain.waivers import waivers_of
from ..findings import Finding, Severity
from ..model import Fleet

ID = "EXC002"
SEVERITY = Severity.ERROR
SUMMARY = "Reviewed exception past its expiry date"


def check(fleet: Fleet) -> Iterator[Finding]:
    on = waivers.today()  # looked up on the module, so a test can fix the day
    for waiver in waivers_of(fleet).waivers:
        if waiver.expired(on):
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                path=waiver.source.path,
                line=waiver.source.line,
                message=f"exception for {waiver.rule} ({waiver.selector}, owner {waiver.owner}) "
                f"expired on {waiver.expires.isoformat()}; its findings are reported again",
                hint="fix the finding and delete the exception, or review it and set a new expires date",
            )
