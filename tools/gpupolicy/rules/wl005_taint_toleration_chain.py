"""A pool's taint is not tolerated by its ResourceFlavor or its NVIDIADriver, or a toleration is a typo.

## Why it matters
Every GPU node of a pool carries the taints its `pool.yaml` declares. Two objects must tolerate each of them:

- the pool's **ResourceFlavor**: Kueue copies the flavor's `spec.tolerations` (and `nodeLabels`) into the pod
  template of every workload it admits on that flavor (kubernetes-sigs/kueue `pkg/podset/podset.go`,
  `FromAssignment`: `info.Tolerations = append(info.Tolerations, flv.Spec.Tolerations...)`, merged into the
  pod set by `PodSetInfo.Merge`). A taint the flavor does not tolerate leaves every admitted pod Pending:
  Kueue has charged the quota, the scheduler finds no node.
- the **NVIDIADriver** that selects the pool (`spec.nodeSelector`): its `spec.tolerations` go on the driver
  DaemonSet. A taint it does not tolerate means no driver on the pool's nodes, so no device plugin, no GPUs.

Matching is Kubernetes' own (`gpupolicy.domain.tolerations.tolerates`, shared with WL007),
`Toleration.ToleratesTaint` (kubernetes/kubernetes `staging/src/k8s.io/api/core/v1/toleration.go`): an empty
toleration effect matches every effect, otherwise the effects must be equal; an empty key matches every key
(with `Exists`), otherwise the keys must be equal; operator `Exists` matches any value, `Equal` (or empty)
needs the same value, `Lt`/`Gt` compare the values as integers. Only `NoSchedule` and `NoExecute` taints keep
a pod off a node (the scheduler's TaintToleration filter); `PreferNoSchedule` is a preference and is not
checked.

A toleration that tolerates no taint of the pools it applies to, and whose key is within edit distance 2 of
such a taint's key or of a well-known key (`nvidia.com/gpu`), is a typo: it is reported at its own line. When
a taint and a toleration differ only by such a typo, the finding is at the side that disagrees with the rest
of the fleet (the spelling used by more taints and tolerations, a well-known key first); on a tie, at the
toleration, since `pool.yaml` declares what the nodes carry.

## Bad example
```yaml
# pools/prod-h100/pool.yaml
  taints:
    - {key: nvidia.com/gpu, value: present, effect: NoSchedule}
# pools/prod-h100/resourceflavor.yaml
  tolerations:
    - {key: nvidia.con/gpu, operator: Equal, value: present, effect: NoSchedule}   # typo: pods stay Pending
```

## Fix
Spell the key, value and effect of the toleration as the taint declares them (or the taint as every other pool
and toleration spells it), or add a toleration for a taint the flavor or driver does not tolerate yet. The GPU
Operator's other components take their tolerations from the Helm values (`daemonsets.tolerations`, and
`node-feature-discovery.worker.tolerations` for the NFD subchart); WL007 checks those.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from ..domain.tolerations import BLOCKING_EFFECTS, show, tolerates
from ..findings import Finding, Severity, at
from ..model import GPU_RESOURCE, Cluster, Fleet, Pool, Taint, selects

ID = "WL005"
SEVERITY = Severity.ERROR
SUMMARY = "A pool taint is not tolerated by its ResourceFlavor or NVIDIADriver, or a toleration is a typo"

WELL_KNOWN_KEYS = (GPU_RESOURCE,)  # the GPU Operator's and cloud providers' GPU node taint
TYPO_DISTANCE = 2


def edit_distance(left: str, right: str) -> int:
    """Optimal-string-alignment distance: insertions, deletions, substitutions and adjacent transpositions."""
    previous2: list[int] = []
    previous = list(range(len(right) + 1))
    for i, a in enumerate(left, 1):
        current = [i] + [0] * len(right)
        for j, b in enumerate(right, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b))
            if i > 1 and j > 1 and a == right[j - 2] and left[i - 2] == b:
                current[j] = min(current[j], previous2[j - 2] + 1)
        previous2, previous = previous, current
    return previous[-1]


def _near(key: str, other: str) -> bool:
    return key != other and edit_distance(key, other) <= TYPO_DISTANCE


class _Consumer:
    """A ResourceFlavor or NVIDIADriver: the object whose tolerations must cover its pools' taints."""

    def __init__(self, kind: str, name: str, obj, tolerations: tuple[dict, ...], pools: list[Pool]) -> None:
        self.kind, self.name, self.obj, self.pools = kind, name, obj, pools
        self.tolerations = [t for t in tolerations if isinstance(t, dict)]

    @property
    def ref(self) -> str:
        return f"{self.kind} {self.name}"


def _consumers(cluster: Cluster) -> list[_Consumer]:
    found = []
    for name in sorted(cluster.flavors):
        flavor = cluster.flavors[name]
        pools = cluster.pools_of_flavor(flavor)
        if pools:
            found.append(_Consumer("ResourceFlavor", name, flavor.obj, flavor.tolerations, pools))
    for driver in cluster.nvidia_drivers:
        pools = [p for p in cluster.pools if selects(driver.node_selector, p.node_labels)]
        if pools:
            found.append(_Consumer("NVIDIADriver", driver.name, driver.obj, driver.tolerations, pools))
    return found


def _votes(fleet: Fleet) -> Counter:
    """How often each key, and each (key, value), is written in the fleet's taints and tolerations."""

    def build() -> Counter:
        votes: Counter = Counter()
        for pool in fleet.pools.values():
            for taint in pool.taints:
                votes[taint.key] += 1
                votes[(taint.key, taint.value)] += 1
        for cluster in fleet.clusters.values():
            for consumer in _consumers(cluster):
                for t in consumer.tolerations:
                    votes[str(t.get("key") or "")] += 1
                    if str(t.get("operator") or "Equal") == "Equal":
                        votes[(str(t.get("key") or ""), str(t.get("value") or ""))] += 1
        return votes

    return fleet.memo("wl005_votes", build)


def _weight(votes: Counter, item) -> tuple:
    key = item if isinstance(item, str) else item[0]
    return (key in WELL_KNOWN_KEYS, votes[item])


def check(fleet: Fleet) -> Iterator[Finding]:
    votes = _votes(fleet)
    reported: set[tuple] = set()
    for cluster in fleet.clusters.values():
        for consumer in _consumers(cluster):
            yield from _untolerated(fleet, cluster, consumer, votes, reported)
            yield from _stray(fleet, cluster, consumer, reported)


def _untolerated(
    fleet: Fleet, cluster: Cluster, consumer: _Consumer, votes: Counter, reported: set
) -> Iterator[Finding]:
    for pool in consumer.pools:
        for index, taint in enumerate(pool.taints):
            if taint.effect not in BLOCKING_EFFECTS or any(tolerates(t, taint) for t in consumer.tolerations):
                continue
            what = f"pool {pool.name}'s taint {show(taint)} is not tolerated by {consumer.ref}"
            effect = _consequence(consumer)
            miss = _near_miss(consumer, taint)
            taint_place = fleet.locate_file(pool.path, "spec", "taints", index, "key")
            if miss is None:
                key = ("missing", cluster.name, consumer.ref, pool.name, index)
                if key in reported:
                    continue
                reported.add(key)
                place = fleet.locate(consumer.obj, "spec", "tolerations") or fleet.locate(
                    consumer.obj, "spec"
                )
                yield Finding(
                    rule=ID,
                    severity=SEVERITY,
                    cluster=cluster.name,
                    message=f"{what}: {effect}",
                    hint=f"add a toleration for {show(taint)} to {consumer.ref} "
                    f"(taint declared at {taint_place.path}:{taint_place.line})",
                    **at(place),
                )
                continue
            j, field, wrong_side = miss
            toleration = consumer.tolerations[j]
            tol_place = fleet.locate(consumer.obj, "spec", "tolerations", j, field)
            if field == "key":
                blame_taint = _weight(votes, str(toleration.get("key"))) > _weight(votes, taint.key)
            elif field == "value":
                blame_taint = _weight(votes, (taint.key, str(toleration.get("value")))) > _weight(
                    votes, (taint.key, taint.value)
                )
            else:
                blame_taint = False
            written = str(toleration.get(field))
            declared = getattr(taint, field)
            reported.add(("toleration", cluster.name, consumer.ref, j))
            if blame_taint:
                key = ("taint", pool.name, index, field)
                if key in reported:
                    continue
                reported.add(key)
                place = fleet.locate_file(pool.path, "spec", "taints", index, field)
                yield Finding(
                    rule=ID,
                    severity=SEVERITY,
                    cluster=cluster.name,
                    message=f"{what}: the taint's {field} {declared!r} looks like a typo of "
                    f"{written!r} ({_why_right(written, field)}, and {consumer.ref} tolerates it); {effect}",
                    hint=f"spell the taint's {field} {written!r} in {pool.path}",
                    **at(place),
                )
            else:
                yield Finding(
                    rule=ID,
                    severity=SEVERITY,
                    cluster=cluster.name,
                    message=f"{what}: its toleration's {field} {written!r} looks like a typo of "
                    f"{declared!r}; {effect}",
                    hint=f"spell the toleration's {field} {declared!r} as the taint at "
                    f"{taint_place.path}:{taint_place.line} does",
                    **at(tol_place),
                )


def _near_miss(consumer: _Consumer, taint: Taint) -> tuple[int, str, str] | None:
    """The toleration that would tolerate `taint` but for one field: (index, field, what differs)."""
    for j, t in enumerate(consumer.tolerations):
        key = str(t.get("key") or "")
        fixed = dict(t)
        if key and _near(key, taint.key):
            fixed["key"] = taint.key
            if tolerates(fixed, taint):
                return j, "key", key
        elif key == taint.key:
            for field, value in (("value", taint.value), ("effect", taint.effect)):
                fixed = dict(t, **{field: value})
                if tolerates(fixed, taint):
                    return j, field, str(t.get(field))
    return None


def _stray(fleet: Fleet, cluster: Cluster, consumer: _Consumer, reported: set) -> Iterator[Finding]:
    """A toleration that tolerates no taint of its pools and whose key is close to one it could have meant."""
    taints = [t for p in consumer.pools for t in p.taints]
    meant = sorted({t.key for t in taints} | set(WELL_KNOWN_KEYS))
    for j, toleration in enumerate(consumer.tolerations):
        if ("toleration", cluster.name, consumer.ref, j) in reported:
            continue
        key = str(toleration.get("key") or "")
        if not key or any(tolerates(toleration, t) for t in taints):
            continue
        close = [m for m in meant if _near(key, m)]
        if not close:
            continue
        reported.add(("toleration", cluster.name, consumer.ref, j))
        pools = ", ".join(p.name for p in consumer.pools)
        yield Finding(
            rule=ID,
            severity=SEVERITY,
            cluster=cluster.name,
            message=f"{consumer.ref} tolerates key {key!r}, which no taint of pool {pools} "
            f"carries: it looks like a typo of {close[0]!r}",
            hint=f"spell the key {close[0]!r}, or remove the toleration",
            **at(fleet.locate(consumer.obj, "spec", "tolerations", j, "key")),
        )


def _why_right(written: str, field: str) -> str:
    if field == "key" and written in WELL_KNOWN_KEYS:
        return "a well-known GPU taint key"
    return "the spelling more of the fleet's taints and tolerations use"


def _consequence(consumer: _Consumer) -> str:
    if consumer.kind == "ResourceFlavor":
        return "Kueue admits workloads on this flavor and their pods stay Pending (no node they tolerate)"
    return "the driver DaemonSet never runs on the pool's nodes, so they expose no GPUs"
