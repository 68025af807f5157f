"""Round-trip YAML editing: change a few values in repository files and write them back with their comments,
quoting and layout kept, every file or none (`upgrade promote/rollback`, `recommend --apply`).

Each file is loaded once, in the first of the repository's styles that reproduces it byte for byte, and
refused when none does (a round-trip edit must never reformat a file). Which files an edit touches comes
partly from content, so each one is resolved through the trust boundary (`repopath.Reader`) first.
"""

from __future__ import annotations

import difflib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from .errors import ToolError
from .infra import repopath, transaction


def _yaml(sequence: int = 4, offset: int = 2) -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096  # never re-wrap long lines
    yaml.indent(mapping=2, sequence=sequence, offset=offset)
    return yaml


# The repository's styles: "key:\n  - item" in manifests, and "- op: ..." at column 0 in a top-level list (the
# per-cluster chart pins). A file is edited in the first style that reproduces it byte for byte.
_STYLES = ((4, 2), (2, 0))


@dataclass
class _File:
    original: str
    documents: list[Any]
    real_path: str  # where the boundary resolved it: the file the edit replaces
    yaml: YAML  # the style that reproduces the file


class Editor:
    """Loads each touched file once, edits it in memory, and writes them all back (or none) when asked.
    Which files it touches comes partly from content (an NVIDIADriver's origin annotation), so each is
    resolved through the trust boundary first: inside the repository, a regular file, or refused."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.reader = repopath.Reader(root)
        self.styles = [_yaml(*style) for style in _STYLES]
        self.files: dict[str, _File] = {}

    def _load(self, rel: str) -> _File:
        if rel not in self.files:
            try:
                real_path = self.reader.regular_file(rel)
                text = self.reader.read(rel).decode("utf-8")
            except repopath.Refused as refusal:
                raise ToolError(f"refusing to edit {rel}: {refusal}") from None
            except UnicodeDecodeError:
                raise ToolError(f"{rel}: not UTF-8 text; edit it by hand") from None
            self.files[rel] = self._round_trip(rel, text, real_path)
        return self.files[rel]

    def _round_trip(self, rel: str, text: str, real_path: str) -> _File:
        for yaml in self.styles:
            try:
                documents = list(yaml.load_all(text))
            except YAMLError as exc:
                raise ToolError(f"{rel}: cannot load for a round-trip edit: {exc}") from None
            if _dump(yaml, documents) == text:
                return _File(text, documents, real_path, yaml)
        raise ToolError(f"{rel}: a round-trip edit would reformat the file; edit it by hand")

    def _document(self, rel: str, kind: str, name: str) -> Any:
        for document in self._load(rel).documents:
            if (
                isinstance(document, dict)
                and document.get("kind") == kind
                and (document.get("metadata") or {}).get("name") == name
            ):
                return document
        raise ToolError(f"{rel}: no {kind} named {name} (is its version set by a kustomize patch?)")

    def rendered(self) -> dict[str, str]:
        return {rel: _dump(file.yaml, file.documents) for rel, file in self.files.items()}

    def changed(self) -> list[str]:
        return sorted(rel for rel, text in self.rendered().items() if text != self.files[rel].original)

    def diff(self) -> str:
        rendered = self.rendered()
        chunks = []
        for rel in self.changed():
            chunks += difflib.unified_diff(
                self.files[rel].original.splitlines(keepends=True),
                rendered[rel].splitlines(keepends=True),
                f"a/{rel}",
                f"b/{rel}",
            )
        return "".join(chunks)

    def write(self) -> None:
        """Every changed file or none (the transactional writer: a plan recorded as promoted while a pool
        kept its old version would lie about the fleet)."""
        rendered = self.rendered()
        transaction.write_files(
            {self.files[rel].real_path: rendered[rel] for rel in self.changed()}, journal_root=self.root
        )


def _dump(yaml: YAML, documents: list[Any]) -> str:
    stream = io.StringIO()
    yaml.dump_all(documents, stream)
    return stream.getvalue()


def same_style(old: Any, new: Any) -> Any:
    """The new scalar in the old one's quoting (a quoted version stays quoted; a number written into a quoted
    scalar becomes quoted text)."""
    style = type(old)
    if style is not str and isinstance(old, str):
        return style(new)
    return new
