"""Incremental validation: which clusters a set of changed paths can affect.

A cluster is affected by a changed path when
- the path is in the cluster overlay's dependency closure (`Graph.closure`: kustomizations and every file a
  kustomization field names: resources, components, patches of each kind, replacements, openapi,
  configurations, generator inputs) in the working tree;
- or the path sits directly in a directory the overlay includes (`Graph.directories`, and folders it names
  that hold no kustomization): this is how `pools/<pool>/pool.yaml` (read by the toolkit, never by kustomize)
  and `clusters/<name>/cluster.yaml` reach the clusters that include that pool or are that cluster;
- or, for a deleted path, an overlay still names it (or a folder above it) as a missing reference. A
  kustomization that stopped naming it is itself changed, so today's graph is enough; only a graph that
  followed a symlink is not trusted for deletions, and the graph at the base revision is asked instead;
- or the overlay (or one it includes) is opaque (`Overlay.opaque`: a kustomization field the graph does not
  know, or plugin configurations, which may name files the graph cannot list): then every changed path
  reaches it, wherever it lies in the repository;
- or the path is a site-wide or toolkit-wide input (`EVERY_CLUSTER_INPUTS`: the toolkit, its pins, CRD
  schemas,
  gpupolicy.yaml, the exceptions, org checks, mkdocs.yml's `site_url` and on-call settings, the runbook,
  decision and example pages rules read, upgrade plans): any cluster's findings can change, so every cluster
  is affected.
Anything else (other docs, READMEs, CI files) affects no cluster. Files no overlay includes are still strictly
loaded and schema-checked on every run, incremental or not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..infra import gitrev, repopath
from ..infra.cache.store import CacheStore
from . import sources
from .render import graphcache, kustomize

# Inputs every cluster's findings can depend on, whatever its overlay includes: a change to any of them
# selects every cluster. A folder ends in "/"; anything else is one file. Each names the module that reads it
# (the constant there is the home of the path; tests/test_incremental.py checks that the two agree).
EVERY_CLUSTER_INPUTS = (
    "tools/",  # the toolkit itself: new rules, new checks of old rules
    "pyproject.toml",  # its pins and registered rule plugins
    "policies/crd-schemas/",  # pipeline.IMPORTED_SCHEMAS: the schemas every object is checked against
    "gpupolicy.yaml",  # repoconfig.CONFIG_FILE: severities and disabled rules, for every cluster
    "policies/exceptions.yaml",  # waivers.EXCEPTIONS_FILE: waivers may name any cluster's objects
    "policies/checks/",  # orgchecks.CHECKS_DIR: org rules run on every cluster's objects
    # siteconfig.SITE_CONFIG: site_url (OBS001 runbook links), extra.oncall (OBS007)
    "mkdocs.yml",
    "docs/runbooks/",  # observability.RUNBOOK_DIR: pages OBS001 reads for every alert
    "docs/decisions/",  # decisions.DECISIONS_DIR: the decision log the DOC rules read
    "docs/examples/",  # sec_common.EXAMPLES_DIR: examples SEC009 admits on every cluster
    # upgrades.PLAN_DIR, approvals.APPROVERS_FILE: plans name clusters' versions
    "policies/upgrades/",
    # rules.imp002_migration_plan_capacity.PLANS: imported clusters' migration plans
    "imports/",
)


@dataclass
class Selection:
    """The clusters a change affects, and why."""

    clusters: list[str]
    all_clusters: list[str]
    changed: set[str]
    reasons: dict[str, list[str]] = field(default_factory=dict)  # cluster -> changed paths that reach it
    everything: list[str] = field(default_factory=list)  # changed paths that affect every cluster
    # The kustomize graph of every cluster, read to select them: the run takes it instead of reading it again
    # (None when a toolkit input changed: every cluster is selected without one).
    graph: kustomize.Graph | None = field(default=None, repr=False)

    def describe(self) -> str:
        head = (
            f"{len(self.clusters)} of {len(self.all_clusters)} cluster(s) affected by "
            f"{len(self.changed)} changed path(s)"
        )
        if self.everything:
            return f"{head} (toolkit inputs changed: {', '.join(sorted(self.everything)[:3])})"
        return head

    def validates_loose_files(self) -> bool:
        """Whether a changed YAML file outside every affected overlay still needs the strict loader."""
        reached = {p for paths in self.reasons.values() for p in paths}
        return any(_is_scanned_yaml(p) for p in self.changed - reached)


def _is_scanned_yaml(path: str) -> bool:
    parts = PurePosixPath(path).parts
    return bool(parts) and parts[0] in sources.SCANNED_DIRS and path.endswith(sources.YAML_SUFFIXES)


def affects_every_cluster(path: str) -> bool:
    return any(
        path.startswith(entry) if entry.endswith("/") else path == entry for entry in EVERY_CLUSTER_INPUTS
    )


def _reach(graph: kustomize.Graph, names: list[str], paths: set[str]) -> dict[str, set[str]]:
    """cluster -> the paths among `paths` that its overlay depends on in `graph`."""
    reached: dict[str, set[str]] = {}
    parents = {p: str(PurePosixPath(p).parent) for p in paths}
    for name in names:
        overlay = f"clusters/{name}"
        closure = graph.closure(overlay)
        overlays = [graph.overlays[d] for d in graph.directories(overlay)]
        # the overlays' folders, and folders they name that hold no kustomization (any more): a file deleted
        # there still counts; and the paths they name that do not exist
        directories = {o.directory for o in overlays} | {child for o in overlays for child in o.children}
        missing = [path for o in overlays for path in o.missing]
        if graph.opaque_fields(overlay):  # inputs the graph cannot list: any change may reach it
            hits = set(paths)
        else:
            hits = {
                p
                for p, parent in parents.items()
                if p in closure or parent in directories or any(_within(p, gone) for gone in missing)
            }
        if hits:
            reached[name] = hits
    return reached


def select(
    root: Path,
    changes: gitrev.Changes,
    rev: str,
    store: CacheStore | None = None,
    reader: repopath.Reader | None = None,
) -> Selection:
    """The clusters of the working tree at `root` that `changes` (relative to `rev`) can affect. `store` and
    `reader`: the run's (None: one over the default cache folder, a reader of its own)."""
    reader = reader or repopath.Reader(root)
    names = sources.clusters_of(reader)
    everything = sorted(p for p in changes.all if affects_every_cluster(p))
    if everything:
        return Selection(list(names), list(names), changes.all, {n: everything for n in names}, everything)
    graph = graphcache.build_graph(
        reader, [f"clusters/{n}" for n in names], store or CacheStore.for_repository(root)
    )
    reached = _reach(graph, names, changes.all)
    if changes.deleted and graph.followed_symlink:
        # Without symlinks today's graph already knows every deleted input that mattered: a kustomization that
        # still names it has it as a missing reference, and one that no longer does is itself changed. A
        # symlink can hide that (its target is not what the overlay names): ask the revision's graph then.
        for name, hits in _reach_at_revision(root, rev, changes.deleted).items():
            if name in names:
                reached.setdefault(name, set()).update(hits)
    return Selection(
        sorted(reached),
        list(names),
        changes.all,
        {name: sorted(hits) for name, hits in sorted(reached.items())},
        graph=graph,
    )


def _within(path: str, gone: str) -> bool:
    """Whether `path` is the missing path itself or lies beneath it (a deleted folder)."""
    return path == gone or path.startswith(gone + "/")


def _reach_at_revision(root: Path, rev: str, deleted: set[str]) -> dict[str, set[str]]:
    """Deleted paths are gone from today's graph: ask the graph as it was at the revision."""
    with gitrev.materialize(root, rev) as old_root:
        old_names = sources.cluster_names(old_root)
        old_graph = kustomize.build_graph(old_root, [f"clusters/{n}" for n in old_names])
        return _reach(old_graph, old_names, deleted)


def changed_clusters(
    root: Path, rev: str, store: CacheStore | None = None, reader: repopath.Reader | None = None
) -> Selection:
    """`git diff --name-only REV` plus untracked files, mapped to the clusters they affect."""
    return select(root, gitrev.changed_since(root, rev), rev, store, reader)
