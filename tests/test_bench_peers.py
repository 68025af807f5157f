"""The bench's peer comparison (bench/peers.py): like with like, on exactly the same objects."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def peers():
    spec = importlib.util.spec_from_file_location("bench_peers", REPO / "bench" / "peers.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_peers"] = module
    spec.loader.exec_module(module)
    return module


def _object(
    kind: str, name: str, api_version: str = "v1", namespace: str | None = "team-a", **annotations
) -> dict:
    metadata: dict = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata}


def test_only_kinds_kubernetes_validate_has_a_schema_for_are_given_to_it(peers) -> None:
    bodies = [
        _object("ConfigMap", "a"),
        _object("ClusterQueue", "b", "kueue.x-k8s.io/v1beta2", None),
        _object("Deployment", "c", "apps/v1"),
        _object("NoSuchKind", "d"),
    ]
    assert [body["metadata"]["name"] for body in peers.peer_checkable(bodies)] == ["a", "c"]


def test_the_sample_has_distinct_identities_and_no_origin_annotation(peers) -> None:
    origin = {"config.kubernetes.io/origin": "path: x.yaml"}
    bodies = [
        _object("ConfigMap", "same", **origin),
        _object("ConfigMap", "same", **origin),
        _object("ConfigMap", "other", **origin, team="a"),
    ]
    sample = peers.distinct_sample(bodies, 10)
    assert sorted(body["metadata"]["name"] for body in sample) == ["other", "same"]
    assert all(
        "annotations" not in body["metadata"] or body["metadata"]["annotations"] == {"team": "a"}
        for body in sample
    )
    assert bodies[1]["metadata"]["name"] == "same" and "annotations" in bodies[0]["metadata"]  # left alone


def test_the_sample_is_seeded_and_bounded(peers) -> None:
    bodies = [_object("ConfigMap", f"cm-{n}") for n in range(50)]
    first, again = peers.distinct_sample(bodies, 10, seed=3), peers.distinct_sample(bodies, 10, seed=3)
    assert len(first) == 10 and first == again


def test_the_sample_repository_renders_exactly_the_objects_file(peers, tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    (fleet / "clusters" / "c000").mkdir(parents=True)
    (fleet / "clusters" / "c000" / "cluster.yaml").write_text(
        "apiVersion: gpupolicy/v1\nkind: Cluster\nmetadata:\n  name: c000\nspec:\n  kubernetesVersion: "
        "'1.33'\n"
    )
    (fleet / "mkdocs.yml").write_text("site_name: x\n")
    objects = [_object("ConfigMap", "a"), _object("Namespace", "team-a", namespace=None)]
    objects_file = peers.write_sample_repository(tmp_path / "sample", fleet, objects)
    assert list(yaml.safe_load_all(objects_file.read_text())) == objects
    cluster = yaml.safe_load((tmp_path / "sample" / "clusters" / "sample" / "cluster.yaml").read_text())
    assert cluster["metadata"]["name"] == "sample" and cluster["spec"]["kubernetesVersion"] == "1.33"
    overlay = yaml.safe_load((tmp_path / "sample" / "clusters" / "sample" / "kustomization.yaml").read_text())
    assert overlay["resources"] == ["objects.yaml"] and overlay["buildMetadata"] == ["originAnnotations"]


def test_spread_and_ratios_are_min_median_max(peers) -> None:
    assert peers.spread([3.0, 1.0, 2.0]) == {"min": 1.0, "median": 2.0, "max": 3.0, "runs": [3.0, 1.0, 2.0]}
    ratio = peers.ratio_spread([10.0, 30.0, 20.0], [1.0, 1.0, 4.0])
    assert ratio == {"min": 5.0, "median": 20.0, "max": 30.0}  # median over median; per-repeat min and max


def test_kept_validators_and_ours_agree_on_the_same_objects(peers) -> None:
    good = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}}
    bad = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}, "data": {"k": 1}}
    unknown_field = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "colour": "red"}
    measured = peers.kept_validators([good, bad, unknown_field], repeats=1)
    assert measured["jsonschema_invalid"] == measured["ours_invalid"] == 2
    assert set(measured["ratio"]) == {"min", "median", "max"}
