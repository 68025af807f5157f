"""`gpupolicy new pool|team|cluster` on the generated fork fleet (tests/forkfleet.py, itself built by these
commands: cluster fra-1, pools fra-a100-train and fra-l40s-infer, teams atlas and beacon): every edit made,
validate clean after, nothing written when the edit would add an error or is refused."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from forkfleet import CLUSTER, GIT_URL
from support import run_gpupolicy

from gpupolicy import pipeline
from gpupolicy.findings import Severity

# an exclusive H100 pool in the fork's cluster, 6 of its cards for team atlas
H100_POOL = (
    "pool fra-h100-train --cluster fra-1 --gpu H100-80GB --per-node 8 --zone eu-central-1a=1"
    " --access exclusive"
    " --node-cpu 192 --node-memory 2048Gi --quota atlas=6"
).split()


def new(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return run_gpupolicy("new", *args, "--repo", str(repo))


def errors(repo: Path) -> list[str]:
    return [
        f"{f.rule} {f.path}: {f.message}"
        for f in pipeline.run(repo, use_cache=False).findings
        if f.severity == Severity.ERROR
    ]


def tree(repo: Path) -> dict[str, bytes]:
    return {p.relative_to(repo).as_posix(): p.read_bytes() for p in repo.rglob("*") if p.is_file()}


def test_new_exclusive_pool_with_quota(fork: Path) -> None:
    before = pipeline.load_fleet(fork, use_cache=False).clusters["fra-1"]
    cpu_before = {(f, q.name): q.nominal for f, q in before.cluster_queues["atlas"].quotas()}[("cpu", "cpu")]
    hard_before = {q.namespace: q.hard for q in before.namespace_quotas}
    gpus_before = int(hard_before["atlas"]["requests.nvidia.com/gpu"])
    done = new(fork, *H100_POOL)
    assert done.returncode == 0, done.stderr
    assert "validate adds no error" in done.stdout
    assert errors(fork) == []
    assert "  - ../../pools/fra-h100-train\n" in (fork / "clusters/fra-1/kustomization.yaml").read_text()
    assert "fra-h100-train" in (fork / "policies/startup-check/pools.conf").read_text()
    queue = (fork / "clusters/fra-1/queues/atlas.yaml").read_text()
    assert "- name: fra-h100-train" in queue
    fleet = pipeline.load_fleet(fork, use_cache=False)
    atlas = fleet.clusters["fra-1"].cluster_queues["atlas"]
    quotas = {(flavor, q.name): q.nominal for flavor, q in atlas.quotas()}
    # 6 GPUs; cpu and memory at the per-GPU share of a node (192/8 = 24 cpu, 2048/8 = 256Gi each) join the
    # cpu flavor, which alone covers cpu and memory (decision 0069)
    assert quotas[("fra-h100-train", "nvidia.com/gpu")] == 6
    assert ("fra-h100-train", "cpu") not in quotas
    assert quotas[("cpu", "cpu")] == cpu_before + 144
    # the namespace quota follows the queue (CAP015): it now holds the 6 new nominal GPUs too
    hard = {q.namespace: q.hard for q in fleet.clusters["fra-1"].namespace_quotas}
    assert int(hard["atlas"]["requests.nvidia.com/gpu"]) >= gpus_before + 6


def test_new_mig_pool_writes_its_layout(fork: Path) -> None:
    done = new(
        fork,
        "pool",
        "fra-b200-mig",
        "--cluster",
        "fra-1",
        "--gpu",
        "B200",
        "--per-node",
        "8",
        "--zone",
        "eu-central-1a=1",
        "--zone",
        "eu-central-1b=1",
        "--access",
        "mig",
        "--layout",
        "all-1g.23gb",
        "--mig-devices",
        "1g.23gb=7",
        "--node-cpu",
        "224",
        "--node-memory",
        "2048Gi",
        "--quota",
        "beacon=1g.23gb:14",
    )
    assert done.returncode == 0, done.stderr
    assert errors(fork) == []
    config = (fork / "policies/gpu-operator/mig-parted-config.yaml").read_text()
    assert 'all-1g.23gb:\n    - device-filter: ["0x290110DE"]' in config
    queue = (fork / "clusters/fra-1/queues/beacon.yaml").read_text()
    # a new resource is covered, and listed by every flavor of the GPU group (Kueue's rule): the L40S flavor
    # and the new one; the cpu flavor has a group of its own (decision 0069)
    assert "        - nvidia.com/mig-1g.23gb\n" in queue
    assert queue.count("- name: nvidia.com/mig-1g.23gb") == 2
    assert "requests.nvidia.com/mig-1g.23gb" in (fork / "clusters/fra-1/team-quotas.yaml").read_text()


def test_a_pool_that_adds_an_error_writes_nothing(fork: Path) -> None:
    before = tree(fork)
    # beacon is production: 32 of 32 GPUs nominal do not survive losing a node (CAP005)
    done = new(
        fork,
        "pool",
        "fra-l4-more",
        "--cluster",
        "fra-1",
        "--gpu",
        "L4",
        "--per-node",
        "4",
        "--zone",
        "eu-central-1a=2",
        "--access",
        "exclusive",
        "--node-cpu",
        "96",
        "--node-memory",
        "384Gi",
        "--quota",
        "beacon=8",
    )
    assert done.returncode == 1
    assert "CAP005" in done.stderr and "not written" in done.stderr
    assert tree(fork) == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["fra-a100-train"], "exists already"),
        (["Bad_Name"], "DNS label"),
        (["fra-x", "--gpu", "NOPE"], "not a GPU model"),
        (["fra-x", "--zone", "mars-1a=1"], "not a zone of fra-1"),
        (["fra-x", "--quota", "atlas=99"], "the pool exposes 8"),
    ],
)
def test_refusals_name_the_problem(fork: Path, args: list[str], message: str) -> None:
    name, *rest = args
    options = {
        "--cluster": "fra-1",
        "--gpu": "A100-80GB",
        "--per-node": "8",
        "--zone": "eu-central-1a=1",
        "--access": "exclusive",
        "--node-cpu": "96",
        "--node-memory": "1152Gi",
    }
    for flag, value in zip(rest[::2], rest[1::2], strict=True):
        options[flag] = value
    before = tree(fork)
    done = new(fork, "pool", name, *[word for pair in options.items() for word in pair])
    assert done.returncode == 2, done.stdout
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert tree(fork) == before


def test_new_team(fork: Path) -> None:
    done = new(fork, "team", "comet", "--cluster", "fra-1", "--tier", "training", "--workload", "training")
    assert done.returncode == 0, done.stderr
    assert errors(fork) == []
    fleet = pipeline.load_fleet(fork, use_cache=False)
    cluster = fleet.clusters["fra-1"]
    queue = cluster.cluster_queues["comet"]
    assert queue.cohort == "training" and queue.tier == "training"
    assert {q.nominal for flavor, q in queue.quotas() if flavor != "cpu"} == {0}
    assert "comet" in cluster.namespaces
    assert any(lq.name == "training" and lq.namespace == "comet" for lq in cluster.local_queues)


@pytest.mark.parametrize(
    ("name", "owner"),
    [
        ("kube-system", "Kubernetes"),
        ("default", "Kubernetes"),
        ("kube-gpu", "Kubernetes"),
        ("flux-system", "the sync engine"),
        ("argocd", "the sync engine"),
        ("monitoring", "the monitoring stack"),
    ],
)
def test_a_team_is_never_given_a_namespace_the_platform_owns(fork: Path, name: str, owner: str) -> None:
    before = tree(fork)
    done = new(fork, "team", name, "--cluster", "fra-1", "--tier", "training", "--workload", "training")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"team name '{name}': {owner} owns that namespace" in done.stderr and "RBAC005" in done.stderr
    assert tree(fork) == before


def test_dry_run_prints_the_diff_and_writes_nothing(fork: Path) -> None:
    before = tree(fork)
    done = new(
        fork,
        "team",
        "comet",
        "--cluster",
        "fra-1",
        "--tier",
        "production",
        "--workload",
        "inference",
        "--dry-run",
    )
    assert done.returncode == 0, done.stderr
    assert "+++ b/policies/teams/comet/namespace.yaml" in done.stdout
    assert "would write" in done.stdout
    assert tree(fork) == before


def test_a_new_pool_regenerates_the_committed_pages_it_appears_in(fork: Path) -> None:
    assert run_gpupolicy("docs", "--repo", str(fork)).returncode == 0  # the fork commits its generated pages
    done = new(fork, *H100_POOL)
    assert done.returncode == 0, done.stderr
    assert "docs/generated/pools/fra-h100-train.md" in done.stdout
    checked = run_gpupolicy("validate", "--repo", str(fork), "--no-cache")
    assert "DOC005" not in checked.stdout, checked.stdout
    assert run_gpupolicy("docs", "--check", "--repo", str(fork)).returncode == 0


def test_new_cluster_takes_teams_and_pools(fork: Path) -> None:
    """A second cluster from nothing: versions and Git URL from the first, then its first team (no queue of
    the tier to model on) and its first pool with quota for it; validate clean after each step."""
    done = new(
        fork,
        "cluster",
        "fra-2",
        "--environment",
        "test",
        "--region",
        "eu-central-1",
        "--zone",
        "eu-central-1a",
    )
    assert done.returncode == 0, done.stderr
    assert errors(fork) == []
    cluster_yaml = (fork / "clusters/fra-2/cluster.yaml").read_text()
    first = pipeline.load_fleet(fork, use_cache=False).clusters[CLUSTER].facts
    assert f"gpuOperatorVersion: {first.gpu_operator_version}\n" in cluster_yaml
    assert f"url: {GIT_URL}\n" in (fork / "clusters/fra-2/flux/flux-system/gotk-sync.yaml").read_text()
    done = new(fork, "team", "comet", "--cluster", "fra-2", "--tier", "training", "--workload", "training")
    assert done.returncode == 0, done.stderr
    done = new(
        fork,
        "pool",
        "fra2-h100",
        "--cluster",
        "fra-2",
        "--gpu",
        "H100-80GB",
        "--per-node",
        "8",
        "--zone",
        "eu-central-1a=1",
        "--access",
        "exclusive",
        "--node-cpu",
        "192",
        "--node-memory",
        "2048Gi",
        "--quota",
        "comet=4",
    )
    assert done.returncode == 0, done.stderr
    assert errors(fork) == []
    cluster = pipeline.load_fleet(fork, use_cache=False).clusters["fra-2"]
    comet = cluster.cluster_queues["comet"]
    assert comet.cohort == "training"
    assert {(f, q.name): q.nominal for f, q in comet.quotas()}[("fra2-h100", "nvidia.com/gpu")] == 4
    # the namespace quota is the cluster's own patch (team-quotas.yaml, made by `new team`), not the shared
    # base
    assert 'requests.nvidia.com/gpu: "4"' in (fork / "clusters/fra-2/team-quotas.yaml").read_text()
    assert 'requests.nvidia.com/gpu: "0"' in (fork / "policies/teams/comet/resourcequota.yaml").read_text()


def test_a_cluster_that_adds_an_error_writes_nothing(fork: Path) -> None:
    before = tree(fork)
    done = new(
        fork,
        "cluster",
        "fra-2",
        "--environment",
        "test",
        "--region",
        "eu-central-1",
        "--zone",
        "eu-central-1a",
        "--kubernetes-version",
        "latest",
    )
    assert done.returncode == 1
    assert "SCHEMA005" in done.stderr and "not written" in done.stderr
    assert tree(fork) == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["fra-1"], "exists already"),
        (["fra-2", "--environment", "prod"], "invalid choice"),
        (["fra-2", "--gpu-operator-version", "v0.1"], "not a GPU Operator release"),
    ],
)
def test_cluster_refusals_name_the_problem(fork: Path, args: list[str], message: str) -> None:
    name, *rest = args
    options = {"--environment": "test", "--region": "eu-central-1", "--zone": "eu-central-1a"}
    for flag, value in zip(rest[::2], rest[1::2], strict=True):
        options[flag] = value
    before = tree(fork)
    done = new(fork, "cluster", name, *[word for pair in options.items() for word in pair])
    assert done.returncode == 2, done.stdout
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert tree(fork) == before


def test_an_argo_cd_cluster_with_no_pools_joins_a_fleet_whose_argo_cd_clusters_have_them(
    tmp_path: Path,
) -> None:
    """The Argo CD component's patch for the GPU Operator's objects (group nvidia.com) selects nothing in a
    cluster with no pool yet; it is not dead while another cluster including it has them (KUST007)."""
    from support import copy_repo, fleet_repo

    repo = copy_repo(fleet_repo(), tmp_path / "repo")
    done = new(
        repo,
        "cluster",
        "lab-1",
        "--environment",
        "test",
        "--region",
        "eu-west-1",
        "--zone",
        "eu-west-1a",
        "--sync-engine",
        "argocd",
        "--kubernetes-version",
        "1.33",
    )
    assert done.returncode == 0, done.stderr
    assert errors(repo) == []
