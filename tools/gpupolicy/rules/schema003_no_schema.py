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

from ..findings import Severity, stage_finding

ID = "SCHEMA003"
SEVERITY = Severity.WARNING
SUMMARY = "An object's kind has no schema"
STAGE = "schema"  # reported by the pipeline itself


finding = stage_finding(ID, SEVERITY)
