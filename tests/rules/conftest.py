"""Two things the rule fixtures need that plain files cannot say.

- The fixtures' exceptions carry fixed dates, so the checks run on a fixed day (FIXTURE_TODAY), within whose
  90-day expiry bound (waivers.MAX_EXPIRY_DAYS) those dates lie.
- A fixture with a `guardrail-base` file is judged as a change: the base repository (tests/fixtures/minirepo, or
  the folder its `base` file names) is committed as the base revision, with the fixture's files that
  `guardrail-base` lists (one path a line; `#` comments) already in it; all the fixture's files are the head's
  working tree; and the run reads the guardrail configuration from the base (`pipeline.run(guardrail_base=...)`,
  what `validate --base` does). CFG003's fixtures need that.
"""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path

import pytest
from support import git, git_repository

from gpupolicy.configure import guardrails
from gpupolicy import pipeline
from gpupolicy.domain import waivers

FIXTURE_TODAY = date(2026, 12, 1)
REPO = Path(__file__).resolve().parents[2]
DEFAULT_BASE = REPO / "tests" / "fixtures" / "minirepo"


@pytest.fixture(autouse=True)
def _fixture_day(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(waivers, "today", lambda: FIXTURE_TODAY)


@pytest.fixture(autouse=True)
def _guardrail_base(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    callspec = getattr(request.node, "callspec", None)
    fixture = callspec.params.get("fixture") if callspec is not None else None
    if not isinstance(fixture, Path) or not (fixture / "guardrail-base").is_file():
        return
    base_file = fixture / "base"
    base = (REPO / base_file.read_text().strip()) if base_file.is_file() else DEFAULT_BASE
    run = pipeline.run

    def run_as_change(repo: Path, **kwargs):
        head = repo.with_name(repo.name + "-head")
        repo.rename(head)
        shutil.copytree(base, repo, symlinks=True)
        for rel in _listed(fixture / "guardrail-base"):
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(head / rel, repo / rel)
        git_repository(repo)
        for entry in repo.iterdir():
            if entry.name != ".git":
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        shutil.copytree(head, repo, symlinks=True, dirs_exist_ok=True)
        git(repo, "status", "--porcelain")  # the head is the working tree, uncommitted
        return run(repo, guardrail_base=guardrails.FromBase(repo, "HEAD"), **kwargs)

    monkeypatch.setattr(pipeline, "run", run_as_change)


def _listed(path: Path) -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]
