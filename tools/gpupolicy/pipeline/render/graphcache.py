"""The kustomize graph of the previous run, reused while nothing it was read from has changed.

Working out which clusters a one-pool change reaches means reading every kustomization of the fleet and
resolving its 16,000 references: most of what `--changed-since` costs besides kubectl. The graph depends on
two things only: the kustomization files' content, and the entries of the folders its references were
resolved in (what exists, what is a folder). So the graph is kept with a digest of every kustomization and
the inode and mtime of every folder it consulted; a run that finds all of them unchanged reuses it, and any
difference means reading the graph again. A graph that followed a symlink is not kept (a symlink's target
lies in folders the record does not cover), nor one whose folders changed in the last seconds: the same
mtime can hide a second change made within the file system's clock tick.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterable
from pathlib import Path

from ...findings import Finding
from ...infra import repopath
from ...infra.cache import files as cachefiles
from ...infra.cache.store import CacheStore
from . import kustomize

RACY_SECONDS = 2.0
_FORMAT = 4  # 3: overlays carry `opaque`; 4: kustomization digests are the reader's sha256


def build_graph(reader: repopath.Reader, entry_dirs: Iterable[str], store: CacheStore) -> kustomize.Graph:
    """`kustomize.build_graph`, from the previous run's record when it still holds (a run with caching off
    reads everything again). `reader`: the run's, so the kustomizations whose digests the record is checked
    against are read once in the run."""
    entries = sorted(entry_dirs)
    record_file = store.graph_record(_key(reader.real_root, entries))
    if record_file is None:
        return kustomize.build_graph(reader.root, entries, store, reader)
    graph = _reuse(record_file, reader)
    if graph is None:
        graph = kustomize.build_graph(reader.root, entries, store, reader)
        _keep(record_file, graph, reader)
    return graph


def _key(real_root: str, entries: list[str]) -> str:
    return hashlib.blake2b("\0".join([real_root, *entries]).encode(), digest_size=16).hexdigest()


def _reuse(record_file: Path, reader: repopath.Reader) -> kustomize.Graph | None:
    try:
        version, overlays, findings, folders, kustomizations = cachefiles.read_value(record_file)
    except (TypeError, ValueError):  # no record, or one of another shape
        return None
    if version != _FORMAT or not all(_stamp(folder) == stamp for folder, stamp in folders.items()):
        return None
    if not all(_digest(reader, rel) == digest for rel, digest in kustomizations.items()):
        return None
    graph = kustomize.Graph(root=Path(reader.real_root))
    graph.overlays = {saved[0]: _overlay(saved) for saved in overlays}
    graph.findings = [Finding.from_tuple(values) for values in findings]
    return graph


def _keep(record_file: Path, graph: kustomize.Graph, reader: repopath.Reader) -> None:
    if graph.followed_symlink:
        return
    stamps = {folder: _stamp(folder) for folder in graph.consulted}
    newest = max((stamp[1] for stamp in stamps.values() if stamp), default=0)
    if time.time_ns() - newest < RACY_SECONDS * 1e9:
        return
    overlays = [
        (
            o.directory,
            o.file,
            o.kind,
            o.children,
            o.files,
            o.patches,
            [(g.configmap, g.key, g.source) for g in o.generated],
            o.origin_annotations,
            o.missing,
            o.opaque,
        )
        for o in graph.overlays.values()
    ]
    findings = [f.as_tuple() for f in graph.findings]
    kustomizations = {rel: _digest(reader, rel) for rel in graph.kustomizations}
    cachefiles.write_value(record_file, (_FORMAT, overlays, findings, stamps, kustomizations))


def _overlay(saved: tuple) -> kustomize.Overlay:
    directory, file, kind, children, files, patches, generated, origin_annotations, missing, opaque = saved
    return kustomize.Overlay(
        directory=directory,
        file=file,
        kind=kind,
        children=children,
        files=files,
        patches=patches,
        generated=[kustomize.GeneratedKey(*g) for g in generated],
        origin_annotations=origin_annotations,
        missing=missing,
        opaque=opaque,
    )


def _stamp(folder: str) -> tuple[int, int] | None:
    try:
        info = os.stat(folder)
    except OSError:
        return None
    return info.st_ino, info.st_mtime_ns


def _digest(reader: repopath.Reader, rel: str) -> str:
    """A kustomization's content digest, the reader's (the render key hashes the same files: once per run);
    "" when the boundary refuses it (the record then holds "" too, or differs, and the graph is read
    again)."""
    try:
        return reader.digest(rel).hex()
    except repopath.Refused:
        return ""
