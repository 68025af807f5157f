"""A YAML file does not parse.

## Why it matters
A file that does not parse cannot be applied: Argo CD or Flux stops the whole sync at it, and everything else
in the same overlay waits behind it.

## Bad example
```yaml
key: value: other
```

## Fix
Fix the syntax at the reported line; `gpupolicy validate` names the line the parser stopped at.
"""

from ..findings import Severity, stage_finding

ID = "YAML001"
SEVERITY = Severity.ERROR
SUMMARY = "A YAML file does not parse"
STAGE = "load"  # reported by the pipeline itself


finding = stage_finding(ID, SEVERITY)
