"""GPU Operator chart upgrades in stages, on a git copy of the repository: a plan takes the chart from v26.3.3
to v26.7.0 on test-us, then prod-eu (Argo CD), then prod-us; promote writes each cluster's gpuOperatorVersion
and its chart pin (clusters/<name>/gpu-operator-chart.yaml) in one transaction, and rollback restores every
byte."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from prometheus_server import healthy_prometheus
from support import REPO as SHIPPED
from support import add_signing_keys, copy_repo, fleet_repo, git

from gpupolicy import docsgen, pipeline
from gpupolicy.cli import main
from gpupolicy.docsgen import upgrades as upgrades_page
from gpupolicy.domain import catalog
from gpupolicy.upgrade import plans as upgrades

PLAN = "gpu-operator-chart-again"  # the shipped gpu-operator-v26-3-to-v26-7 is finished history
FROM, TO = "v26.3.3", "v26.7.0"
SHARED_DRIVER = "535.309.01"
# The tests' own rich fleet (tests/fixtures/fleet), not whatever fleet this repository holds (decision 0085).
REPO = fleet_repo()
CLUSTERS = ("test-us", "prod-eu", "prod-us")
APPROVER = ("Amara Okafor", "amara.okafor@gpu-platform.example.com")  # platform-oncall in approvers.yaml
PLAN_TEXT = f"""# Staged GPU Operator chart upgrade: the test cluster, then prod-eu, then prod-us.
apiVersion: gpupolicy/v1
kind: RolloutPlan
metadata:
  name: {PLAN}
spec:
  component: gpu-operator
  from: {FROM}
  to: {TO}
  stages:
    - name: test
      phase: test
      planned: "2026-12-01"
      minimumSoak: 48h
      approvers: [platform-oncall]
      select:
        - cluster: test-us
    - name: canary
      phase: limited
      planned: "2026-12-03"
      minimumSoak: 72h
      approvers: [platform-oncall]
      select:
        - cluster: prod-eu
    - name: fleet
      phase: full
      planned: "2026-12-07"
      minimumSoak: 24h
      approvers: [platform-oncall, serving-lead]
      select:
        - cluster: prod-us
  rollback:
    target: {FROM}
    criteria:
      silentAlerts: [GPUOperatorDaemonSetNotReady, GPUDriverUpgradeFailed]
      window: 1h
"""


def _git(repo: Path, *args: str) -> str:
    """git as the approver; after `init`, every person of the approvers file gets a signing key (approvals are
    signatures, decision 0063) and the approver's commits are signed."""
    name, email = APPROVER
    output = git(repo, *args, name=name, email=email)
    if args[:1] == ("init",):
        add_signing_keys(repo)
    return output


def _snapshot(root: Path) -> dict[str, bytes]:
    # the generated pages are left out: promote regenerates them after its edits (DOC005), and what they say
    # is checked by `docs --check`, not here
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
        and ".git" not in p.relative_to(root).parts
        and not p.relative_to(root).as_posix().startswith("docs/generated/")
    }


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    """The repository with every cluster on the chart the plan starts from (cluster.yaml and pin alike), every
    pool on 535.309.01 (the one driver both v26.3.3 and v26.7.0 list, so the rollback target supports it too:
    UPG015), the driver rollout set aside (it targets a driver v26.3.3 does not list), and the operator
    plan."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    target = copy_repo(REPO, tmp_path / "repo")
    for cluster in CLUSTERS:
        for name in ("cluster.yaml", "gpu-operator-chart.yaml"):
            path = target / "clusters" / cluster / name
            text = path.read_text()
            assert TO in text, path
            path.write_text(text.replace(TO, FROM))
    for driver in sorted((target / "pools").glob("*/nvidiadriver.yaml")):
        text = driver.read_text()
        driver.write_text(
            text.replace('"580.173.02"', f'"{SHARED_DRIVER}"').replace('"595.91.07"', f'"{SHARED_DRIVER}"')
        )
    (target / "policies/upgrades/driver-r580-to-r595.yaml").unlink()
    (target / f"policies/upgrades/{PLAN}.yaml").write_text(PLAN_TEXT)
    _git(target, "init", "-q")
    _git(target, "add", "-A")
    _git(target, "commit", "-q", "-m", "operator rollout plan")
    return target


def _upgrade(repo: Path, capsys, *args: str) -> tuple[int, str]:
    code = main(["upgrade", *args, "--repo", str(repo)])
    captured = capsys.readouterr()
    print(f"--- gpupolicy upgrade {' '.join(args)}: exit {code}\n{captured.out}{captured.err}")
    return code, captured.out + captured.err


def _upg_findings(repo: Path) -> list:
    return [f for f in pipeline.run(repo).findings if f.rule.startswith("UPG")]


def test_operator_plan_status_promote_rollback_round_trip(repo: Path, capsys, monkeypatch) -> None:
    # the rollout is replayed in December 2026 (--now); UPG016 must see the same clock, not today's
    monkeypatch.setattr(upgrades, "now_utc", lambda: datetime(2026, 12, 10, tzinfo=UTC))
    assert not _upg_findings(repo)
    before = _snapshot(repo)

    code, status = _upgrade(repo, capsys, "status", PLAN, "--now", "2026-12-01T09:00:00Z")
    assert code == 0
    assert f"{PLAN} (policies/upgrades/{PLAN}.yaml): gpu-operator {FROM} -> {TO}" in status
    assert "next step: promote stage test: ready" in status

    code, first = _upgrade(repo, capsys, "promote", PLAN, "--now", "2026-12-01T09:00:00Z")
    assert code == 0
    assert "+  gpuOperatorVersion: v26.7.0" in first and "b/clusters/test-us/gpu-operator-chart.yaml" in first
    promoted = _snapshot(repo)
    assert sorted(path for path, data in promoted.items() if data != before[path]) == [
        "clusters/test-us/cluster.yaml",
        "clusters/test-us/gpu-operator-chart.yaml",
        f"policies/upgrades/{PLAN}.yaml",
    ]
    assert not _upg_findings(repo), "promote left the pin and cluster.yaml apart"
    _git(repo, "commit", "-q", "-am", "promote test")
    after_test = _snapshot(repo)

    with healthy_prometheus(repo.parent / "prom", repo, PLAN, "2026-12-03T10:00:00Z") as url:
        code, second = _upgrade(
            repo, capsys, "promote", PLAN, "--now", "2026-12-03T10:00:00Z", "--prometheus", url
        )
    assert code == 0 and "b/clusters/prod-eu/gpu-operator-chart.yaml" in second
    assert (
        "+  value: v26.7.0" in second
        and "targetRevision" in (repo / "clusters/prod-eu/gpu-operator-chart.yaml").read_text()
    )
    assert not _upg_findings(repo)
    _git(repo, "commit", "-q", "-am", "promote canary")

    code, status = _upgrade(repo, capsys, "status", PLAN, "--now", "2026-12-04T10:00:00Z")
    assert "2. canary [limited] IN PROGRESS" in status and "prod-eu  v26.7.0      152 GPUs  ok" in status
    assert "prod-us  v26.3.3      152 GPUs  ok" in status

    assert _upgrade(repo, capsys, "rollback", PLAN)[0] == 0
    assert _snapshot(repo) == after_test  # the canary undone, byte for byte
    _git(repo, "commit", "-q", "-am", "roll back canary")
    assert _upgrade(repo, capsys, "rollback", PLAN)[0] == 0
    assert _snapshot(repo) == before  # and the test stage too


def test_promote_refuses_a_cluster_whose_chart_is_not_pinned(repo: Path, capsys) -> None:
    kustomization = repo / "clusters/test-us/kustomization.yaml"
    text = kustomization.read_text()
    kustomization.write_text(
        text.replace("  - path: gpu-operator-chart.yaml\n", "  - path: gpu-operator-pin.yaml\n")
    )
    (repo / "clusters/test-us/gpu-operator-chart.yaml").rename(
        repo / "clusters/test-us/gpu-operator-pin.yaml"
    )
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "pin under another name")
    before = _snapshot(repo)
    code, output = _upgrade(repo, capsys, "promote", PLAN, "--now", "2026-12-01T09:00:00Z")
    assert (
        code == 2
        and "per-cluster pin cannot be edited" in output
        and "clusters/test-us/gpu-operator-chart.yaml" in output
    )
    assert _snapshot(repo) == before


def test_each_shipped_cluster_pins_the_chart_it_declares() -> None:
    """Whatever fleet this repository holds (the reference one, or a fork's made by `gpupolicy new
    cluster`)."""
    fleet = pipeline.load_fleet(SHIPPED)
    assert fleet.clusters
    for cluster in fleet.clusters.values():
        [install] = upgrades.chart_installs(cluster)
        assert install.version == cluster.facts.gpu_operator_version
        assert (SHIPPED / upgrades.chart_pin_path(cluster)).is_file()


def test_upgrades_are_supported_within_a_major_or_to_the_next() -> None:
    assert catalog.operator_major("v25.10.1") == "25.10"
    assert catalog.operator_upgrade_supported("v26.3.3", "v26.7.0") is True
    assert catalog.operator_upgrade_supported("v25.10.0", "v25.10.1") is True
    assert catalog.operator_upgrade_supported("v25.10.1", "v26.7.0") is False  # skips 26.3
    assert catalog.operator_upgrade_supported("v26.7.0", "v25.10.1") is False  # a downgrade across 26.3 too
    assert catalog.operator_upgrade_supported("v99.1.0", "v26.7.0") is None


def test_the_upgrade_page_shows_both_kinds_of_rollout() -> None:
    fleet = pipeline.load_fleet(REPO)
    page = upgrades_page.pages(docsgen.Context(root=REPO, fleet=fleet))["upgrades.md"]
    assert "## What each cluster runs" in page
    assert (
        "| prod-eu | production | 1.33 | `v26.7.0` | `clusters/prod-eu/gpu-operator-chart.yaml` on "
        "Application argocd/gpu-operator | `580.173.02`, `595.91.07` |"
    ) in page
    assert "## gpu-operator-v26-3-to-v26-7" in page and "GPU Operator chart per cluster" in page
    assert "## driver-r580-to-r595" in page and "NVIDIA driver (NVIDIADriver `spec.version` per pool)" in page
