"""A cluster overlay does not record origin annotations.

## Why it matters
Without `buildMetadata: [originAnnotations]` rendered objects do not say which file they came from, so
findings cannot point at a file and line.

## Bad example
```yaml
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [...]
```

## Fix
Add `buildMetadata: [originAnnotations]` to clusters/<name>/kustomization.yaml.
"""

from ..findings import Severity, stage_finding

ID = "KUST006"
SEVERITY = Severity.WARNING
SUMMARY = "A cluster overlay does not record origin annotations"
STAGE = "render"  # reported by the pipeline itself


finding = stage_finding(ID, SEVERITY)
