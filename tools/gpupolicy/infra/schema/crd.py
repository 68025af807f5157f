"""JSON Schemas for custom resources: the ones the toolkit carries, and an importer for any CRD YAML.

`openapi_to_jsonschema` turns a CRD version's `openAPIV3Schema` into a Draft 2020-12 JSON Schema that behaves
like the API server under strict field validation (kubectl's default since 1.27): unknown fields are errors,
`nullable`, `x-kubernetes-int-or-string` and server-side defaults are honoured, Go-only regex syntax is
translated, and CEL rules (`x-kubernetes-validations`) are kept aside under `x-gpupolicy-cel` for a later
check. The API server also drops `null` values of non-nullable fields before validating; `drop_nulls` does
that to a document, so call it before validating.

Carried schemas live in `schemas/crds/<group>/<kind>-<version>.yaml` (hand-written JSON Schema in YAML, see
docs/decisions/0004-crd-schemas.md); `_defs.yaml` files hold the types they share, merged into each schema's
`$defs` on load so every schema compiles on its own.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import sys
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from ... import PACKAGE_DIR
from ...errors import ToolError
from .. import repopath, transaction
from ..yamlload import MAX_FILE_BYTES

DRAFT = "https://json-schema.org/draft/2020-12/schema"
GVK_KEY = "x-gpupolicy-gvk"
CEL_KEY = "x-gpupolicy-cel"
DROPPED_PATTERNS_KEY = "x-gpupolicy-dropped-patterns"
CARRIED_DIR = PACKAGE_DIR / "schemas" / "crds"
SHARED_DEFS_FILE = "_defs.yaml"
DEFAULT_IMPORT_DIR = Path("policies") / "crd-schemas"
# A converted CRD is large JSON (Argo CD's ApplicationSet: 1.2 MB), so imported schemas get four loader
# limits.
MAX_SCHEMA_BYTES = 4 * MAX_FILE_BYTES

# Formats JSON Schema 2020-12 defines; Kubernetes-only ones (int32, int64, byte, quantity, ...) are dropped.
JSON_SCHEMA_FORMATS = frozenset(
    {
        "date-time",
        "date",
        "time",
        "duration",
        "email",
        "idn-email",
        "hostname",
        "idn-hostname",
        "ipv4",
        "ipv6",
        "uri",
        "uri-reference",
        "iri",
        "iri-reference",
        "uuid",
        "uri-template",
        "json-pointer",
        "relative-json-pointer",
        "regex",
    }
)
# Validation keywords that carry over unchanged from OpenAPI v3 (a JSON Schema subset).
_PLAIN_KEYWORDS = (
    "enum",
    "default",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "multipleOf",
    "const",
)
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf")
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class CRDError(ValueError):
    """A file that is not a readable CustomResourceDefinition; the message names the file and line."""


@dataclass(frozen=True)
class CarriedSchema:
    """One served version of a CRD as a JSON Schema."""

    group: str
    version: str
    kind: str
    plural: str
    scope: str
    schema: dict

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"


# --- the converter ---------------------------------------------------------------------------------------


def openapi_to_jsonschema(openapi: dict, *, strict: bool = True) -> dict:
    """Convert a CRD version's `openAPIV3Schema` to a Draft 2020-12 JSON Schema emulating the API server."""
    state = _Conversion(strict=strict)
    schema = state.convert(openapi, "", root=True)
    result: dict[str, Any] = {"$schema": DRAFT, **schema}
    if state.cel:
        result[CEL_KEY] = state.cel
    if state.dropped_patterns:
        result[DROPPED_PATTERNS_KEY] = state.dropped_patterns
    return result


class _Conversion:
    """One conversion run: the options, and what was set aside (CEL rules, untranslatable patterns)."""

    def __init__(self, strict: bool) -> None:
        self.strict = strict
        self.cel: list[dict] = []
        self.dropped_patterns: list[dict] = []

    def convert(self, node: Any, where: str, root: bool = False) -> Any:
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        self._copy_plain(node, out, where)
        self._convert_children(node, out, where)
        if node.get("x-kubernetes-embedded-resource") or root:
            _allow_type_meta(out)
        self._close_object(node, out)
        _apply_int_or_string(node, out)
        for rule in node.get("x-kubernetes-validations") or []:
            self.cel.append({"path": where or ".", **rule})
        return _apply_nullable(node, out)

    def _copy_plain(self, node: dict, out: dict, where: str) -> None:
        if "type" in node:
            out["type"] = node["type"]
        for key in _PLAIN_KEYWORDS:
            if key in node:
                out[key] = node[key]
        for bound in ("minimum", "maximum"):
            if bound in node:
                exclusive = node.get(f"exclusive{bound.capitalize()}") is True  # OpenAPI 3.0: a boolean
                out[f"exclusive{bound.capitalize()}" if exclusive else bound] = node[bound]
        if node.get("format") in JSON_SCHEMA_FORMATS:
            out["format"] = node["format"]
        if "pattern" in node:
            pattern = go_pattern_to_python(node["pattern"])
            if pattern is None:
                self.dropped_patterns.append({"path": where or ".", "pattern": node["pattern"]})
            else:
                out["pattern"] = pattern
        if node.get("x-kubernetes-list-type") == "set":
            out["uniqueItems"] = True

    def _convert_children(self, node: dict, out: dict, where: str) -> None:
        properties = node.get("properties")
        if isinstance(properties, dict):
            out["properties"] = {
                name: self.convert(sub, f"{where}.{name}") for name, sub in properties.items()
            }
            required = [
                name
                for name in node.get("required") or []
                if not (isinstance(properties.get(name), dict) and "default" in properties[name])
            ]
            if required:
                out["required"] = required
        elif node.get("required"):
            out["required"] = list(node["required"])
        if "items" in node:
            out["items"] = self.convert(node["items"], f"{where}[]")
        additional = node.get("additionalProperties")
        if isinstance(additional, dict):
            out["additionalProperties"] = self.convert(additional, f"{where}.*")
        elif isinstance(additional, bool):
            out["additionalProperties"] = additional
        for key in _SCHEMA_LISTS:
            if key in node:
                out[key] = [self.convert(sub, where) for sub in node[key]]
        if "not" in node:
            out["not"] = self.convert(node["not"], where)

    def _close_object(self, node: dict, out: dict) -> None:
        """Strict field validation: an object that lists its properties rejects any other field."""
        if not self.strict or "properties" not in out or "additionalProperties" in out:
            return
        if node.get("x-kubernetes-preserve-unknown-fields") is True:
            return
        out["additionalProperties"] = False


def _allow_type_meta(out: dict) -> None:
    """The root and embedded resources may always carry apiVersion, kind and metadata."""
    if "properties" not in out:
        return
    properties = out["properties"]
    properties.setdefault("apiVersion", {"type": "string"})
    properties.setdefault("kind", {"type": "string"})
    properties.setdefault("metadata", {"type": "object"})


def _apply_int_or_string(node: dict, out: dict) -> None:
    if node.get("x-kubernetes-int-or-string") is True:
        out["type"] = ["integer", "string"]
        out.pop("anyOf", None)  # the usual [{type: integer}, {type: string}] says the same thing


def _apply_nullable(node: dict, out: dict) -> dict:
    """`nullable: true` lets null through every other keyword of the node."""
    if node.get("nullable") is not True:
        return out
    if any(key in out for key in _SCHEMA_LISTS) or "not" in out:
        return {"anyOf": [{"type": "null"}, out]}
    kind = out.get("type")
    if isinstance(kind, str):
        out["type"] = [kind, "null"]
    elif isinstance(kind, list) and "null" not in kind:
        out["type"] = [*kind, "null"]
    if "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    return out


# --- Go (RE2) patterns -----------------------------------------------------------------------------------

_INLINE_FLAGS = re.compile(r"\(\?([imsU]+)\)")


def go_pattern_to_python(pattern: str) -> str | None:
    """A pattern both Python's `re` and the Rust validator accept with Go's meaning, or None if impossible.

    RE2 allows flag groups such as `(?i)` anywhere, scoped to the end of the enclosing group; Python only
    allows them at the very start. Rewriting `(?i)rest` to `(?i:rest)` up to the enclosing `)` keeps the
    meaning. RE2's `\\z` (end of text) is Python's `\\Z`, which ECMA/Rust spell `$` without multiline.
    """
    if _compiles(pattern):
        return pattern
    translated = _scope_inline_flags(pattern).replace(r"\z", "$")
    return translated if _compiles(translated) else None


def _scope_inline_flags(pattern: str) -> str:
    result = pattern
    search_from = 0
    while True:
        match = _INLINE_FLAGS.search(result, search_from)
        if match is None:
            return result
        if match.start() == 0:
            search_from = match.end()
            continue
        end = _enclosing_group_end(result, match.end())
        flags = match.group(1).replace("U", "")  # RE2's ungreedy flag has no Python equivalent
        body = result[match.end() : end]
        result = (
            f"{result[: match.start()]}(?{flags}:{body}){result[end:]}"
            if flags
            else f"{result[: match.start()]}{body}{result[end:]}"
        )
        search_from = match.start() + 1


def _enclosing_group_end(pattern: str, start: int) -> int:
    """Index of the `)` closing the group that contains `start` (or the pattern's end)."""
    depth = 0
    index = start
    in_class = False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "(":
            depth += 1
        elif char == ")":
            if depth == 0:
                return index
            depth -= 1
        index += 1
    return len(pattern)


@cache
def _compiles(pattern: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # "possible nested set": valid, just ambiguous
            re.compile(pattern)
    except re.error:
        return False
    try:
        import jsonschema_rs

        jsonschema_rs.Draft202012Validator({"type": "string", "pattern": pattern})
    except ImportError:
        return True
    except Exception:  # jsonschema_rs raises ValidationError for a pattern it cannot compile
        return False
    return True


def drop_nulls(value: Any) -> Any:
    """A copy of a document without null mapping values, as the API server prunes them before validation."""
    if isinstance(value, dict):
        return {key: drop_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [drop_nulls(item) for item in value]
    return value


# --- reading CRD YAML ------------------------------------------------------------------------------------


def crds_from_yaml(text: str, source: str = "<text>") -> list[CarriedSchema]:
    """One schema per served version of every CRD in a YAML stream (single CRDs, Lists, `kubectl get -o
    yaml`)."""
    schemas: list[CarriedSchema] = []
    kinds_seen: list[str] = []
    for number, document in enumerate(_documents(text, source), start=1):
        for crd in _crd_objects(document, kinds_seen):
            schemas.extend(_schemas_of(crd, source, number))
    if not schemas:
        seen = ", ".join(sorted(set(kinds_seen))) or "no Kubernetes objects"
        raise CRDError(f"{source}: no CustomResourceDefinition found (found {seen})")
    return schemas


def _documents(text: str, source: str) -> Iterator[Any]:
    try:
        yield from yaml.load_all(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark else ""
        raise CRDError(f"{source}{line}: cannot parse YAML: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise CRDError(f"{source}: cannot parse YAML: {exc}") from None


def _crd_objects(document: Any, kinds_seen: list[str]) -> Iterator[dict]:
    if not isinstance(document, dict):
        return
    kind = document.get("kind")
    kinds_seen.append(str(kind))
    if kind == "CustomResourceDefinition":
        yield document
    elif isinstance(kind, str) and kind.endswith("List"):
        for item in document.get("items") or []:
            yield from _crd_objects(item, kinds_seen)


def _schemas_of(crd: dict, source: str, number: int) -> Iterator[CarriedSchema]:
    spec = crd.get("spec") if isinstance(crd.get("spec"), dict) else {}
    names = spec.get("names") if isinstance(spec.get("names"), dict) else {}
    group, kind = spec.get("group"), names.get("kind")
    name = (crd.get("metadata") or {}).get("name", f"document {number}")
    if not isinstance(group, str) or not isinstance(kind, str):
        raise CRDError(f"{source}: CustomResourceDefinition {name} has no spec.group or spec.names.kind")
    for version in spec.get("versions") or []:
        if not isinstance(version, dict) or not version.get("served", True):
            continue
        openapi = (version.get("schema") or {}).get("openAPIV3Schema") or (spec.get("validation") or {}).get(
            "openAPIV3Schema"
        )
        if not isinstance(openapi, dict):
            raise CRDError(
                f"{source}: CustomResourceDefinition {name} version {version.get('name')} "
                "has no openAPIV3Schema"
            )
        if not isinstance(version.get("name"), str):
            raise CRDError(f"{source}: CustomResourceDefinition {name} has a version without a name")
        schema = openapi_to_jsonschema(openapi)
        schema[GVK_KEY] = {"group": group, "version": version["name"], "kind": kind}
        yield CarriedSchema(
            group=group,
            version=version["name"],
            kind=kind,
            plural=str(names.get("plural", "")),
            scope=str(spec.get("scope", "")),
            schema=schema,
        )


# --- importing -------------------------------------------------------------------------------------------


def import_files(paths: Iterable[str | Path], out_dir: str | Path) -> list[Path]:
    """Write `<out_dir>/<group>/<kind>-<version>.json` for every served version of every CRD in `paths`: all
    of them or, when one cannot be converted or written, none. Group, version and kind become file names, so
    they must be the names the API server accepts (no `/`, no `..`); the result never leaves `out_dir`."""
    outputs: dict[Path, str] = {}
    for path in paths:
        source = Path(path)
        try:
            text = source.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CRDError(f"{source}: cannot read: {exc}") from None
        for carried in crds_from_yaml(text, str(source)):
            target = _output_file(out_dir, carried, str(source))
            outputs[target] = json.dumps(carried.schema, indent=1, sort_keys=True) + "\n"
    try:
        transaction.write_files(outputs)
    except ToolError as exc:
        raise CRDError(str(exc)) from None
    return list(outputs)


# What the API server accepts (k8s.io/apiextensions-apiserver,
# pkg/apis/apiextensions/validation/validation.go, ValidateCustomResourceDefinitionSpec): spec.group a
# DNS-1123 subdomain with at least one dot, every version name a DNS-1035 label, spec.names.kind a DNS-1035
# label once lowercased. None of them can hold `/` or `..`.
_DNS1123_LABEL = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = re.compile(rf"{_DNS1123_LABEL}(?:\.{_DNS1123_LABEL})+")
_DNS1035_LABEL = re.compile(r"[a-z](?:[-a-z0-9]*[a-z0-9])?")


def check_crd_names(group: object, version: object, kind: object) -> str | None:
    """Why these CRD names are not ones the API server accepts (they become file names), or None."""
    if not isinstance(group, str) or len(group) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(group):
        return f"spec.group {group!r} is not a DNS subdomain with at least one dot"
    if not isinstance(version, str) or len(version) > 63 or not _DNS1035_LABEL.fullmatch(version):
        return f"version name {version!r} is not a DNS-1035 label"
    if not isinstance(kind, str) or len(kind) > 63 or not _DNS1035_LABEL.fullmatch(kind.lower()):
        return f"spec.names.kind {kind!r} is not a DNS-1035 label (mixed case allowed)"
    return None


def _output_file(out_dir: str | Path, carried: CarriedSchema, source: str) -> Path:
    problem = check_crd_names(carried.group, carried.version, carried.kind)
    if problem:
        raise CRDError(f"{source}: CustomResourceDefinition {carried.kind!r}: {problem}; nothing was written")
    try:
        return repopath.output_path(out_dir, carried.group, f"{carried.kind.lower()}-{carried.version}.json")
    except repopath.Refused as refusal:
        raise CRDError(f"{source}: {refusal}; nothing was written") from None


def main_import(argv: list[str] | None = None) -> int:
    """`gpupolicy schemas import FILE... [--out DIR]`: 0 when written, 2 when a file is not a usable CRD."""
    parser = argparse.ArgumentParser(
        prog="gpupolicy schemas import",
        description="Convert CustomResourceDefinition YAML into JSON Schemas.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="CRD YAML (single, List, or kubectl output)")
    parser.add_argument("--out", metavar="DIR", help=f"output folder (default: <repo>/{DEFAULT_IMPORT_DIR})")
    try:
        options = parser.parse_args(argv)
    except SystemExit as exit_:
        return 2 if exit_.code else 0
    out_dir = Path(options.out) if options.out else _repo_root(Path.cwd()) / DEFAULT_IMPORT_DIR
    try:
        written = import_files(options.files, out_dir)
    except CRDError as exc:
        print(f"gpupolicy schemas import: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(path)
    return 0


def _repo_root(start: Path) -> Path:
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start


# --- loading schemas -------------------------------------------------------------------------------------

SchemaKey = tuple[str, str]  # (apiVersion, kind)


@cache
def carried_schemas() -> dict[SchemaKey, dict]:
    """The schemas the toolkit carries, keyed by (apiVersion, kind). Cached: do not mutate the result.

    `_defs.yaml` files hold shared `$defs`: the top-level one for Kubernetes core types, one per group folder
    for types its kinds share; both are merged into each schema so it compiles on its own.
    """
    core_defs = _read_yaml(CARRIED_DIR / SHARED_DEFS_FILE).get("$defs", {})
    schemas: dict[SchemaKey, dict] = {}
    for group_dir in sorted(path for path in CARRIED_DIR.iterdir() if path.is_dir()):
        group_defs_file = group_dir / SHARED_DEFS_FILE
        group_defs = _read_yaml(group_defs_file).get("$defs", {}) if group_defs_file.exists() else {}
        for path in sorted(group_dir.glob("*.yaml")):
            if path.name.startswith("_"):
                continue
            schema = _read_yaml(path)
            _merge_defs(schema, group_defs)
            _merge_defs(schema, core_defs)
            schemas[_key_of(schema, path)] = schema
    return schemas


def load_schema_dir(path: str | Path, root: str | Path | None = None) -> dict[SchemaKey, dict]:
    """Imported schemas (`*.json`, written by `import_files`) under `path`, keyed by (apiVersion, kind).
    They are repository content, read through the trust boundary: the folder must lie inside `root` (by
    default the repository that `path` is the `policies/crd-schemas` folder of, else `path` itself), and each
    file inside it, a regular file under the size limit."""
    root = root if root is not None else _repository_of(Path(path))
    if not repopath.within(root, path):
        raise CRDError(f"{path} resolves outside the repository; not read")
    schemas: dict[SchemaKey, dict] = {}
    reader = repopath.Reader(root)
    for rel in _json_files(path):
        file = Path(path) / rel
        try:
            schema = json.loads(reader.read(os.path.relpath(file, root), MAX_SCHEMA_BYTES).decode("utf-8"))
        except repopath.Refused as refusal:
            raise CRDError(f"cannot read schema: {refusal}") from None
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise CRDError(f"{file}: cannot read schema: {exc}") from None
        schemas[_key_of(schema, file)] = schema
    return schemas


def _repository_of(folder: Path) -> Path:
    parts = DEFAULT_IMPORT_DIR.parts
    return folder.parents[len(parts) - 1] if folder.parts[-len(parts) :] == parts else folder


def _json_files(folder: str | Path) -> list[str]:
    """`*.json` under `folder`, relative to it, without following symlinked folders (a symlinked file is
    checked by the boundary when it is read)."""
    found = []
    for directory, subdirs, names in os.walk(folder):
        subdirs.sort()
        found += [
            os.path.relpath(os.path.join(directory, name), folder) for name in names if name.endswith(".json")
        ]
    return sorted(found)


def schemas_with_imports(*dirs: str | Path) -> dict[SchemaKey, dict]:
    """Carried schemas, overridden by the imported ones in `dirs` (later folders win)."""
    merged = dict(carried_schemas())
    for folder in dirs:
        if Path(folder).is_dir():
            merged.update(load_schema_dir(folder))
    return merged


def _read_yaml(path: Path) -> dict:
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)
    if not isinstance(data, dict):
        raise CRDError(f"{path}: a schema file must be a mapping")
    return data


def _merge_defs(schema: dict, shared: dict) -> None:
    if not shared:
        return
    own = schema.setdefault("$defs", {})
    for name, definition in shared.items():
        own.setdefault(name, copy.deepcopy(definition))


def _key_of(schema: dict, path: Path) -> SchemaKey:
    gvk = schema.get(GVK_KEY)
    if not isinstance(gvk, dict) or not all(
        isinstance(gvk.get(k), str) for k in ("group", "version", "kind")
    ):
        raise CRDError(f"{path}: schema has no {GVK_KEY} with group, version and kind")
    api_version = f"{gvk['group']}/{gvk['version']}" if gvk["group"] else gvk["version"]
    return api_version, gvk["kind"]
