"""Schema validation: core kinds against the Kubernetes OpenAPI schemas that kubernetes-validate ships,
custom resources against the JSON Schemas this toolkit carries (or a user imported). Each schema is compiled
once per run with jsonschema-rs, and only for the kinds the run validates; validating an object then costs
about a microsecond.

A core kind's schema refers into one 1.4 MB `_definitions.json`; compiling against all of it cost ~25 ms per
kind. It is compiled against its *prepared* form instead: only the definitions it reaches (a ConfigMap needs 5
of 700). Preparing needs the whole file, so the prepared form is kept in the run's cache (decision 0048),
keyed by the toolkit's schema code and the schema files' identity; an entry is JSON, checked for shape and
size, and one that does not compile is prepared again.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema_rs

from ... import __version__
from ...errors import ToolError
from .. import repopath
from .crd import drop_nulls

if TYPE_CHECKING:
    from ..cache.store import CacheStore

CORE_GROUPS_SUFFIX = ".k8s.io"


@dataclass(frozen=True)
class SchemaError:
    path: tuple  # JSON path inside the object, for the line lookup
    message: str


@cache
def _schema_root() -> Path:
    """kubernetes-validate's schema folder, found without importing the package (its import pulls in
    `jsonschema` and `referencing`: 40 ms a run for a folder name)."""
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        raise ToolError("kubernetes-validate is not installed: `pip install -e .` installs it")
    return Path(next(iter(spec.submodule_search_locations))) / "kubernetes-json-schema"


@cache
def core_schema_dir(kubernetes_version: str) -> Path:
    """The strict schema folder for the newest shipped Kubernetes minor not newer than the one asked for."""
    wanted = _minor(kubernetes_version)
    shipped = sorted((_minor(p.name[1:]), p) for p in _schema_root().glob("v*-local-strict"))
    if not shipped:
        raise ToolError("kubernetes-validate ships no strict schemas")
    candidates = [path for minor, path in shipped if minor <= wanted]
    return candidates[-1] if candidates else shipped[0][1]


def _minor(version: str) -> tuple[int, int]:
    match = re.match(r"v?(\d+)\.(\d+)", version)
    return (int(match.group(1)), int(match.group(2))) if match else (1, 33)


def core_file_name(api_version: str, kind: str) -> str:
    group, _, version = api_version.rpartition("/")
    short = group.split(".", 1)[0] if group else ""
    return f"{kind.lower()}-{short}-{version}.json" if short else f"{kind.lower()}-{version}.json"


def is_core_group(api_version: str) -> bool:
    group = api_version.rpartition("/")[0]
    return group == "" or group.endswith(CORE_GROUPS_SUFFIX) or "." not in group


class SchemaSet:
    """Compiled validators, looked up by (Kubernetes version, apiVersion, kind)."""

    def __init__(
        self, crd_schemas: dict[tuple[str, str], dict] | None = None, store: CacheStore | None = None
    ) -> None:
        self._crd_schemas = crd_schemas or {}
        self._compiled: dict[tuple[str, str, str], Any] = {}
        # where prepared schemas are kept
        self._store = store if store is not None and store.enabled else None

    def has_schema(self, api_version: str, kind: str, kubernetes_version: str) -> bool:
        return self._validator(api_version, kind, kubernetes_version) is not None

    def validate(self, body: dict, kubernetes_version: str) -> list[SchemaError] | None:
        """Errors for `body`; None when no schema is known for its kind."""
        api_version, kind = str(body.get("apiVersion")), str(body.get("kind"))
        validator = self._validator(api_version, kind, kubernetes_version)
        if validator is None:
            return None
        if (api_version, kind) in self._crd_schemas:
            body = drop_nulls(body)  # the API server drops nulls of custom resources before validating
        key_errors = non_json_values(body)
        if key_errors:
            return key_errors
        if validator.is_valid(body):
            return []
        return [_schema_error(error) for error in validator.iter_errors(body)]

    def _validator(self, api_version: str, kind: str, kubernetes_version: str) -> Any:
        key = (_minor_text(kubernetes_version), api_version, kind)
        if key not in self._compiled:
            self._compiled[key] = self._compile(api_version, kind, kubernetes_version)
        return self._compiled[key]

    def _compile(self, api_version: str, kind: str, kubernetes_version: str) -> Any:
        crd = self._crd_schemas.get((api_version, kind))
        if crd is not None:
            return jsonschema_rs.Draft202012Validator(crd)
        if not is_core_group(api_version):
            return None
        try:  # the name comes from the manifest: a kind or version holding a path names no schema file
            name = repopath.check_name(core_file_name(api_version, kind))
        except repopath.Refused:
            return None
        folder = core_schema_dir(kubernetes_version)
        try:
            identity = _core_identity(folder, name)
        except OSError:  # no schema file for this kind
            return None
        kept = self._kept_core(identity)
        if kept is not None:
            return kept
        schema, definitions = prepare_core(str(folder), name)
        if self._store is not None:
            self._store.keep_prepared_schema(identity, {"schema": schema, "definitions": definitions})
        return _compile_core(schema, definitions)

    def _kept_core(self, identity: str) -> Any:
        """The validator of a kept prepared schema, or None. The entry is untrusted: anything but a pair of
        mappings that compiles is ignored (and prepared again)."""
        kept = self._store.read_prepared_schema(identity) if self._store is not None else None
        if not (
            isinstance(kept, dict)
            and isinstance(kept.get("schema"), dict)
            and isinstance(kept.get("definitions"), dict)
        ):
            return None
        try:
            return _compile_core(kept["schema"], kept["definitions"])
        except Exception:  # noqa: BLE001 - jsonschema-rs raises several types for a schema it refuses
            return None


def _compile_core(schema: dict, definitions: dict) -> Any:
    return jsonschema_rs.Draft202012Validator(schema, retriever=lambda _uri: definitions)


@cache
def _prepared_salt() -> str:
    """The toolkit's version and this module's code: what prepares a schema."""
    return hashlib.blake2b(
        __version__.encode() + b"\0" + Path(__file__).read_bytes(), digest_size=8
    ).hexdigest()


def _core_identity(folder: Path, name: str) -> str:
    """The key of a kind's prepared schema: this module's code and version, and the identity (path, size,
    mtime) of the two files it is made from; OSError when the kind has no schema file."""
    parts = [_prepared_salt()]
    for path in (folder / name, folder / "_definitions.json"):
        info = path.stat()
        parts.append(f"{path}:{info.st_size}:{info.st_mtime_ns}")
    return hashlib.blake2b("\0".join(parts).encode(), digest_size=20).hexdigest()


def prepare_core(folder: str, name: str) -> tuple[dict, dict]:
    """A core kind's schema and the part of `_definitions.json` it reaches (its refs, their refs, ...)."""
    schema = _read_json(str(Path(folder) / name))
    definitions = _definitions(folder)
    references = _references(folder)
    reached: set[str] = set()
    pending = list(_refs_in(schema))
    while pending:
        definition = pending.pop()
        if definition not in reached and definition in references:
            reached.add(definition)
            pending.extend(references[definition])
    pruned = {key: value for key, value in definitions.items() if key != "$defs"}
    pruned["$defs"] = {definition: definitions["$defs"][definition] for definition in sorted(reached)}
    return schema, pruned


_DEFINITION_REF = "#/$defs/"


@cache
def _references(folder: str) -> dict[str, frozenset[str]]:
    """For each definition of the folder's `_definitions.json`, the definitions it refers to directly."""
    return {name: frozenset(_refs_in(body)) for name, body in _definitions(folder).get("$defs", {}).items()}


def _refs_in(value: Any) -> set[str]:
    """The definition names of every `$ref` inside `value` (a stack: schemas nest deeply)."""
    found: set[str] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str) and _DEFINITION_REF in ref:
                found.add(ref.rpartition(_DEFINITION_REF)[2])
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def _minor_text(version: str) -> str:
    major, minor = _minor(version)
    return f"{major}.{minor}"


@cache
def _definitions(folder: str) -> dict:
    return _read_json(str(Path(folder) / "_definitions.json"))


@cache
def _read_json(path: str) -> dict:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


_UNEXPECTED = re.compile(r"\('(.+?)' (?:was|were) unexpected\)")


def _schema_error(error: Any) -> SchemaError:
    path = tuple(error.instance_path)
    message = error.message
    unexpected = _UNEXPECTED.search(message)
    if (
        "Additional properties are not allowed" in message
        or "Unevaluated properties are not allowed" in message
    ) and unexpected:
        names = [name.strip("' ") for name in unexpected.group(1).split(",")]
        where = _dotted(path)
        field_list = ", ".join(repr(n) for n in names)
        return SchemaError(
            path + (names[0],), f"unknown field {field_list}" + (f" in {where}" if where else "")
        )
    if len(message) > 300:
        message = message[:297] + "..."
    where = _dotted(path)
    return SchemaError(path, f"{where}: {message}" if where else message)


def _dotted(path: tuple) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


@cache
def repo_schema(name: str) -> Any:
    """A compiled validator for one of the repository's own file formats (pool, cluster, plan)."""
    return jsonschema_rs.Draft202012Validator(_repo_schema_source(name))


@cache
def repo_schema_part(name: str, definition: str) -> Any:
    """A compiled validator for one `$defs` entry of a repository file format: the same definition checks a
    value written elsewhere (an exception's terms in an annotation are those of policies/exceptions.yaml)."""
    schema = _repo_schema_source(name)
    return jsonschema_rs.Draft202012Validator(
        {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": f"#/$defs/{definition}"}
    )


@cache
def _repo_schema_source(name: str) -> dict:
    """The toolkit's own schema file of a repository file format, read with the C loader (every run reads
    several; PyYAML's pure-Python loader took 10 ms each)."""
    import yaml

    source = resources.files("gpupolicy") / "schemas" / "repo" / f"{name}.yaml"
    return yaml.load(source.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def validate_repo_file(name: str, data: Any, definition: str = "") -> list[SchemaError]:
    """Schema errors of `data` against the repository file format `name` (or one of its `$defs`)."""
    validator = repo_schema_part(name, definition) if definition else repo_schema(name)
    key_errors = non_json_values(data)
    if key_errors:
        return key_errors
    if validator.is_valid(data):
        return []
    return [_schema_error(error) for error in validator.iter_errors(data)]


def non_json_values(data: Any) -> list[SchemaError]:
    """What JSON cannot hold, so no schema can reject it: mapping keys that are not strings (`1: x`, `true:
    x`) and numbers too large for a float (1.5e400 reads as infinity). jsonschema-rs raises on some of these,
    skips others, or validates infinity as null; they are found here first. A stack, not recursion: the loader
    bounds
    the depth, not this function."""
    errors: list[SchemaError] = []
    stack: list[tuple[Any, tuple]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str):
                    stack.append((item, path + (key,)))
                else:
                    # The line map knows a key by its text: right for 1 and 1.5; `yes` or `~` find their
                    # mapping.
                    errors.append(
                        _located(
                            path,
                            f"key {key!r} is not a string ({type(key).__name__}): quote it",
                            line_path=path + (str(key),),
                        )
                    )
        elif isinstance(value, list):
            stack.extend((item, path + (index,)) for index, item in enumerate(value))
        elif isinstance(value, float) and not math.isfinite(value):
            errors.append(
                _located(path, f"{value} is not a number JSON can hold (too large for a 64-bit float?)")
            )
    return sorted(errors, key=lambda error: repr(error.path))


def _located(path: tuple, message: str, line_path: tuple | None = None) -> SchemaError:
    where = _dotted(path)
    return SchemaError(path if line_path is None else line_path, f"{where}: {message}" if where else message)
