"""kubectl kustomize runs with no way to fetch a remote base (issue 29, item 4): the second wall behind
KUST001's `looks_remote`, which refuses every form kustomize's repo-spec parser would clone."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gpupolicy.pipeline.render import kustomize


@pytest.mark.parametrize(
    "entry",
    [
        "git::file:///srv/repo.git//base",
        "GIT::https://host/org/repo//base",
        "git::http://127.0.0.1/r.git",
        "deploy@host.example:org/repo.git",
        "git@github.com:org/repo.git",
        "github.com:org/repo//base",
        "github.com/org/repo?ref=v1",
        "ssh://git@host/org/repo.git",
        "file:///srv/repo.git",
        "HTTPS://host/x.yaml",
        "base?ref=main",
        "//host/path",
    ],
)
def test_every_repo_spec_form_is_remote(entry: str) -> None:
    assert kustomize.looks_remote(entry)


@pytest.mark.parametrize("entry", ["../../policies/base", "queues.yaml", "pools/us-a100", "a:b/c.yaml"])
def test_local_paths_are_not_remote(entry: str) -> None:
    assert not kustomize.looks_remote(entry)


def test_kubectl_environment_has_no_git_no_proxy_and_no_caller_secrets(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:1")
    monkeypatch.setenv("GIT_SSH_COMMAND", "ssh -i stolen")
    monkeypatch.setenv("GPUPOLICY_BOT_TOKEN", "secret")
    kubectl = kustomize.kubectl_path()
    env = kustomize.offline_environment(kubectl, str(tmp_path))
    # not even kubectl's own folder: a kubectl from /usr/bin sits beside git and ssh (found by a helper's
    # review)
    assert shutil.which("git", path=env["PATH"]) is None and shutil.which("ssh", path=env["PATH"]) is None
    assert env["PATH"] == "/nonexistent"
    assert "GPUPOLICY_BOT_TOKEN" not in env and env["HTTPS_PROXY"] == "http://127.0.0.1:1"
    assert (
        env["GIT_SSH_COMMAND"] == "false"
        and env["GIT_ALLOW_PROTOCOL"] == "none"
        and env["HOME"] == str(tmp_path)
    )


@pytest.mark.skipif(
    shutil.which("git") is None, reason="git is needed to make the repository kubectl would clone"
)
def test_a_remote_base_that_reached_kubectl_cannot_be_cloned(tmp_path: Path) -> None:
    """A real git repository on this machine, named by a `git::file://` base: with the caller's environment
    kubectl clones it and renders its ConfigMap; with the offline environment the render fails."""
    remote = tmp_path / "remote"
    (remote / "base").mkdir(parents=True)
    (remote / "base" / "kustomization.yaml").write_text("resources: [cm.yaml]\n")
    (remote / "base" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-outside}\n"
    )
    git = ["git", "-C", str(remote), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", str(remote)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(f"resources: ['git::file://{remote}//base']\n")
    kubectl = kustomize.kubectl_path()
    home = tmp_path / "home"
    home.mkdir()
    run = [kubectl, "kustomize", str(overlay)]
    online = subprocess.run(
        run, capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(home)}
    )
    offline = subprocess.run(
        run,
        capture_output=True,
        text=True,
        timeout=120,
        env=kustomize.offline_environment(kubectl, str(home)),
    )
    assert "from-outside" in online.stdout  # the wall is needed: kubectl does clone with a normal environment
    assert offline.returncode != 0 and "from-outside" not in offline.stdout
