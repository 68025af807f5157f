"""`gpupolicy inspect` in a terminal: short lines, no zero quota entries, and per pool the capacity that no
queue holds as nominal quota."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from support import MINIREPO, REPO

from gpupolicy.cli import main
from gpupolicy.commands.inspect import LINE_WIDTH


def _inspect(capsys, repo: Path, *extra: str) -> list[str]:
    assert main(["inspect", "--repo", str(repo), *extra]) == 0
    return capsys.readouterr().out.splitlines()


def test_lines_fit_a_terminal_and_list_no_zero_quota(capsys) -> None:
    lines = _inspect(capsys, REPO)
    assert max(len(line) for line in lines) <= LINE_WIDTH
    queues = " ".join(line for line in lines if line.lstrip().startswith("queue") or line.startswith(" " * 6))
    assert not re.search(r"[ =]0(,|;|$| )", queues), "a zero quota was printed"
    assert "nvidia.com/" not in queues


def test_each_pool_says_how_much_of_its_capacity_no_quota_holds(capsys, tmp_path: Path) -> None:
    assert "  pool mini-a100: 2x8 A100-80GB exclusive; gpu 16 (all in quota)" in _inspect(capsys, MINIREPO)
    repo = Path(shutil.copytree(MINIREPO, tmp_path / "repo"))
    queues = repo / "clusters" / "mini" / "queues.yaml"
    queues.write_text(queues.read_text().replace("nominalQuota: 16", "nominalQuota: 10"))
    assert "  pool mini-a100: 2x8 A100-80GB exclusive; gpu 16 (6 in no quota)" in _inspect(capsys, repo)
    queues.write_text(queues.read_text().replace("nominalQuota: 10", "nominalQuota: 20"))
    assert "  pool mini-a100: 2x8 A100-80GB exclusive; gpu 16 (over-promised by 4)" in _inspect(capsys, repo)


def test_json_carries_the_headroom(capsys) -> None:
    assert main(["inspect", "--repo", str(MINIREPO), "--format", "json"]) == 0
    pool = json.loads(capsys.readouterr().out)["clusters"][0]["pools"][0]
    assert pool["headroom"] == {"nvidia.com/gpu": 0}
