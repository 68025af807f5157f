"""A kustomization points outside the repository.

## Why it matters
Everything a cluster renders must be in this repository, or the review does not cover it.

## Bad example
```yaml
resources:
- ../../../other-repo/base
```

## Fix
Move the files into the repository.
"""

from ..findings import Severity, stage_finding

ID = "KUST002"
SEVERITY = Severity.ERROR
SUMMARY = "A kustomization points outside the repository"
STAGE = "render"  # reported by the pipeline itself


finding = stage_finding(ID, SEVERITY)
