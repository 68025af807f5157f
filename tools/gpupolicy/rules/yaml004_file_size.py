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

from ..findings import Finding, Severity

ID = "YAML004"
SEVERITY = Severity.ERROR
SUMMARY = "A YAML file is larger than the limit (2 MiB)"
STAGE = "load"  # reported by the pipeline itself


def finding(message: str, path: str, line: int, *, cluster: str = "", hint: str = "") -> Finding:
    """This rule's finding, as the stage that reports it creates it (with the severity declared here)."""
    return Finding(ID, SEVERITY, message, path, line, cluster, hint)
