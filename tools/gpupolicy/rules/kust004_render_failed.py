"""kubectl kustomize fails for a cluster.

## Why it matters
If the overlay does not render here it does not render in Argo CD or Flux either: nothing in that cluster
syncs until it is fixed.

## Bad example
```yaml
(a patch whose target no longer exists)
```

## Fix
Run `gpupolicy render --cluster NAME` and fix the error kubectl reports.
"""

from ..findings import Severity, stage_finding

ID = "KUST004"
SEVERITY = Severity.ERROR
SUMMARY = "kubectl kustomize fails for a cluster"
STAGE = "render"  # reported by the pipeline itself


finding = stage_finding(ID, SEVERITY)
