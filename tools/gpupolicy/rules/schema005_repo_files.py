"""pool.yaml or cluster.yaml is missing or does not match its format.

## Why it matters
pool.yaml and cluster.yaml carry what Kubernetes cannot know (hardware, zones, access mode, versions). Every
capacity, MIG and upgrade rule reads them, so they are checked strictly first.

## Bad example
```yaml
spec:
  gpu: {model: H100-80GB, perNode: 8}
  accessMode: shared   # not a mode
```

## Fix
Use the format documented in docs/development/conventions.md.
"""

from ..findings import Severity, stage_finding

ID = "SCHEMA005"
SEVERITY = Severity.ERROR
SUMMARY = "pool.yaml or cluster.yaml is missing or does not match its format"
STAGE = "schema"  # reported by the pipeline itself


finding = stage_finding(ID, SEVERITY)
