"""The simulator's verdict names every metric the proposed policy makes worse than the baseline beyond the
threshold, and nothing else; the report goes where it is asked or to the git-ignored artifacts/ folder."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from support import MINIREPO, REPO

from gpupolicy.cli import main
from gpupolicy.commands import simulate as simulate_command
from gpupolicy.simulate.metrics import Summary, WaitStats
from gpupolicy.simulate.verdict import DEFAULT_WORSE_BY, verdict_lines, worse_metrics

HOURS = 60.0  # WaitStats are in minutes


def _summary(
    policy: str, training_p99_hours: float, allocation: float = 0.6, never: int = 0, p50_minutes: float = 10.0
) -> Summary:
    training = WaitStats(40, 60.0, 5 * HOURS, training_p99_hours * HOURS, 90.0)
    return Summary(
        policy=policy,
        jobs=100,
        completed=100 - never,
        never_scheduled=never,
        allocation=allocation,
        allocated_gpu_hours=1000.0,
        makespan_hours=48.0,
        wait=WaitStats(100, p50_minutes, 4 * HOURS, 8 * HOURS, 60.0),
        wait_by_tier={"training": training, "production": WaitStats(60, 1.0, 2.0, 3.0, 1.0)},
    )


def test_the_issue_case_training_p99_from_7_4_to_10_4_hours_is_named() -> None:
    worse = worse_metrics(_summary("baseline", 7.4), _summary("proposed", 10.4))
    assert [item.describe() for item in worse] == ["wait p99 (tier training): 7.4 h -> 10.4 h (+41%)"]
    assert verdict_lines(worse)[0] == "verdict: 1 metric(s) more than 10% worse than the baseline:"


def test_improvements_small_changes_and_tiny_waits_are_not_named() -> None:
    before = _summary("baseline", 7.4, p50_minutes=1.0)
    after = _summary("proposed", 7.9, allocation=0.65, p50_minutes=4.0)  # +7%; better; +300% but 3 minutes
    assert worse_metrics(before, after) == []
    assert verdict_lines([]) == ["verdict: no metric is more than 10% worse than the baseline"]


def test_lower_allocation_and_new_unscheduled_jobs_are_named_with_the_threshold_given() -> None:
    worse = worse_metrics(_summary("baseline", 7.4), _summary("proposed", 7.4, allocation=0.5, never=3), 0.05)
    assert [item.describe() for item in worse] == [
        "jobs never scheduled: 0 -> 3 (from none)",
        "GPU allocation: 60.0% -> 50.0% (-17%)",
    ]
    assert worse_metrics(_summary("baseline", 7.4), _summary("proposed", 7.4, allocation=0.5), 0.2) == []


def test_the_help_states_the_verdicts_default_threshold() -> None:
    assert float(simulate_command.WORSE_BY_HELP_DEFAULT) / 100 == DEFAULT_WORSE_BY


def test_the_report_goes_to_the_ignored_artifacts_folder_and_ends_with_the_verdict(
    tmp_path, capsys, monkeypatch
) -> None:
    repo = Path(shutil.copytree(MINIREPO, tmp_path / "repo"))
    monkeypatch.chdir(tmp_path)  # the old default wrote ./simulation-report here
    assert main(["simulate", "--repo", str(repo), "--limit", "50", "--no-plots"]) in (0, 1)
    out = capsys.readouterr().out
    assert out.rstrip().splitlines()[-1].startswith("verdict: ")
    assert (repo / "artifacts" / "simulation" / "report.md").read_text().count("## Verdict") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["repo"]
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", "artifacts/simulation/report.md"], cwd=REPO, check=False
    )
    assert ignored.returncode == 0, "artifacts/ must be git-ignored"


def test_an_artifacts_symlink_out_of_the_repository_is_refused(tmp_path, capsys) -> None:
    repo = Path(shutil.copytree(MINIREPO, tmp_path / "repo"))
    (tmp_path / "elsewhere").mkdir()
    (repo / "artifacts").symlink_to(tmp_path / "elsewhere")
    assert main(["simulate", "--repo", str(repo), "--limit", "5", "--no-plots"]) == 2
    assert "resolves outside the repository" in capsys.readouterr().err
    assert list((tmp_path / "elsewhere").iterdir()) == []


@pytest.mark.parametrize("figure_name", ["allocation", "wait"])
def test_the_plot_legend_sits_beside_the_axes_not_over_the_curves(figure_name) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from gpupolicy.simulate.metrics import summarize
    from gpupolicy.simulate.report import allocation_figure, wait_figure

    before, after = _replays()
    figure = (
        allocation_figure(before, after)
        if figure_name == "allocation"
        else wait_figure(summarize(before), summarize(after))
    )
    figure.canvas.draw()
    axes = figure.axes[0]
    legend = axes.get_legend().get_window_extent()
    assert not legend.overlaps(axes.get_window_extent())
    assert legend.x1 <= figure.bbox.x1, "the legend is cut off at the right edge"


def _replays():
    from importlib import resources

    from gpupolicy.pipeline import load_fleet
    from gpupolicy.simulate import compare
    from gpupolicy.simulate.traces import read_trace

    cluster = next(iter(load_fleet(MINIREPO).clusters.values()))
    with resources.as_file(resources.files("gpupolicy") / "data" / "traces" / "synthetic-week.csv") as path:
        jobs = read_trace(path, "csv").jobs[:60]
    result = compare(cluster, jobs)
    return result.before, result.after


def test_a_change_from_a_near_zero_base_is_shown_in_absolute_units() -> None:
    # 0.1 minutes to 10.4 h is "+623,900%", which says nothing; the change in hours does
    worse = worse_metrics(_summary("baseline", 0.1 / HOURS), _summary("proposed", 10.4))
    assert [item.describe() for item in worse] == ["wait p99 (tier training): 0.1 min -> 10.4 h (+10.4 h)"]
