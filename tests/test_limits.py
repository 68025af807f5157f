"""The repository schemas' maxima are the bounds of gpupolicy.infra.limits (one set of numbers, one set of
sources)."""

from __future__ import annotations

import resource
import subprocess
import sys
from importlib import resources
from pathlib import Path

import yaml
from support import MINIREPO, copy_repo

from gpupolicy.infra import limits

CONSOLE_SCRIPT = Path(sys.executable).parent / "gpupolicy"


def _schema(name: str) -> dict:
    return yaml.safe_load((resources.files("gpupolicy") / "schemas" / "repo" / f"{name}.yaml").read_text())


def test_pool_schema_maxima_are_the_limits() -> None:
    spec = _schema("pool")["properties"]["spec"]["properties"]
    assert spec["gpu"]["properties"]["perNode"]["maximum"] == limits.MAX_GPUS_PER_NODE
    assert spec["zones"]["additionalProperties"]["maximum"] == limits.MAX_NODES_PER_CLUSTER
    assert spec["zones"]["maxProperties"] == limits.MAX_ZONES
    assert spec["timeSlicing"]["properties"]["replicas"]["maximum"] == limits.MAX_TIME_SLICING_REPLICAS
    assert spec["mps"]["properties"]["replicas"]["maximum"] == limits.MAX_MPS_REPLICAS
    assert spec["node"]["properties"]["cpu"]["maximum"] == limits.MAX_NODE_CPUS


def test_cluster_and_plan_schema_maxima_are_the_limits() -> None:
    assert _schema("cluster")["properties"]["spec"]["properties"]["zones"]["maxItems"] == limits.MAX_ZONES
    criteria = _schema("plan")["$defs"]["rollbackCriteria"]["properties"]
    assert criteria["maxFailedPods"]["maximum"] == limits.MAX_PODS_PER_CLUSTER
    assert criteria["maxXidErrors"]["maximum"] == limits.MAX_COUNTER


def test_the_data_limit_is_one_mebibyte() -> None:
    assert limits.MAX_OBJECT_DATA_BYTES == 1_048_576  # MaxSecretSize = 1 * 1024 * 1024


# runs in the child: a regression fails with MemoryError, not a dead machine
def _address_space_limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (3 * 1024**3, 3 * 1024**3))


def test_simulate_never_sizes_memory_by_an_absurd_node_count(tmp_path: Path) -> None:
    """Before the bounds, 10^8 nodes in one zone made `simulate` allocate nodes x GPUs and die of MemoryError.
    Now the pool fails its schema and never reaches the simulator."""
    repo = copy_repo(MINIREPO, tmp_path / "repo")
    pool = repo / "pools/mini-a100/pool.yaml"
    pool.write_text(pool.read_text().replace("local-1a: 2", "local-1a: 100000000"))
    proc = subprocess.run(
        [
            str(CONSOLE_SCRIPT),
            "simulate",
            "--repo",
            str(repo),
            "--no-plots",
            "--limit",
            "50",
            "--out",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_address_space_limit,
        check=False,
    )
    assert "MemoryError" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-2000:]
