"""The model stage takes whatever a schema-invalid manifest holds without crashing: the schema finding is the
report, never an INTERNAL one (found by tests/fuzz/test_fuzz_pipeline.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

from support import MINIREPO

from gpupolicy import pipeline

FLAVOR = """apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: mini-a100
spec:
  nodeLabels: true
"""


def test_a_flavor_whose_node_labels_are_not_a_mapping_is_a_schema_finding_not_a_crash(tmp_path: Path) -> None:
    repo = Path(shutil.copytree(MINIREPO, tmp_path / "repo"))
    (repo / "pools" / "mini-a100" / "flavor.yaml").write_text(FLAVOR)
    result = pipeline.run(repo)
    assert not result.crashes, result.crashes
    assert any(f.rule == "SCHEMA002" and "nodeLabels" in f.message for f in result.findings)
    assert result.fleet.clusters["mini"].flavors["mini-a100"].node_labels == {}


def test_covered_resources_that_are_not_a_list_are_a_schema_finding_not_a_crash(tmp_path: Path) -> None:
    """Found by the fuzzer: `coveredResources: 1` crashed the model stage (an int is not iterable)."""
    repo = Path(shutil.copytree(MINIREPO, tmp_path / "repo"))
    queues = repo / "clusters" / "mini" / "queues.yaml"
    queues.write_text(queues.read_text().replace("coveredResources: [nvidia.com/gpu]", "coveredResources: 1"))
    result = pipeline.run(repo)
    assert not result.crashes, result.crashes
    assert any(f.rule.startswith("SCHEMA") and "coveredResources" in f.message for f in result.findings)
