"""The mixed workload: ITP training and openb inference mapped to the fleet's teams, sped up until congested."""

from __future__ import annotations

import pytest
from simhelpers import TRACES, shared_trace
from support import REPO

from gpupolicy.cli import main
from gpupolicy.simulate import mixed
from gpupolicy.simulate.jobs import Job
from gpupolicy.simulate.traces import TraceError

DAY = mixed.DAY


def _itp(team: str, submit_days: float) -> Job:
    return Job(f"{team}-{submit_days}", int(submit_days * DAY), 3600, gpus=8, team=team, tier="training",
               workload="training")


def _openb(name: str, submit_days: float, serving: bool) -> Job:
    return Job(name, int(submit_days * DAY), 600, share=0.5, tier="production" if serving else "experiment",
               workload="inference" if serving else "batch")


def test_build_maps_teams_and_divides_arrival_times_by_each_factor():
    itp = [_itp("itp-cluster09", 1), _itp("itp-cluster05", 5), _itp("itp-cluster04", 1), _itp("itp-cluster09", 15)]
    openb = [_openb("early", 1, True), _openb("ls", 96, True), _openb("be", 98, False), _openb("last", 100, True)]
    workload = mixed.build(itp, openb, training_scale=2, inference_scale=1, days=7)
    by_id = {job.id: job for job in workload.jobs}
    # ITP: sources 09 and 05 only, the first 7 x 2 days, arriving twice as fast
    assert by_id["itp-cluster09-1"].team == "nlp" and by_id["itp-cluster09-1"].submit == DAY // 2
    assert by_id["itp-cluster05-5"].team == "vision" and by_id["itp-cluster05-5"].submit == int(2.5 * DAY)
    assert "itp-cluster04-1" not in by_id and "itp-cluster09-15" not in by_id
    # openb: the last 7 days, measured from the first pod of that window
    assert "early" not in by_id
    assert (by_id["ls"].team, by_id["ls"].workload, by_id["ls"].submit) == ("serving", "inference", 3 * DAY)
    assert (by_id["be"].team, by_id["be"].workload, by_id["be"].tier) == ("research", "notebook", "experiment")
    assert [job.submit for job in workload.jobs] == sorted(job.submit for job in workload.jobs)
    assert (workload.training, workload.inference) == (2, 3)
    assert "2x" in workload.describe() and "1x" in workload.describe()


def test_build_refuses_a_non_positive_factor():
    with pytest.raises(TraceError, match="positive"):
        mixed.build([], [], 0, 1)


def _fleet_cluster(name: str):
    from gpupolicy.pipeline import load_fleet

    if not (REPO / "clusters" / name).is_dir():
        pytest.skip("the reference fleet is absent")
    return load_fleet(REPO, [name]).clusters[name]


def test_the_chosen_factors_are_the_smallest_that_congest_the_baseline():
    shared_trace(*mixed.ITP_TRACE)
    shared_trace(*mixed.OPENB_TRACE)
    cluster = _fleet_cluster("prod-us")
    itp, openb = mixed.read_sources(TRACES)
    workload = mixed.congestion_scales(cluster, itp, openb)
    assert mixed.line_p95(cluster, workload.jobs, "inference") >= mixed.CONGESTED_P95_MINUTES
    assert mixed.line_p95(cluster, workload.jobs, "training") >= mixed.CONGESTED_P95_MINUTES
    slower = mixed.SCALES[mixed.SCALES.index(workload.inference_scale) - 1]
    assert workload.inference_scale > 1, "openb alone should not congest the serving pools at its own pace"
    lighter = mixed.build(itp, openb, workload.training_scale, slower)
    assert mixed.line_p95(cluster, lighter.jobs, "inference") < mixed.CONGESTED_P95_MINUTES


def test_simulate_builds_the_mixed_workload(tmp_path, capsys):
    shared_trace(*mixed.ITP_TRACE)
    shared_trace(*mixed.OPENB_TRACE)
    _fleet_cluster("prod-us")
    code = main(["simulate", "--repo", str(REPO), "--cluster", "prod-us", "--workload", "mixed", "--traces",
                 str(TRACES), "--scale", "1:3", "--no-plots", "--out", str(tmp_path)])
    assert code in (0, 1)
    out = capsys.readouterr().out
    assert "cluster09 -> nlp" in out and "at 3x" in out and "| wait p95 |" in out


@pytest.mark.parametrize("extra, message", [
    (["--trace", "x.csv"], "either --workload or --trace"),
    (["--scale", "fast"], "--scale auto or TRAINING:INFERENCE"),
    (["--scale", "0:2"], "--scale auto or TRAINING:INFERENCE"),
    (["--traces", "no-such-dir"], "no such trace file"),
])
def test_simulate_mixed_refuses_bad_arguments(tmp_path, capsys, extra, message):
    _fleet_cluster("prod-us")
    code = main(["simulate", "--repo", str(REPO), "--cluster", "prod-us", "--workload", "mixed", "--no-plots",
                 "--out", str(tmp_path), *extra])
    assert code == 2
    assert message in capsys.readouterr().err
