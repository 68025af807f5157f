"""`pre-commit run --all-files` passes on a clean clone, with local hooks only and no network."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent


def _pre_commit() -> str:
    found = VENV_BIN / "pre-commit"
    if found.is_file():
        return str(found)
    which = shutil.which("pre-commit")
    if not which:
        pytest.fail("pre-commit is not installed (it is in the [test] extra)")
    return which


def _env(home: Path) -> dict[str, str]:
    # Tools come from this environment's bin directory; no proxy, so a hook that reached for the network
    # would fail instead of passing by luck.
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update(
        PRE_COMMIT_HOME=str(home / "pre-commit-home"),
        PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
        GPUPOLICY_CACHE_DIR=str(home / "render-cache"),
        HTTP_PROXY="http://127.0.0.1:9",
        HTTPS_PROXY="http://127.0.0.1:9",
        PIP_NO_INDEX="1",
        GIT_TERMINAL_PROMPT="0",
    )
    return env


def test_config_and_manifest_are_valid() -> None:
    for command, path in (
        ("validate-config", ".pre-commit-config.yaml"),
        ("validate-manifest", ".pre-commit-hooks.yaml"),
    ):
        out = subprocess.run(
            [_pre_commit(), command, str(REPO / path)], capture_output=True, text=True, check=False
        )
        assert out.returncode == 0, out.stdout + out.stderr


def test_every_hook_is_local() -> None:
    import yaml

    config = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())
    assert [r["repo"] for r in config["repos"]] == ["local"]
    hooks = {h["id"]: h for h in config["repos"][0]["hooks"]}
    assert {
        "yamllint",
        "gpupolicy-validate",
        "gpupolicy-docs-check",
        "detect-secrets",
        "ruff",
        "ruff-format",
    } <= set(hooks)
    assert all(h["language"] == "system" for h in hooks.values())
    assert hooks["gpupolicy-validate"]["pass_filenames"] is False


def test_pre_commit_run_all_files_on_a_clone(tmp_path: Path) -> None:
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "--quiet", "--no-hardlinks", str(REPO), str(clone)], check=True, capture_output=True
    )
    out = subprocess.run(
        [_pre_commit(), "run", "--all-files", "--show-diff-on-failure", "--color", "never"],
        cwd=clone,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]
    assert "Passed" in out.stdout
    assert (
        subprocess.run(
            ["git", "status", "--porcelain"], cwd=clone, capture_output=True, text=True, check=True
        ).stdout
        == ""
    ), "a hook modified files"
