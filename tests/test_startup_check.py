"""The GPU startup check (policies/startup-check/check.sh) against a stand-in nvidia-smi, under dash and bash.

Each folder of tests/startupcheck/cases/ records what nvidia-smi prints for one situation on a node; the
stand-in (tests/startupcheck/nvidia-smi) replays it. The check's sleep is replaced by a recorder, so the
retries and their backoff are checked without waiting. The settings table of these cases is
tests/startupcheck/pools.conf; the shipped one (policies/startup-check/pools.conf) must say what pool.yaml
says.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from support import fleet_repo

from gpupolicy.domain import startupcheck
from gpupolicy.infra.yamlload import Document
from gpupolicy.model import StartupCheck
from gpupolicy.pipeline.build import pool_from

HERE = Path(__file__).resolve().parent / "startupcheck"
REPO = HERE.parents[1]
SCRIPT = REPO / "policies" / "startup-check" / "check.sh"
SHELLS = [shell for shell in ("dash", "bash") if shutil.which(shell)]
H100 = "GPU-8f1c0a5e-1111-4a4e-9d2b-3c1b2a000001 (NVIDIA H100 80GB HBM3)"

# case -> (exit status, fragments the last line must hold, sleeps between attempts)
CASES = {
    "free-gpu": (0, ["ok: 1 device(s) free (settings of H100 exclusive pools)"], []),
    "foreign-process": (
        1,
        [
            f"busy: device {H100}: 40960 MiB of 81559 MiB in use, more than the 5% (4077 "
            "MiB) "
            "allowed on H100 exclusive pools, held by pid 4242 (python3, 40950 MiB);",
            "runbook: https://runbooks.test/GPUStartupCheckFailed/",
        ],
        ["5", "10"],
    ),
    "memory-nearly-full": (
        1,
        [f"busy: device {H100}: 80100 MiB of 81559 MiB in use", "held by a process this pod cannot see"],
        ["5", "10"],
    ),
    "busy-then-free": (0, ["ok: 1 device(s) free (settings of H100 exclusive pools)"], ["5"]),
    "mig-instance-busy": (
        1,
        [
            "device GPU-1d2e3f4a-4444-4b5c-9d6e-7f8a9b000004/gi9 (NVIDIA A100-SXM4-80GB "
            "MIG): 9200 MiB of 9728 MiB in use, more than the 5% (486 MiB) allowed on A100 mig pools, "
            "held by pid 31337 (python, 9150 MiB)"
        ],
        ["5"],
    ),
    "mig-instance-free": (0, ["ok: 1 device(s) free (settings of A100 mig pools)"], []),
    "driver-not-loaded": (
        2,
        [
            "cannot check: nvidia-smi cannot read the GPUs: NVIDIA-SMI has failed because "
            "it couldn't communicate with the NVIDIA driver.",
            "runbook: ",
        ],
        ["5", "10", "15"],
    ),
    "time-sliced-share-free": (0, ["ok: 1 device(s) free (settings of L4 time-sliced pools)"], []),
    "time-sliced-share-taken": (
        1,
        [
            "device GPU-4b7d9e21-2222-4c1f-8e3a-5d6e7f000002 (NVIDIA L4): 3534 MiB "
            "free of 23034 MiB, less than one replica's share, 25% (5758 MiB), on L4 time-sliced "
            "pools"
        ],
        ["5"],
    ),
    "skipped-pool": (0, ["skipped: startupCheck.skip is set for L40S exclusive pools"], []),
}


def _run(shell: str, case: str, tmp_path: Path, **env: str) -> tuple[int, list[str], list[str]]:
    state = tmp_path / "state"
    state.mkdir()
    sleeps = tmp_path / "sleeps"
    recorder = tmp_path / "sleep"
    recorder.write_text(f'#!/bin/sh\necho "$1" >> {sleeps}\n')
    recorder.chmod(0o755)
    environment = {
        "PATH": f"{HERE}:{os.environ['PATH']}",
        "NVSMI_CASE": str(HERE / "cases" / case),
        "NVSMI_STATE": str(state),
        "GPU_CHECK_POOLS": str(HERE / "pools.conf"),
        "GPU_CHECK_SLEEP": str(recorder),
        "GPU_CHECK_RUNBOOK": "https://runbooks.test/GPUStartupCheckFailed/",
        **env,
    }
    done = subprocess.run([shell, str(SCRIPT)], env=environment, capture_output=True, text=True, timeout=30)
    waited = sleeps.read_text().split() if sleeps.exists() else []
    return done.returncode, done.stdout.splitlines(), waited


def test_every_case_has_a_recording() -> None:
    assert sorted(CASES) == sorted(p.name for p in (HERE / "cases").iterdir())


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_verdict_and_message(shell: str, case: str, tmp_path: Path) -> None:
    status, lines, waited = _run(shell, case, tmp_path)
    expected_status, fragments, expected_sleeps = CASES[case]
    assert status == expected_status, lines
    assert all(fragment in lines[-1] for fragment in fragments), lines[-1]
    assert waited == expected_sleeps
    assert len(lines) == len(expected_sleeps) + 1  # one line per failed attempt, then the verdict


def test_named_pool_wins_over_the_product(tmp_path: Path) -> None:
    # GPU_CHECK_POOL picks the line by name: here the L40S pool that skips, for an H100 device.
    status, lines, _ = _run(SHELLS[0], "foreign-process", tmp_path, GPU_CHECK_POOL="test-l40s-skip")
    assert status == 0 and lines[-1].endswith("skipped: startupCheck.skip is set for pool test-l40s-skip")


def test_without_a_table_the_fleet_defaults_apply(tmp_path: Path) -> None:
    status, lines, waited = _run(
        SHELLS[0], "foreign-process", tmp_path, GPU_CHECK_POOLS=str(tmp_path / "none")
    )
    assert status == 1 and "allowed on no pool line (fleet defaults)" in lines[-1]
    assert waited == ["5", "10", "15"]


def _repository_pools() -> list:
    """The pools of the tests' own rich fleet (support.fleet_repo), the same on a fork."""
    root, pools = fleet_repo(), []
    for path in sorted((root / "pools").glob("*/pool.yaml")):
        data = yaml.safe_load(path.read_text())
        pools.append(pool_from(Document(path=str(path.relative_to(root)), index=0, line=1, data=data)))
    return pools


def test_table_lines_read_back_as_each_pools_fields() -> None:
    # POOL005 compares the shipped table with pool.yaml; this checks the writer and the reader agree.
    pools = _repository_pools()
    table = startupcheck.read_table("\n".join(startupcheck.table_lines(pools)))
    assert table == {pool.name: startupcheck.table_fields(pool) for pool in pools}


def test_table_with_rewrites_one_line_and_keeps_the_rest() -> None:
    shipped = (fleet_repo() / "policies/startup-check/pools.conf").read_text()
    # the shipped table is exactly what the writer writes
    assert startupcheck.table_with(shipped, {}) == shipped
    pools = {p.name: p for p in _repository_pools()}
    shared = startupcheck.table_fields(dataclasses.replace(pools["us-h100-train"], time_slicing_replicas=4))
    rewritten = startupcheck.table_with(shipped, {"us-h100-train": shared})
    assert startupcheck.read_table(rewritten) == startupcheck.read_table(shipped) | {"us-h100-train": shared}
    assert (
        "  us-h100-train         time-sliced  H100     false  3        5               5                 "
        "    25\n"
    ) in rewritten
    assert rewritten.splitlines()[:3] == shipped.splitlines()[:3]  # the notes above the header stay
    with pytest.raises(ValueError, match="below the column header"):
        startupcheck.table_with(shipped + "# a note\n", {})
    with pytest.raises(ValueError, match="8 columns"):
        startupcheck.table_with(shipped + "  extra  exclusive\n", {})


def test_pool_settings_and_defaults() -> None:
    pools = {p.name: p for p in _repository_pools()}
    assert pools["eu-l4-shared"].memory_share_percent == 25
    assert pools["us-h100-train"].memory_share_percent == 0
    assert pools["us-h100-train"].startup_check == StartupCheck()


def test_product_words() -> None:
    assert [startupcheck.product(m) for m in ("A100-80GB", "H200-141GB", "L4", "L40S")] == [
        "A100",
        "H200",
        "L4",
        "L40S",
    ]


GPU = {"limits": {"nvidia.com/gpu": 2}}


def _check(amount: int = 2, resource: str = "nvidia.com/gpu") -> dict:
    return {"name": startupcheck.CONTAINER_NAME, "resources": {"limits": {resource: amount}}}


@pytest.mark.parametrize(
    "spec, fragment",
    [
        ({"containers": [{"name": "a", "resources": GPU}]}, "no init container gpu-startup-check"),
        (
            {"initContainers": [{"name": "x"}, _check()], "containers": [{"name": "a", "resources": GPU}]},
            "is not the first init container",
        ),
        (
            {"initContainers": [_check(1)], "containers": [{"name": "a", "resources": GPU}]},
            "requests nvidia.com/gpu: 1 but the pod's containers request nvidia.com/gpu: 2",
        ),
        (
            {
                "initContainers": [_check(2)],
                "containers": [
                    {"name": "a", "resources": GPU},
                    {"name": "b", "resources": {"limits": {"nvidia.com/mig-1g.10gb": 1}}},
                ],
            },
            "nvidia.com/mig-1g.10gb: 1",
        ),
    ],
)
def test_problems_name_what_is_wrong(spec: dict, fragment: str) -> None:
    assert any(fragment in problem for problem in startupcheck.problems(spec))


def test_check_sums_app_containers_and_sidecars() -> None:
    sidecar = {"name": "s", "restartPolicy": "Always", "resources": {"limits": {"nvidia.com/gpu": 1}}}
    spec = {"initContainers": [_check(3), sidecar], "containers": [{"name": "a", "resources": GPU}]}
    assert startupcheck.problems(spec) == []
    assert startupcheck.problems({"containers": [{"name": "cpu"}]}) == []


def test_no_cluster_of_the_fleet_serves_mutating_admission_policy() -> None:
    versions = {
        yaml.safe_load(p.read_text())["spec"]["kubernetesVersion"]
        for p in (REPO / "clusters").glob("*/cluster.yaml")
    }
    assert versions <= set(startupcheck.MUTATING_POLICY)  # every version of the fleet is a known fact
    assert {startupcheck.mechanism(v) for v in versions} == {"require"}
    assert startupcheck.mechanism("1.99") == "require"  # unknown: the validating policy, never a guess
