"""What the toolkit keeps between runs (decision 0021), in one folder: `$GPUPOLICY_CACHE_DIR`, else
`$XDG_CACHE_HOME/gpupolicy/render`, else `~/.cache/gpupolicy/render`.

- rendered overlays: `<key>.yaml` at the top, keyed by every input file's content and kubectl's identity;
- strict-load results and rendered-document memos: `parsed/<salt>/` (`parsecache.ParseCache`);
- kept kustomize graphs: `parsed/<salt>/graphs/` (`graphcache`);
- prepared core schemas (a kind's schema and the definitions it reaches): `parsed/<salt>/schemas/` (`schema`);
- admission verdicts per policy chain and request: `parsed/<salt>/reviews/` (`keptreviews`).

A command builds one `CacheStore` per run (as pre-commit builds its Store) and hands it to every stage that
caches; `CacheStore.off()` (--no-cache) keeps and reads nothing. Entries are read and written only through
`cachefiles` (length and digest verified, decision 0022). `usage`, `prune` and `clear` serve
`gpupolicy cache`.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import shutil
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ...errors import ToolError
from .. import repopath, yamlload
from ..yamlload import LoadResult
from . import files as cachefiles
from . import parsed as parsecache

CACHE_DIR_ENV = "GPUPOLICY_CACHE_DIR"
PARSED = "parsed"  # strict-load results, under a folder per loader version (parsecache's salt)
GRAPHS = "graphs"  # kept kustomize graphs, beside the strict-load results of the same version
SCHEMAS = "schemas"  # prepared core schemas, beside them too
REVIEWS = "reviews"  # admission verdicts, beside them too (their keys carry their own salt)
# the largest prepared schema is ~0.5 MB; all definitions are 1.4 MB
MAX_PREPARED_SCHEMA_BYTES = 4 * 1024 * 1024
RENDER_SUFFIX = ".yaml"
# What `gpupolicy cache` reports, one line each (decision 0021 lists the caches)
RENDER_KIND = "render cache (rendered overlays)"
PARSE_KIND = "parse cache (strict-load results, rendered-document memos)"
GRAPH_KIND = "kustomize graph cache"
SCHEMA_KIND = "prepared schemas (core kinds' schemas with the definitions they reach)"
REVIEW_KIND = "admission verdicts (per policy chain and request)"
OLD_VERSION_KIND = "parse results of other toolkit versions (--prune deletes them)"
OTHER_KIND = "other files"
USAGE_KINDS = (RENDER_KIND, PARSE_KIND, GRAPH_KIND, SCHEMA_KIND, REVIEW_KIND, OLD_VERSION_KIND, OTHER_KIND)


def default_root() -> Path:
    explicit = os.environ.get(CACHE_DIR_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpupolicy" / "render"


class CacheStore:
    """The run's caches. Build it once per run; a stage that caches takes it, never a flag."""

    def __init__(self, root: Path | str | None = None, enabled: bool = True) -> None:
        self.root = Path(root) if root is not None else default_root()
        self.enabled = enabled
        self._parsed = parsecache.ParseCache(self.root / PARSED) if enabled else None
        self._identities: dict[str, str] = {}

    @classmethod
    def for_repository(cls, repository: Path | str, enabled: bool = True) -> CacheStore:
        """The run's store for validating `repository`: off, with one line on stderr saying why, when the
        cache
        folder is one the repository's content could plant or redirect (`refusal`)."""
        store = cls(enabled=enabled)
        reason = refusal(store.root, Path(repository)) if enabled else None
        if reason:
            print(
                f"gpupolicy: not caching: {reason}; set {CACHE_DIR_ENV} to a folder outside the repository",
                file=sys.stderr,
            )
            return cls.off()
        return store

    @classmethod
    def off(cls) -> CacheStore:
        """A store that keeps nothing: every render and parse is done again (--no-cache)."""
        return cls(enabled=False)

    # --- strict-load results -------------------------------------------------------------------------------

    def load_source(self, raw: bytes, path: str) -> LoadResult:
        """`yamlload.parse_source(raw, path)`, from the cache when this name and content were loaded
        before."""
        return self._parsed.load_bytes(raw, path) if self._parsed else yamlload.parse_source(raw, path)

    def load_rendered(self, overlay: str, text: str) -> list[Any]:
        """kubectl's output of an overlay, parsed; unchanged documents reuse the previous run's objects."""
        return self._parsed.load_rendered(overlay, text) if self._parsed else yamlload.load_rendered(text)

    @property
    def parsed_version_dir(self) -> Path:
        """This toolkit version's folder of strict-load results (other versions' are pruned)."""
        return parsecache.ParseCache(self.root / PARSED).directory

    # --- kept graphs ---------------------------------------------------------------------------------------

    def graph_record(self, key: str) -> Path | None:
        """Where the graph of `key` is kept; None when caching is off."""
        return self._parsed.directory / GRAPHS / key if self._parsed else None

    # --- prepared schemas ----------------------------------------------------------------------------------

    def read_prepared_schema(self, key: str) -> object | None:
        """A kept prepared schema (JSON: nothing in it runs when read), or None when there is none, caching is
        off, or the entry is oversized, corrupt or not JSON. What it holds is the caller's to check."""
        if not self._parsed:
            return None
        entry = self._prepared_schema_file(key)
        if not _within(entry, MAX_PREPARED_SCHEMA_BYTES):
            return None
        payload = cachefiles.read_bytes(entry)
        if payload is None:
            return None
        try:
            return json.loads(payload)
        except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
            return None

    def keep_prepared_schema(self, key: str, value: dict) -> None:
        if self._parsed:
            cachefiles.write_bytes(self._prepared_schema_file(key), json.dumps(value).encode())

    def _prepared_schema_file(self, key: str) -> Path:
        assert self._parsed is not None
        return self._parsed.directory / SCHEMAS / key[:2] / key

    # --- admission verdicts --------------------------------------------------------------------------------

    def read_reviews(self, key: str, max_bytes: int) -> object | None:
        """A kept entry of admission verdicts (marshal: plain values, nothing runs when read), or None when
        there is none, caching is off, or it is over `max_bytes` or does not verify. Its shape is the caller's
        to check."""
        if not self._parsed:
            return None
        entry = self._reviews_file(key)
        return cachefiles.read_value(entry) if _within(entry, max_bytes) else None

    def keep_reviews(self, key: str, value: dict, max_bytes: int) -> None:
        data = marshal.dumps(value)
        if self._parsed and len(data) <= max_bytes:
            cachefiles.write_bytes(self._reviews_file(key), data)

    def _reviews_file(self, key: str) -> Path:
        assert self._parsed is not None
        return self._parsed.directory / REVIEWS / key[:2] / key

    # --- rendered overlays ---------------------------------------------------------------------------------

    def render_key(self, reader: repopath.Reader, files: Iterable[str], kubectl: str) -> str:
        """The key of a render: every input file's name and content, and the kubectl binary."""
        digest = hashlib.sha256(self._kubectl_identity(kubectl).encode())
        for rel in sorted(files):
            digest.update(rel.encode() + b"\0")
            try:
                digest.update(reader.digest(rel))
            except repopath.Refused:  # missing, or not a regular file (the graph refused it before rendering)
                digest.update(b"missing")
        return digest.hexdigest()

    def read_render(self, key: str) -> str | None:
        """A kept render, verified; None when there is none (or caching is off)."""
        return cachefiles.read_text(self._render_file(key)) if self.enabled else None

    def keep_render(self, key: str, text: str) -> None:
        if self.enabled:
            cachefiles.write_bytes(self._render_file(key), text.encode())

    def _render_file(self, key: str) -> Path:
        return self.root / f"{key}{RENDER_SUFFIX}"

    def _kubectl_identity(self, kubectl: str) -> str:
        """What a render depends on besides its inputs: the kubectl binary (path, size, mtime). Cheaper than
        asking `kubectl version` on every run, and it changes whenever the binary does."""
        known = self._identities.get(kubectl)
        if known is None:
            try:
                info = os.stat(kubectl)
                known = f"{kubectl}:{info.st_size}:{info.st_mtime_ns}"
            except OSError:
                known = kubectl
            self._identities[kubectl] = known
        return known

    # --- gpupolicy cache -----------------------------------------------------------------------------------

    def usage(self) -> dict[str, tuple[int, int]]:
        """(entries, bytes) per kind of entry (`USAGE_KINDS`, in that order), each kind present."""
        found = {kind: (0, 0) for kind in USAGE_KINDS}
        for directory, _, names in os.walk(self.root):
            kind = self._kind(Path(directory))
            for name in names:
                try:
                    size = os.stat(os.path.join(directory, name)).st_size
                except OSError:
                    continue
                entries, total = found[kind]
                found[kind] = (entries + 1, total + size)
        return found

    def _kind(self, directory: Path) -> str:
        """Which cache a folder's files belong to (the layout in this module's docstring)."""
        parsed, current = self.root / PARSED, self.parsed_version_dir
        if directory == self.root:
            return RENDER_KIND
        if _under(directory, current / GRAPHS):
            return GRAPH_KIND
        if _under(directory, current / SCHEMAS):
            return SCHEMA_KIND
        if _under(directory, current / REVIEWS):
            return REVIEW_KIND
        if _under(directory, current):
            return PARSE_KIND
        if _under(directory, parsed):
            return OLD_VERSION_KIND
        return OTHER_KIND

    def prune(self, days: float, now: float | None = None) -> tuple[int, int]:
        """Delete entries unread for `days` days and parse results of other toolkit versions: (count,
        bytes)."""
        _refuse_linked_root(self.root)
        if not self.root.is_dir():
            return 0, 0
        cutoff = (now if now is not None else time.time()) - days * 86400
        parsed, current = self.root / PARSED, self.parsed_version_dir
        removed = freed = 0
        for directory, _, names in os.walk(self.root):
            other_version = _under(Path(directory), parsed) and not _under(Path(directory), current)
            for name in names:
                path = os.path.join(directory, name)
                try:
                    info = os.stat(path)
                    if other_version or max(info.st_atime, info.st_mtime) < cutoff:
                        os.unlink(path)
                        removed, freed = removed + 1, freed + info.st_size
                except OSError as exc:
                    print(f"gpupolicy cache: cannot remove {path}: {exc.strerror}", file=sys.stderr)
        _remove_empty_folders(self.root)
        return removed, freed

    def clear(self) -> None:
        _refuse_linked_root(self.root)
        if self.root.is_dir():
            shutil.rmtree(self.root)


NO_CACHE = CacheStore.off()  # the default of helpers called without a run's store (tests, one-off reads)


def refusal(cache_root: Path, repository: Path) -> str | None:
    """Why `cache_root` must not serve a run over `repository`, or None. A symlink could point the cache's
    writes (and `--prune`'s deletions) anywhere; a folder inside the repository is content a pull request can
    commit: forged entries (refused by their MAC anyway, cachefiles) or a symlink in its place (decision
    0064)."""
    if os.path.islink(cache_root):
        return f"the cache folder {cache_root} is a symlink"
    real_cache, real_repository = Path(os.path.realpath(cache_root)), Path(os.path.realpath(repository))
    if _under(real_cache, real_repository):
        return f"the cache folder {cache_root} is inside the repository being validated"
    return None


def _refuse_linked_root(root: Path) -> None:
    if os.path.islink(root):
        raise ToolError(f"the cache folder {root} is a symlink: refusing to prune or clear what it points at")


def _under(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents


def _remove_empty_folders(folder: Path) -> None:
    for directory, _, _ in os.walk(folder, topdown=False):  # deepest first, so emptied parents go too
        if directory != str(folder):
            try:
                os.rmdir(directory)
            except OSError:
                pass  # not empty (or filled again by a run in parallel): keep it


def _within(entry: Path, max_bytes: int) -> bool:
    """Whether a kept entry exists and is at most `max_bytes` long (a larger one is never read)."""
    try:
        return entry.stat().st_size <= max_bytes
    except OSError:
        return False
