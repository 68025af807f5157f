"""Which overlay edit set a field of a rendered object: the line a finding about that field should name.

An object's origin annotation names the file it started in (the base); a cluster overlay's patch may have set
the very value a finding is about. Then the base is only context, and the reviewer must be sent to the patch.
Four kinds of kustomize edits set fields, each read here from the overlays a cluster includes
(`Graph.directories`, the cluster's own overlay first: its edits apply last and win):

- a strategic-merge patch (`patches` with a file or inline body, `patchesStrategicMerge`) sets the fields its
  document holds; a mapping merges key by key, so only the keys written in the patch are set by it, while a
  list or a scalar replaces what the base had;
- a JSON6902 patch (`patches` / `patchesJson6902` with a target and a list of operations) sets the path of
  each
  `add`, `replace`, `copy` and `move`, and everything under it;
- a replacement (`replacements`, inline or from a file) sets each of its targets' `fieldPaths`;
- a ConfigMap generator (`configMapGenerator` `files`) sets the key it reads from a file (the pipeline's
  generated-key map), and a finding inside that key's YAML lands on the file's own line.

Matching follows kubectl's reading as far as a finding needs: kind, name and namespace for a patch that names
its object, the target selector (`kustomize._selects`, lenient) for a targeted one. A field kubectl's merge
would place differently (a list merged by a merge key) is left to the base: a finding never names a patch that
did not set its field.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ...findings import Location
from ...infra import repopath
from ...infra.yamlload import Document
from ..sources import YAML_SUFFIXES
from . import kustomize

DocumentsOf = Callable[[str], list[Document]]
SETTING_OPS = ("add", "replace", "copy", "move")
IDENTITY = (("apiVersion",), ("kind",), ("metadata", "name"), ("metadata", "namespace"))


@dataclass(frozen=True)
class Setter:
    """One edit: which objects it applies to, and the fields it sets with their lines."""

    kind: str  # "strategic merge", "JSON6902", "replacement"
    file: str  # where the edit is written
    target: dict | None  # the selector of a targeted edit (kustomize target fields)
    names: tuple[str, str, str] | None  # (kind, name, namespace) of a patch that names its object
    # field path -> (line, whether the patch's value there merges)
    fields: dict[tuple[str, ...], tuple[int, bool]]
    subtree: bool = False  # a JSON6902 or replacement path sets everything under it too

    def applies_to(self, obj: Any) -> bool:
        if self.target is not None:
            namespace = self.target.get("namespace")
            return kustomize._selects(self.target, obj) and namespace in (None, "", obj.namespace)
        if self.names is None:
            return False
        kind, name, namespace = self.names
        return obj.kind == kind and obj.name == name and namespace in ("", obj.namespace)

    def line_for(self, path: tuple[str, ...]) -> int | None:
        """The line that set `path`, or None when this edit does not set it."""
        for depth in range(len(path), 0, -1):
            found = self.fields.get(path[:depth])
            if found is None:
                continue
            line, merges = found
            if depth == len(path) or self.subtree or not merges:
                return line
            return None  # the patch holds a mapping above the field but not the field: the base set it
        return None


def setters(graph: kustomize.Graph, overlay: str, documents_of: DocumentsOf) -> list[Setter]:
    """Every edit the overlays of `overlay` make, the overlay's own first."""
    found: list[Setter] = []
    for directory in graph.directories(overlay):
        included = graph.overlays.get(directory)
        docs = documents_of(included.file) if included is not None else []
        if not docs or not isinstance(docs[0].data, dict):
            continue
        found += list(_patches(included, docs[0], documents_of)) + list(
            _replacements(included, docs[0], documents_of)
        )
    return found


def generated_location(
    generated: dict[tuple[str, str], str], obj: Any, path: tuple[str, ...], documents_of: DocumentsOf
) -> Location | None:
    """A ConfigMap key a generator read from a file: the file, at the line of the rest of `path` in it."""
    if obj.kind != "ConfigMap" or len(path) < 2 or path[0] != "data" or (obj.name, path[1]) not in generated:
        return None
    source = generated[(obj.name, path[1])]
    if len(path) == 2 or not source.endswith(YAML_SUFFIXES):  # the key itself, or a file that is no YAML
        return Location(source, 1)
    docs = documents_of(source)  # the loader's: a YAML source is loaded already, never read again here
    return Location(source, docs[0].line_of(tuple(path[2:])) if docs else 1)


# --- patches
# ---------------------------------------------------------------------------------------------------


def _patches(overlay: Any, kustomization: Document, documents_of: DocumentsOf) -> Iterator[Setter]:
    for section in ("patches", "patchesJson6902", "patchesStrategicMerge"):
        for key, position, entry in kustomize._entries(kustomization.data, section):
            entry_line = kustomization.line_of((key, position))
            target = kustomize._target(entry) if section != "patchesStrategicMerge" else None
            for file, docs in kustomize.patch_documents(overlay, entry, documents_of, lists=True):
                for doc in docs:
                    yield from _setter_of(doc, file, target, entry_line if file == overlay.file else 0)


def _setter_of(doc: Document, file: str, target: dict | None, fixed_line: int) -> Iterator[Setter]:
    """A strategic-merge document or a JSON6902 operation list as a Setter. `fixed_line`: the line every field
    of an inline patch reports (0 for a patch file, whose own lines are known)."""
    data = doc.data
    if isinstance(data, list):
        if target is not None:
            yield _json6902(doc, file, target, fixed_line)
        return
    if not isinstance(data, dict):
        return
    fields = {}
    for path, line in doc.lines.items():
        key = tuple(str(part) for part in path)
        if key and key not in IDENTITY and key[0] not in ("apiVersion", "kind"):
            fields[key] = (fixed_line or line, isinstance(_value_at(data, path), dict))
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    names = (
        str(data.get("kind") or ""),
        str(metadata.get("name") or ""),
        str(metadata.get("namespace") or ""),
    )
    yield Setter("strategic merge", file, target, None if target is not None else names, fields)


def _json6902(doc: Document, file: str, target: dict, fixed_line: int) -> Setter:
    fields = {}
    for index, operation in enumerate(doc.data):
        if not isinstance(operation, dict) or operation.get("op") not in SETTING_OPS:
            continue
        pointer = _pointer(operation.get("path"))
        if pointer is not None:
            fields[pointer] = (fixed_line or doc.line_of((index, "path")), False)
            for path, line in doc.lines.items():  # the lines inside the operation's value
                if len(path) > 2 and path[0] == index and path[1] == "value":
                    fields[pointer + tuple(str(p) for p in path[2:])] = (fixed_line or line, False)
    return Setter("JSON6902", file, target, None, fields, subtree=True)


def _pointer(text: Any) -> tuple[str, ...] | None:
    """A JSON pointer (RFC 6901) as path parts: `/spec/hard/requests.nvidia.com~1gpu`."""
    if not isinstance(text, str) or not text.startswith("/"):
        return None
    return tuple(part.replace("~1", "/").replace("~0", "~") for part in text[1:].split("/"))


def _value_at(data: Any, path: tuple) -> Any:
    for part in path:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data


# --- replacements
# ----------------------------------------------------------------------------------------------


def _replacements(overlay: Any, kustomization: Document, documents_of: DocumentsOf) -> Iterator[Setter]:
    for key, position, entry in kustomize._entries(kustomization.data, "replacements"):
        ref = kustomize._field(entry, "path") if isinstance(entry, dict) else None
        if ref is None:
            yield from _replacement(entry, kustomization, (key, position), overlay.file)
            continue
        try:
            rel = repopath.normalize(overlay.directory, str(ref))
        except repopath.Refused:
            continue
        for doc in documents_of(rel) if rel in overlay.files else []:
            for index, item in enumerate(doc.data if isinstance(doc.data, list) else [doc.data]):
                yield from _replacement(item, doc, (index,) if isinstance(doc.data, list) else (), rel)


def _replacement(entry: Any, doc: Document, at: tuple, file: str) -> Iterable[Setter]:
    targets = kustomize._field(entry, "targets") if isinstance(entry, dict) else None
    for t_index, target in enumerate(targets if isinstance(targets, list) else []):
        select = kustomize._field(target, "select") if isinstance(target, dict) else None
        paths = kustomize._field(target, "fieldPaths") if isinstance(target, dict) else None
        if not isinstance(select, dict) or not isinstance(paths, list):
            continue
        selector = {
            name: kustomize._field(select, name) for name in ("group", "version", "kind", "name", "namespace")
        }
        fields = {}
        for p_index, field_path in enumerate(paths):
            if isinstance(field_path, str):
                fields[tuple(field_path.split("."))] = (
                    doc.line_of((*at, "targets", t_index, "fieldPaths", p_index)),
                    False,
                )
        yield Setter("replacement", file, _exact_name(selector), None, fields, subtree=True)


def _exact_name(selector: dict) -> dict:
    """A replacement's `select.name` is a name, not a pattern: anchored for `_selects`' regular expression."""
    name = selector.get("name")
    return {**selector, "name": f"^{re.escape(str(name))}$"} if name not in (None, "") else selector
