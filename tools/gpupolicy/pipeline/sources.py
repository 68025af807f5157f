"""The pipeline's first two stages, which fill one `Sources` value that every later stage takes as it is:

- discover: the repository's clusters, the ones this run validates, their kustomize graph and the source files
  they need (a run over some clusters reads only what those depend on);
- load: every source file strictly parsed, and the pages rules check (runbooks, the decision log), each read
  once through the run's `repopath.Reader` (the trust boundary, which keeps the bytes it read).
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..domain import decisions
from ..domain.observability import RUNBOOK_DIR, oncall
from ..domain.waivers import EXCEPTIONS_FILE
from ..findings import Finding
from ..infra import repopath, siteconfig, yamlload
from ..infra.cache.store import NO_CACHE, CacheStore
from ..infra.yamlload import MAX_FILE_BYTES, Document
from ..model import Pages
from ..orgchecks import CHECKS_DIR
from ..rules import yaml001_syntax as yaml001
from ..rules import yaml004_file_size as yaml004
from ..rules import yaml008_symlink as yaml008
from ..upgrade.plans import PLAN_DIR
from .render import graphcache, kustomize

SCANNED_DIRS = ("clusters", "pools", "policies", "docs")
# Fleet-level declarations (folders or files) that speak about clusters: every run loads them, also a run over
# some clusters, so a fleet-level rule still reports what they say about the clusters the run covers (a
# rollout plan that leaves a pool of the selected cluster out of every stage, UPG003), and a reviewed
# exception still accepts its finding, and an organization's declarative checks still run.
FLEET_INPUTS = (PLAN_DIR, EXCEPTIONS_FILE, CHECKS_DIR)
YAML_SUFFIXES = (".yaml", ".yml")


def cluster_names(root: Path | str) -> list[str]:
    """The repository's clusters (a command's one-off look; a run asks its reader: `clusters_of`)."""
    return clusters_of(repopath.Reader(root))


def clusters_of(reader: repopath.Reader) -> list[str]:
    """The repository's clusters: folders under clusters/ holding a cluster.yaml or any kustomization entry,
    even one that is not a regular file. Counting only readable kustomizations made a cluster whose overlay is
    missing, a folder or a FIFO vanish from the run ("ok ... from 0 cluster(s)"); the graph reports those."""
    try:
        names = reader.listdir("clusters")
    except OSError:  # no clusters/ folder (or not a folder): no clusters
        return []
    return sorted(
        name
        for name in names
        if reader.isdir(f"clusters/{name}") and _declares_cluster(reader, f"clusters/{name}")
    )


def _declares_cluster(reader: repopath.Reader, folder: str) -> bool:
    return any(
        reader.lexists(f"{folder}/{name}")
        for name in (kustomize.CLUSTER_FILE, *kustomize.KUSTOMIZATION_NAMES)
    )


@dataclass
class Sources:
    """What discover and load found: the one value the render, parse, schema and model stages start from."""

    all_clusters: list[str]  # every cluster of the repository
    selected: list[str]  # the clusters this run validates
    graph: kustomize.Graph
    reader: repopath.Reader  # the run's trust boundary; it keeps what it read
    pool_dirs: list[str] = field(default_factory=list)  # pools/<name> folders this run looks at
    files: list[str] = field(default_factory=list)  # repo-relative YAML files to load strictly
    findings: list[Finding] = field(default_factory=list)  # discovery's (symlinks, the graph)
    documents: dict[str, list[Document]] = field(default_factory=dict)
    # JSON6902 patch and replacements files parsed as the YAML lists they are (the loader keeps mappings only)
    edit_documents: dict[str, list[Document]] = field(default_factory=dict)
    load_findings: list[Finding] = field(default_factory=list)
    runbooks: Pages = field(default_factory=Pages)
    site_url: tuple[str, str] = ("", "")  # siteconfig.read_site_url: the value, or why there is none
    oncall: Any = None  # oncall.OnCall: owners, escalation and the Grafana URL (mkdocs.yml extra.oncall)
    decision_log: list[decisions.Decision] = field(default_factory=list)
    affected_paths: dict[str, bool] = field(default_factory=dict)  # the log's `affects` entries that exist

    @property
    def root(self) -> Path:
        return self.reader.root

    @property
    def whole(self) -> bool:
        """Whether the run covers every cluster (then the whole-repository checks run too)."""
        return set(self.selected) == set(self.all_clusters)

    def closure(self, cluster: str) -> frozenset[str]:
        return self.graph.closure(f"clusters/{cluster}")

    def pool_membership(self, clusters: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """pools/<name> folder -> the clusters among `clusters` whose overlay includes it."""
        members: dict[str, set[str]] = {}
        for name in clusters:
            for directory in self.graph.directories(f"clusters/{name}"):
                members.setdefault(directory, set()).add(name)
        return {d: tuple(sorted(names)) for d, names in members.items() if d.startswith("pools/")}


# --- discover
# ------------------------------------------------------------------------------------------------


def discover(
    reader: repopath.Reader,
    all_clusters: list[str],
    selected: list[str],
    store: CacheStore,
    graph: kustomize.Graph | None = None,
    fleet_level: bool = False,
) -> Sources:
    """The clusters' graph (given, or read now) and the source files the run needs. A run over some clusters
    (sharding, --changed-since) reads only what those clusters depend on; with `fleet_level` (the first shard
    of `validate --shard`) it also reads what no cluster includes (loose files, pools in no cluster, the
    graph's findings outside every overlay), so the shards together cover what one run over every cluster
    reads. `reader`: the run's boundary (the one that read a given graph, so its kustomizations are not read
    again)."""
    whole = set(selected) == set(all_clusters)
    entries = [f"clusters/{name}" for name in (all_clusters if whole or fleet_level else selected)]
    if graph is None:
        graph = graphcache.build_graph(reader, entries, store)
    sources = Sources(all_clusters, selected, graph, reader)
    if whole:
        sources.pool_dirs = _pool_dirs(reader, None, selected)
        sources.files, findings = source_files(reader)
        sources.findings = findings + graph.findings
        return sources
    selected_entries = [f"clusters/{name}" for name in selected]
    sources.pool_dirs = _pool_dirs(reader, graph, selected)
    needed = _inputs_of(reader, graph, selected, sources.pool_dirs)
    graph_findings = _graph_findings(graph, selected_entries)
    if fleet_level:
        outside = _outside_every_cluster(reader, graph, all_clusters)
        sources.pool_dirs = sorted(set(sources.pool_dirs) | outside.pool_dirs)
        needed |= outside.files
        graph_findings += [f for f in graph.findings if f in outside.graph_findings]
    sources.files, findings = source_files(reader, needed)
    sources.findings = findings + graph_findings
    return sources


@dataclass
class _Outside:
    pool_dirs: set[str]
    files: set[str]
    graph_findings: list[Finding]


def _outside_every_cluster(
    reader: repopath.Reader, graph: kustomize.Graph, all_clusters: list[str]
) -> _Outside:
    """What a run over every cluster reads that no single cluster's run does: the pool folders no cluster
    includes, the files no cluster's run needs, and the graph's findings about folders no overlay reaches.
    `graph` must cover every cluster."""
    included_pools = _pool_dirs(reader, graph, all_clusters)
    pool_dirs = set(_pool_dirs(reader, None, all_clusters)) - set(included_pools)
    needed = _inputs_of(reader, graph, all_clusters, included_pools)
    reached = set(_graph_findings(graph, [f"clusters/{name}" for name in all_clusters]))
    return _Outside(
        pool_dirs, set(reader.walk(SCANNED_DIRS)) - needed, [f for f in graph.findings if f not in reached]
    )


def _graph_findings(graph: kustomize.Graph, entries: list[str]) -> list[Finding]:
    """The graph's findings about the overlays reachable from `entries` (and the folders they name): a graph
    read for every cluster also knows about clusters this run does not cover."""
    reachable = {d for entry in entries for d in graph.directories(entry)}
    folders = set(entries) | reachable | {child for d in reachable for child in graph.overlays[d].children}
    return [f for f in graph.findings if posixpath.dirname(f.path) in folders]


def source_files(
    reader: repopath.Reader, only: Iterable[str] | None = None
) -> tuple[list[str], list[Finding]]:
    """Repo-relative YAML files under the scanned folders; symlinks out of the repository are findings.
    With `only` (a run over some clusters) just those paths are looked at: walking a fleet's whole tree
    cost more than validating one cluster."""
    files: list[str] = []
    findings: list[Finding] = []
    candidates = (
        reader.walk(SCANNED_DIRS)
        if only is None
        else sorted(p for p in only if p.split("/", 1)[0] in SCANNED_DIRS)
    )
    for rel in candidates:
        full = reader.root / rel
        if full.is_symlink() and not _symlink_inside(full, rel, reader.root, findings):
            continue
        if rel.endswith(YAML_SUFFIXES) and full.is_file():
            files.append(rel)
    return files, findings


def _symlink_inside(full: Path, rel: str, real_root: Path, findings: list[Finding]) -> bool:
    """Whether a symlink resolves inside the repository; a finding when it does not."""
    target = _resolved(full)
    if target is None:
        findings.append(
            yaml008.finding(
                f"symlink cannot be resolved (a loop: {os.readlink(full)})",
                rel,
                1,
                hint="replace the symlink with the file itself",
            )
        )
        return False
    if not target.is_relative_to(real_root):
        findings.append(
            yaml008.finding(
                f"symlink points outside the repository ({os.readlink(full)})",
                rel,
                1,
                hint="copy the file into the repository instead",
            )
        )
        return False
    return True


def _resolved(path: Path) -> Path | None:
    """The symlink-free path, or None for a symlink loop."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):  # Python 3.11 raises RuntimeError on a loop
        return None


def _pool_dirs(reader: repopath.Reader, graph: kustomize.Graph | None, clusters: list[str]) -> list[str]:
    """Repo-relative pool folders: every one under pools/, or (given a graph) those the clusters include."""
    if graph is None:
        if not reader.isdir("pools"):
            return []
        return [f"pools/{name}" for name in sorted(reader.listdir("pools")) if reader.isdir(f"pools/{name}")]
    included = {d for name in clusters for d in graph.directories(f"clusters/{name}")}
    return sorted(d for d in included if d.startswith("pools/"))


def _fleet_inputs(reader: repopath.Reader) -> Iterator[str]:
    """Every file of FLEET_INPUTS (a folder's files, or the file); source_files vets each one like any
    other."""
    yield from (rel for rel in FLEET_INPUTS if reader.lexists(rel) and not reader.isdir(rel))
    yield from reader.walk([rel for rel in FLEET_INPUTS if reader.isdir(rel)])


def _inputs_of(
    reader: repopath.Reader, graph: kustomize.Graph, clusters: list[str], pool_dirs: list[str]
) -> set[str]:
    """The source files a run over some clusters needs: their overlays' inputs, their declarations and the
    fleet-level declarations that name them."""
    needed = {f for name in clusters for f in graph.closure(f"clusters/{name}")}
    needed |= {f"clusters/{name}/cluster.yaml" for name in clusters}
    needed |= {f"{d}/pool.yaml" for d in pool_dirs}
    return needed | set(_fleet_inputs(reader))


# --- load
# ----------------------------------------------------------------------------------------------------


def load(sources: Sources, store: CacheStore) -> list[Finding]:
    """Strict-load the sources and read the pages rules check; returns the loader's findings (also kept)."""
    sources.documents, findings = load_sources(
        sources.reader,
        sources.files,
        store,
        lists_of=sources.graph.patch_files(),
        lists=sources.edit_documents,
    )
    # a JSON6902 patch file is a YAML list, which the loader alone would refuse
    sources.load_findings = kustomize.accept_json6902_lists(findings, sources.graph)
    sources.runbooks = read_pages(sources.reader, RUNBOOK_DIR)
    settings = siteconfig.read_settings(sources.reader)  # mkdocs.yml, read once for both
    sources.site_url = siteconfig.site_url_of(*settings)
    sources.oncall = oncall.oncall_of(*settings)
    sources.decision_log = decisions.load_log(sources.reader)
    sources.affected_paths = decisions.affected_paths(sources.reader, sources.decision_log)
    return sources.load_findings


def load_sources(
    reader: repopath.Reader,
    files: Iterable[str],
    store: CacheStore = NO_CACHE,
    lists_of: Iterable[str] = (),
    lists: dict[str, list[Document]] | None = None,
) -> tuple[dict[str, list[Document]], list[Finding]]:
    """The strict loader's documents and findings of each file. The files in `lists_of` (JSON6902 patches and
    replacements, which kustomize reads as YAML lists) also go into `lists` parsed that way, from the same
    read:
    the locator needs their operations, and a second read would break the read-once rule."""
    documents: dict[str, list[Document]] = {}
    list_files = set(lists_of)
    findings: list[Finding] = []
    for rel in files:
        try:
            raw = reader.read(rel)
        except repopath.Refused as refusal:
            findings.append(_refused_source(reader, rel, refusal))
            continue
        except OSError as exc:
            findings.append(yaml001.finding(f"cannot read file: {exc.strerror}", rel, 0))
            continue
        loaded = store.load_source(raw, rel)
        documents[rel] = loaded.documents
        findings.extend(loaded.findings)
        if rel in list_files and lists is not None:
            lists[rel] = yamlload.load_text(raw.decode("utf-8", "replace"), rel, lists=True).documents
    return documents, findings


def read_pages(reader: repopath.Reader, folder: str) -> Pages:
    """Every Markdown entry of `folder` (symlinks included: one out of the repository is refused and says
    so)."""
    pages = Pages()
    try:
        names = sorted(reader.listdir(folder))
    except OSError:
        return pages
    for name in names:
        rel = f"{folder}/{name}"
        if not name.endswith(".md"):
            continue
        try:
            pages.texts[rel] = reader.read(rel).decode("utf-8")
        except (repopath.Refused, UnicodeDecodeError) as exc:
            pages.unreadable[rel] = str(exc)
    return pages


def _refused_source(reader: repopath.Reader, rel: str, refusal: repopath.Refused) -> Finding:
    """The finding for a source file the trust boundary will not read: an oversized one keeps the loader's
    YAML004 (so it reads the same whether the boundary or the loader saw the size first), anything else
    (a FIFO, a device, a symlink out of the repository) is YAML001 with the boundary's reason."""
    size = _inside_size(reader, rel)
    if size is not None and size > MAX_FILE_BYTES:
        return yaml004.finding(
            f"file is {size:,} bytes, over the {MAX_FILE_BYTES:,}-byte limit",
            rel,
            1,
            hint="split it, or keep generated data out of the policy repository",
        )
    return yaml001.finding(f"cannot read file: {refusal}", rel, 0)


def _inside_size(reader: repopath.Reader, rel: str) -> int | None:
    """The size of `rel` when it is a regular file inside the repository, else None; never opens it."""
    try:
        return os.stat(reader.regular_file(rel, limit=None)).st_size
    except (repopath.Refused, OSError):
        return None
