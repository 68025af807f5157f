"""A ConfigMap or Secret holds more data than the API server accepts (1 MiB).

## Why it matters
The API server rejects a ConfigMap whose `data` and `binaryData` values together exceed 1,048,576 bytes, and a
Secret whose decoded `data` does (`MaxSecretSize = 1 * 1024 * 1024`, kubernetes/kubernetes
pkg/apis/core/types.go, checked by `ValidateConfigMap` and `ValidateSecret` in
pkg/apis/core/validation/validation.go: `totalSize > core.MaxSecretSize`). No schema carries the limit, so a
grown dashboard or a generator that picks up a large file passes every check and then fails the whole sync.
Keys and metadata do not count; values count in bytes (UTF-8), Secret values after base64 decoding, and
`stringData` values as the API server merges them into `data`.

## Bad example
```yaml
configMapGenerator:
  - name: grafana-dashboard-gpu-nodes
    files: [dashboards/gpu-nodes.json]   # 2 MB of JSON
```

## Fix
Shrink the data (split a dashboard, drop unused panels), or split it over several ConfigMaps.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from typing import Any

from ..domain.kustomization import KUSTOMIZATION_NAMES
from ..findings import Finding, Location, Severity, at
from ..infra.limits import MAX_OBJECT_DATA_BYTES
from ..model import Fleet, K8sObject

ID = "SCHEMA007"
SEVERITY = Severity.ERROR
SUMMARY = "A ConfigMap or Secret holds more than the API server's 1 MiB of data"
GENERATORS = {"ConfigMap": "configMapGenerator", "Secret": "secretGenerator"}  # pragma: allowlist secret


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for obj in cluster.objects:
            if obj.api_version != "v1" or obj.kind not in GENERATORS:
                continue
            sizes = value_sizes(obj)
            total = sum(sizes.values())
            if total <= MAX_OBJECT_DATA_BYTES:
                continue
            largest = max(sizes, key=sizes.__getitem__)  # the first of equal sizes, in the order written
            yield Finding(
                ID,
                SEVERITY,
                f"{obj.ref()} holds {total:,} bytes of data (largest key "
                f"{largest!r}: {sizes[largest]:,}); the API server accepts at most {MAX_OBJECT_DATA_BYTES:,}",
                cluster=cluster.name,
                hint="shrink the data or split it over several objects",
                **at(_location(fleet, obj, largest)),
            )


def value_sizes(obj: K8sObject) -> dict[str, int]:
    """Bytes per key, as the API server counts them."""
    body = obj.body
    if obj.kind == "Secret":
        sizes = {key: _decoded_size(value) for key, value in _mapping(body.get("data")).items()}
        sizes.update({key: _text_size(value) for key, value in _mapping(body.get("stringData")).items()})
        return sizes
    sizes = {key: _text_size(value) for key, value in _mapping(body.get("data")).items()}
    for key, value in _mapping(body.get("binaryData")).items():
        sizes[key] = sizes.get(key, 0) + _decoded_size(value)
    return sizes


def _mapping(value: Any) -> dict[str, Any]:
    return {str(key): item for key, item in value.items()} if isinstance(value, dict) else {}


def _text_size(value: Any) -> int:
    return len(str(value).encode("utf-8", errors="replace"))


def _decoded_size(value: Any) -> int:
    """Base64 values count decoded; one that does not decode (the schema reports it) counts as 3/4 of its
    text."""
    text = str(value)
    try:
        return len(base64.b64decode(text, validate=True))
    except (binascii.Error, ValueError):
        return len(text) * 3 // 4


def _location(fleet: Fleet, obj: K8sObject, key: str) -> Location | None:
    """The key in the source manifest, or for a generated object the generator's entry that adds the key."""
    generated = _generator_location(fleet, obj, key)
    return generated or fleet.locate(obj, "data", key)


def _generator_location(fleet: Fleet, obj: K8sObject, key: str) -> Location | None:
    if fleet.locator is None or not obj.origin.endswith(KUSTOMIZATION_NAMES):
        return None
    docs = fleet.locator.docs(obj.origin)
    data = docs[0].data if docs else None
    entries = data.get(GENERATORS[obj.kind]) if isinstance(data, dict) else None
    for index, entry in enumerate(entries if isinstance(entries, list) else []):
        if not isinstance(entry, dict) or not _generates(str(entry.get("name", "")), obj.name):
            continue
        path = (GENERATORS[obj.kind], index)
        for field in ("files", "literals", "envs"):
            items = entry.get(field)
            for item_index, item in enumerate(items if isinstance(items, list) else []):
                if _item_key(str(item)) == key:
                    return Location(obj.origin, docs[0].line_of((*path, field, item_index)))
        return Location(obj.origin, docs[0].line_of(path))
    return None


def _generates(generator_name: str, object_name: str) -> bool:
    """kustomize appends a content hash (`name-<hash>`) unless disableNameSuffixHash is set."""
    return bool(generator_name) and (
        object_name == generator_name or object_name.startswith(generator_name + "-")
    )


def _item_key(item: str) -> str:
    """The data key a `files` or `literals` item produces: `key=value`, else the file's base name."""
    if "=" in item:
        return item.split("=", 1)[0]
    return item.rsplit("/", 1)[-1]
