"""`gpupolicy docs --check`: the generated pages of the runbook site match the manifests, and a stale page is
named.

The repository check fails whenever someone changes clusters/, pools/ or policies/ (or a decision record)
without running `gpupolicy docs`; that is its purpose. The second test proves the check can fail: in a copy of
the repository it regenerates the pages, changes one pool's node count, and expects the fleet overview
reported stale.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from support import REPO, copy_repo

from gpupolicy.cli import main

FLEET_OVERVIEW = "docs/generated/index.md"


def test_generated_pages_are_current(capsys) -> None:
    code = main(["docs", "--check", "--repo", str(REPO)])
    out = capsys.readouterr().out
    assert code == 0, f"stale generated pages; run `gpupolicy docs` and commit docs/generated/:\n{out}"
    assert "generated pages are current" in out


def _pool_with_zones(repo: Path) -> tuple[Path, str, int]:
    """A pool of the fleet (one a cluster includes, so it is on the overview), its first zone and node
    count."""
    overview = (repo / FLEET_OVERVIEW).read_text(encoding="utf-8")
    for pool_file in sorted(repo.glob("pools/*/pool.yaml")):
        zones = (yaml.safe_load(pool_file.read_text(encoding="utf-8")).get("spec") or {}).get("zones") or {}
        if zones and f"| {pool_file.parent.name} |" in overview:
            zone, count = next(iter(zones.items()))
            return pool_file, zone, int(count)
    pytest.fail("no pool of the fleet appears on the generated overview")
    raise AssertionError  # unreachable


def _set_node_count(pool_file: Path, zone: str, count: int) -> None:
    """Rewrite one zone's node count in place, keeping the rest of the file (comments, order) as written."""
    text = pool_file.read_text(encoding="utf-8")
    pattern = re.compile(rf"^(\s+{re.escape(zone)}:\s*)\d+", re.MULTILINE)
    changed, replaced = pattern.subn(rf"\g<1>{count}", text, count=1)
    assert replaced == 1, f"zone {zone} not found in {pool_file}"
    pool_file.write_text(changed, encoding="utf-8")


def test_check_names_the_stale_page_after_a_manifest_change(tmp_path: Path, capsys) -> None:
    repo = copy_repo(REPO, tmp_path / "repo")
    assert main(["docs", "--repo", str(repo)]) == 0
    assert main(["docs", "--check", "--repo", str(repo)]) == 0, "freshly generated pages are reported stale"
    capsys.readouterr()

    pool_file, zone, nodes = _pool_with_zones(repo)
    _set_node_count(pool_file, zone, nodes + 1)
    before = (repo / FLEET_OVERVIEW).read_text(encoding="utf-8")
    code = main(["docs", "--check", "--repo", str(repo)])
    out = capsys.readouterr().out
    assert code == 1, f"a changed node count in {pool_file.relative_to(repo)} left every page current:\n{out}"
    assert f"{FLEET_OVERVIEW}: stale" in out, out
    assert (repo / FLEET_OVERVIEW).read_text(encoding="utf-8") == before, "--check must not write pages"


def test_check_reports_a_page_no_generator_makes(tmp_path: Path, capsys) -> None:
    repo = copy_repo(REPO, tmp_path / "repo")
    assert main(["docs", "--repo", str(repo)]) == 0
    leftover = repo / "docs" / "generated" / "clusters" / "decommissioned.md"
    leftover.write_text("# Cluster decommissioned\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["docs", "--check", "--repo", str(repo)]) == 1
    assert "docs/generated/clusters/decommissioned.md: stale" in capsys.readouterr().out
