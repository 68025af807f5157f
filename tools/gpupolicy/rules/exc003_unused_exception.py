'''A reviewed exception accepts no finding: what it was for is gone, or its selector has a typo.

## Why it matters
An exception that matches nothing is noise at best; at worst its selector is wrong (a misspelled path or
object) and the finding it was meant for fails the build anyway, or it waits to accept a future finding nobody
reviewed. This is reported only by a run over every cluster: a run over some clusters does not see every
finding.

## Bad example
```yaml
  - rule: CAP005
    path: clusters/test-us/queue/*.yaml     # the folder is queues/
    reason: "test cluster: no production reserve"
    owner: platform-oncall
    expires: "2027-03-31"
```

## Fix
Delete the exception when its finding is fixed; otherwise correct its `path` or `object`.
'''

from __future__ import annotations

from typing import TYPE_CHECKING

from ..findings import Finding, Severity

if TYPE_CHECKING:  # a stage rule imports nothing but findings at run time: the stages import it
    from ..domain.waivers import Waiver

ID = "EXC003"
SEVERITY = Severity.WARNING
SUMMARY = "Reviewed exception that accepts no finding"
STAGE = "pipeline"  # the pipeline knows which exceptions accepted something (waivers.apply)


def finding(waiver: Waiver) -> Finding:
    return Finding(
        rule=ID,
        severity=SEVERITY,
        path=waiver.source.path,
        line=waiver.source.line,
        message=f"exception for {waiver.rule} ({waiver.selector}) accepts no finding",
        hint="delete it if its finding is fixed, or correct its selector",
    )
