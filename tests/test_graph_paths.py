"""Graph.real_path, the memoized resolver that reads a fleet's kustomizations quickly, agrees with
os.path.realpath (and the ELOOP its result gives a stat) on every kind of path an overlay can name."""

from __future__ import annotations

import errno
import itertools
import os
from pathlib import Path

import pytest

from gpupolicy.pipeline.render.kustomize import Graph


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for folder in ("clusters/a", "pools/p1/sub", "policies/base"):
        (root / folder).mkdir(parents=True)
    (root / "pools/p1/pool.yaml").write_text("x")
    (tmp_path / "outside").mkdir()
    os.symlink("../pools/p1", root / "clusters/linked-pool")  # a folder symlink inside the repository
    os.symlink(str(tmp_path / "outside"), root / "policies/escape")  # a symlink out of it
    os.symlink("missing-target", root / "policies/dangling")
    os.symlink("loop-b", root / "policies/loop-a")
    os.symlink("loop-a", root / "policies/loop-b")
    return root


NAMES = [
    "..",
    ".",
    "",
    "pools",
    "p1",
    "sub",
    "pool.yaml",
    "linked-pool",
    "escape",
    "dangling",
    "nothing",
    "loop-a",
]


def _expected(path: str) -> tuple[str, int | None] | str:
    """The reference: realpath, then a stat of its result, where ELOOP means the path ends in a loop. This is
    the test Path.resolve made up to Python 3.12 (and stopped making in 3.13), spelled out so the oracle is
    the same
    on every supported Python."""
    real = os.path.realpath(path)
    try:
        return real, os.stat(real).st_mode
    except OSError as exc:
        return "loop" if exc.errno == errno.ELOOP else (real, None)


def _actual(graph: Graph, path: str) -> tuple[str, int | None] | str:
    try:
        return graph.real_path(path)
    except RuntimeError:
        return "loop"


def test_real_path_agrees_with_realpath(tree: Path) -> None:
    graph = Graph(root=tree.resolve())
    starts = [str(tree / "clusters/a"), str(tree / "policies"), str(tree / "clusters/linked-pool")]
    checked = 0
    for start, depth in itertools.product(starts, (1, 2, 3)):
        for names in itertools.product(NAMES, repeat=depth):
            if "loop-a" in names[:-1]:
                # past a loop realpath stops resolving (`loop/../escape` stays "inside"): no reference
                continue
            path = os.path.join(start, *names)
            assert _actual(graph, path) == _expected(path), path
            checked += 1
    assert checked > 4000


def test_past_a_loop_a_symlink_out_is_still_seen(tree: Path) -> None:
    real, _ = Graph(root=tree.resolve()).real_path(str(tree / "policies/loop-a/../escape"))
    assert not real.startswith(str(tree.resolve()) + os.sep)


def test_a_name_too_long_is_an_os_error(tree: Path) -> None:
    with pytest.raises(OSError):
        Graph(root=tree.resolve()).real_path(str(tree / ("a" * 300)))
