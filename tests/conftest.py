"""Shared pytest fixtures: the repository root, the upstream data folder, a hermetic render cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support import REPO, SHARED


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
