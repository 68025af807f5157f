"""Helpers shared by test modules (import them from here, not from conftest: pytest may load several conftest
modules under the same name)."""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# The command of the virtual environment running the tests (make test's .venv, or .venv-system on Debian's own
# Python in CI): never a hard-coded .venv, which would run another interpreter's install.
GPUPOLICY = Path(sys.executable).parent / "gpupolicy"
SHARED = REPO.parent / "shared"
MINIREPO = REPO / "tests" / "fixtures" / "minirepo"
# The reference fleet this repository ships (decision 0075). Tests about it carry the marker `reference_fleet`
# and are skipped on a fork that replaced it (tests/forkfleet.py, .ci/fork-fleet).
REFERENCE_CLUSTERS = ("prod-eu", "prod-us", "test-us")
REFERENCE_TEAMS = ("nlp", "research", "serving", "vision")


def holds_reference_fleet(repo: Path = REPO) -> bool:
    """Whether `repo` holds the reference fleet's clusters and teams (a fork may have added its own)."""
    return all((repo / "clusters" / name / "cluster.yaml").is_file() for name in REFERENCE_CLUSTERS) and all(
        (repo / "policies/teams" / name).is_dir() for name in REFERENCE_TEAMS
    )


def require_tool(name: str) -> str:
    """The path of a system tool; skip without it on a developer machine, fail in CI (CI must not go green
    by skipping)."""
    found = shutil.which(name)
    if found:
        return found
    if os.environ.get("CI"):
        pytest.fail(f"{name} is required in CI (make system-tools installs it)")
    pytest.skip(f"{name} is not installed (run `make system-tools`)")
    raise AssertionError  # unreachable


_FLEET_REPO: list[Path] = []


def fleet_repo() -> Path:
    """The fixture repository of the toolkit tests that need a rich fleet: this checkout with the tests' own
    fleet (tests/fixtures/fleet: three clusters, MIG, time-sliced and exclusive pools, four teams, two rollout
    plans) in place of the one it holds, so they pass the same on a fork (decision 0085). Made once per run,
    in
    a temporary folder removed at exit; read it, never write it (copy_repo it first)."""
    if not _FLEET_REPO:
        from forkfleet import make_fleet_repo

        folder = Path(tempfile.mkdtemp(prefix="gpupolicy-fleet-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        _FLEET_REPO.append(make_fleet_repo(folder / "repo", REPO))
    return _FLEET_REPO[0]


def copy_repo(source: Path, target: Path) -> Path:
    shutil.copytree(
        source,
        target,
        symlinks=True,
        ignore=shutil.ignore_patterns(".git", ".venv*", "site", "__pycache__", ".pytest_cache", "artifacts"),
    )
    return target


APPROVERS = "policies/upgrades/approvers.yaml"
KEYS_FOLDER = "test-signing-keys"  # inside .git: never part of the tree the toolkit reads


def git(repo: Path, *args: str, name: str = "test", email: str = "test@example.com") -> str:
    """Run git in `repo` as the given author (no global config needed); its output. In a repository made by
    git_repository from a tree with an approvers file, commits and tags are SSH-signed with the key of the
    person that email belongs to (approvals are signatures, decision 0063); other authors sign nothing."""
    command = ["git", "-c", f"user.email={email}", "-c", f"user.name={name}", *_signing(repo, email), *args]
    return subprocess.run(command, cwd=repo, check=True, capture_output=True, text=True).stdout


def _signing(repo: Path, email: str) -> list[str]:
    key = repo / ".git" / KEYS_FOLDER / email.lower()
    if not key.is_file():
        return ["-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"]
    return [
        "-c",
        "gpg.format=ssh",
        "-c",
        f"user.signingkey={key}",
        "-c",
        "commit.gpgsign=true",
        "-c",
        "tag.gpgsign=true",
    ]


def sign_as(repo: Path, email: str, other: str) -> None:
    """Make `other` an email that signs with `email`'s key (a person's second address)."""
    folder = repo / ".git" / KEYS_FOLDER
    shutil.copy(folder / email.lower(), folder / other.lower())


def add_signing_keys(target: Path) -> dict[str, Path]:
    """A fresh ed25519 key per person of the tree's approvers file, written into the file as signingKeys; the
    private keys go into .git, one per email of the person. {person: private key}."""
    import yaml

    approvers = target / APPROVERS
    if not approvers.is_file() or shutil.which("ssh-keygen") is None:
        return {}
    folder = target / ".git" / KEYS_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    # the tree's own keys
    text = re.sub(r"^      signingKeys: .*\n", "", approvers.read_text(), flags=re.MULTILINE)
    people = (yaml.safe_load(text.split("\n---", 1)[0]) or {}).get("spec", {}).get("people", {})
    keys: dict[str, Path] = {}
    for person, entry in people.items():
        key = folder / f"person-{person}"
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", person, "-f", str(key)], check=True
        )
        public = key.with_suffix(".pub").read_text().strip()
        line = f'      signingKeys: ["{public}"]\n'
        text = re.sub(
            rf"^(    {re.escape(person)}:[^\n]*\n)",
            lambda m, line=line: m.group(1) + line,
            text,
            count=1,
            flags=re.MULTILINE,
        )
        for email in entry.get("emails", []):
            shutil.copy(key, folder / email.lower())
        keys[person] = key
    approvers.write_text(text)
    return keys


def approve(repo: Path, plan: str, stage: str, email: str, rev: str = "HEAD") -> None:
    """The approval of a stage: a tag approve/<plan>/<stage>/<who> on `rev`, signed with `email`'s key."""
    who = email.split("@")[0]
    git(repo, "tag", "-s", "-m", f"approve {plan} {stage}", f"approve/{plan}/{stage}/{who}", rev, email=email)


def git_repository(target: Path, name: str = "test", email: str = "test@example.com") -> Path:
    """Make `target` (already filled) a git repository with one commit of everything; skip the test without
    git."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    git(target, "init", "-q", name=name, email=email)
    add_signing_keys(target)
    git(target, "add", "-A", name=name, email=email)
    git(target, "commit", "-q", "-m", "start", name=name, email=email)
    return target


def cli_on(root: Path, *args: str) -> subprocess.CompletedProcess:
    """`gpupolicy COMMAND --repo ROOT ARGS...` in a fresh interpreter (`args[0]` is the command), as text."""
    return subprocess.run(
        [sys.executable, "-m", "gpupolicy", args[0], "--repo", str(root), *args[1:]],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def run_gpupolicy(*args: str) -> subprocess.CompletedProcess:
    """The CLI from this checkout's tools/ in a fresh interpreter with a bare environment (no inherited PATH
    entries, no HOME): what a user's shell would run, as text."""
    return subprocess.run(
        [sys.executable, "-m", "gpupolicy", *args],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO / "tools"), "PATH": "/usr/bin:/bin"},
    )
