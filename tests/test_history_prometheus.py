"""`gpupolicy audit --prometheus URL --window W --export-trace FILE` against a real Prometheus
(tests/prometheus_server.py): a backfilled day of kube-state-metrics series for pods whose fate is known gives
exact trace rows with their observed waits; a history without the queue label, an unreachable and a slow
server each give a clear error and exit 2. The fleet is the minirepo fixture (cluster mini, ClusterQueue
alpha, LocalQueue alpha/training, pool mini-a100: 2 nodes x 8 A100-80GB)."""

from __future__ import annotations

import calendar
import csv
import json
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest
from prometheus_server import Series, serve
from support import MINIREPO

from gpupolicy.cli import main
from gpupolicy.simulate.traces import read_trace

END_TEXT = "2026-11-13T09:00:00Z"
END = calendar.timegm((2026, 11, 13, 9, 0, 0))
T0 = END - 86400  # the window's start: --window 1d
STEP = 60  # kube-state-metrics scraped every minute


def _pod(
    namespace: str,
    pod: str,
    created: int,
    last: int,
    started: int | None = None,
    completed: int | None = None,
    requests: dict[str, float] | None = None,
    queue: str | None = None,
    job: str | None = None,
    queue_key: str = "label_kueue_x_k8s_io_queue_name",
    admitted_to: str | None = None,
) -> list[Series]:
    """One pod's kube-state-metrics series, exported every minute from `created` to `last` (when the pod
    object went away, or the window's end); `admitted_to`: the ClusterQueue Kueue labels the pod with."""
    ident = {"namespace": namespace, "pod": pod, "uid": f"uid-{pod}"}
    times = range(created, last + 1, STEP)

    def gauge(name: str, value: float, extra: dict[str, str] | None = None, when=times) -> Series:
        return Series(name, {**ident, **(extra or {})}, [(t, value) for t in when])

    labels = {queue_key: queue} if queue else {}
    if admitted_to:
        labels["label_kueue_x_k8s_io_cluster_queue_name"] = admitted_to
    series = [gauge("kube_pod_created", created), gauge("kube_pod_labels", 1, labels)]
    if started is not None:
        series.append(gauge("kube_pod_start_time", started, when=range(started, last + 1, STEP)))
    if completed is not None:
        series.append(gauge("kube_pod_completion_time", completed, when=range(completed, last + 1, STEP)))
    if job is not None:
        series.append(
            gauge(
                "kube_pod_owner", 1, {"owner_kind": "Job", "owner_name": job, "owner_is_controller": "true"}
            )
        )
    for resource, count in (requests or {}).items():
        # the node label is empty until the pod is scheduled: two series of one container, counted once
        bound = started if started is not None else last + STEP
        request = {"container": "main", "resource": resource, "unit": "integer"}
        series.append(
            gauge(
                "kube_pod_container_resource_requests",
                count,
                {**request, "node": ""},
                when=range(created, min(bound, last + 1), STEP),
            )
        )
        if started is not None:
            series.append(
                gauge(
                    "kube_pod_container_resource_requests",
                    count,
                    {**request, "node": "mini-1"},
                    when=range(started, last + 1, STEP),
                )
            )
    return series


def _history(queue_key: str = "label_kueue_x_k8s_io_queue_name") -> list[Series]:
    """A day of pods whose fate is known:
    train-a  a Job's pod: the Job created at +600, held by Kueue, its pod created at +900, started +960,
             completed +4560 (8 GPUs) -> submit = the Job's creation, wait 360 s, duration 3600 s
    infer-b  a plain pod, one 1g.10gb MIG slice: created +1200, started +1260, gone at +4980 without a
             completion time -> duration to the last time it was exported, 3720 s; wait 60 s
    gone-d   created +2000, deleted at +2600 before it ever started -> left out
    old-e    created before the window (still running) -> left out
    cpu-f    no GPU -> not a GPU pod
    free-g   namespace beta, no queue label: created +3000, started at once, completed +3300
    note-h   one nvidia.com/gpu.shared replica: created +5000, started +5030, completed +8630 (the minirepo
             has no time-sliced pool, so it is replayed as a whole GPU, with a note)
    wait-c   created +80040, still pending at the end -> in the trace without an observed wait"""
    return [
        *_pod(
            "alpha",
            "train-a",
            T0 + 900,
            T0 + 4620,
            T0 + 960,
            T0 + 4560,
            {"nvidia_com_gpu": 8},
            "training",
            job="train-a",
            queue_key=queue_key,
            admitted_to="alpha",
        ),
        Series(
            "kube_job_created",
            {"namespace": "alpha", "job_name": "train-a"},
            [(t, T0 + 600) for t in range(T0 + 600, T0 + 4621, STEP)],
        ),
        *_pod(
            "alpha",
            "infer-b",
            T0 + 1200,
            T0 + 4980,
            T0 + 1260,
            None,
            {"nvidia_com_mig_1g_10gb": 1},
            "training",
            queue_key=queue_key,
            admitted_to="alpha",
        ),
        *_pod(
            "alpha",
            "note-h",
            T0 + 5000,
            T0 + 8700,
            T0 + 5030,
            T0 + 8630,
            {"nvidia_com_gpu_shared": 1},
            "training",
            queue_key=queue_key,
            admitted_to="alpha",
        ),
        *_pod(
            "alpha",
            "gone-d",
            T0 + 2000,
            T0 + 2600,
            None,
            None,
            {"nvidia_com_gpu": 1},
            "training",
            queue_key=queue_key,
        ),
        *_pod(
            "alpha",
            "old-e",
            T0 - 3600,
            END,
            T0 - 3000,
            None,
            {"nvidia_com_gpu": 8},
            "training",
            queue_key=queue_key,
        ),
        *_pod("alpha", "cpu-f", T0 + 100, T0 + 700, T0 + 160, T0 + 640, {}, "training", queue_key=queue_key),
        *_pod(
            "beta",
            "free-g",
            T0 + 3000,
            T0 + 3360,
            T0 + 3000,
            T0 + 3300,
            {"nvidia_com_gpu": 1},
            None,
            queue_key=queue_key,
        ),
        *_pod(
            "alpha",
            "wait-c",
            T0 + 80040,
            END,
            None,
            None,
            {"nvidia_com_gpu": 1},
            "training",
            queue_key=queue_key,
        ),
    ]


EXPECTED_ROWS = [  # origin: the Job's creation at T0 + 600
    "job_id,submit,duration,gpus,share,mig,pods,team,queue,tier,workload,checkpoint,observed_wait",
    "alpha/train-a,0,3600,8,,,1,alpha,alpha,,,,360",
    "alpha/infer-b,600,3720,1,,1g.10gb,1,alpha,alpha,,,,60",
    "beta/free-g,2400,300,1,,,1,beta,,,,,0",
    "alpha/note-h,4400,3600,1,,,1,alpha,alpha,,,,30",
    "alpha/wait-c,79440,3600,1,,,1,alpha,alpha,,,,",
]


@pytest.fixture(scope="module")
def history_url(tmp_path_factory: pytest.TempPathFactory):
    with serve(tmp_path_factory.mktemp("prom-history"), _history()) as url:
        yield url


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    return shutil.copytree(MINIREPO, tmp_path / "repo")


def _export(repo: Path, url: str, trace: Path, *extra: str) -> list[str]:
    return [
        "audit",
        "--repo",
        str(repo),
        "--prometheus",
        url,
        "--window",
        "1d",
        "--now",
        END_TEXT,
        "--export-trace",
        str(trace),
        *extra,
    ]


def test_export_writes_the_known_pods_as_exact_rows(
    history_url: str, repo: Path, tmp_path: Path, capsys
) -> None:
    trace = tmp_path / "history.csv"
    assert main(_export(repo, history_url, trace)) == 0
    out = capsys.readouterr().out
    assert trace.read_text(encoding="utf-8").splitlines() == EXPECTED_ROWS
    assert "wrote 5 job(s)" in out and "4 with an observed wait, 1 still waiting at the end" in out, out
    assert "submit 0 = 2026-11-12T09:10:00Z" in out
    assert "1 GPU pod(s) were deleted before they started: left out" in out
    assert "1 GPU pod(s) seen in the window were submitted before it: left out" in out
    assert "1 GPU pod(s) carry no kueue.x-k8s.io/queue-name label" in out
    assert (
        "alpha/note-h: 1 nvidia.com/gpu.shared replica(s) replayed as whole GPUs (the cluster's pools "
        "give no one replica count)" in out
    )
    read = read_trace(trace)  # what simulate --trace reads back
    assert read.observed_waits == {
        "alpha/train-a": 360,
        "alpha/infer-b": 60,
        "beta/free-g": 0,
        "alpha/note-h": 30,
    }
    assert [job.id for job in read.jobs] == [
        "alpha/train-a",
        "alpha/infer-b",
        "beta/free-g",
        "alpha/note-h",
        "alpha/wait-c",
    ]


def test_the_exported_history_replays_with_estimated_vs_actual(
    history_url: str, repo: Path, tmp_path: Path, capsys
) -> None:
    """Export, then replay on the minirepo: at most 10 of its 16 cards are asked for at once, so the replay
    starts every job at once (estimated 0), while the history saw 0, 0.5, 1 and 6 minutes (free-g, without a
    queue label, is sent to alpha by team: the fleet's only queue)."""
    trace = tmp_path / "history.csv"
    assert main(_export(repo, history_url, trace)) == 0
    capsys.readouterr()
    assert (
        main(
            [
                "simulate",
                "--repo",
                str(repo),
                "--trace",
                str(trace),
                "--no-plots",
                "--out",
                str(tmp_path / "out"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "| alpha | 4 | 0.5 min | 0.0 min | 6.0 min | 0.0 min | 6.0 min | 0.0 min | 0 |" in out, out


def test_kueue_cluster_queue_label_names_the_cluster_queue(
    history_url: str, repo: Path, tmp_path: Path, capsys
) -> None:
    """Kueue's own pod label (AssignQueueLabelsForPods) names the ClusterQueue; admitted pods carry it."""
    trace = tmp_path / "by-cq.csv"
    assert main(_export(repo, history_url, trace, "--queue-label", "kueue.x-k8s.io/cluster-queue-name")) == 0
    assert "2 GPU pod(s) carry no kueue.x-k8s.io/cluster-queue-name label" in capsys.readouterr().out
    queues = {row["job_id"]: row["queue"] for row in csv.DictReader(trace.open(encoding="utf-8"))}
    assert queues == {
        "alpha/train-a": "alpha",
        "alpha/infer-b": "alpha",
        "beta/free-g": "",
        "alpha/note-h": "alpha",
        "alpha/wait-c": "",
    }


def test_export_summary_as_json(history_url: str, repo: Path, tmp_path: Path, capsys) -> None:
    assert main(_export(repo, history_url, tmp_path / "h.csv", "--format", "json")) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["jobs"], summary["observed_waits"], summary["pending_at_end"]) == (5, 4, 1)
    assert summary["cluster"] == "mini" and summary["window"] == "1d"


def test_a_shorter_window_keeps_only_what_was_submitted_in_it(
    history_url: str, repo: Path, tmp_path: Path, capsys
) -> None:
    trace = tmp_path / "early.csv"
    code = main(
        [
            "audit",
            "--repo",
            str(repo),
            "--prometheus",
            history_url,
            "--window",
            "2h",
            "--now",
            "2026-11-12T11:00:00Z",
            "--export-trace",
            str(trace),
        ]
    )
    assert code == 0, capsys.readouterr().err
    rows = list(csv.DictReader(trace.open(encoding="utf-8")))
    assert [row["job_id"] for row in rows] == [
        "alpha/train-a",
        "alpha/infer-b",
        "beta/free-g",
        "alpha/note-h",
    ]


def test_the_queue_label_not_exported_is_a_clear_error(tmp_path: Path, repo: Path, capsys) -> None:
    with serve(tmp_path / "prom", _history(queue_key="label_app")) as url:
        code = main(_export(repo, url, tmp_path / "h.csv"))
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "no kube_pod_labels series in the window carries label_kueue_x_k8s_io_queue_name" in err, err
    assert "--metric-labels-allowlist=pods=[kueue.x-k8s.io/queue-name]" in err
    assert not (tmp_path / "h.csv").exists()


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_unreachable_server_is_a_clear_error(repo: Path, tmp_path: Path, capsys) -> None:
    port = _closed_port()
    code = main(_export(repo, f"http://127.0.0.1:{port}", tmp_path / "h.csv"))
    err = capsys.readouterr().err
    assert code == 2 and f"Prometheus http://127.0.0.1:{port}/api/v1/query_range: cannot connect" in err, err
    assert "Traceback" not in err and not (tmp_path / "h.csv").exists()


def test_a_silent_server_is_a_clear_error_within_the_timeout(repo: Path, tmp_path: Path, capsys) -> None:
    """A server that accepts the connection and never answers: the export gives up at --timeout."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    accepted: list[socket.socket] = []
    threading.Thread(target=lambda: accepted.append(listener.accept()[0]), daemon=True).start()
    try:
        began = time.monotonic()
        port = listener.getsockname()[1]
        code = main(_export(repo, f"http://127.0.0.1:{port}", tmp_path / "h.csv", "--timeout", "1"))
        took = time.monotonic() - began
    finally:
        for connection in accepted:
            connection.close()
        listener.close()
    err = capsys.readouterr().err
    # the client's deadline or, a moment earlier, the socket's own read timeout (both set to --timeout)
    gave_up = ("no complete answer within 1s", "cannot connect or read: timed out")
    assert code == 2 and any(reason in err for reason in gave_up), err
    assert f"Prometheus http://127.0.0.1:{port}/api/v1/query_range" in err and "Traceback" not in err
    assert took < 5, f"gave up after {took:.1f}s, not at the 1s timeout"


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--window", "a week"], "--window: not a duration"),
        (["--timeout", "0"], "--timeout takes seconds above 0"),
        (["--cluster", "nowhere"], "no such cluster: nowhere"),
    ],
)
def test_usage_errors_exit_2(repo: Path, tmp_path: Path, capsys, extra: list[str], message: str) -> None:
    code = main(_export(repo, f"http://127.0.0.1:{_closed_port()}", tmp_path / "h.csv", *extra))
    assert code == 2 and message in capsys.readouterr().err


def test_prometheus_needs_an_export_file(repo: Path, capsys) -> None:
    code = main(["audit", "--repo", str(repo), "--prometheus", "http://127.0.0.1:9"])
    assert code == 2 and "pass --export-trace FILE" in capsys.readouterr().err


def test_a_value_that_is_no_time_or_count_is_not_read() -> None:
    """The answer comes from a server we do not control: NaN, infinity, negative or absurd values are None."""
    from gpupolicy.audit.history import _value
    from gpupolicy.upgrade.promclient import MAX_TIMESTAMP
    from gpupolicy.upgrade.promclient import Series as Answer

    def one(value: float) -> Answer:
        return Answer({"pod": "p"}, ((float(END), value),))

    assert _value(one(float(T0)), MAX_TIMESTAMP) == T0
    for bad in (float("nan"), float("inf"), -1.0, MAX_TIMESTAMP + 1.0):
        assert _value(one(bad), MAX_TIMESTAMP) is None
    assert _value(Answer({"pod": "p"}, ()), MAX_TIMESTAMP) is None
