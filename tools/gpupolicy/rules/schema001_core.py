"""A core Kubernetes object does not match its OpenAPI schema.

## Why it matters
The API server rejects an object with an unknown field (kubectl's strict field validation) or a wrong type;
the sync fails at apply time. The schemas are the ones kubernetes-validate ships, for the Kubernetes version
in cluster.yaml.

## Bad example
```yaml
apiVersion: v1
kind: ResourceQuota
spec:
  hardd:
    requests.nvidia.com/gpu: "8"
```

## Fix
Fix the field named in the finding.
"""

from ..findings import Severity, stage_finding

ID = "SCHEMA001"
SEVERITY = Severity.ERROR
SUMMARY = "A core Kubernetes object does not match its OpenAPI schema"
STAGE = "schema"  # reported by the pipeline itself


finding = stage_finding(ID, SEVERITY)
