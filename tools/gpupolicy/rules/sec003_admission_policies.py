"""A cluster does not enforce one of the required GPU admission policies.

## Why it matters
Kueue quotas, the priority ladder and the GPU Operator hardening all assume that pods cannot route around
them: a GPU pod without a queue label is never counted against a quota, a pod that tolerates the GPU taint
without requesting a GPU squats on a GPU node, `NVIDIA_VISIBLE_DEVICES` picks GPUs behind the device plugin's
back, and a privileged container sees every GPU of the node, and a GPU pod without the GPU startup check
starts on a card a neighbour already holds (decision 0051). Each cluster must render
ValidatingAdmissionPolicies, bound with `validationActions: [Deny]`, that refuse all five in team namespaces.
The rule does not trust names or labels: it evaluates the cluster's rendered policies and bindings (CEL, see
`gpupolicy.domain.cel`) on one probe pod per purpose, in every team namespace of the cluster, and reports
every probe that would be admitted. Policies are labelled `gpupolicy.io/admission-policy: <purpose>` by
convention; the purposes are `gpu-requires-queue`, `no-gpu-toleration-without-request`,
`no-visible-devices-env`, `no-privileged-gpu` and `gpu-startup-check`.

## Bad example
```yaml
# clusters/prod-a/kustomization.yaml
resources:
  - ../../policies/scheduling
  # ../../policies/admission is missing
```

## Fix
Include `policies/admission` in the cluster overlay, and bind every policy with `validationActions: [Deny]`
and a `namespaceSelector` that covers the team namespaces.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from ..domain import cel
from ..domain.admission import chain_of
from ..domain.startupcheck import with_check
from ..findings import Finding, Severity, at
from ..model import QUEUE_LABEL, TEAM_LABEL, Cluster, Fleet

ID = "SEC003"
SEVERITY = Severity.ERROR
SUMMARY = "Every cluster enforces the required GPU admission policies"

PURPOSE_LABEL = "gpupolicy.io/admission-policy"


def _pod(namespace: str, container: dict, **spec: object) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "probe", "namespace": namespace},
        "spec": {
            "containers": [
                {"name": "main", "image": "nvcr.io/nvidia/cuda:12.8.0-base-ubuntu24.04", **container}
            ],
            **spec,
        },
    }


def _checked(pod: dict) -> dict:
    """The probe with the GPU startup check in place, so that only the trick it tries can get it denied."""
    return {**pod, "spec": with_check(pod["spec"])}


def probes(namespace: str) -> dict[str, tuple[str, dict]]:
    """purpose -> (what the probe tries, pod that a correct policy set denies)."""
    gpu = {"resources": {"limits": {"nvidia.com/gpu": 1}}}
    queued = _checked(_pod(namespace, {**gpu, "securityContext": {"privileged": True}}))
    queued["metadata"]["labels"] = {QUEUE_LABEL: "probe"}
    unchecked = _pod(namespace, gpu)
    unchecked["metadata"]["labels"] = {QUEUE_LABEL: "probe"}
    return {
        "gpu-requires-queue": (
            "a GPU pod without a kueue.x-k8s.io/queue-name label",
            _checked(_pod(namespace, gpu)),
        ),
        "gpu-startup-check": (
            "a queued GPU pod without the GPU startup check (init container gpu-startup-check)",
            unchecked,
        ),
        "no-gpu-toleration-without-request": (
            "a pod tolerating nvidia.com/gpu without requesting a GPU",
            _pod(
                namespace,
                {},
                tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            ),
        ),
        "no-visible-devices-env": (
            "a pod setting NVIDIA_VISIBLE_DEVICES=all",
            _pod(namespace, {"env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}),
        ),
        "no-privileged-gpu": ("a privileged GPU pod", queued),
    }


def team_namespaces(cluster: Cluster) -> list[dict]:
    """Every team namespace of the cluster, by name; a labelled stand-in when it renders none. Each one is
    probed: a binding narrowed to one team's namespace leaves the others open."""
    found = [n.obj.body for n in sorted(cluster.namespaces.values(), key=lambda n: n.name) if n.team]
    return found or [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "team-probe", "labels": {TEAM_LABEL: "probe"}},
        }
    ]


def team_namespace(cluster: Cluster) -> dict:
    """The first team namespace (a stand-in when there is none): where an example names no namespace."""
    return team_namespaces(cluster)[0]


def _admitted_probes(
    fleet: Fleet, cluster: Cluster, chain: cel.AdmissionChain, namespace: dict
) -> list[tuple[str, str]]:
    """(purpose, attempt) of every probe the chain lets through. Clusters of a fleet usually render the same
    policies, bindings and namespace, so the verdict is remembered by content rather than recomputed."""
    admission = sorted(
        json.dumps(o.body, sort_keys=True)
        for o in cluster.objects
        if o.kind in (cel.POLICY_KIND, cel.BINDING_KIND)
    )
    key = ("admission-probes", json.dumps([admission, namespace], sort_keys=True))
    name = namespace["metadata"]["name"]
    return fleet.memo(
        key,
        lambda: [
            (purpose, attempt)
            for purpose, (attempt, pod) in probes(name).items()
            if not chain.denials(cel.Request(object=pod, namespace=namespace))
        ],
    )


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        where = fleet.locate_file(f"clusters/{cluster.name}/kustomization.yaml", "resources")
        chain = chain_of(fleet, cluster)
        if not chain.policies:
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster.name,
                **at(where),
                message=f"cluster {cluster.name} renders no ValidatingAdmissionPolicy: nothing "
                "stops GPU "
                "pods from bypassing queues and device isolation",
                hint="add ../../policies/admission to the cluster overlay",
            )
            continue
        for namespace in team_namespaces(cluster):
            name = namespace["metadata"]["name"]
            for purpose, attempt in _admitted_probes(fleet, cluster, chain, namespace):
                yield Finding(
                    rule=ID,
                    severity=SEVERITY,
                    cluster=cluster.name,
                    **at(where),
                    message=f"no Deny-bound admission policy of cluster {cluster.name} refuses "
                    f"{attempt} in team namespace {name} (purpose {purpose})",
                    hint="add or bind the policy with validationActions: [Deny] for every team namespace",
                )
        bound = {str((b.get("spec") or {}).get("policyName", "")) for b in chain.bindings}
        for policy in sorted(set(chain.policies) - bound):
            obj = next(o for o in cluster.objects if o.kind == cel.POLICY_KIND and o.name == policy)
            yield Finding(
                rule=ID,
                severity=Severity.WARNING,
                cluster=cluster.name,
                message=f"ValidatingAdmissionPolicy {policy} has no binding: it is never enforced",
                hint="add a ValidatingAdmissionPolicyBinding with validationActions: [Deny]",
                **at(fleet.locate(obj, "metadata", "name")),
            )
