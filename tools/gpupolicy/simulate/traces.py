"""Trace readers: the project's CSV, the Alibaba GPU trace v2023 (`openb`) and the Microsoft ITP trace.

A reader returns jobs sorted by submit time. Bad rows raise TraceError naming the file and line, which the
command turns into a message and exit code 2. Every reader is bounded (`Bounds`: rows and bytes of one trace,
a named refusal above them) and takes `limit`, the number of GPU jobs wanted: reading a CSV stops once it has
them (the first N GPU jobs of the file, in file order), so `--limit 10` reads ten jobs of a huge trace, not
all of it; an ITP archive, bounded by its own limits, gives its N earliest jobs across its clusters.

The project CSV (documented in docs/operations/simulation.md), one job per row:
`job_id,submit,duration,gpus,share,mig,pods,team,queue,tier,workload,checkpoint` - only `job_id`, `submit` and
`duration` are required; times are seconds. A history exported from Prometheus (`audit --prometheus`) adds
`observed_wait`: the seconds the job waited from submission to start (empty for a job still waiting when the
history ends); `simulate` then compares the replay's waits with them (simulate/actual.py).
"""

from __future__ import annotations

import csv
import io
import math
import re
import tarfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..domain import catalog
from ..infra import repopath
from .jobs import Job

CSV_COLUMNS = (
    "job_id",
    "submit",
    "duration",
    "gpus",
    "share",
    "mig",
    "pods",
    "team",
    "queue",
    "tier",
    "workload",
    "checkpoint",
)
OPENB_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
ITP_COLUMNS = ("job_id", "submission_time", "duration", "num_gpu")
OBSERVED_WAIT = "observed_wait"  # the optional column of observed waits
FORMATS = ("csv", "openb", "itp")
TIERS = ("production", "training", "batch", "experiment")


class TraceError(ValueError):
    """A trace that cannot be read; the message names file and line."""


# The largest public traces the simulator reads have about 10^5 jobs (ITP ~ 10^5, openb ~ 10^4); Helios,
# among the largest published, has 3.4 million. A trace of more rows or bytes than this is refused before it
# decides how much memory and time a run takes; `--limit N` reads a prefix of any size.
MAX_TRACE_ROWS = 2_000_000
MAX_TRACE_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class Bounds:
    rows: int = MAX_TRACE_ROWS
    bytes: int = MAX_TRACE_BYTES


DEFAULT_BOUNDS = Bounds()


@dataclass
class Trace:
    jobs: list[Job]
    source: str
    format: str
    skipped: int = 0  # rows without a GPU request (CPU-only pods), dropped
    observed_waits: dict[str, int] | None = None  # job id -> seconds it waited (a history's observed_wait)
    # a built workload's arrival-rate factors (training, inference), as `--scale auto` resolved them
    scale: tuple[float, float] | None = None


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
    raise TraceError(
        f"{path}:1: cannot tell the trace format from the header {header.strip()!r}; "
        f"pass --trace-format {'|'.join(FORMATS)}"
    )


MAX_HEADER_CHARS = 64 * 1024


def _first_line(path: Path) -> str:
    try:
        with path.open(encoding="utf-8", errors="surrogateescape") as handle:  # the rows say where, not this
            return handle.readline(MAX_HEADER_CHARS)  # a file of one endless line must not be read whole
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError(f"{path}: cannot read: {exc}") from exc


def read_trace(
    path: Path, fmt: str | None = None, limit: int | None = None, bounds: Bounds = DEFAULT_BOUNDS
) -> Trace:
    """The trace at `path`; `limit`: stop after that many GPU jobs (None: all, within `bounds`)."""
    if not path.is_file():
        raise TraceError(f"{path}: no such trace file")
    fmt = fmt or detect_format(path)
    if fmt == "csv":
        return read_csv(path, limit, bounds)
    if fmt == "openb":
        return read_openb(path, limit, bounds)
    if fmt == "itp":
        return read_itp(path, limit, bounds)
    raise TraceError(f"unknown trace format {fmt!r}; choose one of {', '.join(FORMATS)}")


# A trace's fields are numbers and short names; a field this long is a broken or hostile file, not a job.
MAX_FIELD_CHARS = 1024
_UNDECODED = re.compile("[\udc80-\udcff]")  # what surrogateescape makes of bytes that are not UTF-8


def _check_size(path: Path, limit: int | None, bounds: Bounds) -> None:
    """Refuse a whole read of a file over the byte bound at once; with a limit, `_bounded_lines` counts."""
    size = path.stat().st_size
    if limit is None and size > bounds.bytes:
        raise TraceError(
            f"{path}: {size:,} bytes, over the {bounds.bytes:,}-byte limit of one trace; pass "
            "--limit N to replay its first N jobs, or split it"
        )


def _bounded_lines(handle: Iterable[str], source: str, bounds: Bounds) -> Iterator[str]:
    """The handle's lines, refused once they add up to more than the byte bound (characters, as read)."""
    total = 0
    for line in handle:
        total += len(line)
        if total > bounds.bytes:
            raise TraceError(
                f"{source}: more than {bounds.bytes:,} bytes read, the limit of one trace; pass "
                "--limit N to replay its first N jobs, or split it"
            )
        yield line


def _rows(
    handle: Iterable[str],
    source: str,
    required: tuple[str, ...],
    bounds: Bounds = DEFAULT_BOUNDS,
    counted: int = 0,
) -> Iterator[tuple[int, dict]]:
    """(line, row) of a CSV trace; a row that is not well-formed CSV, has an overlong field or bytes that are
    not UTF-8 (the handle decodes with surrogateescape, so they arrive here as lone surrogates) is a
    TraceError at its line; so is the row past the row bound (`counted`: rows read before, in other
    members)."""
    reader = csv.DictReader(_bounded_lines(handle, source, bounds))
    try:
        missing = [c for c in required if c not in (reader.fieldnames or [])]
        if missing:
            raise TraceError(f"{source}:1: missing column(s) {', '.join(missing)}")
        for count, row in enumerate(reader, start=counted + 1):
            if count > bounds.rows:
                raise TraceError(
                    f"{source}:{reader.line_num}: more than {bounds.rows:,} rows, the limit of "
                    "one "
                    "trace; pass --limit N to replay its first N jobs, or split it"
                )
            _check_fields(row, f"{source}:{reader.line_num}")
            yield reader.line_num, row
    except csv.Error as exc:  # e.g. a field over the csv module's own limit (131,072 characters)
        raise TraceError(f"{source}:{reader.line_num + 1}: not a CSV row: {exc}") from None  # the row after
    except UnicodeDecodeError as exc:  # a handle opened strictly
        raise TraceError(f"{source}:{reader.line_num + 1}: not UTF-8 (byte {exc.start} of a block)") from None


def _check_fields(row: dict, where: str) -> None:
    if _plain(row):
        return
    for column, value in row.items():
        for text in value if isinstance(value, list) else [value, column]:  # extra cells come as a list
            if not isinstance(text, str):
                continue
            if len(text) > MAX_FIELD_CHARS:
                raise TraceError(
                    f"{where}: a field of {len(text):,} characters (at most {MAX_FIELD_CHARS:,})"
                )
            if not text.isascii() and _UNDECODED.search(text):
                raise TraceError(f"{where}: not UTF-8 (column {column!r}); save the trace as UTF-8")


def _plain(row: dict) -> bool:
    """Whether every cell and column name of the row is text, ASCII and short: nearly every row of a real
    trace, told in a few calls instead of a check per cell (`_check_fields` walks the others)."""
    try:
        text = "".join(row.values()) + "".join(row)
    except TypeError:  # a missing cell (None) or extra cells (a list, under the None column)
        return False
    return (
        text.isascii()
        and max(map(len, row.values()), default=0) <= MAX_FIELD_CHARS
        and max(map(len, row), default=0) <= MAX_FIELD_CHARS
    )


def _number(row: dict, column: str, where: str, default: float | None = None) -> float:
    text = (row.get(column) or "").strip()
    if not text:
        if default is None:
            raise TraceError(f"{where}: column {column!r} is empty")
        return default
    try:
        value = float(text)
    except ValueError:
        raise TraceError(f"{where}: column {column!r} is not a number: {text[:40]!r}") from None
    if value < 0 or math.isnan(value) or math.isinf(value):
        raise TraceError(f"{where}: column {column!r} must be a non-negative number, got {text[:40]!r}")
    return value


def _full(jobs: list[Job], limit: int | None) -> bool:
    return limit is not None and len(jobs) >= limit


def read_csv(path: Path, limit: int | None = None, bounds: Bounds = DEFAULT_BOUNDS) -> Trace:
    jobs: list[Job] = []
    skipped = 0
    observed: dict[str, int] | None = None
    _check_size(path, limit, bounds)
    with path.open(encoding="utf-8", errors="surrogateescape", newline="") as handle:
        for line, row in _rows(handle, str(path), ("job_id", "submit", "duration"), bounds):
            if _full(jobs, limit):
                break
            where = f"{path}:{line}"
            job = _csv_job(row, where)
            if job is None:
                skipped += 1
                continue
            jobs.append(job)
            if OBSERVED_WAIT in row:
                observed = {} if observed is None else observed
                _observed_wait(row, job, observed, where)
    jobs.sort(key=lambda j: j.submit)
    return Trace(jobs, str(path), "csv", skipped, observed)


def _observed_wait(row: dict, job: Job, observed: dict[str, int], where: str) -> None:
    """Record the row's observed wait (an empty cell: the job had not started when the history ended). The
    comparison joins the replay to these by job id, so an id must name one job."""
    if job.id in observed:
        raise TraceError(
            f"{where}: job_id {job.id!r} appears twice; a trace with {OBSERVED_WAIT} needs one row per job id"
        )
    if (row.get(OBSERVED_WAIT) or "").strip():
        observed[job.id] = int(_number(row, OBSERVED_WAIT, where))


def _csv_job(row: dict, where: str) -> Job | None:
    share = _number(row, "share", where, 0.0)
    if share >= 1:
        raise TraceError(f"{where}: share must be below 1 (a fraction of one GPU), got {share}")
    mig = (row.get("mig") or "").strip()
    if mig:
        try:
            catalog.largest_card_fraction(mig)  # a profile some catalog GPU offers
        except ValueError as exc:
            raise TraceError(f"{where}: {exc}") from None
    tier = (row.get("tier") or "").strip()
    if tier and tier not in TIERS:
        raise TraceError(f"{where}: tier {tier!r} is not one of {', '.join(TIERS)}")
    gpus = int(_number(row, "gpus", where, 1))
    if gpus == 0 and not share and not mig:
        return None
    return Job(
        id=(row.get("job_id") or "").strip() or where,
        submit=int(_number(row, "submit", where)),
        duration=max(1, int(_number(row, "duration", where))),
        gpus=max(gpus, 1),
        share=share,
        mig=mig,
        pods=max(1, int(_number(row, "pods", where, 1))),
        team=(row.get("team") or "").strip(),
        queue=(row.get("queue") or "").strip(),
        tier=tier,
        workload=(row.get("workload") or "").strip(),
        checkpoint=int(_number(row, "checkpoint", where, 0)),
    )


def write_csv(jobs: Iterable[Job], path: Path, observed_waits: dict[str, int] | None = None) -> int:
    """Write `jobs` as the project CSV; with `observed_waits` (job id -> seconds) also the observed_wait
    column (empty for a job without one)."""
    count = 0
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(CSV_COLUMNS + ((OBSERVED_WAIT,) if observed_waits is not None else ()))
        for job in jobs:
            row = [
                job.id,
                job.submit,
                job.duration,
                job.gpus,
                job.share or "",
                job.mig,
                job.pods,
                job.team,
                job.queue,
                job.tier,
                job.workload,
                job.checkpoint or "",
            ]
            if observed_waits is not None:
                row.append(observed_waits.get(job.id, ""))
            writer.writerow(row)
            count += 1
    return count


# openb: latency-sensitive pods are the high tier, best-effort the low one (traces-and-simulators.md §1.1).
OPENB_TIER = {"LS": "production", "Guaranteed": "production", "Burstable": "batch", "BE": "experiment"}


def read_openb(path: Path, limit: int | None = None, bounds: Bounds = DEFAULT_BOUNDS) -> Trace:
    """Alibaba cluster-trace-gpu-v2023 pod list: one job per GPU pod, on its own creation/deletion times.

    The pod lists have no team; each pod's QoS becomes its tier (LS/Guaranteed -> production, Burstable ->
    batch, BE -> experiment). The `multigpu*` variants carry no times: their pods all arrive at 0 and run
    one hour. CPU-only pods are dropped (counted in `skipped`).
    """
    jobs: list[Job] = []
    skipped = 0
    _check_size(path, limit, bounds)
    with path.open(encoding="utf-8", errors="surrogateescape", newline="") as handle:
        for line, row in _rows(handle, str(path), OPENB_COLUMNS, bounds):
            if _full(jobs, limit):
                break
            where = f"{path}:{line}"
            num_gpu = int(_number(row, "num_gpu", where))
            milli = int(_number(row, "gpu_milli", where, 0))
            if num_gpu == 0 or milli == 0:
                skipped += 1
                continue
            created = int(_number(row, "creation_time", where, 0))
            deleted = int(_number(row, "deletion_time", where, created + 3600))
            share = milli / 1000 if num_gpu == 1 and milli < 1000 else 0.0
            jobs.append(
                Job(
                    id=row["name"],
                    submit=created,
                    duration=max(1, deleted - created),
                    gpus=num_gpu,
                    share=share,
                    tier=OPENB_TIER.get((row.get("qos") or "").strip(), "batch"),
                    workload="inference" if row.get("qos") == "LS" else "batch",
                )
            )
    jobs.sort(key=lambda j: j.submit)
    return Trace(jobs, str(path), "openb", skipped)


def read_itp(path: Path, limit: int | None = None, bounds: Bounds = DEFAULT_BOUNDS) -> Trace:
    """Microsoft ITP (ElasticFlow raw traces): a tar.gz of clusterNN.csv, or one such CSV.

    Each source cluster file becomes a team (`itp-cluster01` ...); the jobs are whole-GPU training jobs.
    Sizes above one node are split into 8-GPU pods by the engine when the pool has 8 GPUs per node.
    """
    jobs: list[Job] = []
    if path.name.endswith((".tar.gz", ".tgz")):
        # The archive is read whole anyway (bounded by MAX_ARCHIVE_BYTES): its members are clusters, not one
        # time line, so a limit applies to the earliest jobs across all of them, after the sort.
        rows = 0
        for name, text in _archive_members(path):
            rows = _itp_jobs(
                io.StringIO(text), f"{path}!{name}", "itp-" + Path(name).stem, jobs, None, bounds, rows
            )
        jobs.sort(key=lambda j: j.submit)
        return Trace(jobs[:limit] if limit else jobs, str(path), "itp", 0)
    else:
        _check_size(path, limit, bounds)
        with path.open(encoding="utf-8", errors="surrogateescape", newline="") as handle:
            _itp_jobs(handle, str(path), "itp-" + path.stem, jobs, limit, bounds, 0)
    jobs.sort(key=lambda j: j.submit)
    return Trace(jobs, str(path), "itp", 0)


def _itp_jobs(
    handle: Iterable[str],
    source: str,
    team: str,
    jobs: list[Job],
    limit: int | None,
    bounds: Bounds,
    counted: int,
) -> int:
    """Append one ITP CSV's GPU jobs to `jobs` (up to `limit` in all); the rows read so far, this one's
    too."""
    for line, row in _rows(handle, source, ITP_COLUMNS, bounds, counted):
        if _full(jobs, limit):
            break
        counted += 1
        where = f"{source}:{line}"
        gpus = int(_number(row, "num_gpu", where))
        if gpus == 0:
            continue
        jobs.append(
            Job(
                id=row["job_id"],
                submit=int(_number(row, "submission_time", where)),
                duration=max(1, int(_number(row, "duration", where))),
                gpus=gpus,
                team=team,
                tier="training",
                workload="training",
            )
        )
    return counted


# The ITP archive's largest member is 0.8 MB and the whole archive 4 MB unpacked; a gzip bomb must not get
# to decide how much memory a run takes.
MAX_MEMBER_BYTES = 64 * 1024 * 1024
MAX_ARCHIVE_BYTES = 256 * 1024 * 1024


def _archive_members(path: Path) -> list[tuple[str, str]]:
    """The `*.csv` members of an ITP tar.gz as (name, text), read in memory and never extracted to disk.
    Member names come from the archive, so each must be a plain relative name (no absolute path, no `..`):
    the name becomes a team name and a location in messages."""
    members: list[tuple[str, str]] = []
    total = 0
    try:
        with tarfile.open(path, "r:gz") as archive:
            for member in sorted(archive.getmembers(), key=lambda m: m.name):
                if not (member.isfile() and member.name.endswith(".csv")):
                    continue
                name = _member_name(path, member.name)
                total += member.size
                if member.size > MAX_MEMBER_BYTES or total > MAX_ARCHIVE_BYTES:
                    raise TraceError(
                        f"{path}!{name}: member of {member.size:,} bytes takes the archive over "
                        f"its limit ({MAX_MEMBER_BYTES:,} per member, {MAX_ARCHIVE_BYTES:,} in all)"
                    )
                data = archive.extractfile(member)
                if data is not None:
                    members.append((name, _member_text(path, name, data.read(MAX_MEMBER_BYTES + 1))))
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        raise TraceError(f"{path}: not a readable tar.gz: {exc}") from None
    return members


def _member_name(path: Path, name: str) -> str:
    try:
        return repopath.normalize("", name)
    except repopath.Refused as refusal:
        raise TraceError(f"{path}: archive member refused: {refusal}") from None


def _member_text(path: Path, name: str, raw: bytes) -> str:
    if len(raw) > MAX_MEMBER_BYTES:
        raise TraceError(f"{path}!{name}: member over the {MAX_MEMBER_BYTES:,}-byte limit")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TraceError(f"{path}!{name}: not UTF-8 (byte {exc.start})") from None
