"""A kustomization names a file or folder that does not exist.

## Why it matters
kubectl kustomize stops at the first missing path; the whole cluster fails to sync.

## Bad example
```yaml
resources:
- queues/trainig.yaml
```

## Fix
Fix the path, or remove the entry.
"""

from ..findings import Severity, stage_finding

ID = "KUST003"
SEVERITY = Severity.ERROR
SUMMARY = "A kustomization names a file or folder that does not exist"
STAGE = "render"  # reported by the pipeline itself


finding = stage_finding(ID, SEVERITY)
