"""What Kueue does with a workload: whether it manages it at all, its pod sets, its queues, and the flavor it
gives each pod set, as kubernetes-sigs/kueue v0.19 does it. Sources read (tag v0.19.2):

- `pkg/controller/jobs/*`: the pod sets of each framework (a Job is one pod set of min(parallelism,
  completions) pods; a JobSet one per replicated job; a PyTorchJob one per replica type; a RayJob/RayCluster
  the head and each worker group; a LeaderWorkerSet group a leader and size-1 workers; a Deployment's pods are
  each a workload of one pod; a StatefulSet is a pod group of its replicas);
- `pkg/scheduler/flavorassigner/flavorassigner.go` `assignFlavors`, `findFlavorForPodSets`,
  `checkFlavorForPodSets`, `fitsResourceQuota`, `shouldTryNextFlavor`: each requested resource's resource
  group is searched flavor by flavor in order; a flavor is skipped when the pod set does not tolerate one of
  the flavor's nodeTaints (its own tolerations plus the flavor's) or its node selector (restricted to the
  flavor's label keys) does not match the flavor's nodeLabels; every resource of the group must fit the
  flavor's quota, counting the pod sets already assigned; a resource no group covers makes the workload
  inadmissible unless it is requested at zero (#8079); with `whenCanBorrow: TryNextFlavor` a flavor that fits
  only by borrowing is kept as a fallback while later flavors are tried;
- `pkg/podset/podset.go` `FromAssignment`, `Merge`: an admitted pod set gets the flavor's nodeLabels in its
  node
  selector and the flavor's tolerations appended.

The model is static: the cluster is empty, so a pod set fits a flavor when its request fits the nominal quota
plus what the cohort can lend (`quotas.flavor_limit`). Waiting and preemption are the simulator's business.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ..domain import cel, kueue_configuration
from ..domain.quotas import flavor_limit
from ..domain.tolerations import BLOCKING_EFFECTS, tolerates
from ..findings import Location
from ..infra.yamlload import mapping, mappings
from ..model import QUEUE_LABEL, Cluster, ClusterQueue, Flavor, Fleet, ResourceGroup, Taint
from ..model.selectors import label_selector_matches
from .nodes import node_affinity_matches

# Workload kind -> Kueue integration name (`integrations.frameworks` of the Configuration).
FRAMEWORKS = {
    "Job": "batch/job",
    "CronJob": "batch/job",
    "JobSet": "jobset.x-k8s.io/jobset",
    "PyTorchJob": "kubeflow.org/pytorchjob",
    "RayJob": "ray.io/rayjob",
    "RayCluster": "ray.io/raycluster",
    "LeaderWorkerSet": "leaderworkerset.x-k8s.io/leaderworkerset",
    "TrainJob": "trainer.kubeflow.org/trainjob",
    "Deployment": "deployment",
    "StatefulSet": "statefulset",
    "Pod": "pod",
}
# pods are created gated, then updated by Kueue when admitted
POD_KINDS = ("Pod", "Deployment", "StatefulSet")


# Kueue's defaults for an unset Configuration field (apis/config/v1beta2/defaults.go, v0.19.2).
DEFAULT_FRAMEWORKS = ("batch/job",)
NAMESPACES_NEVER_MANAGED = [*kueue_configuration.PROTECTED_NAMESPACES, kueue_configuration.DEFAULT_NAMESPACE]
DEFAULT_NAMESPACE_SELECTOR = {
    "matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": NAMESPACES_NEVER_MANAGED}
    ]
}


@dataclass(frozen=True)
class KueueConfig:
    frameworks: tuple[str, ...] = DEFAULT_FRAMEWORKS
    manage_without_queue_name: bool = False
    namespace_selector: dict = field(default_factory=lambda: DEFAULT_NAMESPACE_SELECTOR)
    ignore_undeclared: bool = False  # resources.quotaCheckStrategy: IgnoreUndeclared
    excluded_prefixes: tuple[str, ...] = ()  # resources.excludeResourcePrefixes
    where: Location | None = None  # the Configuration in the repository; None: Kueue's defaults

    def manages(self, kind: str) -> bool:
        return FRAMEWORKS.get(kind, "") in self.frameworks

    def counted(self, resource: str) -> bool:
        """Whether Kueue counts the resource at all (`excludeResourcePrefixes` drops it from the workload)."""
        return not any(resource.startswith(prefix) for prefix in self.excluded_prefixes)


@dataclass
class PodSet:
    name: str
    count: int
    template_path: tuple
    template: dict  # metadata + spec, as the workload writes it
    spec: dict = field(default_factory=dict)  # after defaulting
    requests: dict[str, Decimal] = field(default_factory=dict)  # one pod's effective request
    workloads: int = 1  # Kueue workloads made of this pod set: a Deployment's replicas are one workload each

    @property
    def pods(self) -> int:
        """The pods that exist at once (what a namespace ResourceQuota counts)."""
        return self.count * self.workloads


def kueue_config(fleet: Fleet) -> KueueConfig:
    """The Kueue Configuration every cluster runs (one values file for the fleet); Kueue's defaults without
    one."""
    return fleet.memo("workpath.kueue_config", lambda: _read_config(fleet))


def _read_config(fleet: Fleet) -> KueueConfig:
    config, where = kueue_configuration.read(fleet.documents)
    if config is None:
        return KueueConfig()
    integrations = config.get("integrations") if isinstance(config.get("integrations"), dict) else {}
    frameworks = integrations.get("frameworks") if isinstance(integrations.get("frameworks"), list) else []
    selector = config.get("managedJobsNamespaceSelector")
    resources = config.get("resources") if isinstance(config.get("resources"), dict) else {}
    prefixes = (
        resources.get("excludeResourcePrefixes")
        if isinstance(resources.get("excludeResourcePrefixes"), list)
        else []
    )
    return KueueConfig(
        tuple(str(f) for f in frameworks) or DEFAULT_FRAMEWORKS,
        config.get("manageJobsWithoutQueueName") is True,
        selector if isinstance(selector, dict) else DEFAULT_NAMESPACE_SELECTOR,
        resources.get("quotaCheckStrategy") == "IgnoreUndeclared",
        tuple(str(p) for p in prefixes),
        where,
    )


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def pod_sets(body: dict) -> list[PodSet]:
    """Kueue's pod sets of a workload, in its order, each with the pod template as written."""
    kind = body.get("kind")
    spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
    found = []
    for path, template in cel.pod_templates(body):
        name, count = _name_and_count(kind, spec, path)
        workloads = _int(spec.get("replicas"), 1) if kind == "Deployment" else 1
        found.append(PodSet(name, count, path, template, workloads=workloads))
    return found


def _name_and_count(kind: Any, spec: dict, path: tuple) -> tuple[str, int]:
    if kind == "Job":
        parallelism = _int(spec.get("parallelism"), 1)
        return "main", min(parallelism, _int(spec.get("completions"), parallelism))
    if kind == "JobSet":
        job = mappings(spec.get("replicatedJobs"))[path[2]]
        job_spec = (job.get("template") or {}).get("spec") or {}
        return str(job.get("name", path[2])), _int(job.get("replicas"), 1) * _int(
            job_spec.get("parallelism"), 1
        )
    if kind == "PyTorchJob":
        role = (spec.get("pytorchReplicaSpecs") or {}).get(path[2]) or {}
        return str(path[2]).lower(), _int(role.get("replicas"), 1)
    if kind in ("RayJob", "RayCluster"):
        if "headGroupSpec" in path:
            return "head", 1
        base = spec.get("rayClusterSpec") or {} if kind == "RayJob" else spec
        group = mappings(base.get("workerGroupSpecs"))[path[-2]]
        return str(group.get("groupName", "workers")), _int(group.get("replicas"), 1)
    if kind == "LeaderWorkerSet":
        size = _int((spec.get("leaderWorkerTemplate") or {}).get("size"), 1)
        return ("leader", 1) if path[-1] == "leaderTemplate" else ("workers", max(size - 1, 0))
    if kind == "StatefulSet":
        return "main", _int(spec.get("replicas"), 1)
    return "main", 1  # a Pod, and each pod of a Deployment (one workload per pod)


def queue_name(body: dict) -> str:
    """The LocalQueue a workload names: its own label (Kueue's webhooks copy it to the pods they manage)."""
    return str(mapping(mapping(body.get("metadata")).get("labels")).get(QUEUE_LABEL) or "")


# --- flavor assignment
# ---------------------------------------------------------------------------------------


@dataclass
class Attempt:
    flavor: str
    reason: str  # "" when it fits
    borrows: bool = False
    full: bool = False  # it fits the quota of an empty cluster, but the flavor was named as having no room
    group: int | None = None  # index of the resource group searched


@dataclass
class Assignment:
    flavors: dict[str, str]  # resource -> flavor
    attempts: list[Attempt]
    failure: str = ""  # why no flavor could be assigned
    group: int | None = None  # index of the resource group that failed

    @property
    def waits(self) -> list[str]:
        """The full flavors the failed pod set would take once they have room again: Kueue keeps the workload
        pending (and may preempt), which is the cluster under load working as intended, not a blocker."""
        if not self.failure:
            return []
        failed = [a for a in self.attempts if a.group == self.group]
        return [a.flavor for a in failed if a.full]


def group_of(queue: ClusterQueue, resource: str) -> tuple[int, ResourceGroup] | None:
    for index, group in enumerate(queue.resource_groups):
        if resource in group.covered_resources:
            return index, group
    return None


def assign(
    cluster: Cluster,
    config: KueueConfig,
    queue: ClusterQueue,
    pod_set: PodSet,
    total: dict[str, Decimal],
    usage: dict[tuple[str, str], Decimal],
    full: frozenset[str] = frozenset(),
) -> Assignment:
    """Flavors for one pod set whose pods together request `total`; `usage` holds what earlier pod sets of the
    same workload took, and gains this pod set's share when it fits. `full` names flavors whose quota `usage`
    fills (the cluster under load): a quota misfit there is marked, so a pod set that only waits is told apart
    from one that can never be admitted."""
    flavors: dict[str, str] = {}
    attempts: list[Attempt] = []
    total = {r: q for r, q in total.items() if config.counted(r)}
    fungibility = queue.obj.spec.get("flavorFungibility") or {}
    try_next_when_borrowing = fungibility.get("whenCanBorrow") == "TryNextFlavor"
    for resource, quantity in sorted(total.items()):  # Kueue walks a Go map; any order gives the same verdict
        found = group_of(queue, resource)
        if found is None:
            if quantity == 0 or config.ignore_undeclared:
                continue
            return Assignment(
                flavors,
                attempts,
                f"resource {resource} is not covered by ClusterQueue "
                f"{queue.name} (no resource group lists it)",
            )
        index, group = found
        if resource in flavors:
            continue
        wanted = {r: q for r, q in total.items() if r in group.covered_resources}
        chosen, tried = _search(cluster, queue, group, pod_set, wanted, usage, try_next_when_borrowing, full)
        for attempt in tried:
            attempt.group = index
        attempts += tried
        if chosen is None:
            return Assignment(
                flavors,
                attempts,
                f"no flavor of ClusterQueue {queue.name}'s resource group "
                f"{index + 1} fits: " + "; ".join(f"{a.flavor}: {a.reason}" for a in tried),
                index,
            )
        for name, amount in wanted.items():
            flavors[name] = chosen
            usage[(chosen, name)] = usage.get((chosen, name), Decimal(0)) + amount
    return Assignment(flavors, attempts)


def _search(
    cluster: Cluster,
    queue: ClusterQueue,
    group: ResourceGroup,
    pod_set: PodSet,
    wanted: dict[str, Decimal],
    usage: dict,
    try_next_when_borrowing: bool,
    full: frozenset[str] = frozenset(),
) -> tuple[str | None, list]:
    tried: list[Attempt] = []
    fallback = None
    for flavor_quotas in group.flavors:
        name = flavor_quotas.flavor
        mismatch = _flavor_mismatch(cluster, name, pod_set)
        attempt = Attempt(name, mismatch or _quota_misfit(cluster, queue, name, wanted, usage))
        if (
            name in full
            and attempt.reason
            and not mismatch
            and not _quota_misfit(cluster, queue, name, wanted, {})
        ):
            attempt.full, attempt.reason = True, "no room left (the cluster under load)"
        if not attempt.reason:
            attempt.borrows = any(
                usage.get((name, r), 0) + q > flavor_limit(cluster, queue, name, r)[0]
                for r, q in wanted.items()
            )
        tried.append(attempt)
        if attempt.reason:
            continue
        if attempt.borrows and try_next_when_borrowing:
            fallback = fallback or name
            continue
        return name, tried
    return fallback, tried


def _flavor_mismatch(cluster: Cluster, name: str, pod_set: PodSet) -> str:
    flavor = cluster.flavors.get(name)
    if flavor is None:
        return "the ResourceFlavor does not exist"
    spec = pod_set.spec
    tolerations = mappings(spec.get("tolerations")) + list(flavor.tolerations)
    for taint in flavor.node_taints:
        if taint.effect in BLOCKING_EFFECTS and not any(tolerates(t, taint) for t in tolerations):
            return f"untolerated flavor taint {taint.key}={taint.value}:{taint.effect}"
    if not _selector_matches(spec, flavor):
        return "the pod's node selector or affinity does not match the flavor's nodeLabels"
    return ""


def _selector_matches(spec: dict, flavor: Flavor) -> bool:
    """`flavorSelector`: only the flavor's own label keys count; a term left empty matches any flavor."""
    keys = set(flavor.node_labels)
    selector = spec.get("nodeSelector") if isinstance(spec.get("nodeSelector"), dict) else {}
    if any(flavor.node_labels.get(k) != str(v) for k, v in selector.items() if k in keys):
        return False
    return node_affinity_matches(spec, flavor.node_labels, keys)


def _quota_misfit(
    cluster: Cluster, queue: ClusterQueue, name: str, wanted: dict[str, Decimal], usage: dict
) -> str:
    for resource, quantity in wanted.items():
        need = usage.get((name, resource), Decimal(0)) + quantity
        _nominal, most = flavor_limit(cluster, queue, name, resource)
        if need > Decimal(str(most)):
            return (
                f"{resource}: needs {_show(resource, need)}, the queue can have at most "
                f"{_show(resource, most)}"
            )
    return ""


def _show(resource: str, value: Any) -> str:
    value = Decimal(str(value))
    if resource == "memory" and value >= 2**30:
        return f"{(value / 2**30).normalize():f}Gi"
    return f"{value.normalize():f}"


def inject(spec: dict, flavors: list[Flavor]) -> dict:
    """The pod spec Kueue starts: each assigned flavor's nodeLabels merged into the node selector, its
    tolerations appended unless already there (`podset.Merge`)."""
    spec = dict(spec)
    selector = dict(spec.get("nodeSelector") or {}) if isinstance(spec.get("nodeSelector"), dict) else {}
    tolerations = list(mappings(spec.get("tolerations")))
    for flavor in flavors:
        selector.update(flavor.node_labels)
        tolerations += [dict(t) for t in flavor.tolerations if dict(t) not in tolerations]
    if selector:
        spec["nodeSelector"] = selector
    if tolerations:
        spec["tolerations"] = tolerations
    return spec


def namespace_managed(config: KueueConfig, labels: dict) -> bool:
    return label_selector_matches(config.namespace_selector, labels)


def blocking_taints(taints: tuple[Taint, ...], tolerations: list[dict]) -> list[Taint]:
    return [
        t for t in taints if t.effect in BLOCKING_EFFECTS and not any(tolerates(x, t) for x in tolerations)
    ]
