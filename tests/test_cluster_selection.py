"""A cluster selection says one thing (issue 16, step 6): None is every cluster; an empty list would validate
nothing, so the pipeline refuses it instead of reading it as "all" or running to an empty report."""

from __future__ import annotations

import pytest
from support import REPO

from gpupolicy import pipeline


def test_an_empty_cluster_selection_is_refused() -> None:
    with pytest.raises(ValueError, match="empty cluster selection"):
        pipeline.run(REPO, clusters=[])
