"""A YAML file is larger than the limit (2 MiB).

## Why it matters
Policy files are written by people and read in review. A multi-megabyte file is generated data that does not
belong here, and would slow every pull request and sync.

## Bad example
```yaml
(a 30 MB dump of `kubectl get all -o yaml`)
```

## Fix
Split the file, or keep generated data out of the repository.
"""

from ..findings import Severity, stage_finding

ID = "YAML004"
SEVERITY = Severity.ERROR
SUMMARY = "A YAML file is larger than the limit (2 MiB)"
STAGE = "load"  # reported by the pipeline itself


finding = stage_finding(ID, SEVERITY)
