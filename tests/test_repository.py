"""The shipped repository as a platform team forks it: it validates clean, renders for every cluster, and
every
custom resource it renders is accepted by the upstream CRD, not only by the schemas the toolkit carries."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import jsonschema_rs
import pytest
from support import REPO, SHARED

from gpupolicy import pipeline
from gpupolicy.cli import main
from gpupolicy.findings import Severity
from gpupolicy.infra.schema import crd


@cache
def _run() -> pipeline.RunResult:
    return pipeline.run(REPO)


@pytest.mark.reference_fleet
def test_shipped_repository_has_clusters() -> None:
    assert len(pipeline.cluster_names(REPO)) >= 3


def test_shipped_repository_validates_clean() -> None:
    result = _run()
    assert not result.crashes, result.crashes
    errors = [
        f"{f.path}:{f.line} {f.rule} {f.message}" for f in result.findings if f.severity is Severity.ERROR
    ]
    assert not errors, "\n".join(errors)
    assert set(result.rendered_clusters) == set(pipeline.cluster_names(REPO))


@pytest.mark.reference_fleet
def test_no_warnings_either() -> None:
    warnings = [
        f"{f.path}:{f.line} {f.rule} {f.message}" for f in _run().findings if f.severity is Severity.WARNING
    ]
    assert not warnings, "\n".join(warnings)


@pytest.mark.reference_fleet
def test_inspect_lists_every_pool_with_mode_and_capacity(capsys) -> None:
    assert main(["inspect", "--repo", str(REPO), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    pools = [pool for cluster in data["clusters"] for pool in cluster["pools"]]
    declared = {p.parent.name for p in (REPO / "pools").glob("*/pool.yaml")}
    assert {p["name"] for p in pools} == declared, "every declared pool belongs to a cluster"
    assert {p["accessMode"] for p in pools} == {"exclusive", "time-sliced", "mig", "isolated"}
    assert all(p["capacity"] and all(v > 0 for v in p["capacity"].values()) for p in pools)
    queues = [q for cluster in data["clusters"] for q in cluster["clusterQueues"] if q["team"]]
    assert queues and all(q["quotas"] for q in queues)


@cache
def _upstream_validators() -> dict[tuple[str, str], object]:
    validators = {}
    for path in sorted((SHARED / "crds").rglob("*.yaml")):
        for carried in crd.crds_from_yaml(path.read_text(encoding="utf-8"), str(path)):
            validators[(carried.api_version, carried.kind)] = jsonschema_rs.Draft202012Validator(
                carried.schema
            )
    return validators


def test_rendered_custom_resources_validate_against_upstream_crds() -> None:
    if not (SHARED / "crds").is_dir():
        pytest.skip("../shared/crds is not present")
    validators = _upstream_validators()
    checked, problems = 0, []
    for cluster in _run().fleet.clusters.values():
        for obj in cluster.objects:
            validator = validators.get((obj.api_version, obj.kind))
            if validator is None:
                continue
            checked += 1
            for error in validator.iter_errors(crd.drop_nulls(obj.body)):
                problems.append(
                    f"{cluster.name} {obj.ref()} ({obj.origin}): {list(error.instance_path)} {error.message}"
                )
        policy = cluster.cluster_policy
        if policy is not None and policy not in cluster.objects:  # synthesized from the Helm values
            checked += 1
            validator = validators[("nvidia.com/v1", "ClusterPolicy")]
            problems += [
                f"{cluster.name} ClusterPolicy from values: {list(e.instance_path)} {e.message}"
                for e in validator.iter_errors(crd.drop_nulls(policy.body))
            ]
    assert checked > 20
    assert not problems, "\n".join(problems)


def test_examples_for_teams_are_validated() -> None:
    examples = sorted((REPO / "docs" / "examples").glob("*.yaml"))
    assert len(examples) >= 3
    loaded = {doc.path for doc in _run().fleet.documents}
    assert {p.relative_to(REPO).as_posix() for p in examples} <= loaded


# Written beside the validator, never by it: the jobs CI runs next to this suite (.ci/run: the fork job's
# environment and its log change while the validator runs) and Python's own bytecode for a module the run
# imports for the first time.
_NOT_THE_VALIDATORS = ("artifacts", ".git", "__pycache__", ".pytest_cache", ".hypothesis", ".ruff_cache")


def _tree_stamps() -> dict[Path, int]:
    stamps = {}
    for path in REPO.rglob("*"):
        parts = path.relative_to(REPO).parts
        if parts[0].startswith(".venv") or any(part in _NOT_THE_VALIDATORS for part in parts):
            continue
        if path.is_file():
            stamps[path] = path.stat().st_mtime_ns
    return stamps


def test_validate_does_not_touch_the_tree() -> None:
    before = _tree_stamps()
    pipeline.run(REPO)
    after = _tree_stamps()
    assert sorted(set(after) - set(before)) == [], "the validator created files"
    assert {p: t for p, t in after.items() if before.get(p) != t} == {}, "the validator changed files"
