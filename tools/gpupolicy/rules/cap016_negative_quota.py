"""A quota or limit in a ClusterQueue or Cohort is negative, or a quota is beyond what Kubernetes can hold.

## Why it matters
Kueue's admission webhook rejects a negative `nominalQuota`, `borrowingLimit` or `lendingLimit`, so the whole
sync of the ClusterQueue fails. The Kubernetes quantity format itself allows a sign, so schemas alone do not
catch it.

No quantity can be 2^63 or more (kubernetes/apimachinery pkg/api/resource/quantity.go: "no quantity may
represent a number greater than 2^63-1 in magnitude"), and Kueue reads quotas as int64, clamping larger ones
(kubernetes-sigs/kueue pkg/util/math/math.go `SafeValue`). A quota of `1e5000` (in a ClusterQueue, a Cohort
or a ResourceQuota's `hard`) is a typo that silently means "unlimited"; the toolkit refuses it rather than
compute with it.

## Bad example
```yaml
resources:
  - name: nvidia.com/gpu
    nominalQuota: -8
```

## Fix
Use zero or a positive amount below 2^63; to take a team off a flavor, set its nominal quota to 0.
"""

from collections.abc import Iterator

from ..domain.quantity import QuantityError, QuantityRangeError, parse_quantity
from ..domain.queues import core_objects, hard_amounts, quota_owners, raw_quota_fields
from ..findings import Finding, Severity, at
from ..model import Cluster, Fleet, K8sObject

ID = "CAP016"
SEVERITY = Severity.ERROR
SUMMARY = "A quota or limit is negative or beyond 2^63-1"
RANGE_HINT = "write the quota you mean; Kubernetes holds no quantity of 2^63 or more"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for obj in quota_owners(cluster):
            yield from _kueue_quotas(fleet, cluster, obj)
        for obj in core_objects(cluster, "ResourceQuota"):
            yield from _resource_quota(fleet, cluster, obj)


def _kueue_quotas(fleet: Fleet, cluster: Cluster, obj: K8sObject) -> Iterator[Finding]:
    for path, _resource, field, value in raw_quota_fields(obj.spec):
        try:
            negative = parse_quantity(value) < 0
        except QuantityRangeError as exc:  # the model clamps it as Kueue does: without a finding it is lost
            yield Finding(
                ID,
                SEVERITY,
                f"{obj.ref()}: {field}: {exc}; Kueue reads quotas as int64",
                cluster=cluster.name,
                hint=RANGE_HINT,
                **at(fleet.locate(obj, "spec", *path, field)),
            )
            continue
        except QuantityError:
            continue  # not a quantity at all: the schema reports it
        if negative:
            yield Finding(
                ID,
                SEVERITY,
                f"{obj.ref()}: {field} {value} is negative; Kueue rejects it",
                cluster=cluster.name,
                hint="use 0 to give no quota",
                **at(fleet.locate(obj, "spec", *path, field)),
            )


def _resource_quota(fleet: Fleet, cluster: Cluster, obj: K8sObject) -> Iterator[Finding]:
    """CAP015 compares `hard` with the queues and skips what it cannot parse: the range is reported here."""
    for name, value in hard_amounts(obj):
        try:
            parse_quantity(value)
        except QuantityRangeError as exc:
            yield Finding(
                ID,
                SEVERITY,
                f"{obj.ref()}: hard {name}: {exc}",
                cluster=cluster.name,
                hint=RANGE_HINT,
                **at(fleet.locate(obj, "spec", "hard", name)),
            )
        except QuantityError:
            continue  # not a quantity at all: the schema reports it
