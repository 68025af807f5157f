"""Helpers shared by test modules (import them from here, not from conftest: pytest may load several conftest
modules under the same name)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# The command of the virtual environment running the tests (make test's .venv, or .venv-system on Debian's own
# Python in CI): never a hard-coded .venv, which would run another interpreter's install.
GPUPOLICY = Path(sys.executable).parent / "gpupolicy"
SHARED = REPO.parent / "shared"
MINIREPO = REPO / "tests" / "fixtures" / "minirepo"
# The reference fleet this repository ships (decision 0075). Tests about it carry the marker `reference_fleet`
# and are skipped on a fork that replaced it (tests/forkfleet.py, .ci/fork-fleet).
REFERENCE_CLUSTERS = ("prod-eu", "prod-us", "test-us")
REFERENCE_TEAMS = ("nlp", "research", "serving", "vision")


def holds_reference_fleet(repo: Path = REPO) -> bool:
    """Whether `repo` holds the reference fleet's clusters and teams (a fork may have added its own)."""
    return (all((repo / "clusters" / name / "cluster.yaml").is_file() for name in REFERENCE_CLUSTERS)
            and all((repo / "policies/teams" / name).is_dir() for name in REFERENCE_TEAMS))


def require_tool(name: str) -> str:
    """The path of a system tool; skip without it on a developer machine, fail in CI (CI must not go green
    by skipping)."""
    found = shutil.which(name)
    if found:
        return found
    if os.environ.get("CI"):
        pytest.fail(f"{name} is required in CI (make system-tools installs it)")
    pytest.skip(f"{name} is not installed (run `make system-tools`)")
    raise AssertionError  # unreachable


def copy_repo(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, symlinks=True, ignore=shutil.ignore_patterns(".git", ".venv*", "site",
                                                                                 "__pycache__", ".pytest_cache",
                                                                                 "artifacts"))
    return target


def git(repo: Path, *args: str, name: str = "test", email: str = "test@example.com") -> str:
    """Run git in `repo` as the given author (no signing, no global config needed); its output."""
    command = ["git", "-c", f"user.email={email}", "-c", f"user.name={name}", "-c", "commit.gpgsign=false", *args]
    return subprocess.run(command, cwd=repo, check=True, capture_output=True, text=True).stdout


def git_repository(target: Path, name: str = "test", email: str = "test@example.com") -> Path:
    """Make `target` (already filled) a git repository with one commit of everything; skip the test without git."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    git(target, "init", "-q", name=name, email=email)
    git(target, "add", "-A", name=name, email=email)
    git(target, "commit", "-q", "-m", "start", name=name, email=email)
    return target
