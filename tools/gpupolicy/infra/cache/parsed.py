"""Strict-load results kept on disk, addressed by a file's name and bytes.

Validating one pool's change on a large fleet spent more time parsing unchanged YAML (every kustomization
of the fleet, to find the clusters that include the change, then the cluster's inputs) than anything but
kubectl. The strict loader's output for a given name and content never changes, so it is kept under the
render cache, keyed by a hash of both and salted with the toolkit's whole source and the PyYAML version:
editing any module, or upgrading PyYAML, starts a fresh cache. Entries are `marshal` data (plain values,
nothing that runs code when read); an unreadable entry is parsed again and rewritten.
"""

from __future__ import annotations

import hashlib
import marshal
import re
import sys
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from ...findings import Finding
from .. import yamlload
from ..yamlload import Document, LoadResult
from . import files as cachefiles

# kubectl kustomize separates documents with a line that is exactly `---`. Every document it prints is a block
# mapping, whose lines other than its top-level keys are indented, so no line of content can be `---`.
_RENDERED_DOCUMENT_SEPARATOR = re.compile(r"^---\n", re.MULTILINE)
RENDERED_MEMOS = "rendered"  # each overlay's previous output, by document (under the version's folder)


class ParseCache:
    """The strict-load results of one loader version (`directory`), and the rendered-document memos; used
    through `cachestore.CacheStore`, which decides whether a run caches at all."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory) / _salt()

    def load_bytes(self, raw: bytes, path: str) -> LoadResult:
        """`yamlload.parse_source(raw, path)`, from the cache when this name and content were loaded
        before."""
        key = hashlib.blake2b(path.encode() + b"\0" + raw, digest_size=20).hexdigest()
        entry = self.directory / key[:2] / key
        kept = cachefiles.read_value(entry)
        if kept is not None:
            try:
                return _thaw(kept, path)
            except (TypeError, ValueError):
                pass  # an entry of another shape: parse again
        result = yamlload.parse_source(raw, path)
        cachefiles.write_value(entry, _freeze(result))
        return result

    def load_rendered(self, overlay: str, text: str) -> list[Any]:
        """`yamlload.load_rendered(text)` for kubectl's output of an overlay, reusing the objects of the
        documents that are unchanged since the overlay's previous output: a one-pool change re-renders a
        whole cluster, but alters a handful of its hundreds of documents."""
        memo_file = (
            self.directory / RENDERED_MEMOS / hashlib.blake2b(overlay.encode(), digest_size=16).hexdigest()
        )
        previous = cachefiles.read_value(memo_file)
        if not isinstance(previous, dict):
            previous = {}
        chunks = _RENDERED_DOCUMENT_SEPARATOR.split(text)
        digests = [hashlib.blake2b(chunk.encode(), digest_size=16).hexdigest() for chunk in chunks]
        whole = (
            _parse_whole(text, chunks) if sum(d not in previous for d in digests) > len(chunks) // 2 else None
        )
        objects: list[Any] = []
        current: dict[str, Any] = {}
        for position, (chunk, digest) in enumerate(zip(chunks, digests, strict=True)):
            if whole is not None:  # mostly new (a first render): one parse of the whole output was cheaper
                parsed = whole[position]
            elif digest in current or digest not in previous:  # a repeat is parsed again: no shared objects
                parsed = yamlload.load_rendered(chunk)
            else:
                parsed = previous[digest]
            current.setdefault(digest, parsed)
            objects.extend(parsed)
        if current.keys() != previous.keys():
            cachefiles.write_value(memo_file, current)
        return objects


def _parse_whole(text: str, chunks: list[str]) -> list[list[Any]] | None:
    """Each chunk's documents from one parse of the whole text, when every chunk holds exactly one document
    (kubectl's output always does); None otherwise, and the chunks are parsed one by one."""
    documents = yamlload.load_rendered(text)
    return [[document] for document in documents] if len(documents) == len(chunks) else None


@cache
def _salt() -> str:
    digest = hashlib.blake2b(digest_size=8)
    digest.update(cachefiles.toolkit_digest().encode())  # every module: the graph cache kept below shares it
    digest.update(f"{yaml.__version__} {sys.version_info[:2]} {marshal.version}".encode())
    return digest.hexdigest()


def _freeze(result: LoadResult) -> tuple:
    documents = tuple((d.index, d.line, d.data, d.lines) for d in result.documents)
    return documents, tuple(f.as_tuple() for f in result.findings)


def _thaw(frozen: tuple, path: str) -> LoadResult:
    documents, findings = frozen
    return LoadResult(
        documents=[
            Document(path=path, index=index, line=line, data=data, lines=lines)
            for index, line, data, lines in documents
        ],
        findings=[Finding.from_tuple(values) for values in findings],
    )
