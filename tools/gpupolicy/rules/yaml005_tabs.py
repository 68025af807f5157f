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

from ..findings import Severity, stage_finding

ID = "YAML005"
SEVERITY = Severity.ERROR
SUMMARY = "Tabs used for indentation"
STAGE = "load"  # reported by the pipeline itself


finding = stage_finding(ID, SEVERITY)
