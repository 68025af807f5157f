"""Shared test fixtures: the repository root, the upstream data folder, a hermetic render cache."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
MINIREPO = REPO / "tests" / "fixtures" / "minirepo"


@pytest.fixture(scope="session", autouse=True)
def _hermetic_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    os.environ["GPUPOLICY_CACHE_DIR"] = str(tmp_path_factory.mktemp("render-cache"))


@pytest.fixture
def repo_root() -> Path:
    return REPO


@pytest.fixture
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip("../shared is not present on this machine")
    return SHARED


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
    shutil.copytree(source, target, symlinks=True, ignore=shutil.ignore_patterns(".git", ".venv", "site",
                                                                                 "__pycache__", ".pytest_cache"))
    return target
