"""Shared pytest fixtures: the repository root, the upstream data folder, a hermetic render cache."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from support import REPO, SHARED, holds_reference_fleet


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "reference_fleet: asserts facts of the reference fleet (clusters "
        "prod-us, prod-eu, test-us; teams nlp, vision, research, serving); skipped on a fork that "
        "replaced it, where `gpupolicy validate` checks the fork's fleet (decision 0075)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if holds_reference_fleet():
        return
    skip = pytest.mark.skip(
        reason="about the reference fleet, which this repository replaced (decision 0075)"
    )
    for item in items:
        if item.get_closest_marker("reference_fleet"):
            item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def _hermetic_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    os.environ["GPUPOLICY_CACHE_DIR"] = str(tmp_path_factory.mktemp("render-cache"))
    # the cache's MAC key too (cachefiles.key_file), never the developer's own
    os.environ["GPUPOLICY_CACHE_KEY_FILE"] = str(tmp_path_factory.mktemp("cache-key") / "cache.key")


@pytest.fixture
def repo_root() -> Path:
    return REPO


@pytest.fixture
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip("../shared is not present on this machine")
    return SHARED


@pytest.fixture(scope="session")
def fork_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The generated fork fleet (tests/forkfleet.py), made once per run; tests take a copy (`fork`)."""
    from forkfleet import make_fork

    return make_fork(tmp_path_factory.mktemp("fork") / "repo", REPO)


@pytest.fixture
def fork(fork_template: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(fork_template, tmp_path / "repo", symlinks=True))
