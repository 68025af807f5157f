"""Fixtures for the simulator tests; the helpers they use live in simhelpers.py."""

from __future__ import annotations

import pytest
from simhelpers import build_cluster

from gpupolicy.model import Cluster


@pytest.fixture
def cluster() -> Cluster:
    return build_cluster()
