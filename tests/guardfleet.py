"""A small fleet with one finding to accept, for the reviewed-exception and guardrail tests: the minirepo with
the CPU flavor and tainted pool of WL012's good fixture and SEC003's admission policies laid over it (so it is
clean), its CODEOWNERS, and alpha's namespace quota lowered below its queue's (CAP015 at
policies/base/team.yaml:23, the
one error). `commit_base` makes it the `main` branch of a fresh git repository."""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

from support import MINIREPO, git, git_repository

from gpupolicy.domain import waivers

RULES = Path(__file__).resolve().parent / "rules"
LANDING_MATRIX = RULES / "WL012" / "good" / "cpu-flavor-first"
ADMISSION = RULES / "SEC003" / "good" / "policies-bound" / "policies" / "base" / "admission.yaml"
CODEOWNERS = """\
/gpupolicy.yaml            @example-org/gpu-platform
/policies/exceptions.yaml  @example-org/gpu-platform @example-org/platform-oncall @example-org/alpha-lead
/policies/checks/          @example-org/gpu-platform
/docs/CODEOWNERS           @example-org/gpu-platform
"""
CAP015_LINE = 23  # policies/base/team.yaml: the ResourceQuota's GPU line


def fleet(target: Path) -> Path:
    repo = shutil.copytree(MINIREPO, target)
    shutil.copytree(LANDING_MATRIX, repo, dirs_exist_ok=True)
    shutil.copyfile(ADMISSION, repo / "policies/base/admission.yaml")
    kustomization = repo / "policies/base/kustomization.yaml"
    kustomization.write_text(kustomization.read_text() + "  - admission.yaml\n")
    (repo / "docs").mkdir(exist_ok=True)
    (repo / "docs/CODEOWNERS").write_text(CODEOWNERS)
    team = repo / "policies/base/team.yaml"
    team.write_text(team.read_text().replace('requests.nvidia.com/gpu: "16"', 'requests.nvidia.com/gpu: "8"'))
    return repo


def commit_base(repo: Path) -> Path:
    """`repo` as the single commit of branch main, checked out on branch `change` for the change to follow."""
    git_repository(repo)
    git(repo, "branch", "-M", "main")
    git(repo, "checkout", "-q", "-b", "change")
    return repo


def in_days(days: int) -> str:
    """A date `days` after today, as an exception's `expires` writes it."""
    return (waivers.today() + timedelta(days=days)).isoformat()


def raise_alpha(repo: Path, to: int = 24) -> None:
    """alpha's queue quota above its pool's 16 GPUs: CAP001 at clusters/mini/queues.yaml:24."""
    queues = repo / "clusters/mini/queues.yaml"
    queues.write_text(queues.read_text().replace("nominalQuota: 16", f"nominalQuota: {to}", 1))
