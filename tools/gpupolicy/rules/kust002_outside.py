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

from ..findings import Finding, Severity

ID = "KUST002"
SEVERITY = Severity.ERROR
SUMMARY = "A kustomization points outside the repository"
STAGE = "render"  # reported by the pipeline itself


def finding(message: str, path: str, line: int, *, cluster: str = "", hint: str = "") -> Finding:
    """This rule's finding, as the stage that reports it creates it (with the severity declared here)."""
    return Finding(ID, SEVERITY, message, path, line, cluster, hint)
