"""An object's kind has no schema.

## Why it matters
An object the toolkit has no schema for is not validated at all; that should be a conscious choice, not
silence.

## Bad example
```yaml
apiVersion: example.com/v1
kind: Widget
```

## Fix
Import the CRD: `gpupolicy schemas import crd.yaml` writes its schema to policies/crd-schemas/.
"""

from ..findings import Finding, Severity

ID = "SCHEMA003"
SEVERITY = Severity.WARNING
SUMMARY = "An object's kind has no schema"
STAGE = "schema"  # reported by the pipeline itself


def finding(message: str, path: str, line: int, *, cluster: str = "", hint: str = "") -> Finding:
    """This rule's finding, as the stage that reports it creates it (with the severity declared here)."""
    return Finding(ID, SEVERITY, message, path, line, cluster, hint)
