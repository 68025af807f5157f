"""A cluster overlay does not record origin annotations.

## Why it matters
Without `buildMetadata: [originAnnotations]` rendered objects do not say which file they came from, so findings
cannot point at a file and line.

## Bad example
```yaml
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [...]
```

## Fix
Add `buildMetadata: [originAnnotations]` to clusters/<name>/kustomization.yaml.
"""

from ..findings import Finding, Severity

ID = "KUST006"
SEVERITY = Severity.WARNING
SUMMARY = "A cluster overlay does not record origin annotations"
STAGE = "render"  # reported by the pipeline itself


def finding(message: str, path: str, line: int, *, cluster: str = "", hint: str = "") -> Finding:
    """This rule's finding, as the stage that reports it creates it (with the severity declared here)."""
    return Finding(ID, SEVERITY, message, path, line, cluster, hint)
