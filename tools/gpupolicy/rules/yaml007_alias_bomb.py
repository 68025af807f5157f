"""Aliases expand too far (a YAML bomb), are too many, or recurse.

## Why it matters
Anchors and aliases let a small file expand to billions of nodes ("billion laughs"). Any tool that walks the
data then exhausts memory: the validator, the sync engine, the API server. The loader counts aliases and the
expanded size before building anything, so such a file is rejected in microseconds.

## Bad example
```yaml
a: &a [x, x, x, x, x, x, x, x, x]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
# ... nine levels deep
```

## Fix
Write the values out; manifests need no anchors.
"""

from ..findings import Severity, stage_finding

ID = "YAML007"
SEVERITY = Severity.ERROR
SUMMARY = "Aliases expand too far (a YAML bomb), are too many, or recurse"
STAGE = "load"  # reported by the pipeline itself


finding = stage_finding(ID, SEVERITY)
