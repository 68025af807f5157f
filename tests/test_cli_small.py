"""Small command-line promises (issue 13, item 11): `mig check FILE --repo DIR` is accepted like every other
command's --repo, and a git comparison outside a git repository says so instead of "unknown git revision"."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from support import MINIREPO, REPO, copy_repo

from gpupolicy.cli import main

MIG_CONFIG = REPO / "policies" / "gpu-operator" / "mig-parted-config.yaml"


@pytest.fixture
def outside_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the minirepo that no git repository contains (git may not look above tmp_path)."""
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    return copy_repo(MINIREPO, tmp_path / "repo")


def test_mig_check_takes_repo_after_the_file(capsys) -> None:
    assert main(["mig", "check", str(MIG_CONFIG), "--repo", str(REPO)]) == 0
    assert "layout(s) checked: 0 error(s)" in capsys.readouterr().out


def test_mig_check_takes_repo_before_the_action(capsys) -> None:
    assert main(["mig", "--repo", str(REPO), "check", str(MIG_CONFIG)]) == 0


def test_mig_check_needs_no_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)  # no clusters/ or pools/ above: the file is checked on its own
    assert main(["mig", "check", str(MIG_CONFIG)]) == 0


def test_mig_check_refuses_a_repo_that_is_not_a_directory(tmp_path: Path, capsys) -> None:
    assert main(["mig", "check", str(MIG_CONFIG), "--repo", str(tmp_path / "missing")]) == 2
    assert "not a directory" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv", [["diff"], ["validate", "--changed-since", "HEAD"]], ids=["diff", "changed-since"]
)
def test_outside_git_the_message_says_so(outside_git: Path, argv: list[str], capsys) -> None:
    assert main([*argv, "--repo", str(outside_git)]) == 2
    err = capsys.readouterr().err
    assert "is not a git repository" in err and "unknown git revision" not in err, err


def test_inside_git_an_unknown_revision_is_still_named(outside_git: Path, capsys) -> None:
    subprocess.run(["git", "init", "-q", str(outside_git)], check=True)
    assert main(["validate", "--changed-since", "no-such-rev", "--repo", str(outside_git)]) == 2
    assert "unknown git revision 'no-such-rev'" in capsys.readouterr().err
