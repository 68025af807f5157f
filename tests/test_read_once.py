"""Each input file of the repository is read at most once by a warm `validate` (issue 16): the pipeline
keeps what it loaded and hands it on, so no stage or rule goes back to disk for a file already read.

The repository is copied with its files, validated once to warm the caches, then validated again in-process
while every open (builtins, io, os; Path.read_bytes/read_text go through io.open) is counted.
"""

from __future__ import annotations

import builtins
import collections
import contextlib
import io
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from support import REPO, copy_repo

from gpupolicy.cli import main

INPUT_FOLDERS = ("clusters", "pools", "policies", "docs")


class OpenCounter:
    """How many times each real path was opened."""

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        real_open, real_os_open = builtins.open, os.open

        def counted_open(file, *args, **kwargs):
            self._note(file)
            return real_open(file, *args, **kwargs)

        def counted_os_open(path, *args, **kwargs):
            if kwargs.get("dir_fd") is None:
                self._note(path)
            return real_os_open(path, *args, **kwargs)

        monkeypatch.setattr(builtins, "open", counted_open)
        monkeypatch.setattr(io, "open", counted_open)
        monkeypatch.setattr(os, "open", counted_os_open)

    def _note(self, path) -> None:
        if isinstance(path, int):
            return  # an open descriptor: counted when it was opened
        with contextlib.suppress(TypeError, ValueError):
            self.counts[os.path.realpath(os.fsdecode(path))] += 1

    def inputs_of(self, root: Path) -> dict[str, int]:
        """The counts of the repository's input files, repo-relative."""
        real_root = os.path.realpath(root)
        found = {}
        for path, count in self.counts.items():
            rel = os.path.relpath(path, real_root)
            if rel.split(os.sep)[0] in INPUT_FOLDERS and os.path.isfile(path):
                found[rel.replace(os.sep, "/")] = count
        return found


def _age_folders(root: Path) -> None:
    """Date the copied folders a minute back: the graph cache keeps no graph whose folders changed in the last
    two seconds (decision 0021), and a warm run is one whose caches were all kept."""
    for folder in [root, *(p for p in root.rglob("*") if p.is_dir() and not p.is_symlink())]:
        info = folder.stat()
        os.utime(folder, (info.st_atime - 60, info.st_mtime - 60))


def _validate(root: Path, *extra: str) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(["validate", "--repo", str(root), *extra])


def _git(root: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env=env)


def test_warm_validate_reads_each_input_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = copy_repo(REPO, tmp_path / "repo")
    _age_folders(root)
    monkeypatch.setenv("GPUPOLICY_CACHE_DIR", str(tmp_path / "cache"))
    assert _validate(root) == 0  # warms the render, parse and graph caches
    counter = OpenCounter()
    counter.install(monkeypatch)
    assert _validate(root) == 0
    inputs = counter.inputs_of(root)
    assert inputs, "the warm run read no input file at all: the counter is not counting"
    read_again = {rel: count for rel, count in sorted(inputs.items()) if count > 1}
    assert not read_again, f"{len(read_again)} of {len(inputs)} input files read more than once: {read_again}"


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_changed_since_reads_each_input_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--changed-since reads the graph to select clusters, then validates them: one read of each file for both
    (the run takes the selection's graph and the boundary Reader that read it)."""
    root = copy_repo(REPO, tmp_path / "repo")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "fleet")
    pool = next(p for p in sorted((root / "pools").iterdir()) if (p / "pool.yaml").is_file())
    flavor = next(f for f in sorted(pool.glob("*.yaml")) if f.name not in ("pool.yaml", "kustomization.yaml"))
    flavor.write_text("# touched\n" + flavor.read_text())
    _age_folders(root)
    monkeypatch.setenv("GPUPOLICY_CACHE_DIR", str(tmp_path / "cache"))
    assert _validate(root, "--changed-since", "HEAD") == 0  # warms the caches
    counter = OpenCounter()
    counter.install(monkeypatch)
    assert _validate(root, "--changed-since", "HEAD") == 0
    inputs = counter.inputs_of(root)
    assert inputs, "the run read no input file at all: the counter is not counting"
    read_again = {rel: count for rel, count in sorted(inputs.items()) if count > 1}
    assert not read_again, f"{len(read_again)} of {len(inputs)} input files read more than once: {read_again}"
