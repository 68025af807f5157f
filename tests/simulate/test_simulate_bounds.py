"""`gpupolicy simulate` on clusters it must not replay (issue 13, items 5 and 8): a cluster over Kubernetes'
node limit is refused before any per-GPU state is built (the simulator runs no rules, so POOL004 does not
protect it), and a cluster with no valid pool is a message, not a ZeroDivisionError. Both exit 2."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
from simhelpers import build_cluster
from support import MINIREPO

from gpupolicy.cli import main
from gpupolicy.errors import ToolError
from gpupolicy.infra.limits import MAX_NODES_PER_CLUSTER
from gpupolicy.simulate import placement
from gpupolicy.simulate.jobs import Job
from gpupolicy.simulate.policy import SimPolicy, assign_queues, baseline, from_cluster

POOL_FILE = "pools/mini-a100/pool.yaml"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    target = tmp_path / "repo"
    shutil.copytree(MINIREPO, target, symlinks=True)
    return target


def _set_zones(repo: Path, zones: str) -> None:
    pool = repo / POOL_FILE
    pool.write_text(pool.read_text().replace("zones: {local-1a: 2}", f"zones: {zones}"))


def _simulate(repo: Path, tmp_path: Path) -> list[str]:
    return [
        "simulate",
        "--repo",
        str(repo),
        "--cluster",
        "mini",
        "--limit",
        "20",
        "--no-plots",
        "--out",
        str(tmp_path / "report"),
    ]


def _no_per_gpu_state(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if the engine starts building per-node, per-card bookkeeping."""

    def refuse(*_args, **_kwargs):
        raise AssertionError("per-GPU state was built for a cluster the simulator should refuse")

    monkeypatch.setattr(placement.PoolState, "__init__", refuse)


def test_minirepo_simulates(repo: Path, tmp_path: Path) -> None:
    """The baseline the cases below break: the unchanged fixture replays."""
    assert main(_simulate(repo, tmp_path)) in (0, 1)


def test_cluster_over_the_node_limit_is_refused(repo, tmp_path, monkeypatch, capsys) -> None:
    _set_zones(repo, "{local-1a: 5000, local-1b: 5000}")  # each zone within pool.yaml's bound
    _no_per_gpu_state(monkeypatch)
    assert main(_simulate(repo, tmp_path)) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert POOL_FILE in captured.err and "10000 nodes" in captured.err
    assert f"at most {MAX_NODES_PER_CLUSTER} nodes" in captured.err


def test_cluster_without_a_valid_pool_is_a_message(repo, tmp_path, capsys) -> None:
    _set_zones(repo, "{local-1a: 100000000}")  # over the schema's maximum: the only pool is dropped
    assert main(_simulate(repo, tmp_path)) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "ZeroDivisionError" not in captured.err
    assert "cluster mini has no valid pool to simulate" in captured.err


def test_policy_refuses_a_cluster_over_the_node_limit(monkeypatch) -> None:
    cluster = build_cluster()
    huge = dataclasses.replace(cluster.pools[0], zones={"zone-a": MAX_NODES_PER_CLUSTER, "zone-b": 1})
    cluster = dataclasses.replace(cluster, pools=[huge, *cluster.pools[1:]])
    _no_per_gpu_state(monkeypatch)
    for build in (from_cluster, baseline):
        with pytest.raises(ToolError, match=rf"pools/train/pool.yaml \({MAX_NODES_PER_CLUSTER + 1}\)"):
            build(cluster)


def test_policy_at_the_node_limit_is_accepted() -> None:
    cluster = build_cluster()
    spare = MAX_NODES_PER_CLUSTER - sum(pool.nodes for pool in cluster.pools[1:])
    exact = dataclasses.replace(cluster.pools[0], zones={"zone-a": spare})
    cluster = dataclasses.replace(cluster, pools=[exact, *cluster.pools[1:]])
    assert from_cluster(cluster).pools["train"].nodes == spare


def test_policy_without_pools_or_queues_is_refused() -> None:
    cluster = build_cluster()
    with pytest.raises(ToolError, match="cluster sim-test has no valid pool to simulate"):
        from_cluster(dataclasses.replace(cluster, pools=[]))
    with pytest.raises(ToolError, match="cluster sim-test has no valid pool to simulate"):
        baseline(dataclasses.replace(cluster, pools=[]))
    with pytest.raises(ToolError, match="no ClusterQueue with GPU quota"):
        from_cluster(dataclasses.replace(cluster, cluster_queues={}))


def test_assign_queues_without_queues_is_a_value_error() -> None:
    """A hand-built policy with no queue: the message the command prints, not a ZeroDivisionError."""
    empty = SimPolicy(name="proposed", pools={}, queues={})
    with pytest.raises(ValueError, match="no queue to send jobs to"):
        assign_queues([Job("j", 0, 60, gpus=1, team="team-x")], empty)
