"""The kept kustomize graph: reused only while every kustomization and every folder it was read from is
unchanged, and then equal to a graph read afresh."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from support import REPO, copy_repo

from gpupolicy import pipeline
from gpupolicy.infra import repopath
from gpupolicy.infra.cache.store import CacheStore
from gpupolicy.pipeline.render import graphcache, kustomize


def _age(root: Path, seconds: float = 60) -> None:
    """Move every folder's mtime into the past, as for a checkout made a while ago (a fresh tree is
    'racy')."""
    past = time.time() - seconds
    for folder, _, _ in os.walk(root):
        os.utime(folder, (past, past))


def _entries(root: Path) -> list[str]:
    return [f"clusters/{name}" for name in pipeline.cluster_names(root)]


def _snapshot(graph: kustomize.Graph) -> tuple:
    return sorted((d, repr(o)) for d, o in graph.overlays.items()), sorted(map(repr, graph.findings))


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    root = copy_repo(REPO / "tests" / "fixtures" / "minirepo", tmp_path / "repo")
    _age(root)
    return root


@pytest.fixture()
def cache(tmp_path: Path) -> CacheStore:
    return CacheStore(tmp_path / "cache")


def _build(root: Path, cache: CacheStore, monkeypatch) -> tuple[kustomize.Graph, bool]:
    """The graph through the cache, and whether it was read afresh."""
    calls = []
    real = kustomize.build_graph
    monkeypatch.setattr(kustomize, "build_graph", lambda *a, **k: calls.append(1) or real(*a, **k))
    graph = graphcache.build_graph(repopath.Reader(root), _entries(root), cache)
    monkeypatch.setattr(kustomize, "build_graph", real)
    return graph, bool(calls)


def test_an_unchanged_tree_reuses_the_graph(repo, cache, monkeypatch) -> None:
    first, read = _build(repo, cache, monkeypatch)
    assert read
    second, read_again = _build(repo, cache, monkeypatch)
    assert not read_again, "the kept graph was not reused"
    assert _snapshot(second) == _snapshot(first) == _snapshot(kustomize.build_graph(repo, _entries(repo)))
    assert second.closure("clusters/mini") == first.closure("clusters/mini")


def test_an_edited_kustomization_is_read_again(repo, cache, monkeypatch) -> None:
    _build(repo, cache, monkeypatch)
    kfile = repo / "clusters/mini/kustomization.yaml"
    kfile.write_text(kfile.read_text().replace("  - queues.yaml\n", "  - queues.yaml\n  - missing.yaml\n"))
    _age(repo)  # the folder looks untouched: only the content tells
    graph, read = _build(repo, cache, monkeypatch)
    assert read and any(f.rule == "KUST003" and "missing.yaml" in f.message for f in graph.findings)


def test_a_new_file_in_a_consulted_folder_is_seen(repo, cache, monkeypatch) -> None:
    kfile = repo / "clusters/mini/kustomization.yaml"
    kfile.write_text(kfile.read_text().replace("  - queues.yaml\n", "  - queues.yaml\n  - later.yaml\n"))
    _age(repo)
    graph, _ = _build(repo, cache, monkeypatch)
    assert any("later.yaml" in f.message for f in graph.findings)
    (repo / "clusters/mini/later.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n")
    graph, read = _build(repo, cache, monkeypatch)
    assert read and not any("later.yaml" in f.message for f in graph.findings)
    assert "clusters/mini/later.yaml" in graph.closure("clusters/mini")


def test_a_freshly_changed_tree_is_not_kept(tmp_path, cache, monkeypatch) -> None:
    root = copy_repo(REPO / "tests" / "fixtures" / "minirepo", tmp_path / "fresh")
    _age(root, seconds=0)  # every folder changed just now
    _build(root, cache, monkeypatch)
    assert _build(root, cache, monkeypatch)[1], "a graph read within the mtime tick of a change was kept"


def test_a_graph_that_followed_a_symlink_is_not_kept(repo, cache, monkeypatch) -> None:
    queues = repo / "clusters/mini/queues.yaml"
    (repo / "clusters/mini/real-queues.yaml").write_text(queues.read_text())
    queues.unlink()
    queues.symlink_to("real-queues.yaml")
    _age(repo)
    _build(repo, cache, monkeypatch)
    assert _build(repo, cache, monkeypatch)[1]


def test_no_cache_reads_afresh(repo, monkeypatch) -> None:
    graph = graphcache.build_graph(repopath.Reader(repo), _entries(repo), CacheStore.off())
    assert _snapshot(graph) == _snapshot(kustomize.build_graph(repo, _entries(repo)))
