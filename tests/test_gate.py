"""The base branch is the root of trust (issue 29, decision 0061): the merge gate (.ci/gate) fails the hostile
pull request of tests/hostile_pr without running its code, and a plugin that is repository content is refused
before anything of it is imported."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import MINIREPO, REPO

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

PLUGIN = '''"""Writes a marker when imported: importing it is running repository code."""
from pathlib import Path
Path(__file__).with_name("ran").write_text("ran")
'''


def _trusted_venv() -> str:
    """The environment whose gpupolicy runs these tests (this checkout is the trusted side)."""
    return str(Path(sys.executable).parent.parent)


@pytest.mark.reference_fleet
def test_the_gate_fails_the_hostile_pull_request_and_runs_none_of_its_code() -> None:
    env = {**os.environ, "GPUPOLICY_TRUSTED_VENV": _trusted_venv()}
    done = subprocess.run(
        [sys.executable, str(REPO / ".ci" / "hostile-pr")],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "gate exit 1" in done.stdout
    assert "[enforced] plugin entry point in pyproject.toml: never imported: neutralized" in done.stdout


def test_the_gate_says_it_could_not_run_for_an_unknown_base(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    done = subprocess.run(
        [sys.executable, str(REPO / ".ci" / "gate"), "no-such-revision", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "could not run" in done.stderr


def _install_plugin(site: Path, module_dir: Path, dist_name: str) -> None:
    (module_dir / "prplugin.py").write_text(PLUGIN)
    dist_info = site / f"{dist_name}-0.1.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist_name}\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text("[gpupolicy.rules]\npr = prplugin\n")


def _validate(repo: Path, *paths: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*map(str, paths), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "gpupolicy", "validate", "--repo", str(repo), "--no-cache"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def test_a_plugin_module_inside_the_policy_repository_is_refused_unloaded(tmp_path: Path) -> None:
    repo = shutil.copytree(MINIREPO, tmp_path / "repo")
    site = tmp_path / "site"
    _install_plugin(site, repo, "pr-rules")  # the module a pull request added to the repository
    done = _validate(repo, site, repo)
    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        "plugin pr (prplugin) was not loaded: its module prplugin lies inside the policy repository"
        in done.stdout
    )
    assert not (repo / "ran").exists()


def test_an_entry_point_on_the_toolkits_own_distribution_is_refused_unloaded(tmp_path: Path) -> None:
    repo = shutil.copytree(MINIREPO, tmp_path / "repo")
    site, code = tmp_path / "site", tmp_path / "code"
    code.mkdir()
    _install_plugin(site, code, "gpupolicy")  # what an edit of pyproject.toml plus `pip install -e .` leaves
    done = _validate(repo, site, code)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "declared by the toolkit's own distribution" in done.stdout
    assert not (code / "ran").exists()
