"""Trace readers: the project CSV (with bad-input messages), and small slices of the real traces in ../shared."""

from __future__ import annotations

import io
import itertools
import tarfile
from pathlib import Path

import pytest
from simhelpers import shared_trace

from gpupolicy.simulate.jobs import Job
from gpupolicy.simulate.traces import (
    TraceError,
    detect_format,
    read_csv,
    read_itp,
    read_openb,
    read_trace,
    write_csv,
)

SHIPPED = Path(__file__).resolve().parents[2] / "tools" / "gpupolicy" / "data" / "traces" / "synthetic-week.csv"


def test_csv_round_trip(tmp_path):
    jobs = [Job("a", 5, 60, gpus=2, pods=2, team="t", queue="q", tier="training", checkpoint=30),
            Job("b", 1, 10, share=0.5, team="t", tier="production", workload="inference"),
            Job("c", 3, 10, mig="1g.10gb", tier="experiment")]
    path = tmp_path / "t.csv"
    assert write_csv(jobs, path) == 3
    trace = read_trace(path)
    assert trace.format == "csv"
    assert [j.id for j in trace.jobs] == ["b", "c", "a"]  # sorted by submit
    assert trace.jobs[2] == jobs[0]
    assert trace.jobs[1].mig == "1g.10gb" and trace.jobs[0].share == 0.5


@pytest.mark.parametrize("row, message", [
    ("x,abc,10", "column 'submit' is not a number"),
    ("x,1,10,1,1.5", "share must be below 1"),
    ("x,1,10,1,,7z", "not a MIG profile"),
    ("x,1,-5", "non-negative"),
    ("x,1,10,1,,,1,t,q,urgent", "tier 'urgent'"),
])
def test_csv_errors_name_file_and_line(tmp_path, row, message):
    path = tmp_path / "bad.csv"
    path.write_text("job_id,submit,duration,gpus,share,mig,pods,team,queue,tier\nok,0,1\n" + row + "\n")
    with pytest.raises(TraceError, match=message) as info:
        read_csv(path)
    assert f"{path}:3" in str(info.value)


def test_unknown_header_asks_for_a_format(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(TraceError, match="--trace-format"):
        detect_format(path)


def test_shipped_trace_reads():
    trace = read_trace(SHIPPED)
    assert len(trace.jobs) > 500
    assert {j.team for j in trace.jobs} == {"nlp", "vision", "serving", "research"}
    assert any(j.mig for j in trace.jobs) and any(j.share for j in trace.jobs)


def test_openb_slice(tmp_path):
    source = shared_trace("alibaba-clusterdata-gpu-v2023", "openb_pod_list_default.csv")
    head = "".join(itertools.islice(source.open(encoding="utf-8"), 201))
    path = tmp_path / "slice.csv"
    path.write_text(head)
    assert detect_format(path) == "openb"
    trace = read_openb(path)
    assert len(trace.jobs) + trace.skipped == 200
    first = next(j for j in trace.jobs if j.id == "openb-pod-0001")
    assert first.share == pytest.approx(0.46) and first.tier == "production"
    assert all(j.duration >= 1 for j in trace.jobs)


def test_openb_full_default_counts():
    trace = read_openb(shared_trace("alibaba-clusterdata-gpu-v2023", "openb_pod_list_default.csv"))
    assert trace.skipped == 1088  # CPU-only pods (traces-and-simulators.md §1.1)
    assert len(trace.jobs) == 8152 - 1088


def test_itp_slice_from_the_archive(tmp_path):
    archive = shared_trace("microsoft-elasticflow-itp", "raw-traces.tar.gz")
    with tarfile.open(archive, "r:gz") as tar:
        text = tar.extractfile("cluster10.csv").read().decode()
    small = tmp_path / "cluster10.csv"
    small.write_text(text)
    assert detect_format(small) == "itp"
    trace = read_itp(small)
    assert len(trace.jobs) == 260
    assert {j.team for j in trace.jobs} == {"itp-cluster10"}
    # and the archive itself, without extracting anything into the repository
    slice_tar = tmp_path / "one.tar.gz"
    with tarfile.open(slice_tar, "w:gz") as tar:
        info = tarfile.TarInfo("cluster10.csv")
        info.size = len(text.encode())
        tar.addfile(info, io.BytesIO(text.encode()))
    assert len(read_trace(slice_tar).jobs) == 260
