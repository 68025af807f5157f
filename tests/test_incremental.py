"""Incremental validation (`validate --changed-since REV`) and the render cache."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from support import GPUPOLICY

from gpupolicy import pipeline
from gpupolicy.findings import Finding, Severity
from gpupolicy.infra import gitrev
from gpupolicy.pipeline import incremental
from gpupolicy.pipeline.render import kustomize

REPO = Path(__file__).resolve().parents[1]
MINIREPO = REPO / "tests" / "fixtures" / "minirepo"
CLUSTERS = ("east", "north", "west")


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


def commit_all(root: Path, message: str = "fleet") -> None:
    if not (root / ".git").exists():
        git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def three_cluster_repo(tmp_path: Path) -> Path:
    """The minirepo grown to three clusters, each with its own pool, all sharing policies/base."""
    root = tmp_path / "fleet"
    shutil.copytree(MINIREPO / "policies", root / "policies")
    for name in CLUSTERS:
        pool = f"{name}-a100"
        shutil.copytree(MINIREPO / "pools" / "mini-a100", root / "pools" / pool)
        for file in (root / "pools" / pool).iterdir():
            file.write_text(file.read_text().replace("mini-a100", pool))
        shutil.copytree(MINIREPO / "clusters" / "mini", root / "clusters" / name)
        for file in (root / "clusters" / name).iterdir():
            file.write_text(
                file.read_text().replace("mini-a100", pool).replace("name: mini", f"name: {name}")
            )
    commit_all(root)
    return root


def selected(root: Path, rev: str = "HEAD") -> list[str]:
    return incremental.changed_clusters(root, rev).clusters


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


# --- which clusters a change reaches --------------------------------------------------------------------


def test_pool_yaml_change_affects_only_the_cluster_including_the_pool(tmp_path: Path) -> None:
    root = three_cluster_repo(tmp_path)
    edit(root / "pools" / "north-a100" / "pool.yaml", "local-1a: 2", "local-1a: 3")
    assert selected(root) == ["north"]


def test_shared_policy_change_affects_every_including_cluster(tmp_path: Path) -> None:
    root = three_cluster_repo(tmp_path)
    edit(root / "policies" / "base" / "team.yaml", '"16"', '"24"')
    assert selected(root) == list(CLUSTERS)


def test_cluster_yaml_affects_its_own_cluster(tmp_path: Path) -> None:
    root = three_cluster_repo(tmp_path)
    edit(root / "clusters" / "west" / "cluster.yaml", "region: local-1", "region: local-2")
    assert selected(root) == ["west"]


def test_toolkit_change_affects_every_cluster(tmp_path: Path) -> None:
    root = three_cluster_repo(tmp_path)
    (root / "tools").mkdir()
    (root / "tools" / "rule.py").write_text("# a new rule\n")  # untracked files count
    selection = incremental.changed_clusters(root, "HEAD")
    assert selection.clusters == list(CLUSTERS) and selection.everything == ["tools/rule.py"]


@pytest.mark.parametrize(
    "path",
    [
        "mkdocs.yml",
        "gpupolicy.yaml",
        "policies/exceptions.yaml",
        "policies/checks/org.yaml",
        "docs/runbooks/GPUFallenOffBus.md",
        "docs/decisions/0001-x.md",
        "docs/examples/pod.yaml",
        "policies/upgrades/plan.yaml",
        "pyproject.toml",
    ],
)
def test_site_and_toolkit_wide_inputs_affect_every_cluster(tmp_path: Path, path: str) -> None:
    """A site_url change in mkdocs.yml (or a config, exception, org check, page rules read) selected
    nothing."""
    root = three_cluster_repo(tmp_path)
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text("site_url: https://runbooks.example.org/\n")
    selection = incremental.changed_clusters(root, "HEAD")
    assert selection.clusters == list(CLUSTERS) and selection.everything == [path]


def test_every_cluster_inputs_agree_with_the_modules_that_read_them() -> None:
    from gpupolicy import orgchecks
    from gpupolicy.configure import repoconfig
    from gpupolicy.domain import decisions, observability, waivers
    from gpupolicy.domain import workloads as sec_common
    from gpupolicy.infra import siteconfig
    from gpupolicy.upgrade import approvals
    from gpupolicy.upgrade import plans as upgrades

    homes = [
        siteconfig.SITE_CONFIG,
        repoconfig.CONFIG_FILE,
        waivers.EXCEPTIONS_FILE,
        orgchecks.CHECKS_DIR + "/",
        observability.RUNBOOK_DIR + "/",
        decisions.DECISIONS_DIR + "/",
        sec_common.EXAMPLES_DIR,
        upgrades.PLAN_DIR + "/",
        pipeline.IMPORTED_SCHEMAS + "/",
    ]
    assert all(
        incremental.affects_every_cluster(home + ("x" if home.endswith("/") else "")) for home in homes
    )
    assert incremental.affects_every_cluster(approvals.APPROVERS_FILE)


def test_docs_change_affects_nothing(tmp_path: Path) -> None:
    root = three_cluster_repo(tmp_path)
    (root / "docs").mkdir()
    (root / "docs" / "index.md").write_text("# hello\n")
    assert selected(root) == []
    out = subprocess.run(
        [str(GPUPOLICY), "validate", "--repo", str(root), "--changed-since", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0 and "nothing to validate" in out.stderr


def test_untracked_file_in_a_pool_directory_counts(tmp_path: Path) -> None:
    root = three_cluster_repo(tmp_path)
    (root / "pools" / "east-a100" / "notes.yaml").write_text("a: 1\n")
    assert selected(root) == ["east"]


def test_deleted_file_affects_the_clusters_that_included_it_at_the_revision(tmp_path: Path) -> None:
    root = three_cluster_repo(tmp_path)
    (root / "clusters" / "west" / "queues.yaml").unlink()
    # Only the deletion is reported: today's graph no longer knows the file, the revision's graph does.
    changes = gitrev.Changes(deleted={"clusters/west/queues.yaml"})
    assert incremental.select(root, changes, "HEAD").clusters == ["west"]
    assert gitrev.changed_since(root, "HEAD").deleted == {"clusters/west/queues.yaml"}


def test_changed_since_an_older_commit_includes_committed_changes(tmp_path: Path) -> None:
    root = three_cluster_repo(tmp_path)
    first = git(root, "rev-parse", "HEAD").strip()
    edit(root / "pools" / "east-a100" / "pool.yaml", "local-1a: 2", "local-1a: 4")
    commit_all(root, "grow east")
    edit(root / "clusters" / "west" / "queues.yaml", "nominalQuota: 16", "nominalQuota: 8")  # staged and not
    git(root, "add", "clusters/west/queues.yaml")
    assert selected(root, first) == ["east", "west"]
    assert selected(root, "HEAD") == ["west"]


def test_policy_repository_in_a_git_subdirectory(tmp_path: Path) -> None:
    outer = tmp_path / "mono"
    outer.mkdir()
    root = three_cluster_repo(outer)  # creates outer/fleet with its own .git; move it under one repository
    shutil.rmtree(root / ".git")
    (outer / "README.md").write_text("monorepo\n")
    commit_all(outer)
    edit(root / "pools" / "west-a100" / "pool.yaml", "local-1a: 2", "local-1a: 3")
    assert selected(root) == ["west"]


def test_unknown_revision_exits_2(tmp_path: Path) -> None:
    root = three_cluster_repo(tmp_path)
    out = subprocess.run(
        [str(GPUPOLICY), "validate", "--repo", str(root), "--changed-since", "nope"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 2 and "unknown git revision 'nope'" in out.stderr


# --- the findings of an incremental run equal the full run's, restricted ----------------------------------


def restricted(findings: list[Finding], clusters: set[str]) -> set[tuple]:
    """Findings as a full run reports them for `clusters`: cluster lists cut to those clusters; findings
    of other clusters only dropped."""
    kept = set()
    for f in findings:
        mine = sorted(set(f.cluster.split(",")) & clusters) if f.cluster else []
        if f.cluster and not mine:
            continue
        kept.add((f.rule, f.severity.value, f.path, f.line, f.message, ",".join(mine)))
    return kept


def assert_incremental_equals_full(root: Path, expected_clusters: list[str]) -> None:
    out = subprocess.run(
        [str(GPUPOLICY), "validate", "--repo", str(root), "--changed-since", "HEAD", "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode in (0, 1), out.stderr
    assert f"{len(expected_clusters)} of " in out.stderr
    report = json.loads(out.stdout)
    assert report["summary"]["clusters"] == len(expected_clusters)
    fields = set(Finding.__dataclass_fields__)  # a derived finding also carries caused_by (issue 14)
    partial = [
        Finding(**{k: v for k, v in f.items() if k in fields} | {"severity": Severity(f["severity"])})
        for f in report["findings"]
    ]
    full = pipeline.run(root)
    assert restricted(partial, set(expected_clusters)) == restricted(full.findings, set(expected_clusters))


def test_incremental_findings_equal_full_run_restricted(tmp_path: Path) -> None:
    root = three_cluster_repo(tmp_path)
    # north: quota past the pool (an error) and a bigger pool; the other clusters stay as they were.
    edit(root / "clusters" / "north" / "queues.yaml", "nominalQuota: 16", "nominalQuota: 40")
    edit(root / "pools" / "north-a100" / "pool.yaml", "local-1a: 2", "local-1a: 3")
    edit(root / "clusters" / "east" / "queues.yaml", "nominalQuota: 16", "nominalQuota: 20")
    assert selected(root) == ["east", "north"]
    assert_incremental_equals_full(root, ["east", "north"])


# --- the reference fleet --------------------------------------------------------------------------------


def reference_copy(tmp_path: Path) -> Path:
    names = pipeline.cluster_names(REPO)
    if len(names) < 2:
        pytest.skip("the reference fleet (clusters/) is not there yet")
    root = tmp_path / "reference"
    for top in ("clusters", "pools", "policies", "docs"):
        if (REPO / top).is_dir():
            shutil.copytree(REPO / top, root / top, ignore=shutil.ignore_patterns("__pycache__"))
    commit_all(root)
    return root


def test_one_pool_change_on_the_reference_fleet(tmp_path: Path) -> None:
    root = reference_copy(tmp_path)
    names = pipeline.cluster_names(root)
    graph = kustomize.build_graph(root, [f"clusters/{c}" for c in names])
    pool = next(p for p in sorted((root / "pools").iterdir()) if (p / "pool.yaml").is_file())
    owners = [c for c in names if f"pools/{pool.name}" in graph.directories(f"clusters/{c}")]
    assert owners, f"no cluster includes {pool.name}"
    (pool / "pool.yaml").write_text((pool / "pool.yaml").read_text() + "# reviewed in a pull request\n")
    assert selected(root) == owners
    assert len(owners) < len(names)
    assert_incremental_equals_full(root, owners)


# --- the render cache -----------------------------------------------------------------------------------


def test_repeated_run_renders_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUPOLICY_CACHE_DIR", str(tmp_path / "cache"))
    root = three_cluster_repo(tmp_path)
    first = pipeline.run(root)
    assert first.cached_renders == 0
    again = pipeline.run(root)
    assert again.cached_renders == len(CLUSTERS) == len(again.rendered_clusters)
    assert [f.as_dict() for f in again.findings] == [f.as_dict() for f in first.findings]
    edit(root / "pools" / "west-a100" / "flavor.yaml", "name: west-a100", "name: west-a100\n  labels: {a: b}")
    changed = pipeline.run(root)
    assert changed.cached_renders == len(CLUSTERS) - 1  # only west's inputs changed


def _no_revision_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("the revision's graph was built although today's graph knows enough")

    monkeypatch.setattr(incremental, "_reach_at_revision", refuse)


def test_deleted_input_still_named_is_found_without_the_old_graph(tmp_path: Path, monkeypatch) -> None:
    root = three_cluster_repo(tmp_path)
    _no_revision_graph(monkeypatch)
    (root / "clusters" / "west" / "queues.yaml").unlink()
    assert selected(root) == ["west"]


def test_deleted_input_and_its_reference_select_through_the_edited_kustomization(
    tmp_path: Path, monkeypatch
) -> None:
    root = three_cluster_repo(tmp_path)
    _no_revision_graph(monkeypatch)
    (root / "clusters" / "west" / "queues.yaml").unlink()
    edit(root / "clusters" / "west" / "kustomization.yaml", "  - queues.yaml\n", "")
    assert selected(root) == ["west"]


def test_deleted_kustomization_of_an_included_folder(tmp_path: Path, monkeypatch) -> None:
    root = three_cluster_repo(tmp_path)
    _no_revision_graph(monkeypatch)
    (root / "pools" / "east-a100" / "kustomization.yaml").unlink()  # the folder stays, with its pool.yaml
    assert selected(root) == ["east"]


def test_deleted_pool_folder(tmp_path: Path, monkeypatch) -> None:
    root = three_cluster_repo(tmp_path)
    _no_revision_graph(monkeypatch)
    shutil.rmtree(root / "pools" / "east-a100")
    assert selected(root) == ["east"]


def test_with_a_symlink_in_the_graph_the_revision_is_asked(tmp_path: Path, monkeypatch) -> None:
    root = three_cluster_repo(tmp_path)
    queues = root / "clusters" / "west" / "queues.yaml"
    (root / "clusters" / "west" / "real-queues.yaml").write_text(queues.read_text())
    queues.unlink()
    queues.symlink_to("real-queues.yaml")
    commit_all(root, "queues through a symlink")
    (root / "clusters" / "west" / "real-queues.yaml").unlink()
    asked = []
    original = incremental._reach_at_revision
    monkeypatch.setattr(incremental, "_reach_at_revision", lambda *a: asked.append(a) or original(*a))
    assert selected(root) == ["west"]
    assert asked, "a graph that followed a symlink must not be trusted for deletions"
