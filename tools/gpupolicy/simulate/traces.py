"""Trace readers: the project's CSV, the Alibaba GPU trace v2023 (`openb`) and the Microsoft ITP trace.

A reader returns jobs sorted by submit time. Bad rows raise TraceError naming the file and line, which the
command turns into a message and exit code 2.

The project CSV (documented in docs/operations/simulation.md), one job per row:
`job_id,submit,duration,gpus,share,mig,pods,team,queue,tier,workload,checkpoint` - only `job_id`, `submit` and
`duration` are required; times are seconds.
"""

from __future__ import annotations

import csv
import io
import math
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .jobs import Job, mig_slices

CSV_COLUMNS = ("job_id", "submit", "duration", "gpus", "share", "mig", "pods", "team", "queue", "tier",
               "workload", "checkpoint")
OPENB_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
ITP_COLUMNS = ("job_id", "submission_time", "duration", "num_gpu")
FORMATS = ("csv", "openb", "itp")
TIERS = ("production", "training", "batch", "experiment")


class TraceError(ValueError):
    """A trace that cannot be read; the message names file and line."""


@dataclass
class Trace:
    jobs: list[Job]
    source: str
    format: str
    skipped: int = 0  # rows without a GPU request (CPU-only pods), dropped


def detect_format(path: Path) -> str:
    """csv, openb or itp, from the file's name and header."""
    if path.name.endswith((".tar.gz", ".tgz")):
        return "itp"
    header = _first_line(path)
    columns = {c.strip() for c in header.split(",")}
    if set(OPENB_COLUMNS) <= columns:
        return "openb"
    if set(ITP_COLUMNS) <= columns:
        return "itp"
    if {"job_id", "submit", "duration"} <= columns:
        return "csv"
    raise TraceError(f"{path}:1: cannot tell the trace format from the header {header.strip()!r}; "
                     f"pass --trace-format {'|'.join(FORMATS)}")


def _first_line(path: Path) -> str:
    try:
        with path.open(encoding="utf-8") as handle:
            return handle.readline()
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError(f"{path}: cannot read: {exc}") from exc


def read_trace(path: Path, fmt: str | None = None) -> Trace:
    if not path.is_file():
        raise TraceError(f"{path}: no such trace file")
    fmt = fmt or detect_format(path)
    if fmt == "csv":
        return read_csv(path)
    if fmt == "openb":
        return read_openb(path)
    if fmt == "itp":
        return read_itp(path)
    raise TraceError(f"unknown trace format {fmt!r}; choose one of {', '.join(FORMATS)}")


def _rows(handle: Iterable[str], source: str, required: tuple[str, ...]) -> Iterator[tuple[int, dict]]:
    reader = csv.DictReader(handle)
    missing = [c for c in required if c not in (reader.fieldnames or [])]
    if missing:
        raise TraceError(f"{source}:1: missing column(s) {', '.join(missing)}")
    for row in reader:
        yield reader.line_num, row


def _number(row: dict, column: str, where: str, default: float | None = None) -> float:
    text = (row.get(column) or "").strip()
    if not text:
        if default is None:
            raise TraceError(f"{where}: column {column!r} is empty")
        return default
    try:
        value = float(text)
    except ValueError:
        raise TraceError(f"{where}: column {column!r} is not a number: {text!r}") from None
    if value < 0 or math.isnan(value) or math.isinf(value):
        raise TraceError(f"{where}: column {column!r} must be a non-negative number, got {text!r}")
    return value


def read_csv(path: Path) -> Trace:
    jobs: list[Job] = []
    skipped = 0
    with path.open(encoding="utf-8", newline="") as handle:
        for line, row in _rows(handle, str(path), ("job_id", "submit", "duration")):
            where = f"{path}:{line}"
            job = _csv_job(row, where)
            if job is None:
                skipped += 1
            else:
                jobs.append(job)
    jobs.sort(key=lambda j: j.submit)
    return Trace(jobs, str(path), "csv", skipped)


def _csv_job(row: dict, where: str) -> Job | None:
    share = _number(row, "share", where, 0.0)
    if share >= 1:
        raise TraceError(f"{where}: share must be below 1 (a fraction of one GPU), got {share}")
    mig = (row.get("mig") or "").strip()
    if mig:
        try:
            mig_slices(mig)
        except ValueError as exc:
            raise TraceError(f"{where}: {exc}") from None
    tier = (row.get("tier") or "").strip()
    if tier and tier not in TIERS:
        raise TraceError(f"{where}: tier {tier!r} is not one of {', '.join(TIERS)}")
    gpus = int(_number(row, "gpus", where, 1))
    if gpus == 0 and not share and not mig:
        return None
    return Job(id=(row.get("job_id") or "").strip() or where, submit=int(_number(row, "submit", where)),
               duration=max(1, int(_number(row, "duration", where))), gpus=max(gpus, 1), share=share,
               mig=mig, pods=max(1, int(_number(row, "pods", where, 1))), team=(row.get("team") or "").strip(),
               queue=(row.get("queue") or "").strip(), tier=tier, workload=(row.get("workload") or "").strip(),
               checkpoint=int(_number(row, "checkpoint", where, 0)))


def write_csv(jobs: Iterable[Job], path: Path) -> int:
    count = 0
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(CSV_COLUMNS)
        for job in jobs:
            writer.writerow([job.id, job.submit, job.duration, job.gpus, job.share or "", job.mig, job.pods,
                             job.team, job.queue, job.tier, job.workload, job.checkpoint or ""])
            count += 1
    return count


# openb: latency-sensitive pods are the high tier, best-effort the low one (traces-and-simulators.md §1.1).
OPENB_TIER = {"LS": "production", "Guaranteed": "production", "Burstable": "batch", "BE": "experiment"}


def read_openb(path: Path) -> Trace:
    """Alibaba cluster-trace-gpu-v2023 pod list: one job per GPU pod, on its own creation/deletion times.

    The pod lists have no team; each pod's QoS becomes its tier (LS/Guaranteed -> production, Burstable ->
    batch, BE -> experiment). The `multigpu*` variants carry no times: their pods all arrive at 0 and run
    one hour. CPU-only pods are dropped (counted in `skipped`).
    """
    jobs: list[Job] = []
    skipped = 0
    with path.open(encoding="utf-8", newline="") as handle:
        for line, row in _rows(handle, str(path), OPENB_COLUMNS):
            where = f"{path}:{line}"
            num_gpu = int(_number(row, "num_gpu", where))
            milli = int(_number(row, "gpu_milli", where, 0))
            if num_gpu == 0 or milli == 0:
                skipped += 1
                continue
            created = int(_number(row, "creation_time", where, 0))
            deleted = int(_number(row, "deletion_time", where, created + 3600))
            share = milli / 1000 if num_gpu == 1 and milli < 1000 else 0.0
            jobs.append(Job(id=row["name"], submit=created, duration=max(1, deleted - created), gpus=num_gpu,
                            share=share, tier=OPENB_TIER.get((row.get("qos") or "").strip(), "batch"),
                            workload="inference" if row.get("qos") == "LS" else "batch"))
    jobs.sort(key=lambda j: j.submit)
    return Trace(jobs, str(path), "openb", skipped)


def read_itp(path: Path) -> Trace:
    """Microsoft ITP (ElasticFlow raw traces): a tar.gz of clusterNN.csv, or one such CSV.

    Each source cluster file becomes a team (`itp-cluster01` ...); the jobs are whole-GPU training jobs.
    Sizes above one node are split into 8-GPU pods by the engine when the pool has 8 GPUs per node.
    """
    members: list[tuple[str, str]] = []
    if path.name.endswith((".tar.gz", ".tgz")):
        try:
            with tarfile.open(path, "r:gz") as archive:
                for member in sorted(archive.getmembers(), key=lambda m: m.name):
                    if member.isfile() and member.name.endswith(".csv"):
                        data = archive.extractfile(member)
                        if data is not None:
                            members.append((member.name, data.read().decode("utf-8")))
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise TraceError(f"{path}: not a readable tar.gz: {exc}") from None
    else:
        members.append((path.name, path.read_text(encoding="utf-8")))
    jobs: list[Job] = []
    for name, text in members:
        team = "itp-" + Path(name).stem
        for line, row in _rows(io.StringIO(text), f"{path}!{name}", ITP_COLUMNS):
            where = f"{path}!{name}:{line}"
            gpus = int(_number(row, "num_gpu", where))
            if gpus == 0:
                continue
            jobs.append(Job(id=row["job_id"], submit=int(_number(row, "submission_time", where)),
                            duration=max(1, int(_number(row, "duration", where))), gpus=gpus, team=team,
                            tier="training", workload="training"))
    jobs.sort(key=lambda j: j.submit)
    return Trace(jobs, str(path), "itp", 0)
