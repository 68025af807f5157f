"""A real Prometheus for tests: synthetic series written as OpenMetrics, turned into TSDB blocks by
`promtool tsdb create-blocks-from openmetrics`, served by the Debian `prometheus` binary on 127.0.0.1 (a free
port, its own data folder) with the repository's alert rules loaded.

Backfilled blocks and the server's clock: time retention counts back from the newest block (tsdb/db.go
`BeyondTimeRetention`, v2.42.0), so a long --storage.tsdb.retention.time keeps historic blocks; and the rule
manager evaluates at the wall clock, so series meant for rule evaluation must end at "now".
"""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from support import require_tool

from gpupolicy.domain.observability import promtool_rule_file

REPO = Path(__file__).resolve().parents[1]
ALERTS_DIR = REPO / "policies" / "observability" / "alerts"
STARTUP_DEADLINE = 20.0  # seconds; the server is normally ready in well under one


def binaries() -> tuple[str, str]:
    """(prometheus, promtool): a clean skip without them on a developer machine, a failure in CI."""
    return require_tool("prometheus"), require_tool("promtool")


@dataclass
class Series:
    name: str
    labels: dict[str, str]
    samples: list[tuple[int, float]] = field(default_factory=list)  # (unix seconds, value)


def constant(
    name: str, labels: dict[str, str], start: int, end: int, value: float = 1, every: int = 120
) -> Series:
    return Series(name, labels, [(t, value) for t in range(start, end + 1, every)])


def openmetrics(series: Iterable[Series]) -> str:
    """Families contiguous, each with its TYPE line; samples in time order; `# EOF` at the end."""
    by_name: dict[str, list[Series]] = {}
    for item in series:
        by_name.setdefault(item.name, []).append(item)
    lines = []
    for name, members in by_name.items():
        lines.append(f"# TYPE {name} gauge")
        for member in members:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(member.labels.items()))
            lines += [
                f"{name}{{{labels}}} {_exact(value)} {moment}" for moment, value in sorted(member.samples)
            ]
    return "\n".join(lines) + "\n# EOF\n"


def _exact(value: float) -> str:
    """The value as written, to the last digit: `:g` keeps six, which turns a Unix time such as
    kube-state-metrics' kube_pod_created into 1.76296e+09."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _write_rules(directory: Path) -> None:
    directory.mkdir(parents=True)
    for path in sorted(ALERTS_DIR.glob("*.yaml")):
        for body in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if isinstance(body, dict) and body.get("kind") == "PrometheusRule":
                target = directory / f"{body['metadata']['name']}.rules.yaml"
                target.write_text(
                    yaml.safe_dump(promtool_rule_file(body, False), sort_keys=False), encoding="utf-8"
                )


@contextmanager
def serve(workdir: Path, series: Iterable[Series]) -> Iterator[str]:
    """Start Prometheus over the series; yields its URL; stops it (and only it) afterwards."""
    prometheus, promtool = binaries()
    data = workdir / "data"
    data.mkdir(parents=True)
    source = workdir / "series.om"
    source.write_text(openmetrics(series), encoding="utf-8")
    made = subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", "-q", str(source), str(data)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    _write_rules(workdir / "rules")
    config = workdir / "prometheus.yml"
    config.write_text("global:\n  evaluation_interval: 1s\nrule_files:\n  - rules/*.yaml\n", encoding="utf-8")
    port = _free_port()
    log = (workdir / "prometheus.log").open("w")
    server = subprocess.Popen(
        [
            prometheus,
            f"--config.file={config}",
            f"--storage.tsdb.path={data}",
            "--storage.tsdb.retention.time=36500d",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        cwd=workdir,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(url, server, workdir / "prometheus.log")
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)
        log.close()


def _wait_ready(url: str, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_DEADLINE
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"prometheus exited with {server.returncode}: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=1) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.1)
    pytest.fail(f"prometheus not ready within {STARTUP_DEADLINE}s: {log.read_text()[-2000:]}")


# --- a healthy soak for any plan stage
# ------------------------------------------------------------------------


def node_labels(node: str, pool: str, start: int, end: int, state: str | None = "upgrade-done") -> Series:
    """kube_node_labels as kube-state-metrics exports it with the pool and upgrade-state labels allowlisted
    (state None: the allowlist lacks the upgrade-state label)."""
    labels = {"node": node, "label_gpupolicy_io_pool": pool, "label_nvidia_com_gpu_present": "true"}
    if state is not None:
        labels["label_nvidia_com_gpu_driver_upgrade_state"] = state
    return constant("kube_node_labels", labels, start, end)


def xid(
    node: str,
    gpu: str,
    start: int,
    end: int,
    fault_at: int | None = None,
    code: int = 79,
    driver: str | None = None,
) -> Series:
    """dcgm-exporter's DCGM_FI_DEV_XID_ERRORS of one GPU: 0, then `code` from `fault_at`; labelled with the
    driver version when `driver` (the exporter's DCGM_FI_DRIVER_VERSION label counter)."""
    labels = {"node": node, "hostname": node, "gpu": gpu, "UUID": f"GPU-{node}-{gpu}"}
    if driver is not None:
        labels["DCGM_FI_DRIVER_VERSION"] = driver
    series = constant("DCGM_FI_DEV_XID_ERRORS", labels, start, end, 0)
    series.samples = [
        (t, float(code) if fault_at is not None and t >= fault_at else 0.0) for t, _ in series.samples
    ]
    return series


def gpu_pod(
    namespace: str,
    pod: str,
    node: str,
    start: int,
    end: int,
    phase: str = "Running",
    resource: str = "nvidia_com_gpu",
) -> list[Series]:
    """A pod requesting one GPU on `node`, in `phase` over the whole window."""
    return [
        constant("kube_pod_status_phase", {"namespace": namespace, "pod": pod, "phase": phase}, start, end),
        constant("kube_pod_info", {"namespace": namespace, "pod": pod, "node": node}, start, end),
        constant(
            "kube_pod_container_resource_requests",
            {
                "namespace": namespace,
                "pod": pod,
                "node": node,
                "container": "main",
                "resource": resource,
                "unit": "integer",
            },
            start,
            end,
        ),
    ]


def healthy_soak(repo: Path, plan_name: str, now: str) -> list[Series]:
    """The history of a clean soak of the plan's current stage up to `now`: one node per pool of the stage,
    upgrade-done, reporting the plan's target driver, no XID, one running GPU pod."""
    import calendar

    from gpupolicy import pipeline
    from gpupolicy.upgrade import gates
    from gpupolicy.upgrade import plans as upgrades

    fleet = pipeline.run(repo).fleet
    plan = upgrades.plans_of(fleet).plan(plan_name)
    stage = plan.current_stage()
    assert stage is not None and stage.started is not None, f"{plan_name} has no stage soaking"
    begin = calendar.timegm(stage.started.utctimetuple()) - 3600
    end = calendar.timegm(upgrades.parse_timestamp(now).utctimetuple())
    driver = plan.to_version if plan.component == "driver" else None
    series: list[Series] = []
    for pool in gates.stage_pools(fleet, plan, stage):
        node = f"{pool}-0"
        series += [
            node_labels(node, pool, begin, end),
            xid(node, "0", begin, end, driver=driver),
            *gpu_pod("team", f"{pool}-job", node, begin, end),
        ]
    return series


@contextmanager
def healthy_prometheus(workdir: Path, repo: Path, plan_name: str, now: str) -> Iterator[str]:
    """A Prometheus holding a clean soak of the plan's current stage (see healthy_soak); yields its URL."""
    with serve(workdir, healthy_soak(repo, plan_name, now)) as url:
        yield url
