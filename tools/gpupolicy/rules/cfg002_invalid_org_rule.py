'''An organization rule (a declarative check under `policies/checks/`, or an installed plugin) is invalid.

## Why it matters
Organization rules hold the repository to a team's own policy without forking the toolkit. A check that does
not compile, has no organization prefix, shares an ID with another rule, or fails on the objects it matches
checks nothing, and a green build would then claim a policy that was never applied. So each of these is an
error: at the check's line for a declarative check, at the repository for a plugin package.

## Bad example
```yaml
# policies/checks/cost-center.yaml
apiVersion: gpupolicy/v1
kind: Check
id: NET001                         # no organization prefix: it could shadow a built-in rule
severity: warning
summary: GPU workloads carry a cost-center label
match: {kinds: [Deployment]}
expression: "'cost-center' in object.metadata.labels &&"   # does not compile
message: no cost-center label
```

## Fix
Prefix the ID with the organization (`ACME-NET001`), give an expression that compiles and is true for a good
object (guard optional fields with `has()`), and run `gpupolicy validate`:
```yaml
id: ACME-NET001
expression: "has(object.metadata.labels) && 'cost-center' in object.metadata.labels"
```
'''

from ..findings import Severity, stage_finding

ID = "CFG002"
SEVERITY = Severity.ERROR
SUMMARY = "Organization rule (declarative check or plugin) invalid, clashing or failing to evaluate"
STAGE = "load"  # reported by the pipeline itself, when it reads the organization's rules


finding = stage_finding(ID, SEVERITY)
