"""The cluster page's "free now" column: what an audit snapshot says each pool can still place, written with
`gpupolicy docs --snapshot CLUSTER=DIR --out DIR`, never into the committed pages."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support import GPUPOLICY, fleet_repo

from gpupolicy import pipeline
from gpupolicy.audit import Snapshot, free_by_pool

# The tests' own rich fleet (tests/fixtures/fleet, decision 0085): test-us and its committed page, on a fork
# too.
REPO = fleet_repo()


def node(name: str, pool: str, allocatable: dict | None = None, cordoned: bool = False) -> dict:
    found = {
        "metadata": {"name": name, "labels": {"gpupolicy.io/pool": pool}},
        "spec": {"unschedulable": True} if cordoned else {},
    }
    if allocatable is not None:
        found["status"] = {"allocatable": allocatable}
    return found


def pod(name: str, node_name: str, gpus: dict, phase: str = "Running", init: dict | None = None) -> dict:
    spec = {
        "nodeName": node_name,
        "containers": [{"name": "main", "resources": {"requests": gpus, "limits": gpus}}],
    }
    if init:
        spec["initContainers"] = [{"name": "prepare", "resources": {"requests": init, "limits": init}}]
    return {
        "metadata": {"name": name, "namespace": "nlp", "creationTimestamp": "2026-11-30T08:00:00Z"},
        "spec": spec,
        "status": {"phase": phase},
    }


def snapshot() -> Snapshot:
    """test-us: one H100 node lost a card (allocatable 7) and runs 4 + an init container's 6; the other is
    cordoned; one MIG node without allocatable (the declared share counts); an L4 pod that has finished."""
    return Snapshot(
        nodes=[
            node("h100-0", "test-h100", {"nvidia.com/gpu": "7", "cpu": "96"}),
            node("h100-1", "test-h100", {"nvidia.com/gpu": "8"}, cordoned=True),
            node("mig-0", "test-a100-mig"),
            node("l4-0", "test-l4-shared", {"nvidia.com/gpu": "16"}),
        ],
        pods=[
            pod("train-0", "h100-0", {"nvidia.com/gpu": "4"}, init={"nvidia.com/gpu": "6"}),
            pod("nb-0", "mig-0", {"nvidia.com/mig-1g.10gb": "3"}),
            pod("done-0", "l4-0", {"nvidia.com/gpu": "5"}, phase="Succeeded"),
            pod("serve-0", "l4-0", {"nvidia.com/gpu": "2"}),
            pod("lost-0", "gone", {"nvidia.com/gpu": "8"}),
        ],
    )


@pytest.fixture(scope="module")
def test_us():
    return pipeline.load_fleet(REPO).clusters["test-us"]


def test_free_counts_allocatable_less_effective_requests(test_us):
    free = free_by_pool(snapshot(), {p.name: p for p in test_us.pools})
    # 7 allocatable less max(init 6, app 4) = 1; the cordoned node adds nothing
    assert free["test-h100"] == {"nvidia.com/gpu": 1}
    # no allocatable: the pool's declared share of one node (its only node), less 3 taken
    assert free["test-a100-mig"] == {
        "nvidia.com/mig-1g.10gb": 13,
        "nvidia.com/mig-2g.20gb": 8,
        "nvidia.com/mig-3g.40gb": 8,
    }
    assert free["test-l4-shared"] == {"nvidia.com/gpu": 14}  # the finished pod frees its share


def _write_snapshot(folder: Path, snap: Snapshot) -> Path:
    folder.mkdir()
    (folder / "nodes.json").write_text(json.dumps({"items": snap.nodes}))
    (folder / "pods.json").write_text(json.dumps({"items": snap.pods}))
    return folder


def _docs(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(GPUPOLICY), "docs", "--repo", str(REPO), *args], capture_output=True, text=True, timeout=300
    )


def test_live_pages_show_free_now_and_leave_the_repository_alone(tmp_path):
    folder = _write_snapshot(tmp_path / "snap", snapshot())
    committed = (REPO / "docs/generated/clusters/test-us.md").read_text()
    result = _docs("--snapshot", f"test-us={folder}", "--out", str(tmp_path / "live"))
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "live/clusters/test-us.md").read_text()
    assert "| pool | GPU | nodes x GPUs (per zone) | mode | exposes | free now | teams | driver |" in page
    assert "| 16 GPUs | 1 GPU |" in page and "| 16 × 1/4 GPU | 14 × 1/4 GPU |" in page
    assert "snapshot taken 2026-11-30 08:00 UTC" in page
    assert "free now" not in (tmp_path / "live/clusters/prod-eu.md").read_text()  # no snapshot of it
    assert (REPO / "docs/generated/clusters/test-us.md").read_text() == committed
    assert "free now" not in committed


@pytest.mark.parametrize(
    "args, message",
    [
        (["--snapshot", "test-us=SNAP"], "--out DIR"),
        (["--snapshot", "test-us=SNAP", "--out", "GENERATED"], "only under artifacts/"),
        (["--snapshot", "nowhere=SNAP", "--out", "OUT"], "expected CLUSTER=DIR with one of"),
        (["--snapshot", "test-us=MISSING", "--out", "OUT"], "not a directory"),
    ],
)
def test_bad_live_requests_are_refused_with_a_reason(tmp_path, args, message):
    folder = _write_snapshot(tmp_path / "snap", snapshot())
    args = [
        a.replace("SNAP", str(folder))
        .replace("MISSING", str(tmp_path / "missing"))
        .replace("OUT", str(tmp_path / "out"))
        .replace("GENERATED", str(REPO / "docs/generated"))
        for a in args
    ]
    result = _docs(*args)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_malformed_snapshot_names_the_file_and_field(tmp_path):
    bad = snapshot()
    bad.nodes[0]["status"]["allocatable"]["nvidia.com/gpu"] = "many"
    folder = _write_snapshot(tmp_path / "snap", bad)
    result = _docs("--snapshot", f"test-us={folder}", "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "nodes.json" in result.stderr and "allocatable.nvidia.com/gpu" in result.stderr
