"""The queue files' header block (decision 0090): rendered from the queue and its pools, reported by DOC006
when
a hand edit leaves it behind (validate writes nothing), rewritten by `gpupolicy docs`, on the tests' own
fleet."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from support import copy_repo, fleet_repo

from gpupolicy import docsgen, pipeline
from gpupolicy.domain import queue_header


def _doc006(root: Path) -> list:
    result = pipeline.run(root, use_cache=False, pages=docsgen.page_drift)
    return [f for f in result.findings if f.rule == "DOC006"]


def _first_gpu_nominal(text: str) -> re.Match:
    """The first GPU flavor's nominalQuota in a queue file (after the cpu group)."""
    gpu = text.index("- name: nvidia.com/")
    return re.compile(r"nominalQuota: (\d+)\n").search(text, gpu)


def test_the_fleet_headers_are_what_the_yaml_makes_them():
    fleet = pipeline.load_fleet(fleet_repo())
    blocks = queue_header.expected_blocks(fleet)
    assert any(path.endswith("/queues/research.yaml") for path in blocks)
    assert queue_header.refreshed_files(fleet) == {}  # the committed headers agree


def test_a_hand_edited_quota_is_reported_at_the_stale_line_and_docs_rewrites_it(tmp_path):
    root = copy_repo(fleet_repo(), tmp_path / "repo")
    rel = "clusters/prod-us/queues/research.yaml"
    path = root / rel
    text = path.read_text()
    match = _first_gpu_nominal(text)
    raised = int(match[1]) + 8
    edited = text[: match.start(1)] + str(raised) + text[match.end(1) :]
    path.write_text(edited)

    findings = _doc006(root)
    assert path.read_text() == edited  # the validator wrote nothing
    assert len(findings) == 1
    finding = findings[0]
    stale_line = edited.split("\n")[finding.line - 1]
    assert finding.path == rel and stale_line.startswith("#   ")
    assert f"the queue header says `{stale_line}`" in finding.message
    expected, pool_note = finding.message.split("the YAML below makes it `", 1)[1].split("`", 1)
    # the fixture's flavors are named as their pools
    flavor = stale_line.removeprefix("#   ").split(" (", 1)[0]
    assert pool_note == f" (pool {flavor})"  # the root-cause report links it through the pool
    assert f" {raised} of " in expected and expected.split(":")[0] == stale_line.split(":")[0]
    assert "gpupolicy docs" in finding.hint

    check = subprocess.run(
        [sys.executable, "-m", "gpupolicy", "docs", "--check", "--repo", str(root)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert check.returncode == 1 and f"{rel}: queue header stale" in check.stdout
    assert path.read_text() == edited

    done = subprocess.run(
        [sys.executable, "-m", "gpupolicy", "docs", "--repo", str(root)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    fixed = path.read_text()
    assert expected in fixed.split("\n") and stale_line not in fixed.split("\n")
    assert fixed.replace(expected, stale_line) == edited  # only the stale line changed
    assert _doc006(root) == []


def test_a_file_without_the_marker_is_not_checked(tmp_path):
    root = copy_repo(fleet_repo(), tmp_path / "repo")
    path = root / "clusters/prod-us/queues/research.yaml"
    text = path.read_text().replace(queue_header.MARKER + "\n", "")
    match = _first_gpu_nominal(text)
    path.write_text(text[: match.start(1)] + str(int(match[1]) + 8) + text[match.end(1) :])
    assert _doc006(root) == []


def test_recommend_refreshes_a_block_the_change_moves_without_editing_its_yaml(tmp_path):
    """A change of what a pool exposes (here: one node more) moves the `of M` of every queue with quota on it,
    though no queue file's YAML changed: `edits.refreshed_headers` rewrites those blocks, and only those."""
    from gpupolicy.recommend import edits

    root = copy_repo(fleet_repo(), tmp_path / "repo")
    before = pipeline.load_fleet(root, ["prod-us"], use_cache=False)
    pool = next(p for p in before.clusters["prod-us"].pools if p.name == "us-l40s-shared")
    path = root / pool.path
    zone, count = next(iter(pool.zones.items()))
    text = path.read_text()
    path.write_text(text.replace(f"    {zone}: {count}\n", f"    {zone}: {count + 1}\n", 1))
    after = pipeline.load_fleet(root, ["prod-us"], use_cache=False)
    headers = edits.refreshed_headers(before, after, {})
    holders = {
        q.obj.origin
        for q in after.clusters["prod-us"].cluster_queues.values()
        if any(flavor == "us-l40s-shared" for flavor, _ in q.quotas())
    }
    assert holders and set(headers) == holders
    grown = after.clusters["prod-us"].pools
    exposed = next(p for p in grown if p.name == "us-l40s-shared").capacity["nvidia.com/gpu"]
    assert all(f" of {exposed}" in text for text in headers.values())
