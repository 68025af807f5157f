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

from ..findings import Finding, Severity

ID = "YAML009"
SEVERITY = Severity.ERROR
SUMMARY = "Nesting is deeper than 100 levels"
STAGE = "load"  # reported by the pipeline itself


def finding(message: str, path: str, line: int, *, cluster: str = "", hint: str = "") -> Finding:
    """This rule's finding, as the stage that reports it creates it (with the severity declared here)."""
    return Finding(ID, SEVERITY, message, path, line, cluster, hint)
