"""`gpupolicy simulate --trace FILE` with observed waits: the replay's estimated waits beside the actual
ones, per queue, on a tiny trace whose answer is worked out by hand below. The fleet is the minirepo fixture
(one pool of 2 nodes x 8 A100-80GB) with its queue alpha cut to 8 GPUs and a second team beta with 8, no
cohort: each queue holds one node's worth at a time."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support import MINIREPO

from gpupolicy.cli import main
from gpupolicy.simulate.traces import TraceError, read_trace

BETA_NAMESPACE = """---
apiVersion: v1
kind: Namespace
metadata:
  name: beta
  labels:
    gpupolicy.io/team: beta
"""

# Replayed by hand (each queue 8 GPUs, no borrowing; whole 8-GPU pods take a whole node):
#   alpha: a1 starts at 0 (wait 0); a2 waits for a1's quota until 3600 (60 min);
#          a3 follows a2 at 7200 (110 min)
#   beta:  b1 and b2 (4 GPUs each) start at once (0, 0); b3 has no observed wait, so it is not compared
TRACE = """job_id,submit,duration,gpus,team,queue,observed_wait
a1,0,3600,8,alpha,alpha,0
a2,0,3600,8,alpha,alpha,600
a3,600,600,8,alpha,alpha,7200
b1,0,1800,4,beta,beta,120
b2,60,1800,4,beta,beta,60
b3,120,600,8,beta,beta,
"""
# nearest-rank percentiles, minutes: actual alpha [0, 10, 120], estimated [0, 60, 110];
# beta actual [1, 2], estimated [0, 0]; all actual [0, 1, 2, 10, 120], estimated [0, 0, 0, 60, 110]
EXPECTED = {
    "alpha": ((3, 10.0, 120.0, 120.0), (3, 60.0, 110.0, 110.0)),
    "beta": ((2, 1.0, 2.0, 2.0), (2, 0.0, 0.0, 0.0)),
    "(all)": ((5, 2.0, 120.0, 120.0), (5, 0.0, 110.0, 110.0)),
}


@pytest.fixture()
def two_queue_repo(tmp_path: Path) -> Path:
    repo = shutil.copytree(MINIREPO, tmp_path / "repo")
    queues = repo / "clusters" / "mini" / "queues.yaml"
    alpha = queues.read_text(encoding="utf-8").replace("nominalQuota: 16", "nominalQuota: 8")
    beta = alpha.replace("alpha", "beta")  # the fixture's own queue, for a second team: the same shape
    queues.write_text(alpha + "---\n" + beta, encoding="utf-8")
    team = repo / "policies" / "base" / "team.yaml"
    team.write_text(team.read_text(encoding="utf-8") + BETA_NAMESPACE, encoding="utf-8")
    return repo


def _simulate(repo: Path, tmp_path: Path, trace_text: str, *extra: str) -> tuple[int, str]:
    trace = tmp_path / "history.csv"
    trace.write_text(trace_text, encoding="utf-8")
    return main(
        [
            "simulate",
            "--repo",
            str(repo),
            "--trace",
            str(trace),
            "--no-plots",
            "--out",
            str(tmp_path / "out"),
            *extra,
        ]
    ), str(tmp_path / "out" / "report.md")


def test_estimated_vs_actual_per_queue_in_json(two_queue_repo: Path, tmp_path: Path, capsys) -> None:
    code, _ = _simulate(two_queue_repo, tmp_path, TRACE, "--format", "json")
    assert code == 0
    rows = json.loads(capsys.readouterr().out)["estimated_vs_actual"]
    got = {
        row["queue"]: (tuple(row["actual_minutes"].values()), tuple(row["estimated_minutes"].values()))
        for row in rows
    }
    assert got == EXPECTED
    assert [row["never_started"] for row in rows] == [0, 0, 0]


def test_estimated_vs_actual_in_the_text_and_the_report(two_queue_repo: Path, tmp_path: Path, capsys) -> None:
    code, report = _simulate(two_queue_repo, tmp_path, TRACE)
    out = capsys.readouterr().out
    assert code == 0
    row = "| alpha | 3 | 10.0 min | 60.0 min | 2.0 h | 110.0 min | 2.0 h | 110.0 min | 0 |"
    assert "vs actual waits per queue:" in out and row in out, out
    text = Path(report).read_text(encoding="utf-8")
    assert "## Estimated vs actual waits per queue" in text and row in text
    assert "| (all) | 5 | 2.0 min | 0.0 min | 2.0 h | 110.0 min | 2.0 h | 110.0 min | 0 |" in text


def test_a_job_the_replay_never_starts_is_counted_apart(two_queue_repo: Path, tmp_path: Path, capsys) -> None:
    """24 GPUs in one job never fit the 8-GPU queue: its actual wait is compared, no estimate is made up."""
    code, _ = _simulate(two_queue_repo, tmp_path, TRACE + "huge,0,60,24,alpha,alpha,30\n", "--format", "json")
    assert code == 1  # a job never scheduled
    rows = {row["queue"]: row for row in json.loads(capsys.readouterr().out)["estimated_vs_actual"]}
    assert rows["alpha"]["jobs"] == 4 and rows["alpha"]["never_started"] == 1
    assert rows["alpha"]["estimated_minutes"]["count"] == 3


def test_a_trace_without_observed_waits_has_no_comparison(
    two_queue_repo: Path, tmp_path: Path, capsys
) -> None:
    plain = "\n".join(",".join(line.split(",")[:-1]) for line in TRACE.splitlines()) + "\n"
    code, report = _simulate(two_queue_repo, tmp_path, plain, "--format", "json")
    assert code == 0 and "estimated_vs_actual" not in json.loads(capsys.readouterr().out)
    assert "Estimated vs actual" not in Path(report).read_text(encoding="utf-8")


def test_observed_waits_need_one_row_per_job_id(tmp_path: Path) -> None:
    trace = tmp_path / "twice.csv"
    trace.write_text("job_id,submit,duration,observed_wait\nj,0,60,5\nj,10,60,\n", encoding="utf-8")
    with pytest.raises(TraceError, match=r"twice.csv:3: job_id 'j' appears twice"):
        read_trace(trace)


def test_an_observed_wait_must_be_a_number(tmp_path: Path) -> None:
    trace = tmp_path / "bad.csv"
    trace.write_text("job_id,submit,duration,observed_wait\nj,0,60,soon\n", encoding="utf-8")
    with pytest.raises(TraceError, match=r"bad.csv:2: column 'observed_wait' is not a number"):
        read_trace(trace)
