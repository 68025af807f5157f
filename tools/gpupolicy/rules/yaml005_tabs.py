"""Tabs used for indentation.

## Why it matters
YAML forbids tabs in indentation; an editor that inserts one breaks the file at that line.

## Bad example
```yaml
spec:
<TAB>nodeLabels: {}   # <TAB> stands for a tab character
```

## Fix
Indent with spaces.
"""

from ..findings import Finding, Severity

ID = "YAML005"
SEVERITY = Severity.ERROR
SUMMARY = "Tabs used for indentation"
STAGE = "load"  # reported by the pipeline itself


def finding(message: str, path: str, line: int, *, cluster: str = "", hint: str = "") -> Finding:
    """This rule's finding, as the stage that reports it creates it (with the severity declared here)."""
    return Finding(ID, SEVERITY, message, path, line, cluster, hint)
