"""A mapping repeats a key.

## Why it matters
YAML parsers keep only the last of two equal keys, silently. A duplicated `nominalQuota` or `replicas` means
the reviewer reads one value and the cluster runs another.

## Bad example
```yaml
resources:
- name: nvidia.com/gpu
  nominalQuota: 8
  nominalQuota: 16
```

## Fix
Keep one of the two keys.
"""

from ..findings import Severity, stage_finding

ID = "YAML002"
SEVERITY = Severity.ERROR
SUMMARY = "A mapping repeats a key"
STAGE = "load"  # reported by the pipeline itself


finding = stage_finding(ID, SEVERITY)
