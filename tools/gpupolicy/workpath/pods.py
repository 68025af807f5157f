"""What the API server makes of a workload's pods before anyone schedules them: LimitRange defaults, limits
copied to missing requests, the checks that refuse a container, and the pod's effective request.

Upstream behaviour modelled here (kubernetes/kubernetes):
- `pkg/apis/core/v1/defaults.go` `SetDefaults_LimitRangeItem`: an item's `default` is its `max` where unset,
  its `defaultRequest` its `default` where unset (decision 0024);
- `plugin/pkg/admission/limitranger/admission.go`: a container gets the item's `default` as limit and
  `defaultRequest` as request for every resource it leaves unset, then `min`/`max` are enforced per container
  (`type: Container`) or summed over the pod (`type: Pod`);
- `SetDefaults_Pod` (defaults.go) and Kueue's `UseLimitsAsMissingRequestsInPod` (kubernetes-sigs/kueue
  `pkg/workload/resources.go`): a resource with a limit and no request is requested at its limit. The ORDER
  differs (decision 0067): the API server copies the limits at decode, before LimitRanger runs, so a
  `defaultRequest` never lands on a resource with a limit (API_SERVER_ORDER, for pods and the pod-based
  integrations); Kueue's `AdjustResources` applies the LimitRange first (`handlePodLimitRange`) and copies
  limits afterwards (`handleLimitsToRequests`), then `ValidateResources` marks the workload inadmissible when
  a request exceeds its limit (KUEUE_ORDER, for job templates: it is Kueue that refuses);
- `pkg/apis/core/validation/validation.go` `validateResourceRequirements`: an extended resource (anything in a
  domain other than kubernetes.io, e.g. nvidia.com/gpu) needs a limit and a request equal to it; and
  `ValidateResourceQuantityValue`, which it calls for every limit and request: no quantity is negative, and an
  extended resource is a whole number (`invalid_quantities`). The API server refuses such an object, a Job
  with such a pod template too, before any admission policy sees it;
- `k8s.io/component-helpers/resource/helpers.go` `PodRequests` (used by the scheduler and by Kueue's
  `totalRequestsFromPodSets`): a pod requests max(sum of its containers and sidecars, the largest init
  container plus the sidecars started before it).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from decimal import Decimal

from ..domain.quantity import QuantityError, is_extended_resource, parse_quantity
from ..infra.yamlload import mappings
from ..model import Cluster, K8sObject

CONTAINER_FIELDS = ("initContainers", "containers")
API_SERVER_ORDER = "api-server"  # limits -> missing requests, then LimitRange defaults
KUEUE_ORDER = "kueue"  # LimitRange defaults, then limits -> missing requests


@dataclass(frozen=True)
class Defaulted:
    """One value the LimitRanger or the API server's defaulting wrote into a container."""

    container: str
    field: str  # limits | requests
    resource: str
    value: str
    source: K8sObject | None  # the LimitRange, None for the limit copied to the request
    item: int = 0


@dataclass(frozen=True)
class Refusal:
    """Why the API server refuses the pod, and which container/LimitRange item says so."""

    message: str
    container_path: tuple = ()  # path inside the pod spec of the container's resources
    source: K8sObject | None = None
    source_path: tuple = ()


def amount(value: object) -> Decimal | None:
    try:
        return parse_quantity(value)
    except QuantityError:
        return None


def invalid_quantities(spec: dict) -> list[tuple[tuple, str]]:
    """(path inside the pod spec, why) for each container limit or request the API server refuses as a
    value (`ValidateResourceQuantityValue`: "must be greater than or equal to 0", and "must be an integer" for
    an extended resource); a value that is no quantity at all fails already when the object is decoded."""
    found = []
    for field in CONTAINER_FIELDS:
        for index, container in enumerate(mappings(spec.get(field))):
            resources = container.get("resources") if isinstance(container.get("resources"), dict) else {}
            for section in ("limits", "requests"):
                values = resources.get(section) if isinstance(resources.get(section), dict) else {}
                for resource, value in values.items():
                    if why := _refused_value(str(resource), value):
                        name = str(container.get("name", f"{field}[{index}]"))
                        found.append(
                            (
                                (field, index, "resources", section, resource),
                                f"container {name}'s {section} {resource} {value}: {why}",
                            )
                        )
    return found


def _refused_value(resource: str, value: object) -> str:
    quantity = amount(value)
    if quantity is None:
        return "is not a quantity"
    if quantity < 0:
        return "must be greater than or equal to 0"
    if is_extended_resource(resource) and quantity != quantity.to_integral_value():
        return "must be an integer (a device cannot be split)"
    return ""


def limit_ranges(cluster: Cluster, namespace: str) -> list[K8sObject]:
    return sorted(
        (o for o in cluster.of_kind("LimitRange") if o.namespace == namespace and not o.group),
        key=lambda o: o.name,
    )


def _items(limit_range: K8sObject, kind: str) -> list[tuple[int, dict]]:
    return [
        (i, item)
        for i, item in enumerate(mappings(limit_range.spec.get("limits")))
        if item.get("type") == kind
    ]


def _item_defaults(item: dict) -> tuple[dict, dict]:
    """(default limits, default requests) of a Container item after `SetDefaults_LimitRangeItem`."""
    default = dict(item.get("default") or {}) if isinstance(item.get("default"), dict) else {}
    for name, value in (item.get("max") or {}).items() if isinstance(item.get("max"), dict) else ():
        default.setdefault(name, value)
    request = dict(item.get("defaultRequest") or {}) if isinstance(item.get("defaultRequest"), dict) else {}
    for name, value in default.items():
        request.setdefault(name, value)
    return default, request


def _resources(container: dict) -> dict:
    resources = container.get("resources")
    if not isinstance(resources, dict):
        resources = container["resources"] = {}
    for section in ("limits", "requests"):
        if not isinstance(resources.get(section), dict):
            resources[section] = {}
    return resources


def default_pod_spec(
    spec: dict, ranges: list[K8sObject], order: str = API_SERVER_ORDER
) -> tuple[dict, list[Defaulted], list[Refusal]]:
    """The pod spec as stored (or as Kueue sees it, `order`): defaults written, and the refusals of
    LimitRanger
    and validation."""
    spec = copy.deepcopy(spec)
    written: list[Defaulted] = []
    refusals: list[Refusal] = []
    for field in CONTAINER_FIELDS:
        for index, container in enumerate(mappings(spec.get(field))):
            name = str(container.get("name", f"{field}[{index}]"))
            resources = _resources(container)
            if order == API_SERVER_ORDER:
                written += _limits_as_requests(resources, name)
            for limit_range in ranges:
                for item_index, item in _items(limit_range, "Container"):
                    default, request = _item_defaults(item)
                    written += _fill(resources["limits"], default, name, "limits", limit_range, item_index)
                    written += _fill(
                        resources["requests"], request, name, "requests", limit_range, item_index
                    )
            written += _limits_as_requests(resources, name)  # LimitRange defaults' limits too (both orders)
            path = (field, index, "resources")
            defaulted = {w.resource: w.source for w in written if w.container == name and w.field == "limits"}
            refusals += _validate(name, resources, path, defaulted)
            for limit_range in ranges:
                for item_index, item in _items(limit_range, "Container"):
                    refusals += _bounds(name, resources, item, limit_range, item_index, path)
    for limit_range in ranges:
        for item_index, item in _items(limit_range, "Pod"):
            refusals += _bounds("the pod", _pod_sums(spec), item, limit_range, item_index, ())
    return spec, written, refusals


def _limits_as_requests(resources: dict, container: str) -> list[Defaulted]:
    added = []
    for resource, value in resources["limits"].items():
        if resource not in resources["requests"]:
            resources["requests"][resource] = value
            added.append(Defaulted(container, "requests", resource, str(value), None))
    return added


def _fill(
    section: dict, defaults: dict, container: str, field: str, source: K8sObject, item: int
) -> list[Defaulted]:
    added = []
    for resource, value in defaults.items():
        if resource not in section:
            section[resource] = value
            added.append(Defaulted(container, field, str(resource), str(value), source, item))
    return added


def _validate(name: str, resources: dict, path: tuple, defaulted: dict[str, K8sObject]) -> list[Refusal]:
    """`validateResourceRequirements`: a request above its limit is invalid; an extended resource also needs a
    limit, equal to the request. A limit a LimitRange `default` wrote counts like one the user wrote."""
    refusals = []
    for resource, value in resources["requests"].items():
        limit = resources["limits"].get(resource)
        extended = is_extended_resource(str(resource))
        if limit is None:
            if extended:
                refusals.append(
                    Refusal(
                        f"container {name} requests {resource} without a limit (an extended "
                        "resource needs a limit equal to its request)",
                        path,
                    )
                )
            continue
        request, bound = amount(value), amount(limit)
        if request is None or bound is None:
            continue
        source = defaulted.get(resource)
        origin = f" (the limit is LimitRange {source.name}'s default)" if source is not None else ""
        if extended and request != bound:
            refusals.append(
                Refusal(
                    f"container {name} requests {value} {resource} but its limit is "
                    f"{limit}{origin} "
                    "(extended resources cannot be overcommitted: request must equal limit)",
                    path,
                    source,
                    _default_path(source, resource),
                )
            )
        elif request > bound:
            refusals.append(
                Refusal(
                    f"container {name} requests {value} {resource}, above its limit "
                    f"{limit}{origin}: must be less than or equal to {resource} limit",
                    path,
                    source,
                    _default_path(source, resource),
                )
            )
    return refusals


def _default_path(source: K8sObject | None, resource: str) -> tuple:
    if source is None:
        return ()
    for index, item in enumerate(mappings(source.spec.get("limits"))):
        if isinstance(item.get("default"), dict) and resource in item["default"]:
            return ("spec", "limits", index, "default", resource)
    return ("spec", "limits")


def _bounds(
    name: str, resources: dict, item: dict, source: K8sObject, item_index: int, path: tuple
) -> list[Refusal]:
    refusals = []
    for bound, section, too in (("max", "limits", "above"), ("min", "requests", "below")):
        for resource, value in (item.get(bound) or {}).items() if isinstance(item.get(bound), dict) else ():
            have = amount(resources[section].get(resource, 0))
            limit = amount(value)
            if have is None or limit is None:
                continue
            if (have > limit) if bound == "max" else (have < limit):
                refusals.append(
                    Refusal(
                        f"{name}'s {section} {resource} {_plain(have)} is {too} the "
                        f"LimitRange {source.name} {bound} {value}",
                        path,
                        source,
                        ("spec", "limits", item_index, bound, resource),
                    )
                )
    return refusals


def _pod_sums(spec: dict) -> dict:
    sums: dict[str, dict] = {"limits": {}, "requests": {}}
    for container in mappings(spec.get("containers")):
        for section in ("limits", "requests"):
            for resource, value in ((container.get("resources") or {}).get(section) or {}).items():
                sums[section][resource] = (amount(sums[section].get(resource, 0)) or 0) + (amount(value) or 0)
    return sums


def _plain(value: Decimal) -> str:
    return format(value.normalize(), "f") if value == value.to_integral() else str(value)


def _requests(container: dict) -> dict[str, Decimal]:
    section = (container.get("resources") or {}).get("requests") or {}
    found = {}
    for resource, value in section.items() if isinstance(section, dict) else ():
        parsed = amount(value)
        if parsed is not None:
            found[str(resource)] = parsed
    return found


def _add(total: dict[str, Decimal], more: dict[str, Decimal]) -> dict[str, Decimal]:
    out = dict(total)
    for resource, value in more.items():
        out[resource] = out.get(resource, Decimal(0)) + value
    return out


def _max(left: dict[str, Decimal], right: dict[str, Decimal]) -> dict[str, Decimal]:
    """Per resource, the larger; in name order, so every report reads the same in every run."""
    return {r: max(left.get(r, Decimal(0)), right.get(r, Decimal(0))) for r in sorted({*left, *right})}


def pod_requests(spec: dict) -> dict[str, Decimal]:
    """component-helpers `PodRequests`: sidecars (init containers with restartPolicy Always) run beside the
    app containers; each ordinary init container runs alone beside the sidecars started before it."""
    total: dict[str, Decimal] = {}
    for container in mappings(spec.get("containers")):
        total = _add(total, _requests(container))
    sidecars: dict[str, Decimal] = {}
    init_peak: dict[str, Decimal] = {}
    for container in mappings(spec.get("initContainers")):
        own = _requests(container)
        if container.get("restartPolicy") == "Always":
            total = _add(total, own)
            sidecars = _add(sidecars, own)
            running = sidecars
        else:
            running = _add(own, sidecars)
        init_peak = _max(init_peak, running)
    return _max(total, init_peak)


def container_requests(spec: dict) -> list[tuple[str, tuple, dict[str, Decimal]]]:
    """(name, path in the pod spec, requests) of every container and init container."""
    found = []
    for field in CONTAINER_FIELDS:
        for index, container in enumerate(mappings(spec.get(field))):
            found.append(
                (
                    str(container.get("name", f"{field}[{index}]")),
                    (field, index, "resources"),
                    _requests(container),
                )
            )
    return found
