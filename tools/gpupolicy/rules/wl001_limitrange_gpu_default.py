"""A LimitRange gives containers a GPU they did not ask for: a GPU `max`/`min` with no `default`, or a default
> 0.

## Why it matters
The API server fills in a LimitRange when it is stored, item by item: for an item of `type: Container`, every
resource in `max` that has no `default` gets the max as its default limit, every default limit becomes the
default request, and every `min` without a `defaultRequest` becomes the default request
(`SetDefaults_LimitRangeItem`, kubernetes/kubernetes pkg/apis/core/v1/defaults.go). The LimitRanger admission
plugin then copies those defaults into every container **and init container** of every new pod that does not
state its own (`defaultContainerResourceRequirements` and `mergePodResourceRequirements` /
`mergeContainerResources`, plugin/pkg/admission/limitranger/admission.go). So

```yaml
- type: Container
  max: {nvidia.com/gpu: "8"}
```

is read as `default: {nvidia.com/gpu: "8"}, defaultRequest: {nvidia.com/gpu: "8"}`: a CPU-only container, an
init container and a sidecar each ask for eight GPUs. A CPU-only pod then needs a whole GPU node, a MIG pod
asks for `nvidia.com/gpu` that a MIG node does not expose (it never fits), a time-sliced pod with an init
container breaks `failRequestsGreaterThanOne`, and Kueue charges all of it: it applies the same stored
defaults to each Workload's pod sets (kubernetes-sigs/kueue pkg/workload/resources.go `handlePodLimitRange`,
v0.19). A `min` without a `default` is no better: containers get a GPU request without a limit, which the API
server refuses for a resource that cannot be overcommitted ("Limit must be set for non overcommitable
resources", `validateResourceRequirements` in pkg/apis/core/validation/validation.go), and `minConstraint`
refuses every container below the min. An item of `type: Pod` gets no defaults, but its `max`/`min` require a
GPU limit/request on the pod (`maxConstraint`, `minConstraint`): every CPU-only pod in the namespace is
refused.

An explicit `default` of a GPU resource above 0 does the same on purpose: every container without its own
limit gets that many GPUs. A `default` of 0 is valid (`ValidateLimitRange` only requires `default ==
defaultRequest` for resources that cannot be overcommitted) and this rule accepts it, but it still writes
`nvidia.com/gpu: 0` on every CPU-only container, which the fleet's own admission policy
`gpu-pods-require-queue` counts as naming a GPU, and which Kueue assigns a GPU flavor to whenever the
ClusterQueue covers `nvidia.com/gpu` (it skips zero requests only for resources the ClusterQueue does not
declare, pkg/scheduler/flavorassigner/flavorassigner.go). Decision 0024 therefore keeps GPU resources out of
team LimitRanges altogether.

## Bad example
```yaml
apiVersion: v1
kind: LimitRange
metadata: {name: defaults, namespace: nlp}
spec:
  limits:
    - type: Container
      default: {cpu: "2", memory: 4Gi}
      max:
        nvidia.com/gpu: "8"      # becomes every container's default limit and request
```

## Fix
Drop the GPU entry from `max` (and `min`): what a container can get is bounded by node fit (a pod asking for
more GPUs than a node has stays Pending; `gpupolicy explain` shows it) and by the team's Kueue and
ResourceQuota quota. If a per-container cap is really wanted, state `default: {nvidia.com/gpu: 0}` in the same
item, and check the admission policies and ClusterQueues against a zero GPU request (see decision 0024).
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

from ..domain.gpu_resources import is_gpu_device_resource
from ..domain.quantity import QuantityError, parse_quantity
from ..domain.queues import core_objects
from ..findings import Finding, Severity, at
from ..model import Cluster, Fleet, K8sObject

ID = "WL001"
SEVERITY = Severity.ERROR
SUMMARY = "A LimitRange defaults GPUs onto containers that did not ask for them"

HINT_BOUND = (
    "remove the GPU resource from max/min (decision 0024: node fit and the quotas bound a "
    "container's GPUs), or state default {resource}: 0 in the same item"
)
HINT_DEFAULT = "remove {resource} from {field}, or set it to 0"
HINT_POD = (
    "remove {resource} from the Pod item's max/min (decision 0024: node fit and the quotas bound a "
    "pod's GPUs)"
)


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for obj in core_objects(cluster, "LimitRange"):
            yield from _limit_range(fleet, cluster, obj)


def _limit_range(fleet: Fleet, cluster: Cluster, obj: K8sObject) -> Iterator[Finding]:
    limits = obj.spec.get("limits")
    for index, item in enumerate(limits if isinstance(limits, list) else []):
        if not isinstance(item, dict):
            continue
        kind = str(item.get("type", ""))
        default = _amounts(item, "default")
        if kind == "Container":
            yield from _container_item(fleet, cluster, obj, index, item, default)
        elif kind == "Pod":
            yield from _pod_item(fleet, cluster, obj, index, item)


def _container_item(
    fleet: Fleet, cluster: Cluster, obj: K8sObject, index: int, item: dict, default: dict
) -> Iterator[Finding]:
    for field in ("max", "min"):
        for resource, value in _amounts(item, field).items():
            if not is_gpu_device_resource(resource) or resource in default:
                continue
            if field == "max":
                effect = (
                    f"the API server makes {value} the default limit and request of every container, "
                    f"init container and sidecar that states none, so each CPU-only container asks for "
                    f"{value} GPU(s)"
                )
            else:
                effect = (
                    f"the API server makes {value} the default request of every container that states "
                    f"none, without a limit, which it refuses for {resource}: pods that ask for no GPU are "
                    f"rejected"
                )
            yield _finding(
                fleet,
                cluster,
                obj,
                index,
                field,
                resource,
                f"{obj.ref()}: limits[{index}] (type Container) sets {field} {resource}: {value} "
                f"with no default for it: {effect}",
                HINT_BOUND.format(resource=resource),
            )
    for field in ("default", "defaultRequest"):
        for resource, value in _amounts(item, field).items():
            if is_gpu_device_resource(resource) and _positive(value):
                yield _finding(
                    fleet,
                    cluster,
                    obj,
                    index,
                    field,
                    resource,
                    f"{obj.ref()}: limits[{index}] (type Container) sets {field} {resource}: "
                    f"{value}: every container and init container without its own {resource} limit gets "
                    f"{value} GPU(s)",
                    HINT_DEFAULT.format(resource=resource, field=field),
                )


def _pod_item(fleet: Fleet, cluster: Cluster, obj: K8sObject, index: int, item: dict) -> Iterator[Finding]:
    for field in ("max", "min"):
        for resource, value in _amounts(item, field).items():
            if is_gpu_device_resource(resource):
                yield _finding(
                    fleet,
                    cluster,
                    obj,
                    index,
                    field,
                    resource,
                    f"{obj.ref()}: limits[{index}] (type Pod) sets {field} {resource}: {value}: "
                    f"the LimitRanger requires every pod to state a {resource} "
                    f"{'limit' if field == 'max' else 'request'}, so pods that ask for no GPU are "
                    f"rejected",
                    HINT_POD.format(resource=resource),
                )


def _amounts(item: dict, field: str) -> dict[str, object]:
    amounts = item.get(field)
    return {str(k): v for k, v in amounts.items()} if isinstance(amounts, dict) else {}


def _positive(value: object) -> bool:
    try:
        return parse_quantity(value) > Decimal(0)
    except QuantityError:
        return False  # not a quantity: the schema rules report it


def _finding(
    fleet: Fleet,
    cluster: Cluster,
    obj: K8sObject,
    index: int,
    field: str,
    resource: str,
    message: str,
    hint: str,
) -> Finding:
    return Finding(
        rule=ID,
        severity=SEVERITY,
        message=message,
        cluster=cluster.name,
        hint=hint,
        **at(fleet.locate(obj, "spec", "limits", index, field, resource)),
    )
