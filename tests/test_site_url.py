"""One setting for the runbook site's public URL (mkdocs.yml `site_url`): the alerts' runbook links must agree
with it (OBS001), and the SARIF report's tool and rule links are derived from it, never hard-coded."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from support import MINIREPO, REPO

from gpupolicy.cli import main
from gpupolicy.infra.repopath import Reader
from gpupolicy.infra.siteconfig import read_site_url, rule_page


def _repo_with(tmp_path: Path, text: str | None) -> Reader:
    (tmp_path / "repo").mkdir()
    if text is not None:
        (tmp_path / "repo" / "mkdocs.yml").write_text(text)
    return Reader(tmp_path / "repo")


def test_the_setting_is_read_past_mkdocs_python_tags(tmp_path: Path) -> None:
    reader = _repo_with(
        tmp_path,
        "site_url: https://runbooks.gpu.internal/\nmarkdown_extensions:\n"
        "  - x:\n      format: !!python/name:os.system\n",
    )
    assert read_site_url(reader) == ("https://runbooks.gpu.internal/", "")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (None, "there is no mkdocs.yml"),
        ("site_name: x\n", "mkdocs.yml sets no site_url"),
        ("site_url: runbooks.gpu.internal\n", "is not an absolute http(s) URL ending in /"),
        ("site_url: https://runbooks.gpu.internal\n", "is not an absolute http(s) URL ending in /"),
        ("site_url: [\n", "mkdocs.yml is not YAML"),
    ],
)
def test_an_unusable_setting_says_why(tmp_path: Path, text: str | None, reason: str) -> None:
    value, problem = read_site_url(_repo_with(tmp_path, text))
    assert value == "" and reason in problem


def test_a_mkdocs_yml_linked_out_of_the_repository_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside.yml"
    outside.write_text("site_url: https://attacker.invalid/\n")
    reader = _repo_with(tmp_path, None)
    os.symlink(outside, tmp_path / "repo" / "mkdocs.yml")
    value, problem = read_site_url(reader)
    assert value == "" and "outside the repository" in problem


def test_sarif_links_the_tool_and_every_rule_to_the_site(tmp_path: Path, capsys) -> None:
    site_url, _ = read_site_url(Reader(REPO))
    out = tmp_path / "report.sarif"
    assert main(["validate", "--repo", str(REPO), "--format", "sarif", "--output", str(out)]) == 0
    driver = json.loads(out.read_text())["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == site_url
    for rule in driver["rules"]:
        assert rule["helpUri"] == rule_page(site_url, rule["id"])
        assert (REPO / "docs" / "generated" / "rules" / f"{rule['id']}.md").is_file(), rule["id"]


def test_without_a_site_there_is_no_made_up_link(tmp_path: Path) -> None:
    repo = Path(shutil.copytree(MINIREPO, tmp_path / "repo"))
    (repo / "mkdocs.yml").unlink()
    out = tmp_path / "report.sarif"
    assert main(["validate", "--repo", str(repo), "--format", "sarif", "--output", str(out)]) in (0, 1)
    driver = json.loads(out.read_text())["runs"][0]["tool"]["driver"]
    assert "informationUri" not in driver and not any("helpUri" in rule for rule in driver["rules"])
