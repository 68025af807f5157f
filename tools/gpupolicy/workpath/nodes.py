"""Where a started pod can run: node fit in the fleet's pools, the GPU Operator components that must be on
that pool's nodes, and how the container runtime gives the container its GPU.

- Node fit follows the scheduler's filters (kubernetes/kubernetes `pkg/scheduler/framework/plugins`):
  NodeAffinity (nodeSelector, and required node affinity terms ORed), TaintToleration (every NoSchedule and
  NoExecute taint tolerated), NodeResourcesFit (the pod's effective request within one node's allocatable).
  A pool's nodes are described by pool.yaml: its nodeLabels, taints, `node` size and the devices each node
  exposes (`capacity.pool_capacity`: whole cards, renamed time-slice replicas or MIG instances).
- Time-sliced devices with `failRequestsGreaterThanOne` make the device plugin refuse a container asking for
  more
  than one replica at Allocate (NVIDIA/k8s-device-plugin `internal/rm/allocate.go` via the config flag).
- A GPU pod's node must also run every operand: the device plugin advertises the GPUs, the driver and toolkit
  make them usable (WL007 for the components' tolerations, decision 0027).
- Runtime: with CDI on, the operator sets the device plugin's strategy to `cdi-annotations,cdi-cri` and the
  pod
  gets devices and driver libraries from the CDI spec; an env override to `volume-mounts`/`envvar` leaves a
  pod without the `nvidia` runtime class with device nodes and no libraries (decision 0024, WL002).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from ..domain.gpu_operator import pool_config
from ..domain.gpu_resources import is_nvidia_resource
from ..domain.quotas import capacity_known
from ..domain.tolerations import BLOCKING_EFFECTS, show, tolerates
from ..findings import Location
from ..infra.yamlload import mappings
from ..model import Cluster, Fleet, Pool
from ..model.selectors import labels_match, node_requirement_holds


def node_affinity_matches(spec: dict, labels: dict[str, str], keys: set[str] | None = None) -> bool:
    """Required node affinity: one term must hold, each of its expressions must. With `keys` (Kueue's
    `flavorSelector`) expressions on other keys are dropped and a term left empty matches everything."""
    affinity = (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {})
        if isinstance(spec.get("affinity"), dict)
        else {}
    )
    required = (
        affinity.get("requiredDuringSchedulingIgnoredDuringExecution") if isinstance(affinity, dict) else None
    )
    terms = mappings((required or {}).get("nodeSelectorTerms")) if isinstance(required, dict) else []
    if not terms:
        return True
    for term in terms:
        expressions = [
            e for e in mappings(term.get("matchExpressions")) if keys is None or e.get("key") in keys
        ]
        if keys is not None and not expressions:
            return True
        if expressions and all(node_requirement_holds(e, labels) for e in expressions):
            return True
    return False


@dataclass(frozen=True)
class NodeFit:
    pool: Pool | None  # the pool it lands on; None: the cluster's CPU nodes, or nowhere
    lands: bool
    reason: str  # why not, or what is worth knowing
    where: Location | None = None  # the object to change when it does not land
    stray_pools: tuple[str, ...] = ()  # GPU pools a pod without a GPU request could land on
    no_pool: bool = False  # no pool's nodes carry the labels the pod selects
    untolerated: bool = False  # the selected pool has a taint the pod does not tolerate


def node_fit(
    fleet: Fleet,
    cluster: Cluster,
    spec: dict,
    requests: dict[str, Decimal],
    containers: list[tuple[str, tuple, dict[str, Decimal]]],
) -> NodeFit:
    gpu = {r: q for r, q in requests.items() if is_nvidia_resource(r) and q > 0}
    tolerations = mappings(spec.get("tolerations"))
    selector = spec.get("nodeSelector") if isinstance(spec.get("nodeSelector"), dict) else {}
    selected = [
        p
        for p in cluster.pools
        if labels_match(selector, p.node_labels) and node_affinity_matches(spec, p.node_labels)
    ]
    untolerated = {p.name: _untolerated(p, tolerations) for p in selected}
    reachable = [p for p in selected if not untolerated[p.name]]
    if not gpu:
        return _cpu_fit(fleet, selector, selected, reachable, untolerated)
    if not selected:
        return NodeFit(
            None,
            False,
            f"no pool's nodes carry the labels the pod selects ({_labels(selector) or 'no node selector'})",
            no_pool=True,
        )
    if not reachable:
        first = selected[0]
        return NodeFit(
            None,
            False,
            f"pool {first.name}'s taint {untolerated[first.name][0]} is not tolerated",
            fleet.locate_file(first.path, "spec", "taints"),
            untolerated=True,
        )
    reasons = []
    unknown: Pool | None = None  # the first pool whose MIG layout is missing: what to change (MIG004)
    for pool in reachable:
        if not capacity_known(cluster, pool):
            unknown = unknown or pool
            reasons.append(
                f"{pool.name}: its MIG layout {pool.mig_layout} is not in the cluster's "
                "mig-parted "
                "config, so its nodes expose no MIG device"
            )
            continue
        misfit = _resource_misfit(cluster, pool, requests, containers)
        if not misfit:
            return NodeFit(pool, True, "")
        reasons.append(f"{pool.name}: {misfit}")
    # otherwise the pod's own request is what to change
    where = fleet.locate_file(unknown.path, "spec", "mig", "layout") if unknown else None
    return NodeFit(None, False, "; ".join(reasons), where)


def _cpu_fit(
    fleet: Fleet,
    selector: dict,
    selected: list[Pool],
    reachable: list[Pool],
    untolerated: dict[str, list[str]],
) -> NodeFit:
    if reachable:
        names = tuple(p.name for p in reachable)
        return NodeFit(
            None,
            True,
            f"it requests no GPU, yet GPU pool(s) {', '.join(names)} would take it "
            "(their nodes carry the labels it selects and it tolerates their taints)",
            fleet.locate_file(reachable[0].path, "spec", "taints"),
            names,
        )
    if any(key in selector for p in selected for key in p.node_labels):
        pool = selected[0]
        return NodeFit(
            None,
            False,
            f"its node selector ({_labels(selector)}) picks GPU pool {pool.name}, "
            f"whose taint {untolerated[pool.name][0]} it does not tolerate: it stays Pending",
        )
    return NodeFit(None, True, "the cluster's CPU nodes: every GPU pool's taint keeps it off GPU nodes")


def _untolerated(pool: Pool, tolerations: list[dict]) -> list[str]:
    return [
        show(t)
        for t in pool.taints
        if t.effect in BLOCKING_EFFECTS and not any(tolerates(x, t) for x in tolerations)
    ]


def _labels(selector: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(selector.items()))


def per_node(pool: Pool) -> dict[str, Decimal]:
    """What one node of the pool offers: its devices (capacity / nodes), and cpu/memory when pool.yaml
    says."""
    offered = (
        {name: Decimal(amount) / pool.nodes for name, amount in pool.capacity.items()} if pool.nodes else {}
    )
    if pool.node_cpu is not None:
        offered["cpu"] = Decimal(str(pool.node_cpu))
    if pool.node_memory is not None:
        offered["memory"] = Decimal(pool.node_memory)
    return offered


def _resource_misfit(
    cluster: Cluster,
    pool: Pool,
    requests: dict[str, Decimal],
    containers: list[tuple[str, tuple, dict[str, Decimal]]],
) -> str:
    offered = per_node(pool)
    for resource, quantity in sorted(requests.items()):
        if quantity <= 0:
            continue
        known = resource in offered or is_nvidia_resource(resource)
        if known and quantity > offered.get(resource, Decimal(0)):
            have = offered.get(resource, Decimal(0))
            return (
                f"the pod requests {_n(quantity)} {resource}, a node has {_n(have)}"
                if have
                else f"its nodes expose no {resource} ({_exposes(pool)})"
            )
    limit = _one_replica_only(cluster, pool)
    for name, _path, own in containers:
        for resource in limit:
            if own.get(resource, 0) > 1:
                return (
                    f"container {name} asks for {_n(own[resource])} {resource}; the device plugin "
                    "refuses "
                    "more than one time-slice replica per container (failRequestsGreaterThanOne)"
                )
    return ""


def _n(value: Decimal) -> str:
    return f"{value.normalize():f}" if value < 2**30 else f"{(value / 2**30).normalize():f}Gi"


def _exposes(pool: Pool) -> str:
    names = [name for name, amount in pool.capacity.items() if amount]
    return "exposes " + ", ".join(sorted(names)) if names else "exposes no GPU resource"


def _one_replica_only(cluster: Cluster, pool: Pool) -> tuple[str, ...]:
    """The time-sliced resources of the pool whose config sets failRequestsGreaterThanOne."""
    entry = pool_config(cluster, pool)
    block = (
        ((entry.data or {}).get("sharing") or {}).get("timeSlicing")
        if entry and isinstance(entry.data, dict)
        else None
    )
    if not isinstance(block, dict) or block.get("failRequestsGreaterThanOne") is not True:
        return ()
    return tuple(name for name in pool.capacity if is_nvidia_resource(name))
