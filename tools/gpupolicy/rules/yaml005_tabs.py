"""Tabs used for indentation.

## Why it matters
YAML forbids tabs in indentation; an editor that inserts one breaks the file at that line.

## Bad example
```yaml
spec:
	nodeLabels: {}
```

## Fix
Indent with spaces.
"""

from ..findings import Severity

ID = "YAML005"
SEVERITY = Severity.ERROR
SUMMARY = "Tabs used for indentation"
STAGE = "load"  # reported by the pipeline itself
