"""gitrev.unpack: a revision (read with ls-tree and cat-file, packed as a tar) written to a temporary folder
on every supported Python (3.11.2 has no `extractall(filter=...)`), with each member checked by the trust
boundary;
and materialize, which runs no filter a revision's attributes name."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from gpupolicy.errors import ToolError
from gpupolicy.infra import gitrev


def _archive(*members: tuple[tarfile.TarInfo, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for info, data in members:
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data else None)
    return buffer.getvalue()


def _member(name: str, kind: bytes = tarfile.REGTYPE, data: bytes = b"", **fields: object) -> tuple:
    info = tarfile.TarInfo(name)
    info.type = kind
    for key, value in fields.items():
        setattr(info, key, value)
    return info, data


def test_folders_files_modes_and_symlinks_are_written(tmp_path: Path) -> None:
    gitrev.unpack(
        _archive(
            _member("clusters/", tarfile.DIRTYPE),
            _member("clusters/a.yaml", data=b"kind: A\n"),
            _member("tools/run.sh", data=b"#!/bin/sh\n", mode=0o755),
            _member("clusters/out.yaml", tarfile.SYMTYPE, linkname="/etc/hostname"),
        ),
        tmp_path,
    )
    assert (tmp_path / "clusters" / "a.yaml").read_bytes() == b"kind: A\n"
    assert os.access(tmp_path / "tools" / "run.sh", os.X_OK)
    assert not os.access(tmp_path / "clusters" / "a.yaml", os.X_OK)
    # kept as a link, as in the working tree: the pipeline reports it (YAML008) and never follows it
    assert os.readlink(tmp_path / "clusters" / "out.yaml") == "/etc/hostname"


@pytest.mark.parametrize("name", ["/etc/evil", "../evil", "a/../../evil", "a\\b", "a/\x01b"])
def test_a_member_name_outside_the_target_is_refused(tmp_path: Path, name: str) -> None:
    target = tmp_path / "repo"
    target.mkdir()
    with pytest.raises(ToolError, match="refused"):
        gitrev.unpack(_archive(_member(name, data=b"x")), target)
    assert not (tmp_path / "evil").exists()


def test_nothing_is_written_through_a_symlinked_folder(tmp_path: Path) -> None:
    target, outside = tmp_path / "repo", tmp_path / "outside"
    target.mkdir()
    outside.mkdir()
    with pytest.raises(ToolError, match="symlink"):
        gitrev.unpack(
            _archive(
                _member("link", tarfile.SYMTYPE, linkname=str(outside)),
                _member("link/planted.yaml", data=b"x"),
            ),
            target,
        )
    assert list(outside.iterdir()) == []


def test_a_file_is_never_overwritten_through_a_symlink(tmp_path: Path) -> None:
    target, victim = tmp_path / "repo", tmp_path / "victim"
    target.mkdir()
    victim.write_text("original")
    with pytest.raises(OSError):
        gitrev.unpack(
            _archive(_member("f", tarfile.SYMTYPE, linkname=str(victim)), _member("f", data=b"overwritten")),
            target,
        )
    assert victim.read_text() == "original"


@pytest.mark.parametrize("kind", [tarfile.LNKTYPE, tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.FIFOTYPE])
def test_links_devices_and_fifos_are_refused(tmp_path: Path, kind: bytes) -> None:
    with pytest.raises(ToolError, match="not a file, folder or symlink"):
        gitrev.unpack(_archive(_member("a", data=b"x"), _member("b", kind, linkname="a")), tmp_path)
    assert not (tmp_path / "b").exists()


def test_materialize_on_a_hostile_archive_says_which_revision(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(gitrev, "resolve", lambda root, rev: "c0ffee")
    monkeypatch.setattr(gitrev, "_prefix", lambda root: "")
    monkeypatch.setattr(gitrev, "_tree_archive", lambda root, tree: _archive(_member("../x", data=b"x")))
    with pytest.raises(ToolError, match=r"cannot unpack revision HEAD: archive member refused"):
        with gitrev.materialize(tmp_path, "HEAD"):
            pass


@pytest.mark.skipif(shutil.which("git") is None, reason="git is needed")
def test_materialize_runs_no_filter_the_revision_names(tmp_path: Path) -> None:
    """A revision's `.gitattributes` picks a filter the machine has configured (git-lfs in CI: its smudge
    fetched what the pull request's `.lfsconfig` named); `git archive` ran it, materialize must not."""
    repo, marker = tmp_path / "repo", tmp_path / "filter-ran"
    (repo / "d").mkdir(parents=True)
    (repo / ".gitattributes").write_text("*.yaml filter=smudger\n")
    (repo / "x.yaml").write_text("a: 1\n")
    (repo / "d" / "link").symlink_to("../x.yaml")
    git = ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    subprocess.run([*git, "config", "filter.smudger.smudge", f"sh -c 'touch {marker}; cat'"], check=True)
    with gitrev.materialize(repo, "HEAD") as tree:
        assert (tree / "x.yaml").read_text() == "a: 1\n"
        assert os.readlink(tree / "d" / "link") == "../x.yaml"
    assert not marker.exists()


@pytest.mark.skipif(shutil.which("git") is None, reason="git is needed")
def test_materialize_refuses_a_revision_over_its_size_limit(tmp_path: Path, monkeypatch) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "big.yaml").write_text("x: " + "y" * 4096 + "\n")
    git = ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    monkeypatch.setattr(gitrev, "MAX_REVISION_BYTES", 1024)
    with pytest.raises(ToolError, match="over the limit"):
        with gitrev.materialize(repo, "HEAD"):
            pass
