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

from ..findings import Finding, Severity

ID = "KUST003"
SEVERITY = Severity.ERROR
SUMMARY = "A kustomization names a file or folder that does not exist"
STAGE = "render"  # reported by the pipeline itself


def finding(message: str, path: str, line: int, *, cluster: str = "", hint: str = "") -> Finding:
    """This rule's finding, as the stage that reports it creates it (with the severity declared here)."""
    return Finding(ID, SEVERITY, message, path, line, cluster, hint)
