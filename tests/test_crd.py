"""The openAPIV3Schema converter (one test per API-server emulation rule), the CRD importer and the
loaders."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema_rs
import pytest

from gpupolicy.infra.schema.crd import (
    CEL_KEY,
    DROPPED_PATTERNS_KEY,
    GVK_KEY,
    CRDError,
    carried_schemas,
    crds_from_yaml,
    drop_nulls,
    go_pattern_to_python,
    import_files,
    load_schema_dir,
    main_import,
    openapi_to_jsonschema,
    schemas_with_imports,
)


def obj(**properties: dict) -> dict:
    return {"type": "object", "properties": properties}


def accepts(openapi: dict, instance: object, strict: bool = True) -> bool:
    return jsonschema_rs.Draft202012Validator(openapi_to_jsonschema(openapi, strict=strict)).is_valid(
        instance
    )


# --- converter rules -----------------------------------------------------------------------------------


def test_objects_with_properties_reject_unknown_fields_when_strict() -> None:
    schema = obj(spec=obj(nominalQuota={"type": "string"}))
    assert accepts(schema, {"spec": {"nominalQuota": "1"}})
    assert not accepts(schema, {"spec": {"nominalQuata": "1"}})
    assert accepts(schema, {"spec": {"nominalQuata": "1"}}, strict=False)


def test_root_always_allows_type_meta() -> None:
    schema = obj(spec=obj(a={"type": "string"}))
    assert accepts(schema, {"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n"}, "spec": {}})


def test_additional_properties_map_stays_a_map() -> None:
    schema = obj(labels={"type": "object", "additionalProperties": {"type": "string"}})
    assert accepts(schema, {"labels": {"anything": "goes"}})
    assert not accepts(schema, {"labels": {"anything": 1}})


def test_preserve_unknown_fields_keeps_object_open() -> None:
    schema = obj(
        values={
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
            "properties": {"known": {"type": "integer"}},
        }
    )
    assert accepts(schema, {"values": {"known": 1, "extra": {"deep": True}}})
    assert not accepts(schema, {"values": {"known": "one"}})


def test_object_without_properties_is_left_open() -> None:
    assert accepts(obj(config={"type": "object"}), {"config": {"whatever": 1}})


def test_nullable_accepts_null_and_others_do_not() -> None:
    schema = obj(
        a={"type": "string", "nullable": True},
        b={"type": "string"},
        c={"type": "string", "enum": ["x"], "nullable": True},
    )
    assert accepts(schema, {"a": None, "c": None})
    assert not accepts(schema, {"b": None})


def test_nullable_with_combinator_still_accepts_null() -> None:
    schema = obj(a={"nullable": True, "anyOf": [{"type": "integer"}, {"type": "boolean"}]})
    assert accepts(schema, {"a": None})
    assert accepts(schema, {"a": True})
    assert not accepts(schema, {"a": "text"})


def test_int_or_string_accepts_integer_or_string_only() -> None:
    schema = obj(
        q={
            "x-kubernetes-int-or-string": True,
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": "^[0-9]+(Mi|Gi)?$",
        }
    )
    assert accepts(schema, {"q": 4})
    assert accepts(schema, {"q": "4Gi"})
    assert not accepts(schema, {"q": "4 GB"})
    assert not accepts(schema, {"q": 1.5})
    assert not accepts(schema, {"q": True})


def test_required_with_default_is_not_required() -> None:
    schema = {
        "type": "object",
        "required": ["driverType", "image"],
        "properties": {"driverType": {"type": "string", "default": "gpu"}, "image": {"type": "string"}},
    }
    assert accepts(schema, {"image": "driver"})
    assert not accepts(schema, {"driverType": "gpu"})


def test_embedded_resource_allows_type_meta_but_nothing_else() -> None:
    schema = obj(
        template={
            "type": "object",
            "x-kubernetes-embedded-resource": True,
            "properties": {"spec": {"type": "object"}},
        }
    )
    assert accepts(
        schema, {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}}
    )
    assert not accepts(schema, {"template": {"spec": {}, "status": {}}})


def test_go_inline_flag_mid_pattern_is_scoped_not_dropped() -> None:
    openapi = obj(kind={"type": "string", "pattern": "^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$"})
    schema = openapi_to_jsonschema(openapi)
    assert DROPPED_PATTERNS_KEY not in schema
    assert accepts(openapi, {"kind": "ProvisioningRequestConfig"})
    assert not accepts(openapi, {"kind": "Bad_Kind"})


def test_go_inline_flag_scope_ends_with_its_group() -> None:
    translated = go_pattern_to_python("^a((?i)b)c$")
    assert translated is not None
    validator = jsonschema_rs.Draft202012Validator({"type": "string", "pattern": translated})
    assert validator.is_valid("aBc")
    assert not validator.is_valid("aBC")


def test_untranslatable_pattern_is_dropped_and_recorded() -> None:
    openapi = obj(name={"type": "string", "pattern": r"^\pL+$"})  # RE2 Unicode class; Python's re has none
    schema = openapi_to_jsonschema(openapi)
    assert "pattern" not in schema["properties"]["name"]
    assert schema[DROPPED_PATTERNS_KEY] == [{"path": ".name", "pattern": r"^\pL+$"}]


def test_cel_rules_are_dropped_but_kept_under_vendor_key() -> None:
    rule = {"rule": "self == oldSelf", "message": "immutable"}
    openapi = obj(spec=obj(driverType={"type": "string", "x-kubernetes-validations": [rule]}))
    schema = openapi_to_jsonschema(openapi)
    assert "x-kubernetes-validations" not in json.dumps(schema["properties"])
    assert schema[CEL_KEY] == [{"path": ".spec.driverType", **rule}]


def test_non_json_schema_formats_are_dropped() -> None:
    openapi = obj(
        n={"type": "integer", "format": "int32"},
        t={"type": "string", "format": "date-time"},
        b={"type": "string", "format": "byte"},
    )
    properties = openapi_to_jsonschema(openapi)["properties"]
    assert "format" not in properties["n"] and "format" not in properties["b"]
    assert properties["t"]["format"] == "date-time"


def test_openapi_boolean_exclusive_minimum_becomes_numeric() -> None:
    openapi = obj(w={"type": "number", "minimum": 0, "exclusiveMinimum": True})
    assert openapi_to_jsonschema(openapi)["properties"]["w"] == {"type": "number", "exclusiveMinimum": 0}
    assert not accepts(openapi, {"w": 0})
    assert accepts(openapi, {"w": 0.1})


def test_list_type_set_means_unique_items() -> None:
    openapi = obj(onFlavors={"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}})
    assert accepts(openapi, {"onFlavors": ["a", "b"]})
    assert not accepts(openapi, {"onFlavors": ["a", "a"]})


def test_drop_nulls_prunes_null_mapping_values() -> None:
    assert drop_nulls({"a": None, "b": {"c": None, "d": 1}, "e": [None, {"f": None}]}) == {
        "b": {"d": 1},
        "e": [None, {}],
    }


# --- reading CRD YAML ----------------------------------------------------------------------------------

CRD_TEMPLATE = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: widgets.example.com}}
spec:
  group: example.com
  scope: Namespaced
  names: {{kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}}
  versions:
{versions}
"""
VERSION_TEMPLATE = """\
    - name: {name}
      served: {served}
      storage: {storage}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              required: [size]
              properties:
                size: {{type: integer, minimum: 1}}
"""


def crd_yaml(*versions: tuple[str, bool]) -> str:
    body = "".join(
        VERSION_TEMPLATE.format(name=name, served=str(served).lower(), storage=str(index == 0).lower())
        for index, (name, served) in enumerate(versions)
    )
    return CRD_TEMPLATE.format(versions=body)


def test_one_schema_per_served_version() -> None:
    schemas = crds_from_yaml(crd_yaml(("v1", True), ("v1beta1", True), ("v1alpha1", False)))
    assert [(s.group, s.version, s.kind, s.plural, s.scope) for s in schemas] == [
        ("example.com", "v1", "Widget", "widgets", "Namespaced"),
        ("example.com", "v1beta1", "Widget", "widgets", "Namespaced"),
    ]
    assert schemas[0].schema[GVK_KEY] == {"group": "example.com", "version": "v1", "kind": "Widget"}


def test_list_and_kubectl_output_are_read() -> None:
    single = crd_yaml(("v1", True))
    indented = "\n".join("  " + line for line in single.splitlines())
    listing = "apiVersion: v1\nkind: List\nitems:\n-" + indented[1:] + "\n"
    assert [s.kind for s in crds_from_yaml(listing)] == ["Widget"]


def test_not_a_crd_is_an_error_naming_what_was_found() -> None:
    with pytest.raises(
        CRDError, match=r"deploy.yaml: no CustomResourceDefinition found \(found Deployment\)"
    ):
        crds_from_yaml("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n", "deploy.yaml")


def test_broken_yaml_is_an_error_with_line() -> None:
    with pytest.raises(CRDError, match=r"bad.yaml:2: cannot parse YAML: mapping values are not allowed"):
        crds_from_yaml("a: 1\n  b: 2\nc: 3\n", "bad.yaml")


# --- importing -----------------------------------------------------------------------------------------


def test_import_writes_group_kind_version_json(tmp_path: Path) -> None:
    source = tmp_path / "widgets.yaml"
    source.write_text(crd_yaml(("v1", True), ("v2", True)), encoding="utf-8")
    written = import_files([source], tmp_path / "out")
    assert sorted(p.relative_to(tmp_path / "out").as_posix() for p in written) == [
        "example.com/widget-v1.json",
        "example.com/widget-v2.json",
    ]
    schema = json.loads(written[0].read_text(encoding="utf-8"))
    validator = jsonschema_rs.Draft202012Validator(schema)
    assert validator.is_valid({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {"size": 2}})
    assert not validator.is_valid({"spec": {"size": 2, "colour": "red"}})


def test_main_import_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "widgets.yaml"
    good.write_text(crd_yaml(("v1", True)), encoding="utf-8")
    out = tmp_path / "schemas"
    assert main_import([str(good), "--out", str(out)]) == 0
    assert (out / "example.com" / "widget-v1.json").is_file()
    assert "widget-v1.json" in capsys.readouterr().out

    not_crd = tmp_path / "configmap.yaml"
    not_crd.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", encoding="utf-8")
    assert main_import([str(not_crd), "--out", str(out)]) == 2
    assert "configmap.yaml: no CustomResourceDefinition found (found ConfigMap)" in capsys.readouterr().err

    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: [\n", encoding="utf-8")
    assert main_import([str(broken), "--out", str(out)]) == 2
    assert "broken.yaml:2: cannot parse YAML" in capsys.readouterr().err

    assert main_import([str(tmp_path / "missing.yaml"), "--out", str(out)]) == 2
    assert "missing.yaml: cannot read" in capsys.readouterr().err

    assert main_import([]) == 2  # usage error


def test_main_import_defaults_to_policies_crd_schemas_in_repo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "sub").mkdir()
    source = tmp_path / "widgets.yaml"
    source.write_text(crd_yaml(("v1", True)), encoding="utf-8")
    monkeypatch.chdir(tmp_path / "sub")
    assert main_import([str(source)]) == 0
    assert (tmp_path / "policies" / "crd-schemas" / "example.com" / "widget-v1.json").is_file()


# --- loaders -------------------------------------------------------------------------------------------


def test_carried_schemas_are_keyed_by_api_version_and_kind() -> None:
    carried = carried_schemas()
    assert ("kueue.x-k8s.io/v1beta2", "ClusterQueue") in carried
    assert ("nvidia.com/v1alpha1", "NVIDIADriver") in carried
    assert carried_schemas() is carried  # cached
    assert "objectMeta" in carried[("kueue.x-k8s.io/v1beta2", "ClusterQueue")]["$defs"]  # shared defs merged


def test_imported_schemas_override_carried(tmp_path: Path) -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        GVK_KEY: {"group": "kueue.x-k8s.io", "version": "v1beta2", "kind": "ClusterQueue"},
    }
    (tmp_path / "kueue.x-k8s.io").mkdir()
    (tmp_path / "kueue.x-k8s.io" / "clusterqueue-v1beta2.json").write_text(
        json.dumps(schema), encoding="utf-8"
    )
    assert load_schema_dir(tmp_path) == {("kueue.x-k8s.io/v1beta2", "ClusterQueue"): schema}
    merged = schemas_with_imports(tmp_path)
    assert merged[("kueue.x-k8s.io/v1beta2", "ClusterQueue")] == schema
    assert (
        merged[("kueue.x-k8s.io/v1beta2", "LocalQueue")]
        is carried_schemas()[("kueue.x-k8s.io/v1beta2", "LocalQueue")]
    )


def test_schema_dir_without_gvk_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("{}", encoding="utf-8")
    with pytest.raises(CRDError, match="x.json: schema has no x-gpupolicy-gvk"):
        load_schema_dir(tmp_path)
