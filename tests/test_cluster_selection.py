"""A cluster selection says one thing (issue 16, step 6): None is every cluster; an empty list would validate
nothing, so the pipeline refuses it instead of reading it as "all" or running to an empty report. A run over
some
clusters still reports the fleet-level findings about them (issue 14)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support import REPO, copy_repo, fleet_repo

from gpupolicy import pipeline
from gpupolicy.findings import Finding


def test_an_empty_cluster_selection_is_refused() -> None:
    with pytest.raises(ValueError, match="empty cluster selection"):
        pipeline.run(REPO, clusters=[])


def _with_new_pool(tmp_path: Path) -> Path:
    """The tests' own rich fleet (support.fleet_repo) with pool eu-l4-extra (a copy of eu-l4-shared) added to
    prod-eu, in no rollout stage."""
    repo = copy_repo(fleet_repo(), tmp_path / "repo")
    shutil.copytree(repo / "pools/eu-l4-shared", repo / "pools/eu-l4-extra")
    for path in (repo / "pools/eu-l4-extra").iterdir():
        path.write_text(path.read_text().replace("eu-l4-shared", "eu-l4-extra"))
    overlay = repo / "clusters/prod-eu/kustomization.yaml"
    overlay.write_text(
        overlay.read_text().replace(
            "  - ../../pools/eu-h100-serving\n",
            "  - ../../pools/eu-h100-serving\n  - ../../pools/eu-l4-extra\n",
        )
    )
    return repo


def test_a_run_over_one_cluster_keeps_the_fleet_level_findings_about_it(tmp_path: Path) -> None:
    """Issue 14: the rollout plan is a fleet-level file; `--cluster prod-eu` must still report that it leaves
    prod-eu's new pool out of every stage, exactly as the full run does, and a run over prod-us must not."""
    repo = _with_new_pool(tmp_path)
    left_out = "driver-r580-to-r595: prod-eu/eu-l4-extra runs the driver but is in no stage"

    def upgrade_findings(clusters: list[str] | None) -> list[Finding]:
        return [f for f in pipeline.run(repo, clusters=clusters).findings if f.rule.startswith("UPG")]

    whole = upgrade_findings(None)
    assert [f.message for f in whole] == [left_out]
    assert upgrade_findings(["prod-eu"]) == whole
    assert upgrade_findings(["prod-us"]) == []


def test_the_summary_names_a_cluster_left_unrendered_by_a_file_that_does_not_load(tmp_path: Path) -> None:
    """A YAML error in one cluster's queue keeps that cluster from rendering: the summary says so instead of
    counting the objects of the others as if the fleet had two clusters."""
    from gpupolicy import report

    repo = copy_repo(fleet_repo(), tmp_path / "repo")
    queue = repo / "clusters/prod-eu/queues/nlp.yaml"
    queue.write_text(queue.read_text().replace("spec:\n", "spec:\n\t\n", 1))
    result = pipeline.run(repo)
    assert result.unrendered_clusters == ["prod-eu"] and "prod-eu" not in result.rendered_clusters
    assert report.summary(result)["unrendered_clusters"] == ["prod-eu"]
    last = report.as_text(result).splitlines()[-1]
    assert "from 2 cluster(s) (prod-eu not rendered: a file it includes does not load)" in last, last
