"""Fidelity: the FGD paper's experiment on openb, against the published simulator's cached results.

Best-fit is reproduced within 0.5 percentage points of GPU allocation at 130% arrived demand, mean of the
10 published seeds. Our FGD re-implementation does NOT yet match the published FGD (about 4.7 points
lower on seed 42, below best-fit): the gap is asserted as it stands so a change in either direction is
seen, and the FGD run (about 45 s) only runs with GPUPOLICY_SLOW_TESTS=1.
"""

from __future__ import annotations

import os

import pytest
from simhelpers import TRACES, shared_trace

from gpupolicy.simulate import fidelity

BEST_FIT_TOLERANCE_POINTS = 0.5
FGD_KNOWN_GAP_POINTS = (3.0, 6.0)  # published FGD minus ours, seed 42


def _inputs():
    shared_trace("alibaba-clusterdata-gpu-v2023", "openb_node_list_gpu_node.csv")
    shared_trace("fgd-simulator-expected-results", "analysis_allo_discrete.csv")
    return TRACES / "alibaba-clusterdata-gpu-v2023", TRACES / "fgd-simulator-expected-results" / "analysis_allo_discrete.csv"


def test_best_fit_matches_published_within_tolerance():
    traces, results = _inputs()
    (row,) = fidelity.fidelity_table(traces, results, policies=["best-fit"])
    assert row.seeds == 10
    assert abs(row.gap_points) <= BEST_FIT_TOLERANCE_POINTS, row
    assert abs(row.ours_unallocated - row.published_unallocated) <= 6212 * BEST_FIT_TOLERANCE_POINTS / 100


@pytest.mark.skipif(not os.environ.get("GPUPOLICY_SLOW_TESTS"), reason="about 45 s; set GPUPOLICY_SLOW_TESTS=1")
def test_fgd_gap_is_as_recorded():
    traces, results = _inputs()
    (row,) = fidelity.fidelity_table(traces, results, seeds=[42], policies=["fgd"])
    low, high = FGD_KNOWN_GAP_POINTS
    assert low <= -row.gap_points <= high, row


def test_typical_pods_cover_the_threshold():
    traces, _ = _inputs()
    pods = fidelity.read_pods(traces / "openb_pod_list_default.csv")
    typical = fidelity.typical_pods(pods)
    assert sum(weight for _, weight in typical) == pytest.approx(1.0)
    assert typical[0][0].milli == 810  # the most common request (traces-and-simulators.md §1.1)


def test_expected_results_have_ten_seeds_per_policy():
    _, results = _inputs()
    for policy in fidelity.POLICIES:
        curves = fidelity.expected(results, "openb_pod_list_default", policy)
        assert sorted(curves) == list(range(42, 52))
        assert all(len(curve) == 131 for curve in curves.values())
