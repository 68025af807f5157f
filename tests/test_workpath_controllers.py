"""Deployment -> ReplicaSet -> Pods and StatefulSet -> Pods, as the upstream controllers build them
(workpath/controllers.py: kubernetes pkg/controller/deployment/sync.go getNewReplicaSet, controller_utils.go
GetPodFromTemplate, pkg/controller/statefulset/stateful_set_utils.go; Kueue's Deployment webhook), and run
through admission like a JobSet's child Jobs. The fleet is a fixture (WL014's good repository plus two
admission
policies from tests/workpath/controllers-fleet/), not the reference fleet."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from rules.test_rule_fixtures import build_fixture_repo

from gpupolicy import pipeline, workpath
from gpupolicy.domain import cel
from gpupolicy.model import Fleet
from gpupolicy.workpath import controllers

HERE = Path(__file__).resolve().parent
BASE = HERE / "rules" / "WL014" / "good" / "cpu-memory-own-group"
OVERLAY = HERE / "workpath" / "controllers-fleet"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Fleet:
    repo = build_fixture_repo(BASE, tmp_path_factory.mktemp("controllers") / "repo")
    shutil.copytree(OVERLAY / "policies", repo / "policies", dirs_exist_ok=True)
    return pipeline.load_fleet(repo)


def _gpu_template(labels: dict) -> dict:
    return {
        "metadata": {"labels": labels},
        "spec": {
            "containers": [
                {
                    "name": "server",
                    "image": "registry.example/serve:1",
                    "resources": {"limits": {"nvidia.com/gpu": 1}},
                }
            ]
        },
    }


def _deployment(metadata_labels: dict, template_labels: dict) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "serve", "namespace": "alpha", "labels": metadata_labels},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "serve"}},
            "template": _gpu_template(template_labels),
        },
    }


def _statefulset() -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "nb", "namespace": "alpha", "labels": {"kueue.x-k8s.io/queue-name": "training"}},
        "spec": {
            "replicas": 1,
            "serviceName": "nb",
            "selector": {"matchLabels": {"app": "nb"}},
            "template": _gpu_template({"app": "nb", "kueue.x-k8s.io/queue-name": "training"}),
            "volumeClaimTemplates": [{"metadata": {"name": "home"}}],
        },
    }


def test_replica_set_takes_the_template_labels_not_the_deployments() -> None:
    deployment = _deployment({"team": "alpha"}, {"app": "serve"})
    (created,) = controllers.created_objects(deployment)
    replica_set = created.obj
    digest = replica_set["metadata"]["labels"][controllers.POD_TEMPLATE_HASH]
    assert replica_set["metadata"]["labels"] == {"app": "serve", "pod-template-hash": digest}
    assert replica_set["metadata"]["name"] == f"serve-{digest}"
    assert replica_set["spec"]["selector"] == {"matchLabels": {"app": "serve", "pod-template-hash": digest}}
    assert replica_set["metadata"]["ownerReferences"][0]["kind"] == "Deployment"
    assert created.username == "system:serviceaccount:kube-system:deployment-controller"
    pod = controllers.deployment_pod(deployment)
    assert pod["metadata"]["generateName"] == f"serve-{digest}-"
    assert pod["metadata"]["labels"] == replica_set["spec"]["template"]["metadata"]["labels"]
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"


def test_kueue_copies_the_deployments_queue_label_into_its_template() -> None:
    deployment = _deployment({"kueue.x-k8s.io/queue-name": "training"}, {"app": "serve"})
    defaulted = controllers.kueue_defaulted(deployment, managed=True)
    labels = defaulted["spec"]["template"]["metadata"]["labels"]
    assert labels == {
        "app": "serve",
        "kueue.x-k8s.io/queue-name": "training",
        "kueue.x-k8s.io/managed": "true",
    }
    assert "kueue.x-k8s.io/queue-name" not in deployment["spec"]["template"]["metadata"]["labels"]  # a copy
    assert controllers.kueue_defaulted(deployment, managed=False) is deployment


def test_statefulset_pod_identity_and_storage() -> None:
    pod = controllers.statefulset_pod(_statefulset())
    labels = pod["metadata"]["labels"]
    assert pod["metadata"]["name"] == "nb-0" and "generateName" not in pod["metadata"]
    assert (labels["statefulset.kubernetes.io/pod-name"], labels["apps.kubernetes.io/pod-index"]) == (
        "nb-0",
        "0",
    )
    assert labels["controller-revision-hash"].startswith("nb-") and labels["app"] == "nb"
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == ("nb-0", "nb")
    assert pod["spec"]["volumes"] == [{"name": "home", "persistentVolumeClaim": {"claimName": "home-nb-0"}}]
    # the statefulset controller makes the pods itself
    assert controllers.created_objects(_statefulset()) == []


def _trace(fleet: Fleet, body: dict) -> workpath.WorkloadPath:
    return workpath.trace(fleet, fleet.clusters["mini"], body, lambda _path: None)


def test_a_replica_set_refused_is_a_blocking_step(fleet: Fleet) -> None:
    path = _trace(
        fleet, _deployment({"team": "alpha", "kueue.x-k8s.io/queue-name": "training"}, {"app": "serve"})
    )
    blocked = path.blocked
    assert blocked is not None and blocked.stage == "admission", path.summary()
    assert blocked.text.startswith("child ReplicaSet serve-") and "replicasets-require-team" in blocked.text
    assert "deployment-controller" in blocked.text


def test_deployment_pods_are_queued_through_kueues_webhook(fleet: Fleet) -> None:
    """Queue label and team label on the Deployment's metadata only: Kueue's webhook puts the queue label on
    the template, so the started pod passes pods-require-queue; the team label on the template satisfies the
    ReplicaSet policy."""
    path = _trace(
        fleet, _deployment({"kueue.x-k8s.io/queue-name": "training"}, {"app": "serve", "team": "a"})
    )
    assert workpath.misplaced(path) == ("", None), path.summary()
    (pod_set,) = path.pod_sets
    assert pod_set.pool == "mini-a100"
    texts = [s.text for s in path.steps] + [s.text for s in pod_set.steps]
    assert any(t.startswith("child ReplicaSet serve-") and "passes" in t for t in texts)
    assert any(t.startswith("the started pod passes") for t in texts)


def test_the_started_statefulset_pod_is_reviewed_with_its_controllers_labels(fleet: Fleet) -> None:
    path = _trace(fleet, _statefulset())
    assert workpath.misplaced(path) == ("", None), path.summary()
    reviewed = []
    original = cel.AdmissionChain.denials

    def spy(chain, request):
        reviewed.append(request)
        return original(chain, request)

    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setattr(cel.AdmissionChain, "denials", spy)
    fleet.memo("workpath.denials", dict).clear()  # review again, not from the run's memo
    try:
        _trace(fleet, _statefulset())
    finally:
        monkeypatch.undo()
    pods = [r.object for r in reviewed if r.object.get("kind") == "Pod"]
    assert pods and all(p["metadata"]["name"] == "nb-0" for p in pods)
    assert all(p["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == "nb-0" for p in pods)
