"""`gpupolicy audit --snapshot DIR | --context NAME`: GPU use in a cluster against the repository's pools.

Reports nodes per pool against pool.yaml (count, GPU model from nvidia.com/gpu.product, GPUs per node, labels,
taints), GPU requests per namespace and Kueue queue, GPUs allocated but idle (DCGM_FI_DEV_GPU_UTIL at or below
5%), GPU pods without a queue label and pending workloads with their age. `--export-trace FILE` writes the GPU
pods as a CSV trace for `gpupolicy simulate --trace FILE`. `--context NAME` reads a live cluster through the
Kubernetes Python client (list only; `--kubeconfig`, `--dcgm-url` for a DCGM exporter's or Prometheus'
/federate output, `--save-snapshot DIR` to keep what was read). `--prometheus URL --window 7d --export-trace
FILE` writes the job history instead: the GPU pods submitted in the window before --now, from
kube-state-metrics' series, each with the wait it had (column observed_wait), for `gpupolicy simulate --trace
FILE` to compare its estimated waits with. The pods' queue label (--queue-label, default
kueue.x-k8s.io/queue-name) must be on kube-state-metrics' --metric-labels-allowlist. The bearer token comes
from $GPUPOLICY_PROMETHEUS_TOKEN or --prometheus-token-file. Exit codes: 0 nothing to report, 1 drift, idle,
unqueued or pending findings, 2 could not run.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from . import COMMANDS, FORMAT_HELP
from ._fleet import load_fleet_or_error

NAME = "audit"
HELP = COMMANDS[NAME]  # one home for the help text: the table `--help` reads
# the --prometheus history export's options, unset unless given (so given without --prometheus, they refuse)
HISTORY_DEFAULTS = {"window": "7d", "queue_label": "kueue.x-k8s.io/queue-name", "timeout": 30.0}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--snapshot", metavar="DIR", type=Path, help="directory of kubectl -o json output")
    source.add_argument("--context", metavar="NAME", help="read a live cluster: this kubeconfig context")
    source.add_argument(
        "--prometheus",
        metavar="URL",
        help="export the job history from this Prometheus (HTTP API) over --window, with --export-trace",
    )
    parser.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="with --context: this kubeconfig (default: $KUBECONFIG or ~/.kube/config)",
    )
    parser.add_argument(
        "--dcgm-url",
        metavar="URL",
        help="with --context: scrape GPU utilization here (a "
        "DCGM exporter's /metrics, or Prometheus /federate?match[]=DCGM_FI_DEV_GPU_UTIL)",
    )
    parser.add_argument(
        "--save-snapshot",
        metavar="DIR",
        type=Path,
        help="with --context: write what was read as a snapshot directory (for --snapshot later)",
    )
    parser.add_argument(
        "--cluster",
        metavar="NAME",
        help="compare with this cluster's pools (default: the "
        "one cluster whose pools the snapshot's nodes are labelled with, else every pool)",
    )
    parser.add_argument(
        "--now",
        metavar="TIME",
        help="ISO time the snapshot was taken (default: the "
        "snapshot's newest timestamp; the current time with --context)",
    )
    parser.add_argument("--export-trace", metavar="FILE", type=Path, help="write the GPU pods as a CSV trace")
    parser.add_argument(
        "--window",
        metavar="DURATION",
        help="with --prometheus: the history before --now to export (30m, 48h, 7d; default "
        f"{HISTORY_DEFAULTS['window']})",
    )
    parser.add_argument(
        "--queue-label",
        metavar="LABEL",
        help="with --prometheus: the pod label naming the job's queue (default "
        f"{HISTORY_DEFAULTS['queue_label']}; Kueue also sets kueue.x-k8s.io/cluster-queue-name)",
    )
    parser.add_argument(
        "--prometheus-token-file",
        metavar="FILE",
        type=Path,
        help="with --prometheus: bearer token file (default: $GPUPOLICY_PROMETHEUS_TOKEN if set)",
    )
    parser.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=float,
        help="with --prometheus: seconds one query may take, connect to last byte (default "
        f"{HISTORY_DEFAULTS['timeout']:g})",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text", help=FORMAT_HELP)


def _fail(message: str) -> int:
    print(f"gpupolicy audit: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    from ..audit import AuditError, audit, export_jobs, parse_time, report_json
    from ..simulate.traces import write_csv

    if not args.context and (args.kubeconfig or args.dcgm_url or args.save_snapshot):
        return _fail("--kubeconfig, --dcgm-url and --save-snapshot go with --context")
    history_options = (args.window, args.queue_label, args.timeout, args.prometheus_token_file)
    if not args.prometheus and any(option is not None for option in history_options):
        return _fail("--window, --queue-label, --timeout and --prometheus-token-file go with --prometheus")
    now = parse_time(args.now) if args.now else None
    if args.now and now is None:
        return _fail(
            f"--now {args.now!r} is not a valid ISO time such as 2025-01-31T12:00:00Z (a date that "
            "exists, a time of day; UTC unless it names a zone)"
        )
    if args.prometheus:
        return _export_history(args, now)
    try:
        snapshot = _snapshot(args)
    except AuditError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"cannot write {args.save_snapshot}: {exc.strerror or exc}")
    pools, compared = _pools(args, snapshot)
    if pools is None:
        return _fail(compared)
    now, when = _snapshot_time(args, snapshot, now)
    if refused := _before_the_snapshot(args, snapshot, now):
        return _fail(refused)
    report = audit(snapshot, pools, now)
    if args.export_trace:
        try:
            count = write_csv(export_jobs(snapshot, now, pools=pools), args.export_trace)
        except OSError as exc:
            return _fail(f"cannot write {args.export_trace}: {exc}")
        print(f"wrote {count} job(s) to {args.export_trace}", file=sys.stderr)
    if args.format == "json":
        print(json.dumps({**report_json(report, now), "compared_with": compared}, indent=2))
    else:
        print(f"Snapshot time: {now.isoformat().replace('+00:00', 'Z')} ({when})")
        print(f"Compared with: {_compared_line(compared)}")
        print(_text(report))
    return 1 if report.issues else 0


def _export_history(args: argparse.Namespace, now: datetime | None) -> int:
    """--prometheus: the job history over --window as a trace with observed waits (audit/history.py)."""
    from ..audit.history import read_history
    from ..errors import ToolError
    from ..simulate.traces import write_csv
    from ..upgrade.plans import format_duration, parse_duration
    from ..upgrade.promclient import Prometheus, read_token

    if not args.export_trace:
        return _fail("--prometheus reads the job history to export: pass --export-trace FILE")
    try:
        window = parse_duration(args.window or HISTORY_DEFAULTS["window"])
    except ValueError as exc:
        return _fail(f"--window: {exc}")
    timeout = HISTORY_DEFAULTS["timeout"] if args.timeout is None else args.timeout
    if not 0 < timeout <= 3600:
        return _fail("--timeout takes seconds above 0, at most 3600")
    cluster, error = _history_cluster(args)
    if error:
        return _fail(error)
    end = now or datetime.now(UTC)
    try:
        client = Prometheus(args.prometheus, read_token(args.prometheus_token_file), timeout=timeout)
        label = args.queue_label or HISTORY_DEFAULTS["queue_label"]
        history = read_history(client, end, window, label, cluster)
    except ToolError as exc:
        return _fail(str(exc))
    try:
        count = write_csv(history.jobs, args.export_trace, history.observed_waits)
    except OSError as exc:
        return _fail(f"cannot write {args.export_trace}: {exc.strerror or exc}")
    summary = {
        "trace": str(args.export_trace),
        "jobs": count,
        "observed_waits": len(history.observed_waits),
        "pending_at_end": history.pending_at_end,
        "window": format_duration(window),
        "end": end.isoformat().replace("+00:00", "Z"),
        "origin": history.origin.isoformat().replace("+00:00", "Z") if history.origin else None,
        "cluster": cluster.name if cluster else None,
        "notes": history.notes,
    }
    if args.format == "json":
        print(json.dumps(summary, indent=2))
        return 0
    print(
        f"wrote {count} job(s) to {args.export_trace}: the GPU pods submitted in the {summary['window']} "
        f"before {summary['end']} ({len(history.observed_waits)} with an observed wait, "
        f"{history.pending_at_end} still waiting at the end); submit 0 = {summary['origin']}"
    )
    print(
        f"queues: LocalQueues mapped to the ClusterQueues of cluster {cluster.name}"
        if cluster
        else "queues: as the pods' label names them (--cluster NAME maps LocalQueues to ClusterQueues)"
    )
    for note in history.notes:
        print(f"  note: {note}")
    return 0


def _history_cluster(args: argparse.Namespace):
    """The cluster whose queues and pools the history is read against: --cluster, or the fleet's only cluster;
    (None, "") when the fleet has several and none is named."""
    fleet, error = load_fleet_or_error(args)
    if fleet is None:
        return None, error
    if args.cluster:  # load_fleet_or_error refused a cluster the repository does not have
        return fleet.clusters[args.cluster], ""
    return (next(iter(fleet.clusters.values())), "") if len(fleet.clusters) == 1 else (None, "")


def _snapshot_time(args: argparse.Namespace, snapshot, given: datetime | None) -> tuple[datetime, str]:
    """The time pending workloads are aged against, and how it was chosen (printed with the report)."""
    from ..audit import snapshot_time

    if given is not None:
        return given, "--now"
    if args.context:
        return datetime.now(UTC), "read live just now"
    newest = snapshot_time(snapshot)
    if newest is not None:
        return newest, "the snapshot's newest timestamp; --now TIME overrides"
    return datetime.now(UTC), "the snapshot holds no timestamp: the current time; --now TIME overrides"


def _before_the_snapshot(args: argparse.Namespace, snapshot, now: datetime) -> str:
    """Why a --now earlier than something the snapshot records is refused ("" when it is not): a workload
    created after it would be pending for a negative time, and an exported pod would run for one."""
    from ..audit import snapshot_time

    newest = snapshot_time(snapshot) if args.now else None
    if newest is None or now >= newest:
        return ""
    stamp = newest.isoformat().replace("+00:00", "Z")
    return f"--now {args.now} is before the snapshot's newest timestamp ({stamp}): pass a time at or after it"


def _snapshot(args: argparse.Namespace):
    from ..audit import load_snapshot

    if args.snapshot:
        return load_snapshot(args.snapshot)
    from ..audit.live import load_live, save_snapshot

    snapshot = load_live(args.context, args.kubeconfig, args.dcgm_url)
    if args.save_snapshot:
        save_snapshot(snapshot, args.save_snapshot)
        print(f"saved the snapshot to {args.save_snapshot}", file=sys.stderr)
    return snapshot


def _pools(args: argparse.Namespace, snapshot):
    """The pools the snapshot is compared with, and which cluster's they are and why, as
    {"cluster": name or None for every pool of the fleet, "why": ...} (or None and an error)."""
    from ..audit import snapshot_clusters

    fleet, error = load_fleet_or_error(args)
    if fleet is None:
        return None, error
    if args.cluster:
        if args.cluster not in fleet.clusters:
            return None, f"no cluster {args.cluster!r}; known: {', '.join(sorted(fleet.clusters))}"
        return _pools_of(fleet, args.cluster), {"cluster": args.cluster, "why": "--cluster"}
    matched = snapshot_clusters(snapshot, fleet)
    if len(matched) == 1:
        return _pools_of(fleet, matched[0]), {
            "cluster": matched[0],
            "why": "its nodes carry them; --cluster NAME overrides",
        }
    why = (
        f"its nodes carry pools of {', '.join(matched)}"
        if matched
        else ("no node carries a pool of one cluster")
    )
    return {p.name: p for p in fleet.pools.values()}, {
        "cluster": None,
        "why": f"{why}; --cluster NAME narrows it",
    }


def _pools_of(fleet, cluster: str) -> dict:
    return {p.name: p for p in fleet.clusters[cluster].pools}


def _compared_line(compared: dict) -> str:
    which = f"cluster {compared['cluster']}'s pools" if compared["cluster"] else "every pool of the fleet"
    return f"{which} ({compared['why']})"


def _text(report) -> str:
    from ..audit import NO_POOL, format_age, format_gpus

    lines = ["Nodes per pool:"]
    for pool, count in report.nodes_per_pool.items():
        names = f": {', '.join(report.nodes_without_pool)}" if pool == NO_POOL else ""
        lines.append(f"  {pool:32} {count}{names}")
    lines.append("GPUs requested per namespace (whole GPUs and MIG slices of a card):")
    lines += [f"  {ns:32} {format_gpus(gpus)}" for ns, gpus in report.gpus_by_namespace.items()]
    lines.append("GPUs requested per queue (namespace/queue):")
    lines += [f"  {queue:32} {format_gpus(gpus)}" for queue, gpus in report.gpus_by_queue.items()]
    lines.append(f"GPUs allocated but idle: {len(report.idle_gpus)}")
    lines += [
        f"  {idle.namespace}/{idle.pod} gpu {idle.gpu} on {idle.node}: {idle.utilization_percent:g}%"
        for idle in report.idle_gpus
    ]
    lines.append(f"GPU pods without a queue label: {len(report.unqueued_pods)}")
    lines += [f"  {name}" for name in report.unqueued_pods]
    lines.append(f"Pending workloads: {len(report.pending)}")
    lines += [
        f"  {item.workload} (queue {item.queue or '?'}): {format_age(item.age_hours)}"
        for item in report.pending
    ]
    drift = [issue.message for issue in report.issues if issue.kind == "pool-drift"]
    lines.append(f"Pool drift: {len(drift)}")
    lines += [f"  {message}" for message in drift]
    return "\n".join(lines)
