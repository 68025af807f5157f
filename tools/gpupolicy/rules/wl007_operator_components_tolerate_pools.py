"""A GPU Operator component that must run on a pool's nodes does not tolerate one of the pool's taints.

## Why it matters
On a GPU node, the GPU Operator's components form a chain, and each link is a pod that must be scheduled
there:

1. **node-feature-discovery worker** labels the node `feature.node.kubernetes.io/pci-10de.present=true`;
2. the operator deploys its operands (driver / NVIDIADriver, container toolkit, device plugin, GPU feature
   discovery, MIG manager, DCGM exporter, validator) only on nodes with that label (or its own
   `nvidia.com/gpu.present`, which it sets from the NFD label).

A node taint that the NFD worker does not tolerate therefore leaves the pool without the PCI label, and the
operator deploys nothing there: no driver, no device plugin, no `nvidia.com/gpu` capacity. A taint that the
operands do not tolerate leaves the node labelled but without a device plugin.

The two take their tolerations from **different Helm values**. The operand DaemonSets get the ClusterPolicy's
`daemonsets.tolerations`. NFD is a *subchart* (NVIDIA/gpu-operator `deployments/gpu-operator/Chart.yaml`,
dependency `node-feature-discovery` 0.19.0, `condition: nfd.enabled`), and Helm passes a subchart only the
values under its own name: the NFD worker's tolerations are `node-feature-discovery.worker.tolerations`
(kubernetes-sigs/node-feature-discovery `deployment/helm/node-feature-discovery/values.yaml`,
`worker.tolerations`, used by `templates/worker.yaml`). `daemonsets.tolerations` never reaches it. The GPU
Operator chart's own default for it (`deployments/gpu-operator/values.yaml`, section
`node-feature-discovery.worker.tolerations`, v26.7.0) tolerates only `node-role.kubernetes.io/control-plane`
and `nvidia.com/gpu`, so a pool with any other `NoSchedule`/`NoExecute` taint (here `gpupolicy.io/dedicated`)
is never labelled unless the values say so. A list in the values replaces the chart's default list (Helm
merges maps, not lists).

For every cluster, every `NoSchedule`/`NoExecute` taint of every pool must be tolerated by both lists, with
Kubernetes' matching (`gpupolicy.domain.tolerations.tolerates`, as WL005). The driver is checked by WL005 when
it comes from NVIDIADriver objects (their own `spec.tolerations`); with the NVIDIADriver CRD off, the driver
DaemonSet is an operand and uses `daemonsets.tolerations` like the others.

## Bad example
```yaml
# policies/gpu-operator/values.yaml
daemonsets:
  tolerations:
    - {key: gpupolicy.io/dedicated, operator: Exists, effect: NoSchedule}   # operands only
# no node-feature-discovery.worker.tolerations: NFD keeps the chart default (nvidia.com/gpu only),
# so pools tainted gpupolicy.io/dedicated=serving:NoSchedule get no PCI label and no GPU stack
```

## Fix
List every pool taint (or an `Exists` toleration for its key) under both `daemonsets.tolerations` and
`node-feature-discovery.worker.tolerations`, in `policies/gpu-operator/values.yaml` (or the cluster's
`clusters/<name>/gpu-operator-values.yaml`). Keep the chart's `node-role.kubernetes.io/control-plane`
toleration in the NFD list, since the list replaces the default.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..domain.gpu_operator import NFD_WORKER_PATH, Component, operator_components
from ..domain.tolerations import BLOCKING_EFFECTS, show, tolerates
from ..findings import Finding, Severity, at
from ..model import Cluster, Fleet, Pool, Taint

ID = "WL007"
SEVERITY = Severity.ERROR
SUMMARY = "A GPU Operator component (NFD worker, operand DaemonSets) does not tolerate a pool's taint"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        components = operator_components(fleet, cluster)
        for component in components:
            missing: dict[Taint, list[Pool]] = {}
            for pool in cluster.pools:
                for taint in pool.taints:
                    if taint.effect in BLOCKING_EFFECTS and not any(
                        tolerates(t, taint) for t in component.tolerations
                    ):
                        missing.setdefault(taint, []).append(pool)
            for taint, pools in missing.items():
                yield _finding(fleet, cluster, component, taint, pools)


def _finding(
    fleet: Fleet, cluster: Cluster, component: Component, taint: Taint, pools: list[Pool]
) -> Finding:
    first = pools[0]
    index = first.taints.index(taint)
    taint_place = fleet.locate_file(first.path, "spec", "taints", index, "key")
    names = ", ".join(p.name for p in pools)
    consequence = (
        "the pool's nodes never get the PCI label feature.node.kubernetes.io/pci-10de.present, so "
        "the operator deploys no driver, device plugin or other operand there"
        if component.values_path == NFD_WORKER_PATH
        else "those operands never run on the pool's nodes (no device plugin: the nodes expose no GPUs)"
    )
    place = component.location or taint_place
    return Finding(
        rule=ID,
        severity=SEVERITY,
        cluster=cluster.name,
        message=f"pool {names}'s taint {show(taint)} is not tolerated by the GPU Operator's "
        f"{component.name} ({'.'.join(component.values_path)}): {consequence}",
        hint=f"add {{key: {taint.key}, operator: Exists, effect: {taint.effect}}} to "
        f"{'.'.join(component.values_path)} (taint declared at {taint_place})",
        **at(place),
    )
