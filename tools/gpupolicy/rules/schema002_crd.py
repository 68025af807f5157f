"""A custom resource does not match its CRD schema.

## Why it matters
Kueue, the GPU Operator, Flux, Argo CD and Prometheus Operator reject unknown fields and wrong types. A typo
such as `nominalQuata` in a ClusterQueue fails the sync, or worse, is pruned and the quota silently
disappears.

## Bad example
```yaml
resources:
- name: nvidia.com/gpu
  nominalQuata: 8
```

## Fix
Fix the field named in the finding. GPU Operator Helm values are checked as the ClusterPolicy they become.
"""

from ..findings import Severity, stage_finding

ID = "SCHEMA002"
SEVERITY = Severity.ERROR
SUMMARY = "A custom resource does not match its CRD schema"
STAGE = "schema"  # reported by the pipeline itself


finding = stage_finding(ID, SEVERITY)
