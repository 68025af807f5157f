"""Edits that finish or undo (issue 29, item 7): a multi-file write killed between two renames is completed by
the next writing command, or by `gpupolicy recover`; read-only commands report it and stop; a journal is
content like any other and never makes recovery touch what it did not write."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import git, git_repository

from gpupolicy.cli import main
from gpupolicy.errors import ToolError
from gpupolicy.infra import transaction

KILL = "GPUPOLICY_TEST_KILL_AFTER_RENAMES"
FILES = ("a.yaml", "b.yaml", "docs/c.md", "docs/d.md")


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    for rel in FILES:
        (repo / rel).write_text(f"old {rel}\n")
    return repo


def _killed_write(repo: Path, renames: int) -> subprocess.CompletedProcess:
    """write_files in a child process that SIGKILLs itself after `renames` renames: no undo runs."""
    script = (
        "import sys; from pathlib import Path; from gpupolicy.infra import transaction\n"
        "repo = Path(sys.argv[1])\n"
        f"transaction.write_files({{repo / rel: 'new ' + rel + '\\n' for rel in {FILES!r}}}, "
        "journal_root=repo)\n"
    )
    return subprocess.run(
        [sys.executable, "-c", script, str(repo)],
        env={**os.environ, KILL: str(renames)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _contents(repo: Path) -> list[str]:
    return [(repo / rel).read_text().split()[0] for rel in FILES]


def _leftovers(repo: Path) -> list[str]:
    return sorted(
        p.name for p in repo.rglob(".*") if p.suffix in (".tmp", ".bak") or p.name.startswith(".gpupolicy")
    )


def test_a_write_killed_between_renames_is_completed(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    proc = _killed_write(repo, 2)
    assert proc.returncode == -9
    # what SIGKILL used to leave, with .tmp and .bak files
    assert _contents(repo) == ["new", "new", "old", "old"]
    assert transaction.interrupted(repo) and _leftovers(repo)
    assert "completed" in transaction.recover(repo)
    assert _contents(repo) == ["new"] * 4
    assert _leftovers(repo) == []


def test_a_write_killed_while_staging_is_rolled_back(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    proc = _killed_write(repo, 0)  # killed before the first rename: still the committing phase, all staged
    assert proc.returncode == -9 and _contents(repo) == ["old"] * 4
    journal = repo / transaction.JOURNAL_NAME
    body = json.loads(journal.read_text())
    # as if killed while the temporaries were written
    journal.write_text(json.dumps({**body, "phase": "staging"}))
    assert "rolled back" in transaction.recover(repo)
    assert _contents(repo) == ["old"] * 4 and _leftovers(repo) == []


def test_a_new_write_refuses_to_start_over_an_interrupted_one(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    _killed_write(repo, 1)
    with pytest.raises(ToolError, match="recover"):
        transaction.write_files({repo / "a.yaml": "x", repo / "b.yaml": "y"}, journal_root=repo)


def test_read_only_commands_stop_and_writing_commands_recover_first(tmp_path: Path, capsys) -> None:
    repo = _repo(tmp_path)
    (repo / "clusters").mkdir()  # a policy repository, for the command line
    _killed_write(repo, 3)
    assert main(["validate", "--repo", str(repo)]) == 2
    assert "gpupolicy recover" in capsys.readouterr().err
    assert _contents(repo) == ["new", "new", "new", "old"]  # the validator changed nothing
    assert main(["recover", "--repo", str(repo)]) == 0
    assert "was completed" in capsys.readouterr().err
    assert _contents(repo) == ["new"] * 4 and _leftovers(repo) == []


def _journal(repo: Path, targets: list[dict], phase: str = "committing") -> None:
    (repo / transaction.JOURNAL_NAME).write_text(
        json.dumps({"version": 1, "id": "0123456789abcdef", "phase": phase, "targets": targets})
    )


@pytest.mark.parametrize("path", ["../outside.yaml", "/etc/passwd", "docs/../../outside.yaml", "https://x/y"])
def test_a_journal_naming_a_path_outside_the_repository_is_refused(tmp_path: Path, path: str) -> None:
    repo = _repo(tmp_path)
    outside = tmp_path / "outside.yaml"
    outside.write_text("keep")
    (tmp_path / ".outside.yaml.0123456789abcdef.bak").write_text("planted")
    _journal(repo, [{"path": path, "remove": True}])
    with pytest.raises(ToolError, match="not a journal this toolkit wrote"):
        transaction.recover(repo)
    assert outside.read_text() == "keep" and (tmp_path / ".outside.yaml.0123456789abcdef.bak").exists()


def test_a_journal_through_a_symlinked_folder_is_refused(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious").write_text("keep")
    (repo / "link").symlink_to(elsewhere)
    _journal(repo, [{"path": "link/precious", "remove": True}])
    with pytest.raises(ToolError, match="outside the repository"):
        transaction.recover(repo)
    assert (elsewhere / "precious").read_text() == "keep"


def test_a_journal_never_deletes_a_file_it_did_not_stage(tmp_path: Path) -> None:
    """A user's file named in a journal, with no temporary or backup of that transaction: left as it is."""
    repo = _repo(tmp_path)
    _journal(repo, [{"path": "a.yaml", "remove": True}, {"path": "b.yaml", "remove": False}])
    transaction.recover(repo)
    assert _contents(repo) == ["old"] * 4


def test_a_committed_journal_is_refused(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    _journal(repo, [{"path": "a.yaml", "remove": True}])
    (repo / ".a.yaml.0123456789abcdef.bak").write_text("planted by the pull request")
    git_repository(repo)
    with pytest.raises(ToolError, match="tracked by git"):
        transaction.recover(repo)
    assert (repo / "a.yaml").read_text() == "old a.yaml\n"
    assert git(repo, "status", "--porcelain") == ""
