"""A file is not UTF-8 text.

## Why it matters
Kubernetes manifests are UTF-8. A file in another encoding, or a binary file named `.yaml`, fails in the sync
engine with an error far from its cause.

## Bad example
```yaml
(a Latin-1 `é` saved as byte 0xE9)
```

## Fix
Save the file as UTF-8; keep binaries out of the manifest folders.
"""

from ..findings import Severity, stage_finding

ID = "YAML003"
SEVERITY = Severity.ERROR
SUMMARY = "A file is not UTF-8 text"
STAGE = "load"  # reported by the pipeline itself


finding = stage_finding(ID, SEVERITY)
