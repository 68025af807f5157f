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

from ..findings import Finding, Severity

ID = "SCHEMA004"
SEVERITY = Severity.ERROR
SUMMARY = "A document has no apiVersion or kind"
STAGE = "schema"  # reported by the pipeline itself


def finding(message: str, path: str, line: int, *, cluster: str = "", hint: str = "") -> Finding:
    """This rule's finding, as the stage that reports it creates it (with the severity declared here)."""
    return Finding(ID, SEVERITY, message, path, line, cluster, hint)
