"""Trace readers: the project CSV (with bad-input messages), and small slices of the real traces in
../shared."""

from __future__ import annotations

import io
import itertools
import tarfile
from pathlib import Path

import pytest
from simhelpers import shared_trace

from gpupolicy.simulate.jobs import Job
from gpupolicy.simulate.traces import (
    Bounds,
    TraceError,
    detect_format,
    read_csv,
    read_itp,
    read_openb,
    read_trace,
    write_csv,
)

SHIPPED = (
    Path(__file__).resolve().parents[2] / "tools" / "gpupolicy" / "data" / "traces" / "synthetic-week.csv"
)


def test_csv_round_trip(tmp_path):
    jobs = [
        Job("a", 5, 60, gpus=2, pods=2, team="t", queue="q", tier="training", checkpoint=30),
        Job("b", 1, 10, share=0.5, team="t", tier="production", workload="inference"),
        Job("c", 3, 10, mig="1g.10gb", tier="experiment"),
    ]
    path = tmp_path / "t.csv"
    assert write_csv(jobs, path) == 3
    trace = read_trace(path)
    assert trace.format == "csv"
    assert [j.id for j in trace.jobs] == ["b", "c", "a"]  # sorted by submit
    assert trace.jobs[2] == jobs[0]
    assert trace.jobs[1].mig == "1g.10gb" and trace.jobs[0].share == 0.5


@pytest.mark.parametrize(
    "row, message",
    [
        ("x,abc,10", "column 'submit' is not a number"),
        ("x,1,10,1,1.5", "share must be below 1"),
        ("x,1,10,1,,7z", "not a MIG profile"),
        ("x,1,-5", "non-negative"),
        ("x,1,10,1,,,1,t,q,urgent", "tier 'urgent'"),
    ],
)
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


# --- bounds: a trace too large is a named refusal, --limit stops reading (issue 29)
# --------------------------


def _rows_file(tmp_path: Path, count: int, name: str = "big.csv") -> Path:
    path = tmp_path / name
    path.write_text("job_id,submit,duration,gpus\n" + "".join(f"j{i},{i},60,1\n" for i in range(count)))
    return path


@pytest.mark.parametrize("fmt", ["csv", "itp"])
def test_a_trace_over_the_row_bound_is_refused_with_its_name(tmp_path, fmt):
    """Before the bound, 10^7 rows were read whole (2.6 GB, ~100 s) and ended in an internal error."""
    path = tmp_path / "big.csv"
    header = "job_id,submit,duration,gpus\n" if fmt == "csv" else "job_id,submission_time,duration,num_gpu\n"
    path.write_text(header + "".join(f"j{i},{i},60,1\n" for i in range(50)))
    with pytest.raises(TraceError, match=r"big\.csv:\d+: more than 20 rows, the limit of one trace"):
        read_trace(path, fmt, bounds=Bounds(rows=20))


def test_a_trace_over_the_byte_bound_is_refused_before_reading(tmp_path):
    path = _rows_file(tmp_path, 50)
    with pytest.raises(TraceError, match=r"big\.csv: \d+ bytes, over the 100-byte limit of one trace"):
        read_trace(path, bounds=Bounds(bytes=100))


def test_limit_stops_reading(tmp_path):
    """--limit 10 reads ten GPU jobs: rows past them, even broken ones or more than the bounds allow, are not
    read."""
    path = _rows_file(tmp_path, 50)
    with path.open("a") as handle:
        handle.write("broken,not-a-number,1,1\n")
    trace = read_trace(path, limit=10, bounds=Bounds(rows=20, bytes=400))
    assert [job.id for job in trace.jobs] == [f"j{i}" for i in range(10)]


def test_limit_still_counts_the_rows_it_skips(tmp_path):
    """CPU-only rows are read but are no jobs: a limit does not let a file of them run unbounded."""
    path = tmp_path / "cpu.csv"
    path.write_text("job_id,submit,duration,gpus\n" + "".join(f"c{i},{i},60,0\n" for i in range(50)))
    with pytest.raises(TraceError, match="more than 20 rows"):
        read_trace(path, limit=10, bounds=Bounds(rows=20))
