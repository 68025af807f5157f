"""The carried CRD schemas agree with the upstream CRDs on valid objects and on typos.

Samples live in tests/fixtures/crd-samples/*.yaml. Each must validate against both the carried schema and the
upstream CRD (../shared/crds, converted with gpupolicy.infra.schema.crd); each mutation below must be rejected
by both. The sweeps insert an unknown field into every mapping of every sample (and a wrong type at every
leaf): wherever the upstream CRD rejects that, the carried schema must too, so it never lets a typo through
that the API server would refuse.
"""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
import yaml

from gpupolicy.infra.schema.crd import GVK_KEY, carried_schemas, crds_from_yaml

REPO = Path(__file__).resolve().parents[1]
UPSTREAM_CRDS = REPO / ".." / "shared" / "crds"
SAMPLES_DIR = Path(__file__).parent / "fixtures" / "crd-samples"
UNKNOWN = "zzNotAField"

needs_upstream = pytest.mark.skipif(not UPSTREAM_CRDS.is_dir(), reason="../shared/crds is not available")

Key = tuple[str, str]


def _load_samples() -> dict[str, dict]:
    samples: dict[str, dict] = {}
    for path in sorted(SAMPLES_DIR.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if document:
                samples[f"{document['kind']}/{document['metadata']['name']}"] = document
    return samples


SAMPLES = _load_samples()


def _key(document: dict) -> Key:
    return document["apiVersion"], document["kind"]


@cache
def carried_validator(key: Key) -> Any:
    return jsonschema_rs.Draft202012Validator(carried_schemas()[key])


@cache
def upstream_schemas() -> dict[Key, dict]:
    schemas: dict[Key, dict] = {}
    for path in sorted(UPSTREAM_CRDS.rglob("*.yaml")):
        for carried in crds_from_yaml(path.read_text(encoding="utf-8"), str(path)):
            schemas[(carried.api_version, carried.kind)] = carried.schema
    return schemas


@cache
def upstream_validator(key: Key) -> Any:
    return jsonschema_rs.Draft202012Validator(upstream_schemas()[key])


def _errors(validator: Any, document: dict) -> list[str]:
    return [
        f"{'/'.join(map(str, error.instance_path))}: {error.message}"
        for error in validator.iter_errors(document)
    ]


# --- every carried schema ------------------------------------------------------------------------------


@pytest.mark.parametrize("key", sorted(carried_schemas()), ids="/".join)
def test_carried_schema_compiles_and_names_its_kind(key: Key) -> None:
    schema = carried_schemas()[key]
    jsonschema_rs.Draft202012Validator(schema)  # raises if the schema is not valid Draft 2020-12
    assert schema["properties"]["apiVersion"] == {"const": key[0]}
    assert schema["properties"]["kind"] == {"const": key[1]}
    assert set(schema[GVK_KEY]) == {"group", "version", "kind"}


def test_every_carried_kind_has_a_valid_sample() -> None:
    sampled = {_key(document) for document in SAMPLES.values()}
    assert sorted(set(carried_schemas()) - sampled) == []


@needs_upstream
def test_every_carried_kind_has_an_upstream_crd() -> None:
    assert sorted(set(carried_schemas()) - set(upstream_schemas())) == []


# --- valid samples -------------------------------------------------------------------------------------


@needs_upstream
@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_valid_sample_passes_carried_and_upstream(name: str) -> None:
    document = SAMPLES[name]
    assert _errors(carried_validator(_key(document)), document) == []
    assert _errors(upstream_validator(_key(document)), document) == []


# --- hand-picked mutations: both must reject -----------------------------------------------------------

DELETE = object()
# (sample, path, new value or DELETE, what it shows)
MUTATIONS: list[tuple[str, tuple, Any, str]] = [
    (
        "ClusterQueue/ml-training",
        ("spec", "resourceGroups", 0, "flavors", 0, "resources", 2, "nominalQuata"),
        8,
        "typo of nominalQuota next to a real one",
    ),
    (
        "ClusterQueue/batch-minimal",
        ("spec", "resourceGroups", 0, "flavors", 0, "resources", 0, "nominalQuota"),
        DELETE,
        "nominalQuota missing",
    ),
    ("ClusterQueue/ml-training", ("spec", "queueingStrategy"), "FIFO", "bad enum"),
    ("ClusterQueue/ml-training", ("spec", "preemption", "withinClusterQueue"), "Always", "bad nested enum"),
    (
        "ClusterQueue/ml-training",
        ("spec", "resourceGroups", 0, "flavors", 0, "resources", 0, "nominalQuota"),
        "ten",
        "quantity that does not parse",
    ),
    (
        "ClusterQueue/ml-training",
        ("spec", "resourceGroups", 0, "flavors", 0, "resources", 0, "nominalQuota"),
        1.5,
        "a float is not int-or-string",
    ),
    ("ClusterQueue/ml-training", ("spec", "cohort"), "research", "v1beta1 field name in v1beta2"),
    (
        "ClusterQueue/ml-training",
        ("spec", "flavorFungibility", "whenCanBorrow"),
        "Borrow",
        "value deprecated in v1beta1, gone in v1beta2",
    ),
    ("ClusterQueue/ml-training", ("spec", "resourceGroups", 0, "coveredResources"), [], "minItems"),
    ("ResourceFlavor/a100-80gb-mig-3g", ("spec", "nodeLabel"), {"a": "b"}, "typo of nodeLabels"),
    ("ResourceFlavor/a100-80gb-mig-3g", ("spec", "nodeTaints", 0, "effect"), DELETE, "taint without effect"),
    ("ResourceFlavor/a100-80gb-mig-3g", ("spec", "topologyName"), "Not_A_Name", "name pattern"),
    ("LocalQueue/default", ("spec", "clusterQueueName"), "x", "unknown spec field"),
    ("LocalQueue/default", ("spec", "stopPolicy"), "Drain", "bad enum"),
    ("WorkloadPriorityClass/production", ("value",), "high", "value must be an integer"),
    ("WorkloadPriorityClass/production", ("spec",), {"value": 1}, "value sits at the top level"),
    ("Cohort/research", ("spec", "parent"), "org", "v1alpha1 field name"),
    ("Topology/default-topology", ("spec", "levels"), [], "at least one level"),
    ("Topology/default-topology", ("spec", "levels", 0, "label"), "x", "typo of nodeLabel"),
    ("AdmissionCheck/provisioning", ("spec", "controllerName"), DELETE, "controllerName required"),
    (
        "AdmissionCheck/provisioning",
        ("spec", "parameters", "kind"),
        "Bad_Kind",
        "kind pattern (Go (?i) regex)",
    ),
    (
        "ClusterPolicy/cluster-policy",
        ("spec", "devicePlugin", "config", "defualt"),
        "x",
        "typo in devicePlugin",
    ),
    ("ClusterPolicy/cluster-policy", ("spec", "mig", "strategy"), "both", "bad MIG strategy"),
    ("ClusterPolicy/cluster-policy", ("spec", "driver", "kernelModuleType"), "closed", "bad enum"),
    (
        "ClusterPolicy/cluster-policy",
        ("spec", "driver", "upgradePolicy", "maxParallelUpgrades"),
        -1,
        "minimum",
    ),
    (
        "ClusterPolicy/cluster-policy",
        ("spec", "driver", "upgradePolicy", "drain", "timeout"),
        5,
        "typo deep in upgradePolicy",
    ),
    (
        "ClusterPolicy/cluster-policy",
        ("spec", "migManager", "config", "default"),
        "all-balanced",
        "migManager default must be all-disabled or empty",
    ),
    (
        "ClusterPolicy/cluster-policy",
        ("spec", "dcgmExporter", "serviceMonitor", "interval"),
        "15 seconds",
        "Prometheus duration",
    ),
    ("ClusterPolicy/cluster-policy", ("spec", "daemonsets", "updateStrategy"), "Recreate", "bad enum"),
    ("ClusterPolicy/cluster-policy", ("spec", "validator", "plugin", "envs"), [], "typo in validator"),
    ("ClusterPolicy/cluster-policy", ("spec", "cdi", "enabled"), "yes", "wrong type"),
    (
        "ClusterPolicy/cluster-policy",
        ("spec", "toolkit", "env", 0, "valueFrom"),
        {},
        "operand env has no valueFrom",
    ),
    ("ClusterPolicy/cluster-policy", ("spec", "gpuDirect"), {}, "unknown spec section"),
    ("NVIDIADriver/h100-pool", ("spec", "driverType"), "cuda", "bad enum"),
    ("NVIDIADriver/h100-pool", ("spec", "nodeSelectors"), {}, "typo of nodeSelector"),
    ("NVIDIADriver/h100-pool", ("spec", "upgradePolicy", "maxUnavailable"), 0.5, "int-or-string"),
    ("NVIDIADriver/h100-pool", ("spec", "startupProbe", "periodSeconds"), 0, "minimum 1"),
    (
        "NVIDIADriver/h100-pool",
        (
            "spec",
            "nodeAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
            "nodeSelectorTerms",
            0,
            "matchExpressions",
            0,
            "operator",
        ),
        DELETE,
        "requirement without operator",
    ),
    ("NVIDIADriver/h100-pool", ("spec", "manager", "enabled"), True, "the driver manager has no enabled"),
    ("PrometheusRule/gpu-alerts", ("spec", "groups", 0, "rules", 1, "for"), "5 minutes", "duration pattern"),
    ("PrometheusRule/gpu-alerts", ("spec", "groups", 0, "rules", 1, "expr"), DELETE, "expr required"),
    (
        "PrometheusRule/gpu-alerts",
        ("spec", "groups", 0, "rules", 1, "severity"),
        "critical",
        "label outside labels",
    ),
    (
        "PrometheusRule/gpu-alerts",
        ("spec", "groups", 0, "partial_response_strategy"),
        "ignore",
        "(?i) pattern",
    ),
    ("ServiceMonitor/dcgm-exporter", ("spec", "endpoints", 0, "intervall"), "15s", "typo in endpoint"),
    ("ServiceMonitor/dcgm-exporter", ("spec", "endpoints", 0, "scheme"), "ftp", "bad enum"),
    (
        "ServiceMonitor/dcgm-exporter",
        ("spec", "endpoints", 0, "relabelings", 0, "action"),
        "rename",
        "bad enum",
    ),
    ("ServiceMonitor/dcgm-exporter", ("spec", "selector"), DELETE, "selector required"),
    ("PodMonitor/kueue", ("spec", "podMetricsEndpoints", 1, "portNumber"), 70000, "port maximum"),
    ("PodMonitor/kueue", ("spec", "endpoints"), [], "ServiceMonitor field in a PodMonitor"),
    ("Kustomization/cluster-a", ("spec", "prune"), DELETE, "prune required"),
    ("Kustomization/cluster-a", ("spec", "interval"), "10 minutes", "Go duration"),
    ("Kustomization/cluster-a", ("spec", "sourceRef", "kind"), "HelmRepository", "bad source kind"),
    ("Kustomization/cluster-a", ("spec", "postBuild", "substitutes"), {}, "typo in postBuild"),
    ("Kustomization/cluster-a", ("spec", "buildMetadata", 0), "origin", "bad enum in list"),
    ("HelmRelease/gpu-operator", ("spec", "chart", "spec", "sourceRef", "kind"), "OCIRepository", "bad enum"),
    ("HelmRelease/gpu-operator", ("spec", "install", "remediation", "retry"), 3, "typo deep in install"),
    ("HelmRelease/gpu-operator", ("spec", "interval"), DELETE, "interval required"),
    ("HelmRelease/gpu-operator", ("spec", "valuesFrom", 0, "kind"), "Secrets", "bad enum"),
    ("HelmRelease/kueue", ("spec", "releaseName"), "x" * 54, "maxLength"),
    ("GitRepository/gpu-policy", ("spec", "url"), "git@github.com:example/gpu-policy", "url pattern"),
    ("GitRepository/gpu-policy", ("spec", "ref", "brnach"), "main", "typo in ref"),
    ("HelmRepository/nvidia", ("spec", "type"), "git", "bad enum"),
    ("HelmRepository/nvidia", ("spec", "timeout"), "1h", "source timeouts take no hours"),
    ("OCIRepository/kueue", ("spec", "url"), "https://registry.k8s.io/kueue", "oci:// only"),
    ("OCIRepository/kueue", ("spec", "verify", "provider"), "gpg", "bad enum"),
    ("Application/gpu-policy-cluster-a", ("spec", "destination", "cluster"), "x", "typo in destination"),
    ("Application/gpu-policy-cluster-a", ("spec", "syncPolicy", "automated", "selfheal"), True, "case typo"),
    ("Application/gpu-policy-cluster-a", ("spec", "project"), DELETE, "project required"),
    ("Application/gpu-policy-cluster-a", ("spec", "source", "repoURL"), DELETE, "repoURL required"),
    ("Application/gpu-policy-cluster-a", ("spec", "syncPolicy", "retry", "limit"), "5", "wrong type"),
    ("Application/gpu-operator", ("spec", "sources", 0, "helm", "valueFile"), [], "typo in helm"),
    (
        "ApplicationSet/gpu-policy",
        ("spec", "template", "spec", "destination", "serverr"),
        "x",
        "typo in template",
    ),
    (
        "ApplicationSet/gpu-policy",
        ("spec", "generators", 0, "matrix", "generators", 0, "git", "revision"),
        DELETE,
        "git generator without revision",
    ),
    (
        "ApplicationSet/gpu-policy",
        ("spec", "generators", 0, "matrix", "generators", 1, "clusters", "selecter"),
        {},
        "typo inside a matrix generator",
    ),
    ("ApplicationSet/gpu-policy", ("spec", "syncPolicy", "applicationsSync"), "create", "bad enum"),
    ("ApplicationSet/gpu-policy", ("spec", "generators", 1, "lists"), {}, "unknown generator"),
    ("AppProject/gpu-platform", ("spec", "clusterResourceWhitelist", 0, "kind"), DELETE, "kind required"),
    ("AppProject/gpu-platform", ("spec", "description"), "x" * 256, "maxLength"),
    ("AppProject/gpu-platform", ("spec", "syncWindows", 0, "manualsync"), True, "case typo"),
]


def mutate(document: dict, path: tuple, value: Any) -> dict:
    result = copy.deepcopy(document)
    parent = result
    for step in path[:-1]:
        parent = parent[step]
    if value is DELETE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return result


@needs_upstream
@pytest.mark.parametrize(
    ("name", "path", "value", "why"), MUTATIONS, ids=[f"{m[0]}:{m[3]}" for m in MUTATIONS]
)
def test_mutation_rejected_by_carried_and_upstream(name: str, path: tuple, value: Any, why: str) -> None:
    document = mutate(SAMPLES[name], path, value)
    assert _errors(upstream_validator(_key(document)), document), f"upstream accepts: {why}"
    assert _errors(carried_validator(_key(document)), document), f"carried accepts: {why}"


# --- sweeps: the carried schema never accepts what upstream rejects ------------------------------------


def _walk(value: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
    found = [(path, value)]
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(_walk(item, (*path, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(_walk(item, (*path, index)))
    return found


def _unknown_field_variants(document: dict) -> list[tuple[tuple, dict]]:
    return [
        (path, mutate(document, (*path, UNKNOWN), 1))
        for path, node in _walk(document)
        if isinstance(node, dict)
    ]


def _wrong_type_variants(document: dict) -> list[tuple[tuple, dict]]:
    return [
        (path, mutate(document, path, {UNKNOWN: [1]}))
        for path, node in _walk(document)
        if path and not isinstance(node, (dict, list))
    ]


@needs_upstream
@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_carried_rejects_every_unknown_field_upstream_rejects(name: str) -> None:
    document = SAMPLES[name]
    upstream, carried = upstream_validator(_key(document)), carried_validator(_key(document))
    let_through = [
        path
        for path, variant in _unknown_field_variants(document)
        if not upstream.is_valid(variant) and carried.is_valid(variant)
    ]
    assert let_through == []


@needs_upstream
@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_carried_rejects_every_wrong_type_upstream_rejects(name: str) -> None:
    document = SAMPLES[name]
    upstream, carried = upstream_validator(_key(document)), carried_validator(_key(document))
    let_through = [
        path
        for path, variant in _wrong_type_variants(document)
        if not upstream.is_valid(variant) and carried.is_valid(variant)
    ]
    assert let_through == []


def test_unknown_field_sweep_rejects_in_spec() -> None:
    """The carried schemas alone (no upstream needed) reject an unknown field directly under every spec."""
    for name, document in SAMPLES.items():
        if isinstance(document.get("spec"), dict):
            variant = mutate(document, ("spec", UNKNOWN), 1)
            assert not carried_validator(_key(document)).is_valid(variant), name
