"""Prepared core schemas (decision 0048): a kind's schema compiled against only the definitions it reaches
validates exactly as against all of them; the prepared form is kept in the run's cache, and a kept entry is
untrusted: corrupt, hostile or oversized entries are ignored, never believed and never a crash."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema_rs
import pytest

from gpupolicy.infra.cache import files as cachefiles
from gpupolicy.infra.cache.store import MAX_PREPARED_SCHEMA_BYTES, SCHEMAS, CacheStore
from gpupolicy.infra.schema import check as schema

VERSION = "1.33"

OBJECTS = [
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ok"}, "data": {"a": "b"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bad"}, "data": {"a": 1}},
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team", "labelz": {}}},
    {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"app": "x"}},
            "template": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {
                    "containers": [
                        {
                            "name": "c",
                            "image": "i",
                            "resources": {"limits": {"nvidia.com/gpu": "1"}},
                            "ports": [{"containerPort": "80"}],
                        }
                    ]
                },
            },
        },
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "r"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": "get"}],
    },
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "p"}, "value": 10},
]


def _messages(errors) -> list[str]:
    return sorted(error.message for error in errors or [])


def _full_validator(body: dict):
    """The old way: the kind's schema against the whole `_definitions.json`."""
    folder = schema.core_schema_dir(VERSION)
    definitions = json.loads((folder / "_definitions.json").read_text())
    contents = json.loads((folder / schema.core_file_name(body["apiVersion"], body["kind"])).read_text())
    return jsonschema_rs.Draft202012Validator(contents, retriever=lambda _uri: definitions)


@pytest.mark.parametrize("body", OBJECTS, ids=lambda body: f"{body['kind']}-{body['metadata']['name']}")
def test_a_prepared_schema_validates_as_the_whole_definitions_do(body: dict) -> None:
    ours = schema.SchemaSet().validate(body, VERSION)
    full = sorted(schema._schema_error(error).message for error in _full_validator(body).iter_errors(body))
    assert _messages(ours) == full
    assert (full == []) == (body["metadata"]["name"] in ("ok", "p"))  # the others are each wrong somewhere


def test_every_prepared_core_schema_reaches_every_definition_it_refers_to() -> None:
    folder = schema.core_schema_dir(VERSION)
    names = sorted(path.name for path in folder.glob("*.json") if not path.name.startswith("_"))
    assert len(names) > 500
    for name in names:
        kind_schema, definitions = schema.prepare_core(str(folder), name)
        missing = schema._refs_in([kind_schema, definitions]) - set(definitions["$defs"])
        assert not missing, f"{name}: {sorted(missing)}"
    _, configmap = schema.prepare_core(str(folder), "configmap-v1.json")
    assert len(configmap["$defs"]) < 10  # of ~700: the point of preparing


def test_prepared_schemas_are_kept_and_read_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = CacheStore(tmp_path)
    expected = [_messages(schema.SchemaSet(store=store).validate(body, VERSION)) for body in OBJECTS]
    kept = list((store.parsed_version_dir / SCHEMAS).rglob("*"))
    assert len([path for path in kept if path.is_file()]) == len(
        {(b["apiVersion"], b["kind"]) for b in OBJECTS}
    )

    def not_again(*_args):
        raise AssertionError("prepared again although kept")

    monkeypatch.setattr(schema, "prepare_core", not_again)
    assert [_messages(schema.SchemaSet(store=store).validate(body, VERSION)) for body in OBJECTS] == expected


def test_without_a_cache_nothing_is_kept(tmp_path: Path) -> None:
    schema.SchemaSet(store=CacheStore.off()).validate(OBJECTS[0], VERSION)
    schema.SchemaSet().validate(OBJECTS[0], VERSION)
    assert not any(tmp_path.iterdir())


def _entries(store: CacheStore) -> list[Path]:
    return [path for path in (store.parsed_version_dir / SCHEMAS).rglob("*") if path.is_file()]


HOSTILE = {
    "not cache format": lambda entry: entry.write_bytes(b"garbage"),
    "not JSON": lambda entry: cachefiles.write_bytes(entry, b"\xff\xfe not json"),
    "a list": lambda entry: cachefiles.write_bytes(entry, b"[1, 2]"),
    "wrong shape": lambda entry: cachefiles.write_bytes(
        entry, json.dumps({"schema": [], "definitions": 1}).encode()
    ),
    "not a schema": lambda entry: cachefiles.write_bytes(
        entry, json.dumps({"schema": {"type": 12}, "definitions": {}}).encode()
    ),
    "a reference it cannot resolve": lambda entry: cachefiles.write_bytes(
        entry,
        json.dumps(
            {
                "schema": {"properties": {"data": {"$ref": "/api/_definitions.json#/$defs/Missing"}}},
                "definitions": {"$id": "https://kubernetes.io/api/_definitions.json", "$defs": {}},
            }
        ).encode(),
    ),
    "deeply nested": lambda entry: cachefiles.write_bytes(entry, b"[" * 100_000 + b"]" * 100_000),
    "oversized": lambda entry: cachefiles.write_bytes(entry, b" " * (MAX_PREPARED_SCHEMA_BYTES + 1)),
}


@pytest.mark.parametrize("damage", sorted(HOSTILE))
def test_a_damaged_or_hostile_entry_is_ignored(tmp_path: Path, damage: str) -> None:
    store = CacheStore(tmp_path)
    bad = OBJECTS[1]
    assert schema.SchemaSet(store=store).validate(bad, VERSION)  # an error, and the entry kept
    for entry in _entries(store):
        HOSTILE[damage](entry)
    errors = schema.SchemaSet(store=store).validate(bad, VERSION)
    assert errors and "1 is not of type" in errors[0].message


def test_a_schema_entry_from_json_that_compiles_is_the_only_kind_believed(tmp_path: Path) -> None:
    """`{"type": 12}` is not a schema: jsonschema-rs refuses it, and the kind is prepared again."""
    store = CacheStore(tmp_path)
    schema.SchemaSet(store=store).validate(OBJECTS[0], VERSION)
    (entry,) = _entries(store)
    cachefiles.write_bytes(entry, json.dumps({"schema": {"type": 12}, "definitions": {}}).encode())
    assert store.read_prepared_schema(entry.name) == {"schema": {"type": 12}, "definitions": {}}
    assert schema.SchemaSet(store=store).validate(OBJECTS[1], VERSION)


def test_the_schema_folder_is_found_without_importing_kubernetes_validate() -> None:
    code = (
        "import sys\nfrom gpupolicy.infra.schema import check as schema\n"
        "errors = schema.SchemaSet().validate({'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': "
        "{'name': 'a'}, 'data': {'a': 1}}, '1.33')\n"
        "print(bool(errors), 'kubernetes_validate' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["True", "False"]
