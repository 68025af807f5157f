"""The mixed workload: ITP training and openb inference mapped to the fleet's teams, sped up until
congested."""

from __future__ import annotations

import pytest
from simhelpers import TRACES, shared_trace
from support import fleet_repo

from gpupolicy.cli import main
from gpupolicy.simulate import mixed
from gpupolicy.simulate.jobs import Job
from gpupolicy.simulate.traces import TraceError

# The tests' own rich fleet (tests/fixtures/fleet, decision 0085), the same on a fork.
REPO = fleet_repo()
DAY = mixed.DAY
TEAMS = mixed.Teams(("nlp", "vision"), "serving", "research")


def _itp(team: str, submit_days: float) -> Job:
    return Job(
        f"{team}-{submit_days}",
        int(submit_days * DAY),
        3600,
        gpus=8,
        team=team,
        tier="training",
        workload="training",
    )


def _openb(name: str, submit_days: float, serving: bool) -> Job:
    return Job(
        name,
        int(submit_days * DAY),
        600,
        share=0.5,
        tier="production" if serving else "experiment",
        workload="inference" if serving else "batch",
    )


def test_build_maps_teams_and_divides_arrival_times_by_each_factor():
    itp = [
        _itp("itp-cluster09", 1),
        _itp("itp-cluster05", 5),
        _itp("itp-cluster04", 1),
        _itp("itp-cluster09", 15),
    ]
    openb = [
        _openb("early", 1, True),
        _openb("ls", 96, True),
        _openb("be", 98, False),
        _openb("last", 100, True),
    ]
    workload = mixed.build(itp, openb, training_scale=2, inference_scale=1, days=7, teams=TEAMS)
    by_id = {job.id: job for job in workload.jobs}
    # ITP: sources 09 and 05 only, the first 7 x 2 days, arriving twice as fast
    assert by_id["itp-cluster09-1"].team == "nlp" and by_id["itp-cluster09-1"].submit == DAY // 2
    assert by_id["itp-cluster05-5"].team == "vision" and by_id["itp-cluster05-5"].submit == int(2.5 * DAY)
    assert "itp-cluster04-1" not in by_id and "itp-cluster09-15" not in by_id
    # openb: the last 7 days, measured from the first pod of that window
    assert "early" not in by_id
    assert (by_id["ls"].team, by_id["ls"].workload, by_id["ls"].submit) == ("serving", "inference", 3 * DAY)
    assert (by_id["be"].team, by_id["be"].workload, by_id["be"].tier) == (
        "research",
        "notebook",
        "experiment",
    )
    assert [job.submit for job in workload.jobs] == sorted(job.submit for job in workload.jobs)
    assert (workload.training, workload.inference) == (2, 3)
    assert (
        "2x" in workload.describe() and "1x" in workload.describe() and "--scale 2:1" in workload.describe()
    )


def test_build_refuses_a_non_positive_factor():
    with pytest.raises(TraceError, match="positive"):
        mixed.build([], [], 0, 1, teams=TEAMS)


def _fleet_cluster(name: str):
    from gpupolicy.pipeline import load_fleet

    return load_fleet(REPO, [name]).clusters[name]


def test_the_chosen_factors_are_the_smallest_whose_offered_load_is_sustained():
    shared_trace(*mixed.ITP_TRACE)
    shared_trace(*mixed.OPENB_TRACE)
    cluster = _fleet_cluster("prod-us")
    itp, openb = mixed.read_sources(TRACES)
    for seed in (0, 1):
        workload = mixed.sustained_scales(cluster, itp, openb, seed=seed)
        assert min(workload.offered.values()) >= mixed.TARGET_LOAD, workload.describe()
        assert f"--seed {seed}" in workload.describe() and "offered load" in workload.describe()
        teams = mixed.teams_of(cluster)
        slower = mixed.build(
            itp,
            openb,
            workload.training_scale - mixed.SCALE_STEP,
            workload.inference_scale - mixed.SCALE_STEP,
            teams=teams,
            cluster=cluster,
            seed=seed,
        )
        assert (
            slower.offered["training"] < mixed.TARGET_LOAD and slower.offered["inference"] < mixed.TARGET_LOAD
        )
    assert workload.inference_scale > 1, "openb alone should not load the serving pools at its own pace"


def test_another_seed_replays_another_stretch_of_the_same_traces():
    itp = [_itp("itp-cluster09", d) for d in range(0, 40)]
    openb = [_openb(f"p{d}", d, True) for d in range(0, 100)]
    first, other = (mixed.build(itp, openb, 2, 1, days=7, teams=TEAMS, seed=s) for s in (0, 1))
    assert {j.id for j in first.jobs} != {j.id for j in other.jobs}
    assert len([j for j in other.jobs if j.workload == "training"]) == 14  # the same window length, elsewhere
    assert all(0 <= j.submit < 7 * DAY + 1 for j in other.jobs)
    again = mixed.build(itp, openb, 2, 1, days=7, teams=TEAMS, seed=1)
    assert [(j.id, j.submit) for j in again.jobs] == [(j.id, j.submit) for j in other.jobs]


def test_simulate_builds_the_mixed_workload(tmp_path, capsys):
    shared_trace(*mixed.ITP_TRACE)
    shared_trace(*mixed.OPENB_TRACE)
    _fleet_cluster("prod-us")
    code = main(
        [
            "simulate",
            "--repo",
            str(REPO),
            "--cluster",
            "prod-us",
            "--workload",
            "mixed",
            "--traces",
            str(TRACES),
            "--scale",
            "1:3",
            "--no-plots",
            "--out",
            str(tmp_path),
        ]
    )
    assert code in (0, 1)
    out = capsys.readouterr().out
    assert (
        "cluster09 -> nlp" in out
        and "at 3x" in out
        and "| wait p95 |" in out
        and "--scale 1:3 --seed 0" in out
    )


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--trace", "x.csv"], "either --workload or --trace"),
        (["--scale", "fast"], "--scale auto or TRAINING:INFERENCE"),
        (["--scale", "0:2"], "--scale auto or TRAINING:INFERENCE"),
        (["--traces", "no-such-dir"], "no such trace file"),
    ],
)
def test_simulate_mixed_refuses_bad_arguments(tmp_path, capsys, extra, message):
    _fleet_cluster("prod-us")
    code = main(
        [
            "simulate",
            "--repo",
            str(REPO),
            "--cluster",
            "prod-us",
            "--workload",
            "mixed",
            "--no-plots",
            "--out",
            str(tmp_path),
            *extra,
        ]
    )
    assert code == 2
    assert message in capsys.readouterr().err


def test_teams_come_from_the_fleets_queue_labels_not_the_reference_fleets_names():
    from gpupolicy.model import ClusterQueue

    def cq(name, workload, tier):
        labels = {"gpupolicy.io/team": name, "gpupolicy.io/tier": tier, "gpupolicy.io/workload": workload}
        return ClusterQueue(name, "", {}, (), {}, name, tier, workload, labels, None)

    class Fork:  # the part of a Cluster teams_of reads
        name = "fork-1"
        cluster_queues = {
            q.name: q
            for q in (
                cq("speech", "training", "training"),
                cq("robots", "training", "training"),
                cq("maps", "training", "training"),
                cq("apps", "inference", "production"),
                cq("sandbox", "notebook", "experiment"),
            )
        }

    teams = mixed.teams_of(Fork)
    assert teams == mixed.Teams(("maps", "robots", "speech"), "apps", "sandbox")
    itp = [_itp("itp-cluster09", d) for d in (1, 2, 3)] + [_itp("itp-cluster05", 4)]
    workload = mixed.build(itp, [_openb("ls", 1, True), _openb("be", 2, False)], 1, 1, days=7, teams=teams)
    assert [j.team for j in workload.jobs if j.workload == "training"] == ["maps", "robots", "speech", "maps"]
    assert {j.team for j in workload.jobs if j.workload != "training"} == {"apps", "sandbox"}
    assert "nlp" not in workload.describe() and "apps" in workload.describe()
    two = mixed.Teams(("a", "b"), "s", "r")
    assert [two.training_team(s, 0) for s in mixed.ITP_SOURCES] == ["a", "b"]
    assert mixed.Teams(("solo",), "s", "r").training_team("itp-cluster05", 0) == "solo"
    del Fork.cluster_queues["apps"]
    with pytest.raises(TraceError, match="gpupolicy.io/workload: inference"):
        mixed.teams_of(Fork)


def test_offered_load_is_the_work_asked_over_the_cards_of_each_pool_class():
    cluster = _fleet_cluster("prod-us")
    from gpupolicy.simulate.policy import from_cluster, pool_classes

    proposed = from_cluster(cluster)
    purpose = pool_classes(proposed)
    cards = {
        k: sum(p.nodes * p.gpus_per_node for p in proposed.pools.values() if purpose.get(p.name) == k)
        for k in ("training", "inference")
    }
    # one 8-GPU job of 7 days of work per training card / 8, half-card pods filling half the inference cards
    jobs = [Job(f"t{i}", 0, 7 * DAY, gpus=8, workload="training") for i in range(cards["training"] // 8)]
    jobs += [Job(f"i{i}", 0, 7 * DAY, share=0.5, workload="inference") for i in range(cards["inference"])]
    # after the window: not offered in it
    jobs.append(Job("late", 7 * DAY, 7 * DAY, gpus=8, workload="training"))
    load = mixed.offered_load(cluster, jobs, days=7)
    assert load["training"] == pytest.approx(1.0, abs=0.01) and load["inference"] == pytest.approx(
        0.5, abs=0.01
    )
