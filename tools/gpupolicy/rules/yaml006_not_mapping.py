"""A YAML document is not a mapping.

## Why it matters
Every document of a manifest file must be a Kubernetes object: a mapping with `apiVersion`, `kind` and
`metadata`. A list or a bare string at the top is a pasted fragment.

## Bad example
```yaml
- name: nvidia.com/gpu
  nominalQuota: 8
```

## Fix
Wrap the fragment in the object it belongs to, or remove it.
"""

from ..findings import Severity, stage_finding

ID = "YAML006"
SEVERITY = Severity.ERROR
SUMMARY = "A YAML document is not a mapping"
STAGE = "load"  # reported by the pipeline itself


finding = stage_finding(ID, SEVERITY)
