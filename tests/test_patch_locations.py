"""A finding names the overlay edit that set its value, with the base as context (issue 14): one test per kind
of kustomize edit. The minirepo's team ResourceQuota allows 16 GPUs (policies/base/team.yaml:23) and alpha's
queue holds 16 (clusters/mini/queues.yaml:18); each test lowers or raises one of them from the cluster
overlay."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support import MINIREPO

from gpupolicy import pipeline
from gpupolicy.findings import Finding, Location

QUOTA_BASE = "policies/base/team.yaml:23"
OVERLAY = "clusters/mini/kustomization.yaml"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return shutil.copytree(MINIREPO, tmp_path / "repo")


def _overlay(repo: Path, text: str) -> None:
    (repo / OVERLAY).write_text((repo / OVERLAY).read_text() + text)


def _only(repo: Path, rule: str) -> Finding:
    found = [f for f in pipeline.run(repo).findings if f.rule == rule]
    assert len(found) == 1, found
    return found[0]


def _line_of(repo: Path, rel: str, text: str) -> int:
    return (repo / rel).read_text().splitlines().index(text) + 1


def test_a_strategic_merge_patch_file(repo: Path) -> None:
    (repo / "clusters/mini/quota.yaml").write_text(
        "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: gpu\n  namespace: alpha\n"
        "spec:\n  hard:\n    requests.nvidia.com/gpu: \"8\"\n"
    )
    _overlay(repo, "patches:\n  - path: quota.yaml\n")
    finding = _only(repo, "CAP015")
    assert (finding.path, finding.line) == ("clusters/mini/quota.yaml", 8)
    assert finding.message.endswith(f"(set by this overlay edit; the base is {QUOTA_BASE})")


def test_a_strategic_merge_patch_that_does_not_set_the_field_leaves_the_base(repo: Path) -> None:
    """The patch merges into spec.hard without touching the GPU key: the base still set the value."""
    queues = repo / "clusters/mini/queues.yaml"
    queues.write_text(queues.read_text().replace("nominalQuota: 16", "nominalQuota: 24", 1))
    (repo / "clusters/mini/quota.yaml").write_text(
        "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: gpu\n  namespace: alpha\n"
        "spec:\n  hard:\n    pods: \"100\"\n"
    )
    _overlay(repo, "patches:\n  - path: quota.yaml\n")
    finding = _only(repo, "CAP015")
    assert f"{finding.path}:{finding.line}" == QUOTA_BASE and "overlay edit" not in finding.message


def test_a_json6902_patch_file_and_an_inline_one(repo: Path) -> None:
    (repo / "clusters/mini/quota-ops.yaml").write_text(
        "- op: replace\n  path: /spec/hard/requests.nvidia.com~1gpu\n  value: \"8\"\n"
    )
    _overlay(repo, "patches:\n  - path: quota-ops.yaml\n    target: {kind: ResourceQuota, name: gpu}\n")
    finding = _only(repo, "CAP015")
    assert (finding.path, finding.line) == ("clusters/mini/quota-ops.yaml", 2)
    assert finding.message.endswith(f"the base is {QUOTA_BASE})")
    (repo / "clusters/mini/quota-ops.yaml").unlink()
    (repo / OVERLAY).write_text(
        (repo / OVERLAY)
        .read_text()
        .replace(
            "  - path: quota-ops.yaml\n",
            "  - patch: |-\n      - op: replace\n        path: "
            "/spec/hard/requests.nvidia.com~1gpu\n        value: \"8\"\n",
        )
    )
    finding = _only(repo, "CAP015")
    assert (finding.path, finding.line) == (OVERLAY, _line_of(repo, OVERLAY, "  - patch: |-"))


def test_a_replacement(repo: Path) -> None:
    (repo / "clusters/mini/values.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: quota-values\n  namespace: alpha\n"
        "data:\n  alpha-gpus: \"24\"\n"
    )
    (repo / OVERLAY).write_text(
        (repo / OVERLAY).read_text().replace("  - queues.yaml\n", "  - queues.yaml\n  - values.yaml\n")
    )
    _overlay(
        repo,
        "replacements:\n  - source: {kind: ConfigMap, name: quota-values, fieldPath: "
        "data.alpha-gpus}\n    targets:\n      - select: {kind: ClusterQueue, name: alpha}\n        "
        "fieldPaths:\n          - spec.resourceGroups.0.flavors.0.resources.0.nominalQuota\n",
    )
    finding = _only(repo, "CAP001")
    line = _line_of(repo, OVERLAY, "          - spec.resourceGroups.0.flavors.0.resources.0.nominalQuota")
    assert (finding.path, finding.line) == (OVERLAY, line)
    assert finding.message.endswith("the base is clusters/mini/queues.yaml:18)")
    # the same replacement from a replacements file (a YAML list)
    text = (repo / OVERLAY).read_text()
    inline = text[text.index("replacements:\n") + len("replacements:\n") :]
    (repo / "clusters/mini/replacements.yaml").write_text(
        "\n".join(line[2:] for line in inline.splitlines()) + "\n"
    )
    (repo / OVERLAY).write_text(text.replace(inline, "  - path: replacements.yaml\n"))
    finding = _only(repo, "CAP001")
    assert (finding.path, finding.line) == ("clusters/mini/replacements.yaml", 5)


def test_a_generated_configmap_key_is_located_in_its_file(repo: Path) -> None:
    (repo / "clusters/mini/notes.yaml").write_text("owner:\n  team: alpha\n")
    _overlay(
        repo,
        "configMapGenerator:\n  - name: notes\n    namespace: alpha\n    files: [notes.yaml]\n"
        "generatorOptions: {disableNameSuffixHash: true}\n",
    )
    result = pipeline.run(repo)
    [notes] = [
        o for o in result.fleet.clusters["mini"].objects if o.kind == "ConfigMap" and o.name == "notes"
    ]
    assert result.fleet.locate(notes, "data", "notes.yaml", "owner", "team") == Location(
        "clusters/mini/notes.yaml", 2
    )
    assert result.fleet.locate(notes, "data", "notes.yaml") == Location("clusters/mini/notes.yaml", 1)
