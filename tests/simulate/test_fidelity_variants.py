"""FGD fidelity over every openb variant, and the project's own frag-aware policy on the same experiment."""

from __future__ import annotations

import math
import os
import random

import pytest
from simhelpers import TRACES, shared_trace

from gpupolicy.simulate import fidelity

slow = pytest.mark.skipif(
    not os.environ.get("GPUPOLICY_SLOW_TESTS"), reason="about 10 min; set GPUPOLICY_SLOW_TESTS=1"
)
PUBLISHED_VARIANTS = 17  # analysis_allo_discrete.csv covers 17 of the 24 pod lists


def test_every_pod_list_is_a_variant():
    shared_trace("alibaba-clusterdata-gpu-v2023", "openb_pod_list_default.csv")
    names = fidelity.variants(TRACES / "alibaba-clusterdata-gpu-v2023")
    assert "default" in names and "gpushare100" in names and "multigpu50" in names
    assert len(names) == 24 and names == sorted(names)


def test_frag_aware_packs_a_shared_pod_where_it_wastes_least():
    # two empty 2-card nodes; half-card pods are typical: the second half-card pod joins the first card
    nodes = [fidelity.NodeType("G2", 64_000, 262_144, 2)] * 2
    half = fidelity.Pod(1000, 1000, 1, 500, frozenset())
    cluster = fidelity.Cluster(nodes, [(half, 1.0)], random.Random(3), own_typical=[(1, 500, 1.0)])
    for _ in range(2):
        assert cluster.schedule(half, fidelity.OWN_POLICY)
    assert sorted(key[3] for key in cluster.classes) == [(0, 1000), (1000, 1000)]


def test_the_table_says_where_the_paper_published_nothing():
    row = fidelity.FidelityRow
    table = {
        "cpu0": [
            row("best-fit", 1, 90.0, math.nan, 0, 0),
            row("fgd", 1, 92.0, math.nan, 0, 0),
            row(fidelity.OWN_POLICY, 1, 91.5, math.nan, 0, 0),
        ]
    }
    text = fidelity.variant_markdown(table)
    assert "| cpu0 | not published | 90.00 | not published | 92.00 | 91.50 | -0.50 |" in text


@slow
def test_every_published_variant_within_one_point():
    shared_trace("fgd-simulator-expected-results", "analysis_allo_discrete.csv")
    traces = TRACES / "alibaba-clusterdata-gpu-v2023"
    results = TRACES / "fgd-simulator-expected-results" / "analysis_allo_discrete.csv"
    table = fidelity.variant_table(traces, results, seeds=[42], policies=fidelity.POLICIES)
    published = {trace: rows for trace, rows in table.items() if not math.isnan(rows[0].published_percent)}
    assert len(published) == PUBLISHED_VARIANTS
    for trace, rows in published.items():
        for row in rows:
            assert abs(row.gap_points) <= 1.0, (trace, row)
