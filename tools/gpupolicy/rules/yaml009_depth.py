"""Nesting is deeper than 100 levels.

## Why it matters
No manifest nests a hundred levels deep; such a file is an attack on recursive tools, or a generator bug.

## Bad example
```yaml
a: [[[[[[ ... ]]]]]]
```

## Fix
Flatten the structure.
"""

from ..findings import Severity, stage_finding

ID = "YAML009"
SEVERITY = Severity.ERROR
SUMMARY = "Nesting is deeper than 100 levels"
STAGE = "load"  # reported by the pipeline itself


finding = stage_finding(ID, SEVERITY)
