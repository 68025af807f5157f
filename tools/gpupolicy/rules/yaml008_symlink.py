"""A symlink points outside the repository.

## Why it matters
What a cluster runs must be reviewable in the pull request. A symlink out of the repository makes a render
depend on the machine it runs on, and can leak files from it.

## Bad example
```yaml
pools/a/pool.yaml -> /etc/passwd
```

## Fix
Copy the file into the repository.
"""

from ..findings import Severity, stage_finding

ID = "YAML008"
SEVERITY = Severity.ERROR
SUMMARY = "A symlink points outside the repository"
STAGE = "load"  # reported by the pipeline itself


finding = stage_finding(ID, SEVERITY)
