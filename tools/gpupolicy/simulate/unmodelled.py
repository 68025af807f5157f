"""What a cluster's Kueue configuration turns on that the replay does not model, so a report can say so
instead of passing its figures off as Kueue's.

Read against kubernetes-sigs/kueue v0.19.2 (apis/kueue/v1beta2, apis/config/v1beta2):
- AdmissionFairSharing: the Configuration's `admissionFairSharing` and a ClusterQueue's
  `spec.admissionScope.admissionMode: UsageBasedAdmissionFairSharing` order a queue's workloads by their
  LocalQueue's recent usage;
- topology-aware scheduling: a ResourceFlavor's `spec.topologyName` makes admission place pods on nodes;
- admission checks: a ClusterQueue's `spec.admissionChecks` or `spec.admissionChecksStrategy` hold an
  admitted workload until every check is Ready (a ProvisioningRequest waits for new nodes);
- `spec.stopPolicy` Hold or HoldAndDrain stops a ClusterQueue admitting;
- `waitForPodsReady.recoveryTimeout` evicts a workload whose ready pods fail later (readiness.py models
  the first timeout only).
"""

from __future__ import annotations

from ..domain.gpu_operator import section

MAX_NAMES = 3  # names quoted per item; the rest counted


def not_modelled(cluster) -> list[str]:
    """One line per setting of `cluster` (a model Cluster) the replay ignores, with where it is set."""
    found: list[str] = []
    config = cluster.kueue_configuration if isinstance(cluster.kueue_configuration, dict) else {}
    scoped = _names(
        cq.name
        for cq in cluster.cluster_queues.values()
        if section(cq.obj.spec, "admissionScope", "admissionMode") == "UsageBasedAdmissionFairSharing"
    )
    if isinstance(config.get("admissionFairSharing"), dict) or scoped:
        where = f"ClusterQueue {scoped}" if scoped else "the Configuration"
        found.append(f"AdmissionFairSharing ({where})")
    if topology := _names(f.name for f in cluster.flavors.values() if section(f.obj.spec, "topologyName")):
        found.append(f"topology-aware scheduling (ResourceFlavor {topology})")
    checked = _names(
        cq.name
        for cq in cluster.cluster_queues.values()
        if section(cq.obj.spec, "admissionChecks") or section(cq.obj.spec, "admissionChecksStrategy")
    )
    if checked:
        found.append(f"admission checks (ClusterQueue {checked})")
    stopped = _names(
        cq.name
        for cq in cluster.cluster_queues.values()
        if section(cq.obj.spec, "stopPolicy") in ("Hold", "HoldAndDrain")
    )
    if stopped:
        found.append(f"a stopPolicy (ClusterQueue {stopped})")
    if section(config, "waitForPodsReady", "recoveryTimeout"):
        found.append("waitForPodsReady.recoveryTimeout")
    return found


def _names(names) -> str:
    """Sorted names, at most MAX_NAMES quoted: 'a, b, c and 4 more'; '' when there are none."""
    every = sorted(set(names))
    shown = ", ".join(every[:MAX_NAMES])
    return f"{shown} and {len(every) - MAX_NAMES} more" if len(every) > MAX_NAMES else shown
