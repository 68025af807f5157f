"""A document has no apiVersion or kind.

## Why it matters
Without apiVersion and kind nothing can apply the document.

## Bad example
```yaml
metadata:
  name: x
```

## Fix
Add apiVersion and kind, or move the data out of the manifest folders.
"""

from ..findings import Severity, stage_finding

ID = "SCHEMA004"
SEVERITY = Severity.ERROR
SUMMARY = "A document has no apiVersion or kind"
STAGE = "schema"  # reported by the pipeline itself


finding = stage_finding(ID, SEVERITY)
