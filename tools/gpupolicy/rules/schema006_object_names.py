"""An object's name is not one the API server accepts.

## Why it matters
The API server rejects names that are not DNS-1123 subdomains (lower-case letters, digits, `-` and `.`, at
most 253 characters, starting and ending with a letter or digit); namespaces and most other names must even be
DNS-1123 labels (no dots, at most 63). The OpenAPI and CRD schemas carry no pattern for `metadata.name`, so a
name with an upper-case letter, an underscore or an invisible Unicode character passes every schema and fails
only at apply time. RBAC objects are the exception: their names only may not contain `/` or `%`.

## Bad example
```yaml
metadata:
  name: "Team_NLP\u200b"
```

## Fix
Rename the object with lower-case letters, digits and dashes.
"""

import re
from collections.abc import Iterator

from ..findings import Finding, Severity, at
from ..model import Fleet, K8sObject

ID = "SCHEMA006"
SEVERITY = Severity.ERROR
SUMMARY = "An object's name is not a valid Kubernetes name"

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
LABEL_KINDS = {"Namespace", "Service"}  # names that must be DNS-1123 labels
PATH_SEGMENT_GROUPS = {"rbac.authorization.k8s.io"}  # names that only must be valid path segments


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for obj in cluster.objects:
            problem = name_problem(obj)
            if problem:
                yield Finding(
                    ID,
                    SEVERITY,
                    f"{obj.kind} {obj.name!r}: {problem}",
                    cluster=cluster.name,
                    hint="use lower-case letters, digits and '-'",
                    **at(fleet.locate(obj, "metadata", "name")),
                )


def name_problem(obj: K8sObject) -> str:
    name = obj.name
    if not name:
        return ""  # generateName, or no metadata: the schema stage reports what is missing
    if obj.group in PATH_SEGMENT_GROUPS:
        bad = name in (".", "..") or "/" in name or "%" in name
        return "an RBAC name may not be '.' or '..' or contain '/' or '%'" if bad else ""
    if obj.kind in LABEL_KINDS:
        if len(name) > 63 or not _LABEL.match(name):
            return "not a DNS-1123 label (lower-case letters, digits and '-', at most 63 characters)"
        return ""
    if len(name) > 253 or not _SUBDOMAIN.match(name):
        return "not a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', at most 253 characters)"
    return ""
