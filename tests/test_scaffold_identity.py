"""`gpupolicy new identity` on the generated fork fleet: the inherited runbook site, git repository and
code-owner organization replaced everywhere they are written, read from the repository (never assumed),
validate clean after; refusals write nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import run_gpupolicy

from gpupolicy.infra import repopath, siteconfig


def tree(repo: Path) -> dict[str, bytes]:
    return {p.relative_to(repo).as_posix(): p.read_bytes() for p in repo.rglob("*") if p.is_file()}


def inherited_site(repo: Path) -> str:
    return siteconfig.site_url_of(*siteconfig.read_settings(repopath.Reader(repo)))[0]


def test_site_git_url_and_org_follow_the_fork_everywhere(fork: Path) -> None:
    old_site = inherited_site(fork)
    assert old_site
    done = run_gpupolicy(
        "new",
        "identity",
        "--site-url",
        "https://gpu.acme.io/",
        "--git-url",
        "https://git.acme.io/platform/gpu-fleet.git",
        "--org",
        "acme",
        "--repo",
        str(fork),
    )
    assert done.returncode == 0, done.stderr
    assert inherited_site(fork) == "https://gpu.acme.io/"
    texts = {
        rel: data.decode()
        for rel, data in tree(fork).items()
        if rel.startswith(("clusters/", "pools/", "policies/", "docs/examples/")) and rel.endswith(".yaml")
    }
    assert not [rel for rel, text in texts.items() if old_site in text]
    alerts = [text for rel, text in texts.items() if "runbook_url:" in text]
    assert alerts and all("runbook_url: https://gpu.acme.io/runbooks/" in text for text in alerts)
    synced = [text for text in texts.values() if "kind: GitRepository" in text or "repoURL:" in text]
    assert any("https://git.acme.io/platform/gpu-fleet.git" in text for text in synced)
    owners = (fork / "docs/CODEOWNERS").read_text()
    assert "@acme/" in owners and "@example-org/" not in owners
    checked = run_gpupolicy("validate", "--repo", str(fork), "--no-cache")
    assert checked.returncode == 0, checked.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        ([], "give at least one of"),
        (["--site-url", "gpu.acme.io"], "an absolute http(s) URL ending in /"),
        (["--site-url", "https://gpu.acme.io/ #x/"], "an absolute http(s) URL ending in /"),
        (["--git-url", "https://a b"], "without spaces"),
        (["--org=bad_org"], "an organization name"),
    ],
)
def test_refusals_name_the_problem_and_write_nothing(fork: Path, args: list[str], message: str) -> None:
    before = tree(fork)
    done = run_gpupolicy("new", "identity", *args, "--repo", str(fork))
    assert done.returncode != 0 and message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and tree(fork) == before


def test_two_sync_repositories_are_not_guessed_between(fork: Path) -> None:
    extra = fork / "policies/sync/flux/other-repository.yaml"
    extra.write_text(
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: "
        "other\n  namespace: flux-system\nspec:\n  interval: 10m\n  url: https://github.com/someone/else.git\n"
    )
    before = tree(fork)
    done = run_gpupolicy("new", "identity", "--git-url", "https://git.acme.io/x.git", "--repo", str(fork))
    assert done.returncode != 0 and "expected one git repository" in done.stderr, done.stderr
    assert tree(fork) == before
