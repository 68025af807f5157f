"""The path a workload takes through a cluster, from `kubectl apply` to a running container, each step with
the object (file:line) that decides it — the offline answer to "why is my pod pending?".

    admission of the workload -> API-server defaulting of its pods (LimitRange) -> namespace ResourceQuota
    -> Kueue: integration and namespace, LocalQueue, ClusterQueue -> per pod set: flavor assignment (node
    labels
    and tolerations injected) -> admission of the pods Kueue starts -> node fit in a pool -> GPU Operator
    components on that pool -> container runtime -> the GPU startup check (init container, `startup.py`)

`trace()` returns a `WorkloadPath`: where each pod set lands (a pool with its resources, or the cluster's CPU
nodes), or the first step that blocks it, why, and where to change it. Used by `gpupolicy explain`, the WL
rules that run every example and a team x workload matrix (WL011, WL012), and the generated example pages. The
steps' sources are cited in `pods.py`, `kueue.py`, `nodes.py` and `operands.py`.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal

from ..domain import cel
from ..domain.admission import chain_of
from ..domain.gpu_resources import is_nvidia_resource
from ..domain.queues import namespace_labels
from ..domain.quotas import flavor_limits
from ..findings import Location
from ..infra.yamlload import mapping
from ..model import POOL_LABEL, QUEUE_LABEL, Cluster, ClusterQueue, Fleet, K8sObject, LocalQueue
from ..model.selectors import label_selector_matches
from . import controllers, kueue, nodes, operands, pods
from .startup import startup_step

KUEUE_SERVICE_ACCOUNT = "system:serviceaccount:kueue-system:kueue-controller-manager"

Locator = Callable[[tuple], "Location | None"]


@dataclass(frozen=True)
class Step:
    stage: str
    ok: bool
    text: str
    where: Location | None = None


@dataclass
class PodSetPath:
    name: str
    count: int  # pods per Kueue workload
    requests: dict[str, Decimal] = field(default_factory=dict)  # one pod's effective request
    steps: list[Step] = field(default_factory=list)
    flavors: dict[str, str] = field(default_factory=dict)
    pool: str = ""  # the pool it lands on; "" for CPU nodes or when blocked
    # the pod spec as started (Kueue's injection included)
    spec: dict = field(default_factory=dict, repr=False)
    workloads: int = 1  # Kueue workloads of this shape (a Deployment's replicas)
    stray_pools: tuple[str, ...] = ()
    # full flavors it waits for (the cluster under load): pending, not blocked
    waits_for: tuple[str, ...] = ()

    @property
    def blocked(self) -> Step | None:
        return next((s for s in self.steps if not s.ok), None)

    @property
    def wants_gpu(self) -> bool:
        return any(is_nvidia_resource(r) and q > 0 for r, q in self.requests.items())

    def landing(self) -> str:
        """Where its pods run, in one phrase."""
        blocked = self.blocked
        if blocked:
            return f"blocked at {blocked.stage}"
        if self.waits_for:
            return f"waits for room in flavor {', '.join(self.waits_for)}"
        where = f"pool {self.pool}" if self.pool else "CPU nodes"
        return f"{where} ({show_requests(self.requests)})" if self.requests else where


@dataclass
class WorkloadPath:
    ref: str
    cluster: str
    namespace: str
    steps: list[Step] = field(default_factory=list)  # the workload's own steps, before its pod sets
    pod_sets: list[PodSetPath] = field(default_factory=list)

    @property
    def blocked(self) -> Step | None:
        own = next((s for s in self.steps if not s.ok), None)
        return own or next((p.blocked for p in self.pod_sets if p.blocked), None)

    def summary(self) -> str:
        if any(not s.ok for s in self.steps):
            step = self.blocked
            return f"blocked at {step.stage}: {step.text}"
        return "; ".join(f"{p.name} x{p.count} -> {p.landing()}" for p in self.pod_sets) or "no pods"


def incomplete(fleet: Fleet, cluster: Cluster) -> bool:
    """The cluster's model lacks a pool whose pool.yaml failed to load (reported already, YAML/SCHEMA005):
    paths
    through it would report that one cause many times over, so the WL rules skip the cluster."""
    return any(f.node_labels.get(POOL_LABEL) in fleet.invalid_pools for f in cluster.flavors.values())


def misplaced(path: WorkloadPath) -> tuple[str, Location | None]:
    """Why the workload does not land where the policy intends, and the place to change ("" when it does): a
    blocking step, or a pod set that requests no GPU and can run on a GPU pool."""
    blocked = path.blocked
    if blocked:
        return f"blocked at {blocked.stage}: {blocked.text}", blocked.where
    for pod_set in path.pod_sets:
        if not pod_set.wants_gpu and (pod_set.pool or pod_set.stray_pools):
            pools = pod_set.pool or ", ".join(pod_set.stray_pools)
            step = next(s for s in reversed(pod_set.steps) if s.stage == "node fit")
            return f"pod set {pod_set.name} requests no GPU but can run on GPU pool {pools}", step.where
    return "", None


# Blocking steps whose cause is what the workload asks (the label it names, the resource it requests, what the
# admission policies refuse in it): the user changes the workload, so a finding belongs at its line. A missing
# LocalQueue is located at the workload's label already; a LocalQueue pointing nowhere, a selector that leaves
# the namespace out or a LimitRange default below a request are the fleet's to change.
WORKLOAD_STAGES = ("namespace", "validation", "admission", "pod sets")


def blame(path: WorkloadPath, own: Location) -> tuple[Location | None, tuple[Location, ...]]:
    """Where a finding about `path` goes and its related locations: the workload's own line (`own`) when the
    workload must change, with the queue or policy that refuses it as related; else the fleet object to
    change, with the workload as related. Never a made-up place: no location is left out, none invented."""
    problem, where = misplaced(path)
    if not problem:
        return None, ()
    blocked = path.blocked
    if where is None or where.path == own.path:
        return where or own, ()
    if blocked is not None and (
        blocked.stage in WORKLOAD_STAGES or "is not covered by ClusterQueue" in blocked.text
    ):
        # a denial of a started pod Kueue changed (flavor injection) is the queue's doing, not the workload's
        if not (blocked.stage == "admission" and blocked.text.startswith("the started pod")):
            return own, (where,)
    return where, (own,)


def show_requests(requests: dict[str, Decimal]) -> str:
    order = sorted(requests, key=lambda r: (not is_nvidia_resource(r), r))
    return ", ".join(f"{kueue._show(r, requests[r])} {r}" for r in order if requests[r])


def trace(
    fleet: Fleet,
    cluster: Cluster,
    body: dict,
    locate: Locator,
    namespace: str | None = None,
    full: frozenset[str] = frozenset(),
) -> WorkloadPath:
    """The workload's path through `cluster`; `full` names flavors with no room left (the cluster under load:
    Kueue then tries the next flavor, flavorassigner.go findFlavorForPodSets / shouldTryNextFlavor)."""
    body = copy.deepcopy(body)
    metadata = body["metadata"] = mapping(body.get("metadata"))
    namespace = namespace or str(metadata.get("namespace") or "default")
    metadata["namespace"] = namespace
    path = WorkloadPath(
        f"{body.get('kind', '?')} {namespace}/{metadata.get('name', '?')}", cluster.name, namespace
    )
    labels = namespace_labels(cluster, namespace)
    if labels is None:
        path.steps.append(
            Step(
                "namespace",
                False,
                f"namespace {namespace} does not exist in {cluster.name}",
                locate(("metadata", "namespace")),
            )
        )
        return path
    namespace_body = cluster.namespaces[namespace].obj.body
    chain = chain_of(fleet, cluster)
    body = controllers.kueue_defaulted(body, _kueue_mutates(fleet, body, labels))
    refused = _invalid_quantities(body, locate)
    if refused:  # object validation comes before the validating admission policies
        path.steps += refused
        return path
    path.steps += _admit(
        fleet, cluster, chain, cel.Request(object=body, namespace=namespace_body), "the workload"
    )
    if not path.steps[-1].ok:
        return path
    path.steps += _admit_created(fleet, cluster, chain, body, namespace_body)
    if not path.steps[-1].ok:
        return path
    sets = kueue.pod_sets(body)
    if not sets:  # never a silent "lands": say that nothing could be traced
        path.steps.append(
            Step(
                "pod sets",
                False,
                f"no pod template with a spec found in this {body.get('kind')}: its pods cannot be traced",
                locate(("spec",)),
            )
        )
        return path
    ranges = pods.limit_ranges(cluster, namespace)
    order = _defaulting_order(body)
    for pod_set in sets:
        pod_set.spec, written, refusals = pods.default_pod_spec(
            mapping(pod_set.template.get("spec")), ranges, order
        )
        pod_set.requests = pods.pod_requests(pod_set.spec)
        steps = [_defaulting(fleet, written, refusals, pod_set, locate, order)]
        path.pod_sets.append(
            PodSetPath(pod_set.name, pod_set.count, pod_set.requests, steps, workloads=pod_set.workloads)
        )
    path.steps += _namespace_quota(fleet, cluster, namespace, sets)
    if not path.steps[-1].ok:
        return path
    queue, queue_steps = _queue(fleet, cluster, body, sets, labels, locate)
    path.steps += queue_steps
    if not path.steps[-1].ok:
        return path
    usage = _used_up(cluster, queue, full)
    for pod_set, pod_set_path in zip(sets, path.pod_sets, strict=True):
        if not pod_set_path.blocked:
            _run_pod_set(
                fleet, cluster, chain, body, namespace_body, queue, pod_set, pod_set_path, usage, locate, full
            )
    return path


def _invalid_quantities(body: dict, locate: Locator) -> list[Step]:
    """The API server's refusal of a resource quantity in any pod template (pods.invalid_quantities): the
    workload never exists, so nothing after it is traced."""
    kind = body.get("kind")
    return [
        Step("validation", False, f"the API server refuses the {kind}: {why}", locate((*at, "spec", *where)))
        for at, template in cel.pod_templates(body)
        for where, why in pods.invalid_quantities(mapping(template.get("spec")))
    ]


def _kueue_mutates(fleet: Fleet, body: dict, labels: dict) -> bool:
    """Whether Kueue's webhook for the workload's kind defaults it (jobframework `WorkloadShouldBeSuspended`):
    its integration is on, the namespace is managed, and it names a queue (or every job is managed)."""
    config = kueue.kueue_config(fleet)
    return (
        config.manages(str(body.get("kind", "")))
        and kueue.namespace_managed(config, labels)
        and bool(kueue.queue_name(body) or config.manage_without_queue_name)
    )


def _used_up(cluster: Cluster, queue: ClusterQueue | None, full: frozenset[str]) -> dict:
    """Usage that fills each `full` flavor to the most the queue can use of it (nominal plus borrowing)."""
    if queue is None or not full:
        return {}
    return {
        (flavor, resource): Decimal(str(most))
        for (flavor, resource), (_nominal, most) in flavor_limits(cluster, queue).items()
        if flavor in full
    }


def _admit(
    fleet: Fleet, cluster: Cluster, chain: cel.AdmissionChain, request: cel.Request, what: str
) -> list[Step]:
    denials = _denials(fleet, cluster, chain, request)
    if not denials:
        return [Step("admission", True, f"{what} passes the cluster's admission policies")]
    # Every denial, not only the first: the user fixes them all in one go (the API server reports each too).
    return [
        Step(
            "admission",
            False,
            f"{what} is denied by {denial.policy}: {denial.message}",
            _policy_location(fleet, cluster, denial),
        )
        for denial in denials
    ]


def _admit_created(
    fleet: Fleet, cluster: Cluster, chain: cel.AdmissionChain, body: dict, namespace_body: dict
) -> list[Step]:
    """Admission of each object a controller creates from the workload (a JobSet's child Jobs): the API server
    reviews them as their controller's requests, and Kueue reserves the quota whether or not they exist."""
    steps = []
    for created in controllers.created_objects(body):
        request = cel.Request(
            object=created.obj, namespace=namespace_body, username=created.username, groups=created.groups
        )
        what = f"child {created.obj['kind']} {created.obj['metadata']['name']} (made by {created.username})"
        steps += _admit(fleet, cluster, chain, request, what)
        if not steps[-1].ok:
            denied = steps[-1]
            steps[-1] = Step(
                denied.stage,
                False,
                f"{denied.text}; Kueue admits the workload and holds its quota, and no pod is ever created",
                denied.where,
            )
            break
    return steps


def _denials(fleet: Fleet, cluster: Cluster, chain: cel.AdmissionChain, request: cel.Request) -> list:
    """`chain.denials`, remembered for the run: clusters that render the same policies see the same requests
    (the matrix traces every team on every cluster), and CEL evaluation is most of a trace's cost."""
    policies = cluster.memo(
        "workpath.policy_digest",
        lambda: _digest([o.body for o in cluster.objects if o.kind in (cel.POLICY_KIND, cel.BINDING_KIND)]),
    )
    key = (
        policies,
        _digest(
            [
                request.object,
                request.namespace,
                request.operation,
                request.old_object,
                request.username,
                list(request.groups),
            ]
        ),
    )
    cache = fleet.memo("workpath.denials", dict)
    if key not in cache:
        cache[key] = chain.denials(request)
    return cache[key]


def _digest(data: object) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def _policy_location(fleet: Fleet, cluster: Cluster, violation: cel.Violation) -> Location | None:
    policy = next((o for o in cluster.of_kind(cel.POLICY_KIND) if o.name == violation.policy), None)
    if policy is None:
        return None
    if violation.validation is None:
        return fleet.locate(policy, "spec", "matchConditions")
    return fleet.locate(policy, "spec", "validations", violation.validation, "expression")


# Kinds whose pods reach Kueue as Pod objects the API server already defaulted (Kueue's pod integration, and
# plain pods): SetDefaults_Pod order. Job templates are read by Kueue before any pod exists: Kueue's order.
POD_BASED_KINDS = ("Pod", "Deployment", "StatefulSet", "ReplicaSet", "DaemonSet", "LeaderWorkerSet")


def _defaulting_order(body: dict) -> str:
    return pods.API_SERVER_ORDER if body.get("kind") in POD_BASED_KINDS else pods.KUEUE_ORDER


def _defaulting(
    fleet: Fleet,
    written: list[pods.Defaulted],
    refusals: list[pods.Refusal],
    pod_set: kueue.PodSet,
    locate: Locator,
    order: str = pods.API_SERVER_ORDER,
) -> Step:
    if refusals:
        refusal = refusals[0]
        where = (
            fleet.locate(refusal.source, *refusal.source_path)
            if refusal.source
            else locate((*pod_set.template_path, "spec", *refusal.container_path))
        )
        who = (
            "the API server refuses the pod"
            if order == pods.API_SERVER_ORDER
            else "Kueue marks the workload inadmissible (it applies LimitRange defaults before copying "
            "limits to requests, kueue pkg/workload/resources.go AdjustResources, then ValidateResources)"
        )
        return Step("defaulting", False, f"{who}: {refusal.message}", where)
    unasked = [
        w for w in written if w.source is not None and is_nvidia_resource(w.resource) and pods.amount(w.value)
    ]
    # decision 0024: GPUs defaulted onto containers that asked for none (sidecars, init containers)
    if unasked:
        first = unasked[0]
        text = "; ".join(
            f"LimitRange {w.source.name} gives container {w.container} {w.field} {w.resource}: "
            f"{w.value}, which it did not ask for"
            for w in unasked
        )
        return Step("defaulting", False, text, fleet.locate(first.source, "spec", "limits", first.item))
    others = sorted({f"{w.resource}" for w in written if w.source is not None})
    note = f"LimitRange defaults for {', '.join(others)}" if others else "no LimitRange default applies"
    return Step("defaulting", True, f"{note}; requests: {show_requests(pod_set.requests) or 'none'}")


def _namespace_quota(fleet: Fleet, cluster: Cluster, namespace: str, sets: list[kueue.PodSet]) -> list[Step]:
    """A core ResourceQuota refuses the pod whose creation would exceed `hard` (quota admission plugin)."""
    total: dict[str, Decimal] = {}
    for pod_set in sets:
        for resource, quantity in pod_set.requests.items():
            total[resource] = total.get(resource, Decimal(0)) + quantity * pod_set.pods
    for quota in sorted(
        (o for o in cluster.of_kind("ResourceQuota") if o.namespace == namespace and not o.group),
        key=lambda o: o.name,
    ):
        hard = quota.spec.get("hard") if isinstance(quota.spec.get("hard"), dict) else {}
        for key, value in hard.items():
            resource = str(key).removeprefix("requests.")
            allowed = pods.amount(value)
            need = total.get(resource, Decimal(0))
            if allowed is not None and need > allowed:
                return [
                    Step(
                        "namespace quota",
                        False,
                        f"ResourceQuota {namespace}/{quota.name} allows {value} {key}; the workload's "
                        f"pods request {kueue._show(resource, need)}",
                        fleet.locate(quota, "spec", "hard", key),
                    )
                ]
    return [Step("namespace quota", True, f"within namespace {namespace}'s ResourceQuotas")]


def _queue(
    fleet: Fleet, cluster: Cluster, body: dict, sets: list[kueue.PodSet], labels: dict, locate: Locator
) -> tuple[ClusterQueue | None, list[Step]]:
    kind = str(body.get("kind", ""))
    config = kueue.kueue_config(fleet)
    if not kueue.namespace_managed(config, labels):
        return None, [
            Step(
                "queue",
                True,
                "Kueue does not manage this namespace: its pods go straight to the scheduler",
                config.where,
            )
        ]
    name = kueue.queue_name(body)
    if not config.manages(kind):
        pod_labeled = any(kueue.queue_name(s.template) for s in sets)
        if not (config.manages("Pod") and pod_labeled):
            return None, [
                Step(
                    "queue",
                    True,
                    f"Kueue's integration for {kind} is off: its pods are not "
                    "queued "
                    "and go straight to the scheduler",
                    config.where,
                )
            ]
        name = next(kueue.queue_name(s.template) for s in sets if kueue.queue_name(s.template))
    if not name:
        return None, [
            Step(
                "queue",
                True,
                "no kueue.x-k8s.io/queue-name label: Kueue leaves it alone",
                locate(("metadata", "labels")),
            )
        ]
    namespace = str(body["metadata"]["namespace"])
    local = next((q for q in cluster.local_queues if q.name == name and q.namespace == namespace), None)
    if local is None:
        have = sorted(q.name for q in cluster.local_queues if q.namespace == namespace)
        offer = (
            f"namespace {namespace} has LocalQueues {', '.join(have)}"
            if have
            else f"namespace {namespace} has no LocalQueue"
        )
        return None, [
            Step(
                "queue",
                False,
                f"LocalQueue {namespace}/{name} does not exist: Kueue keeps the "
                f"workload inadmissible ({offer})",
                locate(("metadata", "labels", QUEUE_LABEL)),
            )
        ]
    return _cluster_queue(fleet, cluster, local, labels)


def _cluster_queue(
    fleet: Fleet, cluster: Cluster, local: LocalQueue, labels: dict
) -> tuple[ClusterQueue | None, list[Step]]:
    queue = cluster.cluster_queues.get(local.cluster_queue)
    if queue is None:
        return None, [
            Step(
                "queue",
                False,
                f"LocalQueue {local.namespace}/{local.name} points at "
                f"ClusterQueue {local.cluster_queue}, which does not exist",
                fleet.locate(local.obj, "spec", "clusterQueue"),
            )
        ]
    selector = queue.namespace_selector
    if selector is None or not label_selector_matches(selector, labels):
        return None, [
            Step(
                "queue",
                False,
                f"ClusterQueue {queue.name}'s namespaceSelector does not select "
                f"namespace {local.namespace}: the workload stays inadmissible",
                fleet.locate(queue.obj, "spec", "namespaceSelector"),
            )
        ]
    return queue, [
        Step(
            "queue",
            True,
            f"LocalQueue {local.namespace}/{local.name} -> ClusterQueue {queue.name}",
            fleet.locate(local.obj, "spec", "clusterQueue"),
        )
    ]


def _run_pod_set(
    fleet: Fleet,
    cluster: Cluster,
    chain: cel.AdmissionChain,
    body: dict,
    namespace_body: dict,
    queue: ClusterQueue | None,
    pod_set: kueue.PodSet,
    path: PodSetPath,
    usage: dict,
    locate: Locator,
    full: frozenset[str] = frozenset(),
) -> None:
    spec = pod_set.spec
    if queue is not None:
        total = {r: q * pod_set.count for r, q in pod_set.requests.items()}
        assignment = kueue.assign(cluster, kueue.kueue_config(fleet), queue, pod_set, total, usage, full)
        path.steps.append(_flavor_step(fleet, cluster, queue, assignment))
        if assignment.waits:  # pending until the full flavors have room: nothing is started, nothing refused
            path.waits_for = tuple(assignment.waits)
            return
        if not path.steps[-1].ok:
            return
        path.flavors = assignment.flavors
        spec = kueue.inject(spec, [cluster.flavors[f] for f in dict.fromkeys(assignment.flavors.values())])
    path.spec = spec
    admitted = _admit(
        fleet,
        cluster,
        chain,
        _started_pod(body, pod_set, spec, namespace_body, queue),
        "the started pod" if queue is not None else "the pod",
    )
    gpu_flavor = _gpu_flavor_on_cpu_pods(cluster, path)
    if queue is not None and gpu_flavor:
        consequence = (
            admitted[0].text if not admitted[0].ok else ("its pods hold GPU nodes without using a GPU")
        )
        path.steps[-1] = Step(
            "flavor assignment",
            False,
            f"the pod set requests no GPU, yet ClusterQueue {queue.name} gives it GPU "
            f"flavor {gpu_flavor} (the first flavor of its resource group with room for its cpu/memory); "
            f"Kueue injects that flavor's node labels and tolerations, so {consequence}",
            _flavor_list_location(fleet, queue, gpu_flavor),
        )
        return
    path.steps += admitted
    if not path.steps[-1].ok:
        return
    fit = nodes.node_fit(fleet, cluster, spec, pod_set.requests, pods.container_requests(spec))
    path.stray_pools = fit.stray_pools
    if not fit.lands:
        where = _node_fit_culprit(fleet, cluster, pod_set, path, fit, locate)
        reason = fit.reason
        if fit.untolerated and path.flavors:
            reason += f" by the tolerations flavor {next(iter(path.flavors.values()))} gives the pod"
        path.steps.append(Step("node fit", False, reason, where))
        return
    if fit.pool is None:
        path.steps.append(Step("node fit", True, fit.reason, fit.where))
        return
    path.pool = fit.pool.name
    path.steps.append(
        Step(
            "node fit", True, f"fits a node of pool {fit.pool.name}", fleet.locate_file(fit.pool.path, "spec")
        )
    )
    path.steps += [
        Step("GPU Operator", c.ok, c.text, c.where) for c in operands.operands_on(fleet, cluster, fit.pool)
    ]
    check = operands.runtime(fleet, cluster, spec)
    path.steps.append(Step("runtime", check.ok, check.text, check.where))
    path.steps.append(Step("startup check", *startup_step(fleet, fit.pool, spec)))


def _node_fit_culprit(
    fleet: Fleet,
    cluster: Cluster,
    pod_set: kueue.PodSet,
    path: PodSetPath,
    fit: nodes.NodeFit,
    locate: Locator,
) -> Location | None:
    """What to change when no node fits: the pod's own node selector (e.g. a product label without the -SHARED
    suffix GPU feature discovery gives time-sliced GPUs), else the flavor whose labels no pool carries, else
    the pod's resource requests (too big for every node). An untolerated taint: the flavor whose tolerations
    Kueue
    gave the pod, else the pool's taint."""
    flavors = [cluster.flavors[f] for f in dict.fromkeys(path.flavors.values())]
    if fit.untolerated:
        return fleet.locate(flavors[0].obj, "spec", "tolerations") if flavors else fit.where
    if fit.where:
        return fit.where
    if fit.no_pool and pod_set.spec.get("nodeSelector"):
        return locate((*pod_set.template_path, "spec", "nodeSelector"))
    if fit.no_pool and flavors:
        return fleet.locate(flavors[0].obj, "spec", "nodeLabels")
    return locate((*pod_set.template_path, "spec", "containers"))


def _gpu_flavor_on_cpu_pods(cluster: Cluster, path: PodSetPath) -> str:
    """The GPU flavor a pod set without GPU requests was given (Kueue issue 4 of the workload-path audit)."""
    if path.wants_gpu:
        return ""
    return next(
        (f for f in dict.fromkeys(path.flavors.values()) if cluster.pools_of_flavor(cluster.flavors[f])), ""
    )


def _flavor_list_location(fleet: Fleet, queue: ClusterQueue, flavor: str) -> Location | None:
    for g, group in enumerate(queue.resource_groups):
        for f, quotas in enumerate(group.flavors):
            if quotas.flavor == flavor:
                return fleet.locate(queue.obj, "spec", "resourceGroups", g, "flavors", f, "name")
    return fleet.locate(queue.obj, "spec", "resourceGroups")


def _flavor_step(fleet: Fleet, cluster: Cluster, queue: ClusterQueue, assignment: kueue.Assignment) -> Step:
    if assignment.waits:
        group = ("resourceGroups", assignment.group, "flavors")
        return Step(
            "flavor assignment",
            True,
            f"waits: {assignment.failure}. Kueue keeps the workload pending until flavor "
            f"{', '.join(assignment.waits)} has room again (workloads finish or are preempted) and "
            "gives it "
            "no other flavor",
            fleet.locate(queue.obj, "spec", *group),
        )
    if assignment.failure:
        group = (
            ("resourceGroups", assignment.group, "flavors")
            if assignment.group is not None
            else ("resourceGroups",)
        )
        return Step("flavor assignment", False, assignment.failure, fleet.locate(queue.obj, "spec", *group))
    if not assignment.flavors:
        return Step("flavor assignment", True, f"ClusterQueue {queue.name}: requests nothing it covers")
    chosen = dict.fromkeys(assignment.flavors.values())
    parts = []
    for flavor in chosen:
        flavor_obj = cluster.flavors[flavor]
        resources = ", ".join(r for r, f in assignment.flavors.items() if f == flavor)
        borrows = any(a.flavor == flavor and a.borrows for a in assignment.attempts)
        injected = ", ".join(f"{k}={v}" for k, v in flavor_obj.node_labels.items()) or "no node labels"
        parts.append(
            f"flavor {flavor} for {resources}{' (borrowing)' if borrows else ''}: injects {injected}"
            + (f" and {len(flavor_obj.tolerations)} toleration(s)" if flavor_obj.tolerations else "")
        )
    skipped = [f"{a.flavor} ({a.reason})" for a in assignment.attempts if a.reason]
    if skipped:
        parts.append("tried first: " + ", ".join(skipped))
    first = next(iter(chosen))
    return Step(
        "flavor assignment",
        True,
        f"ClusterQueue {queue.name}: " + "; ".join(parts),
        fleet.locate(cluster.flavors[first].obj, "spec"),
    )


def _started_pod(
    body: dict, pod_set: kueue.PodSet, spec: dict, namespace_body: dict, queue: ClusterQueue | None
) -> cel.Request:
    metadata = dict(mapping(pod_set.template.get("metadata")))
    metadata.update(
        {
            "name": f"{(body.get('metadata') or {}).get('name', 'workload')}-{pod_set.name}",
            "namespace": body["metadata"]["namespace"],
        }
    )
    # A Deployment's and a StatefulSet's pods carry what their controllers add (controllers.py)
    metadata = controllers.started_pod_metadata(body) or metadata
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
    kind = str(body.get("kind", ""))
    if kind == "Pod":
        pod = {**copy.deepcopy(body), "spec": spec}
    if queue is not None and kind in kueue.POD_KINDS:  # created gated, then updated by Kueue when admitted
        old = {**pod, "spec": pod_set.spec}
        return cel.Request(
            object=pod,
            namespace=namespace_body,
            operation="UPDATE",
            old_object=old,
            username=KUEUE_SERVICE_ACCOUNT,
            groups=("system:serviceaccounts", "system:authenticated"),
        )
    return cel.Request(
        object=pod,
        namespace=namespace_body,
        username=cel.pod_creator(kind),
        groups=("system:serviceaccounts", "system:authenticated"),
    )


def example_locator(document) -> Locator:
    """Lines inside a loaded YAML document (an example under docs/examples/ or a file given to explain)."""
    return lambda field_path: Location(document.path, document.line_of(tuple(field_path)))


def object_locator(fleet: Fleet, obj: K8sObject) -> Locator:
    return lambda field_path: fleet.locate(obj, *field_path)


__all__ = [
    "PodSetPath",
    "Step",
    "WorkloadPath",
    "blame",
    "example_locator",
    "incomplete",
    "misplaced",
    "object_locator",
    "trace",
]
