"""Rollout gates against a real Prometheus (tests/prometheus_server.py): four synthetic soaks of the fixture
plan's canary stage (pool prod-canary, node canary-1, started 2026-11-10T09:00Z, 72h soak), each with its
verdicts and the promote/status outcome; then the repository's alert rules evaluated by the same server."""

from __future__ import annotations

import calendar
import json
import shutil
import signal
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

import pytest
from prometheus_server import Series, constant, gpu_pod, node_labels, serve, xid
from support import git, git_repository

from gpupolicy import pipeline
from gpupolicy.cli import main
from gpupolicy.upgrade import gates
from gpupolicy.upgrade import plans as upgrades
from gpupolicy.upgrade.promclient import Prometheus

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "upgrades"
STARTED = calendar.timegm((2026, 11, 10, 9, 0, 0))
NOW = "2026-11-13T09:00:00Z"  # exactly the 72h soak
END = calendar.timegm((2026, 11, 13, 9, 0, 0))
HOUR = 3600
STAGE_NODE, OTHER_NODE = "canary-1", "h100-1"


DRIVER, OLD_DRIVER = "595.91.07", "580.173.02"  # the fixture plan's target and source


def _soak(kind: str) -> list[Series]:
    """One soak's history: node inventory, exporter series, a running pod; then the soak's own trouble."""
    begin, end = STARTED - HOUR, END
    series = [
        node_labels(OTHER_NODE, "prod-h100", begin, end),
        # XID 79 outside the stage (pool prod-h100, not upgraded): must never count against it
        xid(OTHER_NODE, "0", begin, end, fault_at=STARTED + 5 * HOUR, driver=OLD_DRIVER),
        *gpu_pod("nlp", "train-0", STAGE_NODE, begin, end),
    ]
    if kind == "upgrade-failed":
        failed_at = STARTED + 30 * HOUR
        series += [
            node_labels(STAGE_NODE, "prod-canary", begin, failed_at - 60),
            node_labels(STAGE_NODE, "prod-canary", failed_at, end, state="upgrade-failed"),
            constant(
                "ALERTS",
                {
                    "alertname": "GPUDriverUpgradeFailed",
                    "alertstate": "firing",
                    "node": STAGE_NODE,
                    "severity": "warning",
                },
                failed_at + 300,
                end,
            ),
        ]
    elif kind == "label-not-exported":
        series.append(node_labels(STAGE_NODE, "prod-canary", begin, end, state=None))
    elif kind == "still-upgrading":  # the driver pod restarts late: the soak ends mid-upgrade
        switch = END - 2 * HOUR
        series += [
            node_labels(STAGE_NODE, "prod-canary", begin, switch - 60),
            node_labels(STAGE_NODE, "prod-canary", switch, end, state="pod-restart-required"),
        ]
    else:
        series.append(node_labels(STAGE_NODE, "prod-canary", begin, end))
    driver = OLD_DRIVER if kind == "old-driver" else DRIVER
    if kind != "missing-exporter":
        fault = STARTED + 20 * HOUR if kind == "xid-79" else None
        series += [
            xid(STAGE_NODE, "0", begin, end, driver=driver),
            xid(STAGE_NODE, "1", begin, end, fault_at=fault, driver=driver),
        ]
    if kind == "pending-pods":  # a driver restart: validators and startup checks wait; no pod failed
        series += [
            *gpu_pod("gpu-operator", "nvidia-cuda-validator-x", STAGE_NODE, begin, end, "Pending"),
            *gpu_pod("nlp", "train-1", STAGE_NODE, begin, end, "Pending"),
            *gpu_pod("nlp", "train-2", STAGE_NODE, begin, end, "Pending"),
            *gpu_pod("vision", "eval-0", STAGE_NODE, begin, end, "Pending"),
        ]
    if kind == "failed-pods":  # three GPU pods fail, an hour apart at most: 3 within the 1h window
        for index, at in enumerate((30, 50, 70)):
            moment = STARTED + 40 * HOUR + at * 60
            series += [*gpu_pod("nlp", f"crash-{index}", STAGE_NODE, moment, moment + 600, "Failed")]
    return series


SOAKS = (
    "healthy",
    "xid-79",
    "upgrade-failed",
    "missing-exporter",
    "old-driver",
    "label-not-exported",
    "still-upgrading",
    "pending-pods",
    "failed-pods",
)
UPGRADE_DONE = "every node of the stage ends the soak in driver upgrade state upgrade-done"
RUNS_TARGET = "every node of the stage runs driver 595.91.07 at the end of the soak"
FAILED_PODS = "at most 2 GPU pod(s) failed on the stage's nodes within any 1h"
# criterion -> verdict per soak (the fixture plan: silent GPUXidCriticalError, GPUDriverUpgradeFailed;
# maxXidErrors 0; maxFailedPods 2 within 1h)
EXPECTED = {
    "healthy": {},
    "xid-79": {
        "at most 0 GPU(s) reporting an XID error": "breached",
        "no GPU fallen off the bus (XID 79)": "breached",
    },
    "upgrade-failed": {
        "alert GPUDriverUpgradeFailed stays silent": "breached",
        "no node in driver upgrade state upgrade-failed": "breached",
        UPGRADE_DONE: "breached",
    },
    "missing-exporter": {
        "at most 0 GPU(s) reporting an XID error": "no data",
        "no GPU fallen off the bus (XID 79)": "no data",
        RUNS_TARGET: "no data",
        "the DCGM exporter reports from every node of the stage": "breached",
    },
    "old-driver": {RUNS_TARGET: "breached"},  # defect 6: stuck on the old driver, otherwise a clean soak
    "label-not-exported": {
        "no node in driver upgrade state upgrade-failed": "no data",
        UPGRADE_DONE: "no data",
    },
    "still-upgrading": {UPGRADE_DONE: "breached"},
    "pending-pods": {},  # defect 7: Pending is no failure
    "failed-pods": {FAILED_PODS: "breached"},
}


@pytest.fixture(scope="module", params=SOAKS)
def soak(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    with serve(tmp_path_factory.mktemp(f"prom-{request.param}"), _soak(request.param)) as url:
        yield request.param, url


@pytest.fixture(scope="module")
def fixture_fleet():
    result = pipeline.run(FIXTURE)
    plan = upgrades.plans_of(result.fleet).plan("driver-next")
    return result.fleet, plan


def test_each_soak_gives_its_verdicts(soak, fixture_fleet) -> None:
    kind, url = soak
    fleet, plan = fixture_fleet
    evaluation = gates.evaluate(
        Prometheus(url), fleet, plan, plan.current_stage(), upgrades.parse_timestamp(NOW)
    )
    assert evaluation.pools == ("prod-canary",)
    verdicts = {v.criterion.name: v for v in evaluation.verdicts}
    got = {name: v.state for name, v in verdicts.items() if v.state != gates.HOLDS}
    assert got == EXPECTED[kind], "\n".join(v.line() for v in evaluation.verdicts)
    assert evaluation.passes == (not EXPECTED[kind])
    if kind == "xid-79":  # the first breaching sample: the GPU, its node and the value, 20h into the soak
        detail = verdicts["no GPU fallen off the bus (XID 79)"].detail
        assert detail.startswith("first at 2026-11-11T05:00:00Z: ") and 'gpu="1"' in detail, detail
        assert f'node="{STAGE_NODE}"' in detail and detail.split(" = ")[1].startswith("79 ")
    if kind == "upgrade-failed":
        assert (
            "first at 2026-11-11T15:00:00Z"
            in verdicts["no node in driver upgrade state upgrade-failed"].detail
        )


# --- the commands ------------------------------------------------------------------------------------------


def _git(repo: Path, *args: str) -> None:
    git(repo, *args, name="platform", email="platform@example.com")


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    return git_repository(
        shutil.copytree(FIXTURE, tmp_path / "repo"), name="platform", email="platform@example.com"
    )


def test_promote_and_status_follow_the_verdict(soak, repo: Path, capsys) -> None:
    kind, url = soak
    common = ["--prometheus", url, "--now", NOW, "--repo", str(repo)]
    assert main(["upgrade", "status", "driver-next", *common]) == 0
    status = capsys.readouterr().out
    code = main(["upgrade", "promote", "driver-next", *common])
    promote = capsys.readouterr()
    print(f"--- {kind}: status\n{status}\n--- {kind}: promote (exit {code})\n{promote.err}{promote.out}")
    if not EXPECTED[kind]:
        assert code == 0 and "stage fleet promoted to 595.91.07" in promote.out
        assert "next step: promote stage fleet: ready" in status
        return
    assert code == 1 and "gpupolicy upgrade promote driver-next: refused" in promote.err
    for criterion, state in EXPECTED[kind].items():
        assert f"rollback criterion {state}: {criterion}" in promote.err
    if any(state == "breached" for state in EXPECTED[kind].values()):
        assert "next step: roll back stage canary: `gpupolicy upgrade rollback driver-next`" in status


def test_watch_exits_non_zero_on_breach(soak, repo: Path, capsys) -> None:
    kind, url = soak
    code = main(
        [
            "upgrade",
            "watch",
            "driver-next",
            "--prometheus",
            url,
            "--every",
            "1",
            "--rounds",
            "1",
            "--now",
            NOW,
            "--repo",
            str(repo),
        ]
    )
    out = capsys.readouterr().out
    assert code == (0 if not EXPECTED[kind] else 1), out
    if kind in ("xid-79", "upgrade-failed"):
        assert "breach: roll back stage canary: gpupolicy upgrade rollback driver-next" in out


def test_watch_at_a_fixed_time_mid_soak_evaluates_once(soak, repo: Path, capsys) -> None:
    """A fixed --now never moves, so the soak never ends: the watch used to sleep and evaluate the same
    instant for ever. It now evaluates once, as `--rounds 1` would."""
    kind, url = soak
    if EXPECTED[kind]:
        pytest.skip("a breach or a criterion without data ends the watch anyway")
    args = ["upgrade", "watch", "driver-next", "--prometheus", url, "--every", "0.01", "--repo", str(repo)]
    previous = signal.signal(signal.SIGALRM, _never_ended)
    signal.alarm(60)
    try:
        code = main([*args, "--now", "2026-11-12T09:00:00Z"])  # 48 h into the 72 h soak
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    out = capsys.readouterr().out
    assert code == 0 and out.count("] ") == 1 and "every criterion holds" in out and "has soaked" not in out
    assert main([*args, "--rounds", "-1"]) == 2
    assert "--rounds takes 1 or more" in capsys.readouterr().err


def _never_ended(signum, frame):
    raise AssertionError("upgrade watch at a fixed --now did not end within 60 s")


def test_status_json_carries_the_criteria(soak, repo: Path, capsys) -> None:
    kind, url = soak
    assert (
        main(
            [
                "upgrade",
                "status",
                "driver-next",
                "--format",
                "json",
                "--prometheus",
                url,
                "--now",
                NOW,
                "--repo",
                str(repo),
            ]
        )
        == 0
    )
    [plan] = json.loads(capsys.readouterr().out)
    states = {c["criterion"]: c["state"] for c in plan["criteria"] if c["state"] != "holds"}
    assert states == EXPECTED[kind]
    assert (plan["recommend"] is None) == ("breached" not in EXPECTED[kind].values())


# --- the repository's alert rules, evaluated by the server
# ---------------------------------------------------


def test_the_server_evaluates_the_repository_alert_rules(tmp_path: Path) -> None:
    """Rules run at the wall clock: a history that ends now, with XID 79 on one node and an upgrade-failed
    label on another; the server must raise exactly the matching alerts (pending while `for:` runs)."""
    now = int(time.time()) // 60 * 60
    begin = now - 1800
    series = [
        node_labels("good-1", "prod-h100", begin, now),
        xid("good-1", "0", begin, now),
        node_labels("bad-1", "prod-h100", begin, now, state="upgrade-failed"),
        xid("bad-1", "0", begin, now),
        node_labels("xid-1", "prod-canary", begin, now),
        xid("xid-1", "0", begin, now, fault_at=now - 600),
        constant("up", {"job": "nvidia-dcgm-exporter", "node": "good-1"}, begin, now),
        constant("up", {"job": "nvidia-dcgm-exporter", "node": "bad-1"}, begin, now),
        constant("up", {"job": "nvidia-dcgm-exporter", "node": "xid-1"}, begin, now),
        # a healthy Kueue, or KueueControllerDown (absent()) would rightly go pending too
        constant("up", {"job": "kueue-controller-manager-metrics-service"}, begin, now),
    ]
    with serve(tmp_path, series) as url:
        alerts = _alerts_after_evaluation(url, {"GPUFallenOffBus", "GPUDriverUpgradeFailed"})
    by_name = {
        (a["labels"]["alertname"], a["labels"].get("node", a["labels"].get("hostname"))): a["state"]
        for a in alerts
    }
    assert by_name == {("GPUFallenOffBus", "xid-1"): "firing", ("GPUDriverUpgradeFailed", "bad-1"): "pending"}


def _alerts_after_evaluation(url: str, expected: set[str]) -> list[dict]:
    """The server's active alerts once every expected alert is there (rules evaluate every second)."""
    deadline = time.monotonic() + 15
    alerts: list[dict] = []
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{url}/api/v1/alerts", timeout=5) as answer:
            alerts = json.loads(answer.read())["data"]["alerts"]
        if expected <= {a["labels"]["alertname"] for a in alerts}:
            time.sleep(1.5)  # one more evaluation round: nothing else may appear
            with urllib.request.urlopen(f"{url}/api/v1/alerts", timeout=5) as answer:
                return json.loads(answer.read())["data"]["alerts"]
        time.sleep(0.2)
    pytest.fail(
        f"the server raised {sorted(a['labels']['alertname'] for a in alerts)}, not {sorted(expected)}"
    )


def test_soak_window_is_the_stage_start_to_now(fixture_fleet) -> None:
    _fleet, plan = fixture_fleet
    stage = plan.current_stage()
    start, end = gates.soak_window(stage, datetime(2026, 11, 12, tzinfo=UTC))
    assert start == stage.started and end == datetime(2026, 11, 12, tzinfo=UTC)
    assert gates.soak_window(stage, stage.started) is None


def test_first_breach_counts_offenders_at_each_step() -> None:
    one = gates.Series({"pod": "a"}, ((60.0, 1.0), (120.0, 1.0), (180.0, 1.0)))
    two = gates.Series({"pod": "b"}, ((120.0, 1.0),))
    three = gates.Series({"pod": "c"}, ((120.0, 2.0), (180.0, 1.0)))
    assert gates.first_breach([three, one, two], allowed=2) == (120.0, one, 1.0, 3)  # the first by labels
    assert gates.first_breach([one, three], allowed=2) is None
    assert gates.first_breach([one, two], allowed=2) is None
    assert gates.first_breach([two], allowed=0) == (120.0, two, 1.0, 1)


def test_stage_nodes_select_by_the_pool_label_kube_state_metrics_exports() -> None:
    assert (
        gates.ksm_label("nvidia.com/gpu-driver-upgrade-state") == "label_nvidia_com_gpu_driver_upgrade_state"
    )
    assert gates.stage_nodes(("a", "b")) == 'max by (node) (kube_node_labels{label_gpupolicy_io_pool=~"a|b"})'


def test_an_unreachable_server_is_a_clear_error_not_a_verdict(repo: Path, capsys) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    before = {p: p.read_bytes() for p in repo.rglob("*.yaml")}
    code = main(
        [
            "upgrade",
            "promote",
            "driver-next",
            "--prometheus",
            f"http://127.0.0.1:{port}",
            "--now",
            NOW,
            "--repo",
            str(repo),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and f"Prometheus http://127.0.0.1:{port}/api/v1/rules: cannot connect" in err, err
    assert "Traceback" not in err and {p: p.read_bytes() for p in repo.rglob("*.yaml")} == before
