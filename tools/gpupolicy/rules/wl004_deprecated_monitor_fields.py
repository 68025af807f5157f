"""A ServiceMonitor or PodMonitor uses a field the Prometheus Operator has deprecated.

## Why it matters
The Prometheus Operator marks fields it will remove with a "Deprecated:" note in the CRD's field description
(prometheus-operator `example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml` and
`..._podmonitors.yaml`, generated from `pkg/apis/monitoring/v1/types.go` and `podmonitor_types.go`). A
deprecated field keeps working until it is removed, then the API server refuses the object and the sync fails.
`bearerTokenFile` is worse already: it makes Prometheus read an arbitrary file of its own container and send
it to the target, so a Prometheus with `arbitraryFSAccessThroughSMs.deny: true` refuses the whole
ServiceMonitor (`pkg/prometheus/resource_selector.go`, `testForArbitraryFSAccess`: "it accesses file system
via bearer token file which Prometheus specification prohibits") and the target silently goes unscraped.

The fields and their replacements below are the CRDs' own notes at the commit the repository's CRD copies come
from (prometheus-operator `6adcebc5`, operator 0.93.0);
`tests/rules/WL004/test_wl004_upstream_deprecations.py` reads every "Deprecated:" description of the upstream
CRDs and fails when this table and the CRDs differ.

| kind | field | CRD note |
|---|---|---|
| ServiceMonitor | `spec.endpoints[].bearerTokenFile` | Deprecated: use `authorization` instead. |
| ServiceMonitor | `spec.endpoints[].bearerTokenSecret` | Deprecated: use `authorization` instead. |
| PodMonitor | `spec.podMetricsEndpoints[].bearerTokenSecret` | Deprecated: use `authorization` instead. |
| PodMonitor | `spec.podMetricsEndpoints[].targetPort` | Deprecated: use 'port' or 'portNumber' instead. |

## Bad example
```yaml
kind: ServiceMonitor
spec:
  endpoints:
    - port: https
      bearerTokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
```

## Fix
Use `authorization` with a Secret in the monitor's namespace; for Prometheus' own service-account token, a
`kubernetes.io/service-account-token` Secret annotated `kubernetes.io/service-account.name: <prometheus SA>`
(as `policies/observability/servicemonitors/secret-prometheus-token.yaml` does):
```yaml
      authorization:
        type: Bearer
        credentials: {name: prometheus-k8s-token, key: token}
```
For a PodMonitor's `targetPort`, name the container port in `port` (or give its number in `portNumber`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..domain.observability import locate
from ..findings import Finding, Severity, at
from ..model import Fleet, K8sObject

ID = "WL004"
SEVERITY = Severity.ERROR
SUMMARY = "A ServiceMonitor or PodMonitor uses a field the Prometheus Operator deprecates"

GROUP = "monitoring.coreos.com"
ITEMS = "[]"  # a path step into every item of a list
# (kind, field path, the CRD's note): exactly what deprecated_fields() finds in the upstream CRDs.
DEPRECATED: tuple[tuple[str, tuple[str, ...], str], ...] = (
    (
        "ServiceMonitor",
        ("spec", "endpoints", ITEMS, "bearerTokenFile"),
        "Deprecated: use `authorization` instead.",
    ),
    (
        "ServiceMonitor",
        ("spec", "endpoints", ITEMS, "bearerTokenSecret"),
        "Deprecated: use `authorization` instead.",
    ),
    (
        "PodMonitor",
        ("spec", "podMetricsEndpoints", ITEMS, "bearerTokenSecret"),
        "Deprecated: use `authorization` instead.",
    ),
    (
        "PodMonitor",
        ("spec", "podMetricsEndpoints", ITEMS, "targetPort"),
        "Deprecated: use 'port' or 'portNumber' instead.",
    ),
)
KINDS = ("ServiceMonitor", "PodMonitor")


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for kind, path, note in DEPRECATED:
            for obj in cluster.of_kind(kind, GROUP):
                for concrete in _present(obj.body, path):
                    yield _finding(fleet, cluster.name, obj, concrete, note)


def _present(body: Any, path: tuple[str, ...], prefix: tuple = ()) -> Iterator[tuple]:
    """Every concrete path (list indexes filled in) at which `path` exists in `body`."""
    if not path:
        yield prefix
        return
    step, rest = path[0], path[1:]
    if step == ITEMS:
        for index, item in enumerate(body if isinstance(body, list) else []):
            yield from _present(item, rest, prefix + (index,))
    elif isinstance(body, dict) and step in body:
        yield from _present(body[step], rest, prefix + (step,))


def _finding(fleet: Fleet, cluster: str, obj: K8sObject, path: tuple, note: str) -> Finding:
    field = ".".join(f"[{p}]" if isinstance(p, int) else p for p in path).replace(".[", "[")
    extra = ""
    if path[-1] == "bearerTokenFile":
        extra = (
            " (a Prometheus with arbitraryFSAccessThroughSMs.deny refuses the whole ServiceMonitor, so "
            "the target goes unscraped)"
        )
    return Finding(
        rule=ID,
        severity=SEVERITY,
        cluster=cluster,
        message=f"{obj.ref()} sets {field}, which the Prometheus Operator's {obj.kind} CRD marks "
        f"\"{note}\"{extra}",
        hint=_hint(path[-1]),
        **at(locate(fleet, obj, *path)),
    )


def _hint(name: str) -> str:
    if name == "targetPort":
        return "name the container port in `port` (or its number in `portNumber`)"
    return (
        "use `authorization: {type: Bearer, credentials: {name: <secret>, key: token}}` with a Secret in "
        "the monitor's namespace (a kubernetes.io/service-account-token Secret for Prometheus' own token)"
    )


# --- reading the deprecations from a CRD (the test compares DEPRECATED with the upstream CRDs) ----------


def deprecated_fields(crd: dict) -> list[tuple[str, tuple[str, ...], str]]:
    """(kind, field path, "Deprecated: ..." note) for every field of every served version of a CRD whose
    description carries a "Deprecated:" paragraph. Paths use ITEMS for list items."""
    spec = crd.get("spec") if isinstance(crd, dict) else None
    if not isinstance(spec, dict):
        return []
    kind = str((spec.get("names") or {}).get("kind", ""))
    found: list[tuple[str, tuple[str, ...], str]] = []
    for version in spec.get("versions") or []:
        if not isinstance(version, dict) or version.get("served") is False:
            continue
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        for path, note in _walk(schema, ()):
            entry = (kind, path, note)
            if entry not in found:
                found.append(entry)
    return found


def _walk(schema: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], str]]:
    stack = [(schema, path)]
    while stack:
        node, where = stack.pop()
        if not isinstance(node, dict):
            continue
        note = _deprecation_note(str(node.get("description") or ""))
        if note and where:
            yield where, note
        for name, child in sorted((node.get("properties") or {}).items(), reverse=True):
            stack.append((child, where + (name,)))
        if isinstance(node.get("items"), dict):
            stack.append((node["items"], where + (ITEMS,)))


def _deprecation_note(description: str) -> str:
    for paragraph in description.split("\n\n"):
        text = " ".join(paragraph.split())
        if text.startswith("Deprecated:"):
            return text
    return ""
