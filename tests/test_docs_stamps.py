"""Generated pages name the inputs they read, without hashes (decision 0089, replacing 0034's per-input
hashes): a change rewrites only the pages whose content it changes, two pull requests that change different
pools merge their regenerated pages without a conflict, and `validate` reports a committed page that is not
what the generators write (DOC005)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from support import MINIREPO, REPO, run_gpupolicy

from gpupolicy import docsgen, pipeline

GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


def git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=root, check=check, capture_output=True, text=True, env=GIT_ENV)


def regenerate(root: Path) -> list[str]:
    return docsgen.write_pages(root, docsgen.generate(root, pipeline.load_fleet(root)))


def test_a_page_names_its_inputs_and_an_input_change_leaves_the_stamp_alone(tmp_path: Path) -> None:
    root = shutil.copytree(MINIREPO, tmp_path / "repo")
    context = docsgen.Context(root=root, fleet=pipeline.load_fleet(root))
    before = context.header("T", ["pools/mini-a100/pool.yaml", "clusters/mini", "clusters/mini"])
    assert before.count("    - `clusters/mini`\n") == 1 and "    - `pools/mini-a100/pool.yaml`\n" in before
    (root / "clusters/mini/queues.yaml").write_text((root / "clusters/mini/queues.yaml").read_text() + "\n")
    after = docsgen.Context(root=root, fleet=context.fleet).header(
        "T", ["pools/mini-a100/pool.yaml", "clusters/mini"]
    )
    assert after == before  # what the page reads changed, the stamp did not: only content changes move a page
    assert "    - none" in context.header("T", [])


def test_a_generator_without_declared_inputs_reads_the_whole_configuration(tmp_path: Path) -> None:
    root = shutil.copytree(MINIREPO, tmp_path / "repo")
    header = docsgen.Context(root=root, fleet=pipeline.load_fleet(root)).header("T")
    listed = [line for line in header.splitlines() if line.startswith("    - ")]
    assert listed == ["    - the whole configuration: `clusters/`, `pools/`, `policies/`"]


def _validate(root: Path) -> subprocess.CompletedProcess:
    return run_gpupolicy("validate", "--repo", str(root), "--no-cache")


def test_validate_reports_a_stale_page_and_is_clean_once_regenerated(tmp_path: Path) -> None:
    root = shutil.copytree(MINIREPO, tmp_path / "repo")
    # no docs/generated/: a fork that builds pages with the site
    assert "DOC005" not in _validate(root).stdout
    regenerate(root)
    clean = _validate(root)  # the minirepo has findings of its own (it is a rule fixtures' base), none DOC005
    assert "DOC005" not in clean.stdout and "INTERNAL" not in clean.stdout, clean.stdout
    queues = root / "clusters/mini/queues.yaml"
    queues.write_text(queues.read_text().replace("nominalQuota: 16", "nominalQuota: 12", 1))
    stale = _validate(root)
    assert stale.returncode == 1, stale.stdout
    lines = [line for line in stale.stdout.splitlines() if "DOC005" in line]
    assert lines and all(": error DOC005: docs/generated/" in line for line in lines), lines
    assert any(line.startswith("docs/generated/quotas.md:1:") for line in lines), lines
    regenerate(root)
    assert "DOC005" not in _validate(root).stdout


@pytest.fixture(scope="module")
def fleet_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped repository's tracked files (generated pages included) as a fresh git repository."""
    root = tmp_path_factory.mktemp("merge") / "repo"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, check=True, capture_output=True).stdout
    for rel in filter(None, tracked.decode().split("\0")):
        if (REPO / rel).is_file():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, root / rel, follow_symlinks=False)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root


def _branch(root: Path, name: str, pool: str) -> list[str]:
    """On a new branch from main: the pool's time-slicing replicas 4 -> 6, pages regenerated, committed."""
    git(root, "checkout", "-q", "-b", name, "main")
    declaration = root / "pools" / pool / "pool.yaml"
    declaration.write_text(declaration.read_text().replace("    replicas: 4\n", "    replicas: 6\n", 1))
    changed = regenerate(root)
    git(root, "commit", "-q", "-am", f"{pool}: 6 replicas")
    return changed


@pytest.mark.reference_fleet
def test_two_branches_changing_different_pools_merge_without_conflict(fleet_repo: Path) -> None:
    assert not docsgen.stale_pages(fleet_repo, docsgen.generate(fleet_repo, pipeline.load_fleet(fleet_repo)))
    eu = _branch(fleet_repo, "eu", "eu-l4-shared")
    us = _branch(fleet_repo, "us", "us-l40s-shared")
    for unrelated in (
        "alerts.md",
        "metrics.md",
        "access.md",
        "decisions.md",
        "mig-layouts.md",
        "exceptions.md",
    ):
        assert f"docs/generated/{unrelated}" not in eu + us  # pages that do not read pools stay as they were
    assert "docs/generated/sharing.md" in eu and "docs/generated/sharing.md" in us
    merged = git(fleet_repo, "merge", "-q", "eu", "-m", "merge eu", check=False)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    # the merge is exactly what regenerating the merged manifests writes
    assert not docsgen.stale_pages(fleet_repo, docsgen.generate(fleet_repo, pipeline.load_fleet(fleet_repo)))
