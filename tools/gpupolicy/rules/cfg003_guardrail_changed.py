'''The change edits the guardrail configuration: it takes effect only once merged, after its owners review it.

## Why it matters
`gpupolicy.yaml`, `policies/exceptions.yaml`, the declarative checks under `policies/checks/` and CODEOWNERS
decide what every other check reports: a rule switched off under `**`, a severity lowered to `info`, a `**`
exception, an org check that no longer matches. Were they read from the pull request, the pull request would
grade itself. So with a base revision (`gpupolicy validate --base REV`, which the CI gate passes, and
`gpupolicy diff`) they are read from the base, the head's versions are data, and each guardrail file the
change edits is this error at its first changed line, naming the code owners who must review it. An exception
annotation (`exception.gpupolicy.io/<RULE>`) the base does not have is the same change, written on an object:
it is this error at the annotation and accepts nothing until merged. Decision 0062.

## Bad example
A pull request that raises a quota past its pool and, in the same change, writes
```yaml
# gpupolicy.yaml
disable:
  - {rule: CAP001, paths: ["**"], reason: "quotas are checked elsewhere"}
```
The gate still applies the base's configuration (CAP001 fails), and reports this line.

## Fix
Propose guardrail changes in their own pull request, reviewed and merged by the owners CODEOWNERS names for
the file; the new settings apply to every pull request after that merge.
'''

from ..findings import Severity, stage_finding

ID = "CFG003"
SEVERITY = Severity.ERROR
SUMMARY = (
    "Guardrail configuration changed by this change: takes effect only once merged, needs its owners' review"
)
STAGE = "load"  # reported by the pipeline itself, when it reads the guardrail configuration from the base


finding = stage_finding(ID, SEVERITY)
