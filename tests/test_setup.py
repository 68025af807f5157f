"""The first-run setup and the supported Pythons: what a newcomer sees before any test runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from support import REPO

FAKE_PYTHON = """#!/bin/sh
# A stand-in interpreter: `--version`, and `-m venv DIR` makes DIR/bin/python that accepts anything.
if [ "$1" = "--version" ]; then echo "Python 3.99.0"; exit 0; fi
mkdir -p "$3/bin"
printf '#!/bin/sh\\necho "pip $*" >> "%s/calls"\\n' "$3" > "$3/bin/python"
chmod +x "$3/bin/python"
"""


def _minimum_python() -> tuple[int, ...]:
    spec = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"]
    match = re.fullmatch(r">=(\d+)\.(\d+)\.(\d+)", spec)
    assert match, f"requires-python {spec!r} should be one floor with a patch level"
    return tuple(int(part) for part in match.groups())


def test_first_run_announces_each_step_while_pip_stays_quiet(tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    venv = tmp_path / "venv"
    proc = subprocess.run(
        ["make", "--no-print-directory", f"{venv}/.installed", f"PYTHON={fake}", f"VENV={venv}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "MAKEFLAGS": ""},
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"gpupolicy setup: {venv} for Python 3.99.0")
    assert [line.split("]")[0].strip() for line in lines if "] " in line] == ["[1/3", "[2/3", "[3/3"]
    assert "installing gpupolicy and its dependencies" in proc.stdout and "pip-install.log" in proc.stdout
    assert lines[-1].startswith("gpupolicy setup: done")
    assert all(line.startswith(("gpupolicy setup", "  [")) for line in lines), "only the announced steps"
    calls = (venv / "calls").read_text().splitlines()
    assert len(calls) == 2 and all("--quiet" in call and "--log" in call for call in calls)


def test_the_running_python_is_a_supported_one() -> None:
    assert sys.version_info[:3] >= _minimum_python()


def test_readme_states_the_floor_that_pyproject_declares() -> None:
    floor = ".".join(map(str, _minimum_python()))
    readme = (REPO / "README.md").read_text()
    assert f"CPython **{floor} and newer**" in readme


def test_ci_runs_the_fork_job_on_debians_own_python_in_its_own_venv() -> None:
    ci = (REPO / ".ci" / "run").read_text()
    commands = [line.split() for line in ci.splitlines() if line.startswith("make ")]
    assert ["make", "validate"] in commands and ["make", "test"] in commands
    fork_job = [
        line.split() for line in ci.splitlines() if ".ci/fork-fleet" in line and not line.startswith("#")
    ]
    assert fork_job and fork_job[0][:3] == ["PYTHON=/usr/bin/python3", "VENV=.venv-system", ".ci/fork-fleet"]
    assert "python3-venv" in (REPO / ".ci" / "system-tools").read_text()
    assert ".venv-system/" in (REPO / ".gitignore").read_text().splitlines()
