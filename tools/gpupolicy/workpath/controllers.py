"""The objects controllers create from a workload, as upstream builds them, so admission runs on each.

JobSet: the JobSet controller creates one batch/v1 Job per replica of each replicated job
(kubernetes-sigs/jobset pkg/controllers/jobset_controller.go, `constructJob` and `labelAndAnnotateObject`):
the Job's labels are only `replicatedJobs[].template.metadata.labels` plus the `jobset.sigs.k8s.io/*` labels,
its spec is the replicated job's spec, it is owned (controller reference, `SetControllerReference`) by the
JobSet, and the request comes from the controller's service account (config/default: namespace
jobset-system, namePrefix jobset-, service account controller-manager). Kueue's JobSet webhook adds no
queue label to the Jobs.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from ..yamlload import mapping

JOBSET_CONTROLLER = "system:serviceaccount:jobset-system:jobset-controller-manager"
CONTROLLER_GROUPS = ("system:serviceaccounts", "system:serviceaccounts:jobset-system", "system:authenticated")


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
    return []


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
    added = {"jobset.sigs.k8s.io/jobset-name": name, "jobset.sigs.k8s.io/replicatedjob-name": rj_name,
             "jobset.sigs.k8s.io/job-index": str(index)}
    pod_template = spec["template"] = dict(mapping(spec.get("template")))
    pod_metadata = pod_template["metadata"] = dict(mapping(pod_template.get("metadata")))
    pod_metadata["labels"] = {**mapping(pod_metadata.get("labels")), **added}
    metadata = mapping(jobset.get("metadata"))
    job_metadata = {"name": job_name, "namespace": metadata.get("namespace", ""),
                    "labels": {**mapping(mapping(template.get("metadata")).get("labels")), **added},
                    "ownerReferences": [{"apiVersion": jobset.get("apiVersion", "jobset.x-k8s.io/v1alpha2"),
                                         "kind": "JobSet", "name": name, "uid": "0000", "controller": True}]}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": job_metadata, "spec": spec}
