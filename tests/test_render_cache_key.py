"""The render cache key and `--changed-since` cover every input kustomize reads (issue 13, item 3).

For each kind of input a kustomization can name (all of them in a subfolder, where the old graph missed
them), a repository is set up, rendered once to warm the cache, committed, and then the input is edited. The
cached run must see the edit (its render is kubectl's fresh render, and its findings are those of a run
without the cache), and `--changed-since HEAD` must select the cluster that includes the input, and only
that one. An overlay with a field the graph does not know, or with plugin configurations, is opaque: never
cached, and reached by any change in the repository.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_incremental import GPUPOLICY, MINIREPO, commit_all, edit, selected

from gpupolicy import pipeline
from gpupolicy.infra import repopath
from gpupolicy.infra.cache.store import CacheStore
from gpupolicy.pipeline.render import graphcache, kustomize

KUSTOMIZATION = """apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
buildMetadata: [originAnnotations]
resources:
  - ../../policies/base
  - queues.yaml
{resources}components:
  - ../../pools/mini-a100
{components}{extra}"""

QUOTA_PATH = "/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota"
RESOURCE_GROUPS = """spec:
  resourceGroups:
    - coveredResources: [nvidia.com/gpu]
      flavors:
        - name: mini-a100
          resources:
            - name: nvidia.com/gpu
              nominalQuota: 8
"""
QUEUE_PATCH = (
    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: alpha\n" + RESOURCE_GROUPS
)
JSON6902_PATCH = f"- op: replace\n  path: {QUOTA_PATH}\n  value: 8\n"
TARGET = "target: {group: kueue.x-k8s.io, version: v1beta2, kind: ClusterQueue, name: alpha}"
NEGATIVE = ("nominalQuota: 8", "nominalQuota: -7")


@dataclass(frozen=True)
class Input:
    """One kind of kustomize input: the files it adds, how the kustomization names them, and an edit."""

    id: str
    files: dict[str, str]
    edit: tuple[str, str, str]  # (repo-relative file, old text, new text)
    resources: str = ""
    components: str = ""
    extra: str = ""
    findings_change: bool = True  # whether the edit changes the findings (else only the render)
    opaque: bool = False


PARTS = "clusters/mini/parts"
INPUTS = [
    Input(
        "resource-file",
        {f"{PARTS}/beta.yaml": QUEUE_PATCH.replace("name: alpha", "name: beta")},
        (f"{PARTS}/beta.yaml", *NEGATIVE),
        resources="  - parts/beta.yaml\n",
    ),
    Input(
        "component",
        {
            f"{PARTS}/comp/kustomization.yaml": (
                "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n"
                f"  - {TARGET}\n    patch: |-\n      [{{\"op\": \"replace\", \"path\": \"{QUOTA_PATH}\", "
                f"\"value\": 8}}]\n"
            )
        },
        (f"{PARTS}/comp/kustomization.yaml", '"value": 8', '"value": -7'),
        components="  - parts/comp\n",
    ),
    Input(
        "patchesStrategicMerge-file",
        {f"{PARTS}/smp.yaml": QUEUE_PATCH},
        (f"{PARTS}/smp.yaml", *NEGATIVE),
        extra="patchesStrategicMerge:\n  - parts/smp.yaml\n",
    ),
    Input(
        "patches-path",
        {f"{PARTS}/smp.yaml": QUEUE_PATCH},
        (f"{PARTS}/smp.yaml", *NEGATIVE),
        extra="patches:\n  - path: parts/smp.yaml\n",
    ),
    Input(
        "patches-path-json6902",
        {f"{PARTS}/ops.yaml": JSON6902_PATCH},
        (f"{PARTS}/ops.yaml", "value: 8", "value: -7"),
        extra=f"patches:\n  - path: parts/ops.yaml\n    {TARGET}\n",
    ),
    Input(
        "patchesJson6902-path",
        {f"{PARTS}/deep/ops.yaml": JSON6902_PATCH},
        (f"{PARTS}/deep/ops.yaml", "value: 8", "value: -7"),
        extra=f"patchesJson6902:\n  - path: parts/deep/ops.yaml\n    {TARGET}\n",
    ),
    # kustomize matches field names as Go's encoding/json does, whatever their case
    Input(
        "capitalised-field",
        {f"{PARTS}/ops.yaml": JSON6902_PATCH},
        (f"{PARTS}/ops.yaml", "value: 8", "value: -7"),
        extra=f"PatchesJson6902:\n  - path: parts/ops.yaml\n    {TARGET}\n",
    ),
    Input(
        "configMapGenerator-files",
        {f"{PARTS}/notes.txt": "first\n"},
        (f"{PARTS}/notes.txt", "first", "second"),
        extra="configMapGenerator:\n  - name: notes\n    namespace: alpha\n    files: [parts/notes.txt]\n",
        findings_change=False,
    ),
    Input(
        "configMapGenerator-envs",
        {f"{PARTS}/settings.env": "MODE=first\n"},
        (f"{PARTS}/settings.env", "MODE=first", "MODE=second"),
        extra="configMapGenerator:\n  - name: settings\n    namespace: alpha\n    envs: "
        "[parts/settings.env]\n",
        findings_change=False,
    ),
    Input(
        "secretGenerator-files",
        {f"{PARTS}/token.txt": "first\n"},
        (f"{PARTS}/token.txt", "first", "second"),
        extra="secretGenerator:\n  - name: token\n    namespace: alpha\n    files: [parts/token.txt]\n",
        findings_change=False,
    ),
    Input(
        "replacements-path",
        {
            f"{PARTS}/replace.yaml": (
                "source: {kind: ResourceQuota, name: gpu, fieldPath: metadata.name}\n"
                "targets:\n  - select: {kind: ClusterQueue, name: alpha}\n    fieldPaths: "
                "[metadata.labels.copied]\n    options: {create: true}\n"
            )
        },
        (f"{PARTS}/replace.yaml", "fieldPath: metadata.name", "fieldPath: metadata.namespace"),
        extra="replacements:\n  - path: parts/replace.yaml\n",
        findings_change=False,
    ),
    Input(
        "transformers-file",
        {
            f"{PARTS}/labels.yaml": (
                "apiVersion: builtin\nkind: LabelTransformer\nmetadata: {name: extra}\nlabels: {stage: "
                "first}\nfieldSpecs:\n  - {path: metadata/labels, create: true}\n"
            )
        },
        (f"{PARTS}/labels.yaml", "stage: first", "stage: second"),
        extra="transformers:\n  - parts/labels.yaml\n",
        findings_change=False,
        opaque=True,
    ),
    # kubectl rejects a field it does not know; another kubectl may know it and read a file through it
    Input(
        "unknown-field",
        {f"{PARTS}/future.yaml": "setting: first\n"},
        (f"{PARTS}/future.yaml", "first", "second"),
        extra="futureField: parts/future.yaml\n",
        findings_change=False,
        opaque=True,
    ),
]


def fleet(tmp_path: Path, kind: Input) -> Path:
    """The minirepo with the input wired into clusters/mini, and a second cluster (`other`) without it."""
    root = tmp_path / "repo"
    shutil.copytree(MINIREPO, root)
    shutil.copytree(root / "clusters" / "mini", root / "clusters" / "other")
    edit(root / "clusters" / "other" / "cluster.yaml", "name: mini", "name: other")
    (root / "clusters" / "mini" / "kustomization.yaml").write_text(
        KUSTOMIZATION.format(resources=kind.resources, components=kind.components, extra=kind.extra)
    )
    for rel, content in kind.files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(content)
    return root


def comparable(findings) -> list[tuple]:
    return sorted((f.rule, f.path, f.line, f.message, f.cluster) for f in findings)


def fresh_render(root: Path) -> str:
    graph = kustomize.build_graph(root, ["clusters/mini"])
    return kustomize.render(root, ["clusters/mini"], graph, CacheStore.off())["clusters/mini"].text


def cached_render(root: Path) -> kustomize.Rendered:
    store = CacheStore()
    graph = graphcache.build_graph(repopath.Reader(root), ["clusters/mini"], store)
    return kustomize.render(root, ["clusters/mini"], graph, store)["clusters/mini"]


@pytest.mark.parametrize("kind", INPUTS, ids=lambda kind: kind.id)
def test_cached_run_and_changed_since_see_an_edited_input(
    kind: Input, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUPOLICY_CACHE_DIR", str(tmp_path / "cache"))
    root = fleet(tmp_path, kind)
    before = pipeline.run(root)  # warms the render cache
    assert not [f for f in before.findings if f.rule in ("YAML006", "KUST003", "KUST002")], before.findings
    assert cached_render(root).cached is not kind.opaque  # the opaque overlay is never cached
    commit_all(root)
    rendered_before = fresh_render(root)

    edit(root / kind.edit[0], kind.edit[1], kind.edit[2])
    cached = pipeline.run(root)
    uncached = pipeline.run(root, use_cache=False)
    assert comparable(cached.findings) == comparable(uncached.findings)
    if kind.findings_change:
        assert comparable(cached.findings) != comparable(before.findings), "the edit changed no finding"
    render = cached_render(root)
    if not kind.opaque:  # kubectl rejects unknown fields: nothing to compare
        assert render.text == fresh_render(root) != rendered_before
    assert selected(root) == ["mini"]


def test_opaque_overlay_is_reached_by_a_change_anywhere(tmp_path: Path) -> None:
    root = fleet(tmp_path, INPUTS[-1])
    (root / "docs").mkdir()
    commit_all(root)
    (root / "docs" / "notes.md").write_text("any file at all\n")
    assert selected(root) == ["mini"]  # `other` is not opaque: a docs change does not reach it


def test_inline_patches_need_no_file(tmp_path: Path) -> None:
    inline = Input(
        "inline",
        {},
        ("", "", ""),
        extra=(
            f"patches:\n  - {TARGET}\n    patch: |-\n      - op: replace\n        path: {QUOTA_PATH}\n      "
            "  "
            "value: 8\n"
            "patchesStrategicMerge:\n  - |-\n    apiVersion: kueue.x-k8s.io/v1beta2\n    kind: ClusterQueue\n"
            "    metadata: {name: alpha, labels: {inline: 'yes'}}\n"
        ),
    )
    root = fleet(tmp_path, inline)
    graph = kustomize.build_graph(root, ["clusters/mini"])
    assert not graph.findings and not graph.opaque_fields("clusters/mini")
    assert "value: 8" not in fresh_render(root) and "inline: \"yes\"" in fresh_render(root)


def test_changed_since_on_the_command_line_validates_the_subfolder_patch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's report: a patchesJson6902 file in a subfolder, edited to a quota of -7."""
    monkeypatch.setenv("GPUPOLICY_CACHE_DIR", str(tmp_path / "cache"))
    kind = next(k for k in INPUTS if k.id == "patchesJson6902-path")
    root = fleet(tmp_path, kind)
    commit_all(root)
    # warm
    subprocess.run([str(GPUPOLICY), "validate", "--repo", str(root)], capture_output=True, check=False)
    edit(root / kind.edit[0], kind.edit[1], kind.edit[2])
    out = subprocess.run(
        [str(GPUPOLICY), "validate", "--repo", str(root), "--changed-since", "HEAD", "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert "nothing to validate" not in out.stderr and "1 of 2 cluster(s)" in out.stderr, out.stderr
    assert any(f["rule"] == "CAP016" for f in json.loads(out.stdout)["findings"]), out.stdout


def _age_folders(root: Path) -> None:
    """Folders older than graphcache's racy window, so that the graph is kept and reused."""
    for folder in [root, *(p for p in root.rglob("*") if p.is_dir())]:
        os.utime(folder, (folder.stat().st_atime - 60, folder.stat().st_mtime - 60))


def test_a_reused_graph_still_knows_the_opaque_overlay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUPOLICY_CACHE_DIR", str(tmp_path / "cache"))
    root = fleet(tmp_path, next(k for k in INPUTS if k.id == "transformers-file"))
    _age_folders(root)
    cache = CacheStore()
    first = graphcache.build_graph(repopath.Reader(root), ["clusters/mini"], cache)
    reused = graphcache.build_graph(repopath.Reader(root), ["clusters/mini"], cache)
    assert reused is not first and first.opaque_fields("clusters/mini") == ["transformers"]
    assert reused.opaque_fields("clusters/mini") == ["transformers"]
