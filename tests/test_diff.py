"""gpupolicy diff: semantic comparison of two revisions, rendered without touching the working tree."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from support import GPUPOLICY, MINIREPO

from gpupolicy import diff, pipeline
from gpupolicy.findings import Finding, Severity

MIG_POOL = """\
apiVersion: gpupolicy/v1
kind: Pool
metadata:
  name: mini-mig
spec:
  gpu: {model: A100-80GB, perNode: 8}
  zones: {local-1a: 1}
  accessMode: mig
  mig: {layout: all-3g.40gb, strategy: mixed}
  nodeLabels:
    gpupolicy.io/pool: mini-mig
    nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB
    nvidia.com/mig.config: all-3g.40gb
"""
MIG_FLAVOR = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: mini-mig
spec:
  nodeLabels:
    gpupolicy.io/pool: mini-mig
"""
MIG_COMPONENT = """\
apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
resources:
  - flavor.yaml
"""
MIG_PARTED = """\
version: v1
mig-configs:
  all-3g.40gb:
    - devices: all
      mig-enabled: true
      mig-devices: {"3g.40gb": 2}
  all-1g.10gb:
    - devices: all
      mig-enabled: true
      mig-devices: {"1g.10gb": 7}
"""
OPERATOR_KUSTOMIZATION = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - team.yaml
configMapGenerator:
  - name: mig-parted-config
    namespace: gpu-operator
    options: {disableNameSuffixHash: true}
    files:
      - config.yaml=mig-parted-config.yaml
"""
BETA_QUEUE = """\
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: beta
  labels:
    gpupolicy.io/team: beta
    gpupolicy.io/tier: batch
spec:
  namespaceSelector: {}
  resourceGroups:
    - coveredResources: [nvidia.com/mig-3g.40gb]
      flavors:
        - name: mini-mig
          resources:
            - name: nvidia.com/mig-3g.40gb
              nominalQuota: 8
"""


def git(root: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True, env=env
    ).stdout


def scenario_repo(tmp_path: Path) -> Path:
    """The minirepo plus a MIG pool and a second team, committed on main in a fresh git repository."""
    root = tmp_path / "policy"
    shutil.copytree(MINIREPO, root)
    pool_dir = root / "pools" / "mini-mig"
    pool_dir.mkdir()
    (pool_dir / "pool.yaml").write_text(MIG_POOL)
    (pool_dir / "flavor.yaml").write_text(MIG_FLAVOR)
    (pool_dir / "kustomization.yaml").write_text(MIG_COMPONENT)
    (root / "policies" / "base" / "mig-parted-config.yaml").write_text(MIG_PARTED)
    (root / "policies" / "base" / "kustomization.yaml").write_text(OPERATOR_KUSTOMIZATION)
    queues = root / "clusters" / "mini" / "queues.yaml"
    queues.write_text(queues.read_text() + BETA_QUEUE)
    overlay = root / "clusters" / "mini" / "kustomization.yaml"
    overlay.write_text(overlay.read_text() + "  - ../../pools/mini-mig\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base fleet")
    return root


def raise_quota_and_change_layout(root: Path) -> int:
    """The reviewed change: alpha 16 -> 24 GPUs, mini-mig all-3g.40gb -> all-1g.10gb. Returns the line of
    alpha's new nominalQuota."""
    queues = root / "clusters" / "mini" / "queues.yaml"
    queues.write_text(queues.read_text().replace("nominalQuota: 16", "nominalQuota: 24", 1))
    pool = root / "pools" / "mini-mig" / "pool.yaml"
    pool.write_text(pool.read_text().replace("all-3g.40gb", "all-1g.10gb"))
    return queues.read_text().splitlines().index("              nominalQuota: 24") + 1


def run_cli(*argv: str) -> tuple[int, str]:
    out = subprocess.run([str(GPUPOLICY), *argv], capture_output=True, text=True, check=False)
    assert out.returncode in (0, 1), out.stderr
    return out.returncode, out.stdout


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, str]:
    root = scenario_repo(tmp_path_factory.mktemp("diff"))
    git(root, "checkout", "-q", "-b", "feature")
    line = raise_quota_and_change_layout(root)
    git(root, "commit", "-q", "-am", "alpha +8 GPUs; mini-mig to 1g slices")
    return root, line, git(root, "rev-parse", "HEAD").strip()


def test_diff_names_team_pool_values_and_new_findings(reviewed: tuple[Path, int, str]) -> None:
    root, quota_line, _head = reviewed
    code, text = run_cli("diff", "--repo", str(root), "--format", "json", "--head", "HEAD")
    data = json.loads(text)
    quota = [row for row in data["sections"]["quotas"] if row["queue"] == "alpha"]
    assert quota == [
        {
            "cluster": "mini",
            "team": "alpha",
            "queue": "alpha",
            "flavor": "mini-a100",
            "resource": "nvidia.com/gpu",
            "old": "16",
            "new": "24",
            "delta": "+8",
            "share of pool (old -> new)": "100% of 16 -> 150% of 16",
        }
    ]
    layout = [row for row in data["sections"]["pools"] if row["setting"] == "MIG layout"]
    assert layout == [
        {
            "cluster": "mini",
            "pool": "mini-mig",
            "setting": "MIG layout",
            "old": "all-3g.40gb (mixed)",
            "new": "all-1g.10gb (mixed)",
        }
    ]
    capacity = {(row["resource"], row["old"], row["new"]) for row in data["sections"]["capacity"]}
    assert capacity == {("nvidia.com/mig-3g.40gb", "16", "—"), ("nvidia.com/mig-1g.10gb", "—", "56")}
    # The findings the change introduces are exactly the head's minus the base's, on the head's lines.
    base = pipeline.run(root, rules=True)  # working tree == head commit here
    introduced = {(f["rule"], f["path"], f["line"]) for f in data["findings"]["introduced"]}
    assert introduced, "raising a quota past the pool must introduce a finding"
    assert {(f.rule, f.path, f.line) for f in base.findings} >= introduced
    on_quota = [f for f in data["findings"]["introduced"] if f["path"] == "clusters/mini/queues.yaml"]
    assert any(f["line"] == quota_line and f["severity"] == "error" for f in on_quota), on_quota
    assert code == 1  # the head introduces errors


def test_layout_change_finding_lands_on_the_quota_it_breaks(reviewed: tuple[Path, int, str]) -> None:
    from gpupolicy.rules import all_rules

    if "CAP002" not in all_rules():
        pytest.skip("CAP002 (quota on a resource the pool does not expose) is not registered")
    root, _line, _head = reviewed
    _code, text = run_cli("diff", "--repo", str(root), "--format", "json", "--head", "HEAD")
    # The resource entry of beta's quota that names the MIG profile the new layout no longer exposes.
    beta_line = (root / "clusters/mini/queues.yaml").read_text().splitlines().index(
        "            - name: nvidia.com/mig-3g.40gb"
    ) + 1
    cap002 = [f for f in json.loads(text)["findings"]["introduced"] if f["rule"] == "CAP002"]
    assert [(f["path"], f["line"]) for f in cap002] == [("clusters/mini/queues.yaml", beta_line)]
    assert "mini-mig" in cap002[0]["message"]


def test_markdown_headline_and_tables(reviewed: tuple[Path, int, str]) -> None:
    root, quota_line, _head = reviewed
    _code, text = run_cli("diff", "--repo", str(root), "--head", "HEAD", "--base", "main")
    first = text.splitlines()[0]
    assert first.startswith("### gpupolicy: +8 A100 on mini-a100 for team alpha in mini (16 -> 24)")
    assert "pool mini-mig (mini): MIG layout all-3g.40gb (mixed) -> all-1g.10gb (mixed)" in first
    assert "| mini | alpha | alpha | mini-a100 | nvidia.com/gpu | 16 | 24 | +8 |" in text
    assert f"`clusters/mini/queues.yaml:{quota_line}`" in text
    for absent in ("#### Priority classes", "#### Access (RBAC)", "#### Admission policies"):
        assert absent not in text  # empty sections are omitted


def test_default_base_is_merge_base_with_main_and_head_is_working_tree(tmp_path: Path) -> None:
    root = scenario_repo(tmp_path)
    git(root, "checkout", "-q", "-b", "feature")
    raise_quota_and_change_layout(root)  # uncommitted: only in the working tree
    before = git(root, "status", "--porcelain")
    code, text = run_cli("diff", "--repo", str(root), "--format", "json")
    data = json.loads(text)
    assert data["head"] == "working tree" and data["base"].startswith("merge base with main (")
    assert any(row["queue"] == "alpha" for row in data["sections"]["quotas"])
    assert git(root, "status", "--porcelain") == before  # neither working tree nor index touched
    assert git(root, "worktree", "list").count("\n") == 1
    assert code == 1


def test_no_main_branch_falls_back_to_head(tmp_path: Path) -> None:
    root = scenario_repo(tmp_path)
    git(root, "branch", "-m", "main", "trunk")
    code, text = run_cli("diff", "--repo", str(root), "--format", "json")
    data = json.loads(text)
    assert data["sections"] == {} and data["findings"]["introduced"] == []
    assert data["headline"].startswith("no change to what the clusters get")
    assert code == 0


def test_unknown_revision_is_a_clear_error(tmp_path: Path) -> None:
    root = scenario_repo(tmp_path)
    out = subprocess.run(
        [str(GPUPOLICY), "diff", "--repo", str(root), "--base", "no-such-rev"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 2
    assert "unknown git revision 'no-such-rev'" in out.stderr and "Traceback" not in out.stderr


def test_diff_sarif_marks_baseline_state(reviewed: tuple[Path, int, str]) -> None:
    root, _line, _head = reviewed
    _code, text = run_cli("diff", "--repo", str(root), "--head", "HEAD", "--format", "sarif")
    states = {r["baselineState"] for r in json.loads(text)["runs"][0]["results"]}
    assert "new" in states


# --- unit level: findings matching and RBAC ---------------------------------------------------------------


def _finding(rule: str, line: int, message: str = "m", severity: Severity = Severity.ERROR) -> Finding:
    return Finding(rule, severity, message, "clusters/a/q.yaml", line)


def test_findings_match_ignoring_line_shifts() -> None:
    base = [_finding("CAP001", 10), _finding("CAP002", 20)]
    head = [_finding("CAP001", 14), _finding("CAP003", 3)]
    result = diff.compare_findings(base, head)
    assert [f.rule for f in result.preexisting] == ["CAP001"] and result.preexisting[0].line == 14
    assert [f.rule for f in result.introduced] == ["CAP003"]
    assert [f.rule for f in result.fixed] == ["CAP002"]


def test_duplicate_findings_count_separately() -> None:
    base = [_finding("CAP001", 1)]
    head = [_finding("CAP001", 1), _finding("CAP001", 9)]
    result = diff.compare_findings(base, head)
    assert len(result.preexisting) == 1 and len(result.introduced) == 1


def _rbac_fleet(tmp_path: Path, verbs: list[str], subject: str) -> pipeline.RunResult:
    root = tmp_path / f"rbac-{'-'.join(verbs)}-{subject}"
    shutil.copytree(MINIREPO, root)
    (root / "policies" / "base" / "rbac.yaml").write_text(f"""\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: queue-editor
rules:
  - apiGroups: [kueue.x-k8s.io]
    resources: [clusterqueues]
    verbs: [{", ".join(verbs)}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: queue-editors
  namespace: alpha
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: queue-editor}}
subjects:
  - {{kind: Group, name: {subject}, apiGroup: rbac.authorization.k8s.io}}
""")
    kustomization = root / "policies" / "base" / "kustomization.yaml"
    kustomization.write_text(kustomization.read_text() + "  - rbac.yaml\n")
    return pipeline.run(root)


def test_rbac_gains_and_losses_per_subject(tmp_path: Path) -> None:
    base = _rbac_fleet(tmp_path, ["get", "list"], "alpha-leads")
    head = _rbac_fleet(tmp_path, ["get", "update"], "alpha-leads")
    result = diff.compare(base.fleet, head.fleet, base.findings, head.findings, "base", "head")
    rbac = next(s for s in result.sections if s.key == "rbac")
    assert rbac.rows == [
        ["mini", "Group alpha-leads", "namespace alpha", "loses", "list", "kueue.x-k8s.io/clusterqueues"],
        ["mini", "Group alpha-leads", "namespace alpha", "gains", "update", "kueue.x-k8s.io/clusterqueues"],
    ]
    assert "RBAC changes for 1 subject(s)" in result.headline


def test_rbac_rows_group_a_subjects_resources_by_the_verbs_it_gains(tmp_path: Path) -> None:
    base = _rbac_fleet(tmp_path, ["get"], "alpha-leads")
    head = _rbac_fleet(tmp_path, ["get", "list", "watch"], "alpha-devs")
    result = diff.compare(base.fleet, head.fleet, base.findings, head.findings, "base", "head")
    rbac = next(s for s in result.sections if s.key == "rbac")
    assert [row[1:5] for row in rbac.rows] == [
        ["Group alpha-leads", "namespace alpha", "loses", "get"],
        ["Group alpha-devs", "namespace alpha", "gains", "get, list, watch"],
    ]
    assert "RBAC changes for 2 subject(s)" in result.headline


def test_revision_with_a_symlink_out_of_the_tree_materializes(tmp_path: Path) -> None:
    from gpupolicy.infra import gitrev

    root = scenario_repo(tmp_path)
    (root / "policies" / "base" / "outside.yaml").symlink_to("/etc/hostname")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "hostile link")
    with gitrev.materialize(root, "HEAD") as copy:
        link = copy / "policies" / "base" / "outside.yaml"
        assert link.is_symlink() and os.readlink(link) == "/etc/hostname"
        result = pipeline.run(copy)
    assert any(f.rule == "YAML008" and f.path == "policies/base/outside.yaml" for f in result.findings)


def _fleet_with_new_pool_and_team(tmp_path: Path) -> pipeline.RunResult:
    """The minirepo plus pool mini-h100 (a copy of mini-a100 under another name) and team beta's queue."""
    root = shutil.copytree(MINIREPO, tmp_path / "grown")
    for path in (root / "pools" / "mini-a100").iterdir():
        target = root / "pools" / "mini-h100" / path.name
        target.parent.mkdir(exist_ok=True)
        target.write_text(path.read_text().replace("mini-a100", "mini-h100"))
    overlay = root / "clusters" / "mini" / "kustomization.yaml"
    overlay.write_text(overlay.read_text() + "  - ../../pools/mini-h100\n")
    queues = root / "clusters" / "mini" / "queues.yaml"
    alpha = queues.read_text()
    queues.write_text(alpha + "---\n" + alpha.replace("alpha", "beta").replace("mini-a100", "mini-h100"))
    return pipeline.run(root)


def test_headline_leads_with_a_new_pool_and_team_and_leaves_out_what_follows_from_them(
    tmp_path: Path,
) -> None:
    base = pipeline.run(shutil.copytree(MINIREPO, tmp_path / "base"))
    head = _fleet_with_new_pool_and_team(tmp_path)
    result = diff.compare(base.fleet, head.fleet, base.findings, head.findings, "base", "head")
    members = next(s for s in result.sections if s.key == "members")
    assert [row[:4] for row in members.rows] == [
        ["mini", "pool", "mini-h100", "new"],
        ["mini", "team", "beta", "new"],
    ]
    phrases = result.headline.split("; ")
    assert phrases[0].startswith("new pool mini-h100 on mini (") and phrases[1].startswith(
        "new team beta on mini"
    )
    # the new pool's capacity and the new team's quota are in their tables, not repeated in the headline
    assert "in pool mini-h100" not in result.headline and "for team beta" not in result.headline
    assert any(s.key == "capacity" for s in result.sections) and any(
        s.key == "quotas" for s in result.sections
    )
    removed = diff.compare(head.fleet, base.fleet, head.findings, base.findings, "head", "base")
    assert removed.headline.startswith("removed ")
