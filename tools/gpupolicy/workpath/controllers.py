"""The objects controllers create from a workload, as upstream builds them, so admission runs on each.

JobSet: the JobSet controller creates one batch/v1 Job per replica of each replicated job
(kubernetes-sigs/jobset pkg/controllers/jobset_controller.go, `constructJob` and `labelAndAnnotateObject`):
the Job's labels are only `replicatedJobs[].template.metadata.labels` plus the `jobset.sigs.k8s.io/*` labels,
its spec is the replicated job's spec, it is owned (controller reference, `SetControllerReference`) by the
JobSet, and the request comes from the controller's service account (config/default: namespace
jobset-system, namePrefix jobset-, service account controller-manager). Kueue's JobSet webhook adds no
queue label to the Jobs.

Deployment (kubernetes/kubernetes pkg/controller/deployment/sync.go, `getNewReplicaSet`): the deployment
controller creates a ReplicaSet named `<deployment>-<pod-template-hash>` whose labels and pod template labels
are the Deployment's *template* labels plus `pod-template-hash` (`labelsutil.CloneAndAddLabel`), whose
selector is the Deployment's plus that label (`CloneSelectorAndAddLabel`), owned by the Deployment. The
Deployment's own metadata labels are not copied. The ReplicaSet controller then creates each pod from that
template (pkg/controller/controller_utils.go `GetPodFromTemplate`: the template's labels, annotations and
spec, a controller reference to the ReplicaSet, `generateName: <replicaset>-`). Kueue's Deployment webhook
(kubernetes-sigs/kueue pkg/controller/jobs/deployment/deployment_webhook.go, `Default`) runs at the
Deployment's own admission, before the validating policies: for a Deployment Kueue manages it copies the queue
label into the pod template and marks the template `kueue.x-k8s.io/managed=true` and
`kueue.x-k8s.io/pod-suspending-parent: deployment`, so the pods reach Kueue's pod integration queued.

StatefulSet (pkg/controller/statefulset/stateful_set_utils.go, `newVersionedStatefulSetPod`, `initIdentity`,
`updateIdentity`, `updateStorage`): the statefulset controller creates pod `<set>-<ordinal>` itself, from the
template (`GetPodFromTemplate`), with labels `statefulset.kubernetes.io/pod-name`,
`apps.kubernetes.io/pod-index` (PodIndexLabel, on by default since 1.28) and `controller-revision-hash`,
`hostname`/`subdomain` set to the pod name and `serviceName`, and one PVC volume `<claim>-<set>-<ordinal>` per
volumeClaimTemplate. Hash values are stand-ins here (upstream hashes the template with FNV); no admission
policy reads their value.

The requests come from each controller's service account (kube-controller-manager with
`--use-service-account-credentials`, as kubeadm and the managed offerings run it).
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass

from ..infra.yamlload import mapping

JOBSET_CONTROLLER = "system:serviceaccount:jobset-system:jobset-controller-manager"
CONTROLLER_GROUPS = ("system:serviceaccounts", "system:serviceaccounts:jobset-system", "system:authenticated")
DEPLOYMENT_CONTROLLER = "system:serviceaccount:kube-system:deployment-controller"
KUBE_SYSTEM_GROUPS = ("system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated")
POD_TEMPLATE_HASH = "pod-template-hash"  # apps.DefaultDeploymentUniqueLabelKey
STATEFULSET_POD_NAME = "statefulset.kubernetes.io/pod-name"
POD_INDEX = "apps.kubernetes.io/pod-index"
REVISION_HASH = "controller-revision-hash"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_MANAGED = "kueue.x-k8s.io/managed"
SUSPENDED_BY_PARENT = "kueue.x-k8s.io/pod-suspending-parent"


@dataclass
class Created:
    """One object a controller creates, and the user the API server sees create it."""

    obj: dict
    username: str
    groups: tuple[str, ...]


def created_objects(obj: dict) -> list[Created]:
    """The intermediate objects (not pods) a workload's controller creates; pods are cel.derived_pods."""
    if obj.get("kind") == "JobSet":
        return [Created(job, JOBSET_CONTROLLER, CONTROLLER_GROUPS) for job in jobset_child_jobs(obj)]
    if obj.get("kind") == "Deployment":
        return [Created(deployment_replica_set(obj), DEPLOYMENT_CONTROLLER, KUBE_SYSTEM_GROUPS)]
    return []


def kueue_defaulted(obj: dict, managed: bool) -> dict:
    """The Deployment as Kueue's mutating webhook leaves it (`Default`), when Kueue manages it: the queue
    label
    (and workload priority class label) copied into the pod template. Other kinds unchanged."""
    if obj.get("kind") != "Deployment" or not managed:
        return obj
    obj = copy.deepcopy(obj)
    labels = mapping(mapping(obj.get("metadata")).get("labels"))
    template = _template(obj)
    template_metadata = template["metadata"] = dict(mapping(template.get("metadata")))
    template_metadata["annotations"] = {
        **mapping(template_metadata.get("annotations")),
        SUSPENDED_BY_PARENT: "deployment",
    }
    added = {KUEUE_MANAGED: "true"}
    for key in (QUEUE_LABEL, "kueue.x-k8s.io/priority-class"):
        if labels.get(key):
            added[key] = str(labels[key])
    template_metadata["labels"] = {**mapping(template_metadata.get("labels")), **added}
    return obj


def _template(obj: dict) -> dict:
    spec = obj["spec"] = dict(mapping(obj.get("spec")))
    template = spec["template"] = dict(mapping(spec.get("template")))
    return template


def _stand_in_hash(data: object) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:10]


def _owner(obj: dict, kind: str, default_api: str) -> list[dict]:
    name = str(mapping(obj.get("metadata")).get("name", ""))
    return [
        {
            "apiVersion": obj.get("apiVersion", default_api),
            "kind": kind,
            "name": name,
            "uid": "0000",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def deployment_replica_set(deployment: dict) -> dict:
    """The ReplicaSet `getNewReplicaSet` creates: template labels + pod-template-hash, selector + the same."""
    metadata = mapping(deployment.get("metadata"))
    spec = mapping(deployment.get("spec"))
    template = copy.deepcopy(mapping(spec.get("template")))
    digest = _stand_in_hash(template)
    template_metadata = template["metadata"] = dict(mapping(template.get("metadata")))
    labels = {**mapping(template_metadata.get("labels")), POD_TEMPLATE_HASH: digest}
    template_metadata["labels"] = labels
    selector = copy.deepcopy(mapping(spec.get("selector")))
    selector["matchLabels"] = {**mapping(selector.get("matchLabels")), POD_TEMPLATE_HASH: digest}
    name = f"{metadata.get('name', 'deployment')}-{digest}"
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "namespace": metadata.get("namespace", ""),
            "labels": dict(labels),
            "ownerReferences": _owner(deployment, "Deployment", "apps/v1"),
        },
        "spec": {
            "replicas": 0,
            "minReadySeconds": spec.get("minReadySeconds", 0),
            "selector": selector,
            "template": template,
        },
    }


def pod_from_template(template: dict, owner: dict, owner_kind: str, owner_api: str) -> dict:
    """`GetPodFromTemplate`: the template's labels, annotations and spec, a controller reference to
    `owner`."""
    template_metadata = mapping(template.get("metadata"))
    owner_name = str(mapping(owner.get("metadata")).get("name", ""))
    metadata = {
        "generateName": f"{owner_name}-",
        "namespace": mapping(owner.get("metadata")).get("namespace", ""),
        "labels": dict(mapping(template_metadata.get("labels"))),
        "annotations": dict(mapping(template_metadata.get("annotations"))),
        "ownerReferences": _owner(owner, owner_kind, owner_api),
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": copy.deepcopy(mapping(template.get("spec"))),
    }


def deployment_pod(deployment: dict) -> dict:
    """A pod of the Deployment's ReplicaSet, as the ReplicaSet controller creates it."""
    replica_set = deployment_replica_set(deployment)
    return pod_from_template(replica_set["spec"]["template"], replica_set, "ReplicaSet", "apps/v1")


def statefulset_pod(statefulset: dict, ordinal: int = 0) -> dict:
    """Pod `<set>-<ordinal>` as `newVersionedStatefulSetPod` builds it."""
    metadata = mapping(statefulset.get("metadata"))
    spec = mapping(statefulset.get("spec"))
    set_name = str(metadata.get("name", "statefulset"))
    pod = pod_from_template(mapping(spec.get("template")), statefulset, "StatefulSet", "apps/v1")
    name = f"{set_name}-{ordinal}"
    pod["metadata"].pop("generateName")
    pod["metadata"]["name"] = name
    pod["metadata"]["labels"].update(
        {
            STATEFULSET_POD_NAME: name,
            POD_INDEX: str(ordinal),
            REVISION_HASH: f"{set_name}-{_stand_in_hash(spec.get('template'))}",
        }
    )
    pod["spec"]["hostname"] = name
    if spec.get("serviceName"):
        pod["spec"]["subdomain"] = str(spec["serviceName"])
    claims = [mapping(c) for c in spec.get("volumeClaimTemplates") or [] if isinstance(c, dict)]
    claimed = {str(mapping(c.get("metadata")).get("name", "")) for c in claims}
    volumes = [
        {"name": claim, "persistentVolumeClaim": {"claimName": f"{claim}-{set_name}-{ordinal}"}}
        for claim in sorted(claimed)
    ]
    volumes += [v for v in pod["spec"].get("volumes") or [] if mapping(v).get("name") not in claimed]
    if volumes:
        pod["spec"]["volumes"] = volumes
    return pod


def started_pod_metadata(obj: dict) -> dict | None:
    """The metadata of the first pod the controllers create for a Deployment or StatefulSet; None for the
    kinds whose pods are built from the pod set's template as written."""
    if obj.get("kind") == "Deployment":
        return deployment_pod(obj)["metadata"]
    if obj.get("kind") == "StatefulSet":
        return statefulset_pod(obj)["metadata"]
    return None


def jobset_child_jobs(jobset: dict) -> list[dict]:
    """The Job `constructJob` builds for the first replica of each replicated job (the other replicas differ
    only in their index labels, so admission sees the same object)."""
    metadata = mapping(jobset.get("metadata"))
    name = str(metadata.get("name", "jobset"))
    jobs = []
    for replicated in mapping(jobset.get("spec")).get("replicatedJobs") or []:
        replicated = mapping(replicated)
        jobs.append(_child_job(jobset, name, replicated, 0))
    return jobs


def _child_job(jobset: dict, name: str, replicated: dict, index: int) -> dict:
    template = mapping(replicated.get("template"))
    rj_name = str(replicated.get("name", "job"))
    job_name = f"{name}-{rj_name}-{index}"  # placement.GenJobName
    spec = copy.deepcopy(mapping(template.get("spec")))
    added = {
        "jobset.sigs.k8s.io/jobset-name": name,
        "jobset.sigs.k8s.io/replicatedjob-name": rj_name,
        "jobset.sigs.k8s.io/job-index": str(index),
    }
    pod_template = spec["template"] = dict(mapping(spec.get("template")))
    pod_metadata = pod_template["metadata"] = dict(mapping(pod_template.get("metadata")))
    pod_metadata["labels"] = {**mapping(pod_metadata.get("labels")), **added}
    metadata = mapping(jobset.get("metadata"))
    job_metadata = {
        "name": job_name,
        "namespace": metadata.get("namespace", ""),
        "labels": {**mapping(mapping(template.get("metadata")).get("labels")), **added},
        "ownerReferences": [
            {
                "apiVersion": jobset.get("apiVersion", "jobset.x-k8s.io/v1alpha2"),
                "kind": "JobSet",
                "name": name,
                "uid": "0000",
                "controller": True,
            }
        ],
    }
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": job_metadata, "spec": spec}
