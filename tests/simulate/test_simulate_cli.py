"""`gpupolicy simulate` and `gpupolicy audit` exit codes: 0 clean, 1 findings, 2 could not run."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from support import fleet_repo

from gpupolicy import audit
from gpupolicy.cli import main

FIXTURE = Path(__file__).parent / "fixtures" / "snapshot-test-us"
# The tests' own rich fleet (tests/fixtures/fleet, decision 0085), the same on a fork.
REPO = fleet_repo()
HAS_FLEET = (REPO / "clusters" / "test-us" / "cluster.yaml").is_file()
needs_fleet = pytest.mark.skipif(not HAS_FLEET, reason="the reference fleet (clusters/test-us) is absent")


def _simulate(out: Path, *args: str) -> int:
    """`gpupolicy simulate` on the tests' fleet, its report in `out`."""
    return main(["simulate", "--repo", str(REPO), "--out", str(out), *args])


@needs_fleet
def test_simulate_runs_with_no_trace_argument(tmp_path, capsys):
    code = _simulate(tmp_path, "--cluster", "prod-eu")
    assert code in (0, 1)
    report = (tmp_path / "report.md").read_text()
    assert "| GPU allocation" in report and "wait p95" in report
    # what of the Kueue Configuration the replay applies: the fixture fleet sets neither (Kueue's defaults)
    assert "waitForPodsReady timeout 30 min; fair sharing off" in report
    assert (tmp_path / "allocation.png").stat().st_size > 1000
    assert (tmp_path / "wait-by-tier.png").is_file()
    assert "baseline" in capsys.readouterr().out


@needs_fleet
@pytest.mark.parametrize("enabled", [True, False], ids=["collector on", "collector off"])
def test_simulate_runs_with_the_collector_paused_and_leaves_it_as_it_was(tmp_path, monkeypatch, enabled):
    """The command builds a large heap with no cycles (simulate/collector.py): the cyclic collector is off
    from reading the trace to writing the report, and as it was once the command returns."""
    import gc

    from gpupolicy.simulate import traces

    seen = []
    read_trace = traces.read_trace
    monkeypatch.setattr(traces, "read_trace", lambda *a: seen.append(gc.isenabled()) or read_trace(*a))
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        code = _simulate(tmp_path, "--cluster", "test-us", "--limit", "20", "--no-plots")
        assert code in (0, 1) and seen == [False] and gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


@needs_fleet
def test_simulate_json_with_failures(tmp_path, capsys):
    code = _simulate(
        tmp_path,
        *("--cluster", "test-us", "--limit", "150", "--no-plots", "--fail-nodes", "test-h100:1@7200+2h"),
        *("--format", "json"),
    )
    data = json.loads(capsys.readouterr().out)
    assert data["proposed"]["lost_to_failures_gpu_hours"] == pytest.approx(16.0)
    assert data["kueue"] == {
        "wait_for_pods_ready": {"timeout_seconds": 1800, "block_admission": False},
        "fair_sharing": None,
        "not_modelled": [],
    }
    assert code == (1 if data["proposed"]["never_scheduled"] else 0)


@needs_fleet
@pytest.mark.parametrize(
    "extra, message",
    [
        (["--fail-nodes", "nonsense"], "POOL:COUNT@TIME"),
        (["--fail-nodes", "no-such-pool:1@10"], "no pool 'no-such-pool'"),
        (["--cluster", "nowhere"], "nowhere"),
        (["--trace", "/nonexistent/trace.csv"], "no such trace file"),
        (["--map", "team-without-queue"], "TEAM=QUEUE"),
        (["--map", "a=x", "--map", "a=y"], "--map sends team a to both x and y"),  # was: y, silently
        (["--checkpoint", "trainig=2h"], "no job is of the kind 'trainig'"),  # a typo, which changed nothing
    ],
)
def test_simulate_usage_errors_exit_2(tmp_path, capsys, extra, message):
    code = _simulate(tmp_path, "--no-plots", *extra)
    assert code == 2
    assert message in capsys.readouterr().err


@needs_fleet
def test_audit_fixture_has_findings(tmp_path, capsys):
    trace = tmp_path / "exported.csv"
    code = main(
        [
            "audit",
            "--repo",
            str(REPO),
            "--snapshot",
            str(FIXTURE),
            "--cluster",
            "test-us",
            "--now",
            "2025-06-01T12:00:00Z",
            "--export-trace",
            str(trace),
        ]
    )
    assert code == 1
    out = capsys.readouterr().out
    assert "GPU pods without a queue label: 1" in out and "Pending workloads: 1" in out
    # the exported trace replays
    assert _simulate(tmp_path / "r", "--cluster", "test-us", "--trace", str(trace), "--no-plots") in (0, 1)


@needs_fleet
def test_audit_clean_snapshot_exits_0(tmp_path, capsys):
    from gpupolicy.pipeline import load_fleet

    nodes = []
    for pool in load_fleet(REPO, ["test-us"]).clusters["test-us"].pools:
        for i in range(pool.nodes):
            labels = {**pool.node_labels, "nvidia.com/gpu.count": str(pool.gpus_per_node)}
            taints = [{"key": t.key, "value": t.value, "effect": t.effect} for t in pool.taints]
            nodes.append(
                {"metadata": {"name": f"{pool.name}-{i}", "labels": labels}, "spec": {"taints": taints}}
            )
    pod = {
        "metadata": {"namespace": "nlp", "name": "p", "labels": {"kueue.x-k8s.io/queue-name": "nlp"}},
        "spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
        "status": {"phase": "Running"},
    }
    (tmp_path / "nodes.json").write_text(json.dumps({"items": nodes}))
    (tmp_path / "pods.json").write_text(json.dumps({"items": [pod]}))
    code = main(
        [
            "audit",
            "--repo",
            str(REPO),
            "--snapshot",
            str(tmp_path),
            "--cluster",
            "test-us",
            "--format",
            "json",
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert data["issues"] == [] and code == 0
    assert data["gpus_by_queue"] == {"nlp/nlp": {"gpus": 1.0, "exact": "1"}}


@needs_fleet
def test_audit_compares_a_snapshot_with_the_cluster_its_nodes_belong_to(capsys):
    """Without --cluster, test-us's snapshot is not reported as missing every node of prod-eu and prod-us."""
    code = main(["audit", "--repo", str(REPO), "--snapshot", str(FIXTURE), "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1 and data["compared_with"] == {
        "cluster": "test-us",
        "why": "its nodes carry them; --cluster NAME overrides",
    }
    drift = [issue["message"] for issue in data["issues"] if issue["kind"] == "pool-drift"]
    assert drift and not any(name in message for message in drift for name in ("eu-", "us-h100", "us-a100"))


def test_audit_context_without_kubernetes_package_exits_2(capsys, monkeypatch):
    for name in [m for m in sys.modules if m == "kubernetes" or m.startswith("kubernetes.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "kubernetes", None)  # `import kubernetes` now raises ImportError
    assert main(["audit", "--repo", str(REPO), "--context", "prod"]) == 2
    assert "needs the `kubernetes` Python package" in capsys.readouterr().err


def test_audit_refuses_a_now_before_the_snapshot_and_never_ages_a_workload_below_zero(tmp_path, capsys):
    """--now earlier than the snapshot's newest timestamp aged a pending workload -485,767 hours."""
    trace = tmp_path / "exported.csv"
    base = ["audit", "--repo", str(REPO), "--snapshot", str(FIXTURE), "--cluster", "test-us"]
    assert main([*base, "--now", "1970-01-01T00:00:00Z", "--export-trace", str(trace)]) == 2
    err = capsys.readouterr().err
    assert "--now 1970-01-01T00:00:00Z is before the snapshot's newest timestamp (2025-06-01T10:00:05Z)" in (
        err
    )
    assert not trace.exists()
    report = audit.audit(audit.load_snapshot(FIXTURE), {}, datetime(2025, 6, 1, 6, tzinfo=UTC))  # before both
    assert report.pending and all(item.age_hours == 0.0 for item in report.pending)  # a clock that lags


@pytest.mark.parametrize("option", [["--window", "1h"], ["--timeout", "5"], ["--queue-label", "team"]])
def test_audit_refuses_history_options_without_prometheus(capsys, option):
    """They shape the --prometheus history export only; with a snapshot they used to be ignored, silently."""
    base = ["audit", "--repo", str(REPO), "--snapshot", str(FIXTURE), "--cluster", "test-us"]
    assert main([*base, *option]) == 2
    assert "--window, --queue-label, --timeout and --prometheus-token-file go with --prometheus" in (
        capsys.readouterr().err
    )


def test_audit_bad_snapshot_exits_2(tmp_path, capsys):
    assert main(["audit", "--repo", str(REPO), "--snapshot", str(tmp_path / "missing")]) == 2
    assert "not a directory" in capsys.readouterr().err
