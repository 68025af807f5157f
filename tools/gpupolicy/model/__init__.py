"""The typed fleet model every rule, generator and simulator reads.

Built once per run from the rendered clusters and the pool declarations (see `build.py`); rules never go
back to raw dicts when a typed field exists. Objects keep their rendered body (`obj.body`) for the rare
rule that needs a field the model does not carry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..findings import Location
from .selectors import labels_match

# Labels and annotations this repository gives meaning to.
POOL_LABEL = "gpupolicy.io/pool"
TEAM_LABEL = "gpupolicy.io/team"
TIER_LABEL = "gpupolicy.io/tier"  # production | training | batch | experiment
WORKLOAD_LABEL = "gpupolicy.io/workload"  # training | inference | notebook | batch
# "cpu" on the ResourceFlavor of the cluster's CPU nodes (decision 0029)
NODE_CLASS_LABEL = "gpupolicy.io/node-class"
# "true": a training queue may use MIG and time-sliced flavors (SHARE008), a production queue time-sliced ones
# (SHARE009)
ALLOW_SHARED_GPUS = "gpupolicy.io/allow-shared-gpus"
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
PRODUCT_LABEL = "nvidia.com/gpu.product"  # set by GPU feature discovery
GPU_COUNT_LABEL = "nvidia.com/gpu.count"  # set by GPU feature discovery
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"  # a workload's LocalQueue
GPU_RESOURCE = "nvidia.com/gpu"
# A card, or one time-slice replica of it when time-slicing renames it (renameByDefault, see capacity.py).
GPU_RESOURCES = (GPU_RESOURCE, f"{GPU_RESOURCE}.shared")
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
# Node labels that GPU Feature Discovery and the GPU Operator's MIG manager write themselves (the GFD label
# table in NVIDIA/k8s-device-plugin docs/gpu-feature-discovery/README.md, internal/lm; mig-manager's
# mig.config.state). A pool's nodeLabels may select on them; provisioning must not set them (GFD overwrites
# them).
DISCOVERED_LABEL_PREFIXES = (
    "nvidia.com/gpu.",
    "nvidia.com/cuda.",
    "nvidia.com/gfd.",
    "nvidia.com/vgpu.",
    MIG_RESOURCE_PREFIX,
)
DISCOVERED_LABELS = (
    "nvidia.com/mig.capable",
    "nvidia.com/mps.capable",
    "nvidia.com/mig.strategy",
    "nvidia.com/mig.config.state",
    "nvidia.com/gpu-driver-upgrade-state",
)


def is_discovered_label(key: str) -> bool:
    """Whether GPU Feature Discovery (or the MIG manager) sets this node label, not the node's
    provisioning."""
    return key in DISCOVERED_LABELS or key.startswith(DISCOVERED_LABEL_PREFIXES)


TIERS = ("production", "training", "batch", "experiment")  # highest first
ACCESS_MODES = ("exclusive", "time-sliced", "mig", "isolated")
ENVIRONMENTS = ("test", "staging", "production")


@dataclass(frozen=True)
class K8sObject:
    """One rendered object, and the repository file it came from (`origin`, repo-relative)."""

    api_version: str
    kind: str
    name: str
    namespace: str
    body: dict = field(repr=False, hash=False, compare=False)
    origin: str = ""
    cluster: str = ""
    # why the boundary refused the origin annotation's path (origin is then the overlay)
    origin_refused: str = ""

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def labels(self) -> dict[str, str]:
        return (self.body.get("metadata") or {}).get("labels") or {}

    @property
    def spec(self) -> dict:
        spec = self.body.get("spec")
        return spec if isinstance(spec, dict) else {}

    def ref(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name}"


@dataclass(frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"


@dataclass(frozen=True)
class StartupCheck:
    """pool.yaml `spec.startupCheck`: how the GPU startup check (policies/startup-check) treats the pool's
    devices. The defaults are the schema's; decision 0051."""

    skip: bool = False
    retries: int = 3
    backoff_seconds: int = 5
    max_memory_used_percent: int = 5


@dataclass(frozen=True)
class Pool:
    """A GPU node pool as its pool.yaml declares it; capacity is what its nodes expose per resource name."""

    name: str
    path: str  # pools/<name>/pool.yaml
    gpu_model: str
    gpus_per_node: int
    zones: dict[str, int]  # zone -> node count
    access_mode: str
    node_labels: dict[str, str]
    taints: tuple[Taint, ...] = ()
    team: str = ""  # owning team, for isolated pools
    description: str = ""
    time_slicing_replicas: int | None = None
    rename_shared: bool = False  # time-slicing renameByDefault: exposed as nvidia.com/gpu.shared
    mig_layout: str | None = None
    mig_strategy: str | None = None  # single | mixed, for MIG pools
    mps_replicas: int | None = None
    # One node's size (pool.yaml `node`, optional): its instance's vCPUs, and memory in bytes (WL006).
    node_cpu: float | None = None
    node_memory: int | None = None
    capacity: dict[str, int] = field(default_factory=dict)  # resource name -> devices exposed by the pool
    clusters: tuple[str, ...] = ()  # every cluster of the run whose overlay includes the pool
    startup_check: StartupCheck = field(default_factory=StartupCheck)

    @property
    def nodes(self) -> int:
        return sum(self.zones.values())

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def sharing(self) -> str:
        """How a card is shared, whatever the access mode: exclusive, time-sliced, mps or mig."""
        if self.mig_layout:
            return "mig"
        if self.time_slicing_replicas:
            return "time-sliced"
        if self.mps_replicas:
            return "mps"
        return "exclusive"

    @property
    def memory_share_percent(self) -> int:
        """The share of a card one replica of a time-sliced or MPS pool may count on (100 / replicas, rounded
        down); 0 for exclusive and MIG pools, whose devices are not shared."""
        replicas = self.time_slicing_replicas or self.mps_replicas
        return 100 // replicas if replicas and self.sharing in ("time-sliced", "mps") else 0

    def capacity_without(self, nodes_lost: int) -> dict[str, int]:
        """Capacity left when `nodes_lost` nodes are gone (capacity scales per node)."""
        return self.capacity_at(max(self.nodes - nodes_lost, 0))

    def capacity_at(self, nodes: int) -> dict[str, int]:
        """What the pool would expose on `nodes` nodes of the same kind (capacity is built per node)."""
        if not self.nodes:
            return {name: 0 for name in self.capacity}
        return {name: amount * nodes // self.nodes for name, amount in self.capacity.items()}


@dataclass(frozen=True)
class ResourceQuota:
    """One resource's quota inside a flavor of a ClusterQueue or Cohort (Kueue `resources[]`)."""

    name: str
    nominal: int | float
    borrowing_limit: int | float | None = None
    lending_limit: int | float | None = None


@dataclass(frozen=True)
class FlavorQuotas:
    flavor: str
    resources: tuple[ResourceQuota, ...]


@dataclass(frozen=True)
class ResourceGroup:
    covered_resources: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]


@dataclass(frozen=True)
class Flavor:
    name: str
    node_labels: dict[str, str]
    node_taints: tuple[Taint, ...]
    tolerations: tuple[dict, ...]
    obj: K8sObject

    @property
    def is_cpu(self) -> bool:
        """The flavor of the cluster's CPU nodes: pod sets that request no GPU take it (decision 0029)."""
        return self.obj.labels.get(NODE_CLASS_LABEL) == "cpu"


@dataclass(frozen=True)
class ClusterQueue:
    name: str
    cohort: str
    namespace_selector: dict | None  # None: admits nothing; {}: every namespace
    resource_groups: tuple[ResourceGroup, ...]
    preemption: dict
    team: str
    tier: str
    workload: str
    labels: dict[str, str]
    obj: K8sObject

    def quotas(self) -> list[tuple[str, ResourceQuota]]:
        """(flavor, quota) for every resource of every flavor of every resource group."""
        return [
            (fq.flavor, quota)
            for group in self.resource_groups
            for fq in group.flavors
            for quota in fq.resources
        ]

    def flavors(self) -> list[str]:
        return [fq.flavor for group in self.resource_groups for fq in group.flavors]


@dataclass(frozen=True)
class Cohort:
    name: str
    parent: str
    resource_groups: tuple[ResourceGroup, ...]
    obj: K8sObject | None  # None: implied by a ClusterQueue's `cohortName` alone


@dataclass(frozen=True)
class LocalQueue:
    name: str
    namespace: str
    cluster_queue: str
    obj: K8sObject


@dataclass(frozen=True)
class PriorityClass:
    name: str
    value: int
    global_default: bool
    preemption_policy: str
    tier: str
    obj: K8sObject


@dataclass(frozen=True)
class WorkloadPriorityClass:
    name: str
    value: int
    tier: str
    obj: K8sObject


@dataclass(frozen=True)
class Namespace:
    name: str
    labels: dict[str, str]
    obj: K8sObject

    @property
    def team(self) -> str:
        value = self.labels.get(TEAM_LABEL, "")
        # a non-string label value is the schema stage's finding
        return value if isinstance(value, str) else ""


@dataclass(frozen=True)
class NamespaceQuota:
    """A core ResourceQuota's GPU-relevant hard limits (`requests.nvidia.com/gpu`, MIG resources)."""

    name: str
    namespace: str
    hard: dict[str, Any]
    obj: K8sObject


@dataclass(frozen=True)
class NvidiaDriver:
    name: str
    version: str
    driver_type: str
    node_selector: dict[str, str]
    upgrade_policy: dict
    obj: K8sObject
    tolerations: tuple[dict, ...] = ()  # spec.tolerations: what the driver pods tolerate (WL005)


@dataclass(frozen=True)
class ConfigEntry:
    """One key of a generated ConfigMap (device-plugin or mig-parted config) and the file it came from."""

    configmap: str
    key: str
    data: Any  # parsed YAML, or None when it did not parse
    source: Location


@dataclass(frozen=True)
class ClusterFacts:
    name: str
    path: str  # clusters/<name>/cluster.yaml
    environment: str
    region: str
    zones: tuple[str, ...]
    kubernetes_version: str
    gpu_operator_version: str
    sync_engine: str  # flux | argocd
    description: str = ""


@dataclass
class Cluster:
    facts: ClusterFacts
    objects: list[K8sObject] = field(default_factory=list)
    pools: list[Pool] = field(default_factory=list)
    flavors: dict[str, Flavor] = field(default_factory=dict)
    cluster_queues: dict[str, ClusterQueue] = field(default_factory=dict)
    cohorts: dict[str, Cohort] = field(default_factory=dict)
    local_queues: list[LocalQueue] = field(default_factory=list)
    priority_classes: dict[str, PriorityClass] = field(default_factory=dict)
    workload_priority_classes: dict[str, WorkloadPriorityClass] = field(default_factory=dict)
    namespaces: dict[str, Namespace] = field(default_factory=dict)
    namespace_quotas: list[NamespaceQuota] = field(default_factory=list)
    nvidia_drivers: list[NvidiaDriver] = field(default_factory=list)
    cluster_policy: K8sObject | None = None
    device_plugin_configs: dict[str, ConfigEntry] = field(default_factory=dict)  # key -> entry
    mig_configs: dict[str, ConfigEntry] = field(default_factory=dict)  # layout name -> entry (data: list)
    # the Kueue Configuration it runs (domain/kueue_configuration.py, one for the fleet); None: Kueue's
    # defaults
    kueue_configuration: dict | None = field(default=None, repr=False, compare=False)
    # Derived data rules share (flavor -> pools, cohort totals); filled lazily, never part of equality.
    derived: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def name(self) -> str:
        return self.facts.name

    def of_kind(self, kind: str, group: str | None = None) -> list[K8sObject]:
        """The rendered objects of a kind (and API group), indexed on first use: rules ask many times per
        run."""
        by_kind = self.memo("objects_by_kind", self._objects_by_kind)
        return [o for o in by_kind.get(kind, ()) if group is None or o.group == group]

    def _objects_by_kind(self) -> dict[str, list[K8sObject]]:
        index: dict[str, list[K8sObject]] = {}
        for obj in self.objects:
            index.setdefault(obj.kind, []).append(obj)
        return index

    def pool_of_flavor(self, flavor: Flavor) -> Pool | None:
        """The pool whose declared node labels the flavor's nodeLabels select (all must match)."""
        matches = self.pools_of_flavor(flavor)
        return matches[0] if len(matches) == 1 else None

    def pools_of_flavor(self, flavor: Flavor) -> list[Pool]:
        return self.memo(
            ("pools_of_flavor", flavor.name),  # flavor names are unique in a cluster
            lambda: [p for p in self.pools if selects(flavor.node_labels, p.node_labels)],
        )

    def memo(self, key: Any, compute: Any) -> Any:
        """`compute()` once per cluster model for `key`; rules share what they derive this way."""
        return _memo(self.derived, key, compute)

    def team_queues(self) -> list[ClusterQueue]:
        return [cq for cq in self.cluster_queues.values() if cq.team]


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    """A node selector (or a flavor's nodeLabels) picks these labels; an empty one picks nothing here."""
    return bool(selector) and labels_match(selector, labels)


def _memo(store: dict, key: Any, compute: Any) -> Any:
    if key not in store:
        store[key] = compute()
    return store[key]


@dataclass
class Pages:
    """Markdown pages rules check, read once: text by repo-relative path, and why a page could not be read."""

    texts: dict[str, str] = field(default_factory=dict)
    unreadable: dict[str, str] = field(default_factory=dict)


@dataclass
class Fleet:
    root: str
    clusters: dict[str, Cluster] = field(default_factory=dict)
    pools: dict[str, Pool] = field(default_factory=dict)  # every declared pool, in a cluster or not
    # pools/<name> folders whose pool.yaml did not load or validate: already reported (YAML/SCHEMA005), so
    # rules do not report their absence from the model a second time.
    invalid_pools: set[str] = field(default_factory=set)
    locator: Any = field(default=None, repr=False)  # build.SourceIndex: object + field path -> Location
    # Derived data several rules share (plans, admission verdicts); filled lazily per run.
    derived: dict = field(default_factory=dict, repr=False)
    documents: list = field(default_factory=list, repr=False)  # every strictly loaded source document
    # Every cluster folder of the repository, validated in this run or not (a run may cover some clusters).
    repository_clusters: tuple[str, ...] = ()
    # pools/<name> folder -> every cluster whose overlay includes it, when the run read every cluster's
    # overlay graph (a run over every cluster, or the first shard of `validate --shard`); None when it did
    # not.
    pool_includers: dict[str, tuple[str, ...]] | None = None
    # False in a shard of `validate --shard` other than the first: rules about the whole fleet (FLEET_LEVEL)
    # do not run there, so the merged shards report their findings exactly once.
    fleet_checks: bool = True
    # docs/generated/ page -> how it differs from what the generators write now ("stale", "missing",
    # "not generated"), for DOC005; None when this run did not compare (a run over part of the fleet, or a
    # caller that did not ask: `validate` does).
    page_drift: dict[str, str] | None = None
    # Findings about the whole fleet that a run over part of it can only propose (UPG003: a selector that
    # takes nothing in the clusters loaded here): `report merge` keeps those every shard proposed
    # (shards.merge).
    proposed: list = field(default_factory=list, repr=False)
    # Pages rules check, read once by the load stage: docs/runbooks, and the decision log
    # (decisions.Decision).
    runbooks: Pages = field(default_factory=Pages, repr=False)
    # The runbook site's public URL (mkdocs.yml site_url, siteconfig), or "" and site_url_problem says why.
    site_url: str = ""
    site_url_problem: str = ""
    # oncall.OnCall (mkdocs.yml extra.oncall), read with site_url
    oncall: Any = field(default=None, repr=False)
    decision_log: list = field(default_factory=list, repr=False)
    affected_paths: dict[str, bool] = field(default_factory=dict, repr=False)  # decisions.affected_paths
    # Admission verdicts kept between runs (keptreviews.KeptReviews), when the run keeps them; chains built
    # with it (`rules.sec003_admission_policies.chain_of`) answer a request seen before without CEL.
    admission_reviews: Any = field(default=None, repr=False)

    def memo(self, key: Any, compute: Any) -> Any:
        """`compute()` once per fleet (one run) for `key`; rules share what they derive this way."""
        return _memo(self.derived, key, compute)

    def locate(self, obj: K8sObject | None, *path: Any) -> Location | None:
        """File and line of `path` inside `obj`'s source file (the deepest part that exists there)."""
        if obj is None or self.locator is None:
            return None
        return self.locator.locate(obj, tuple(path))

    def span(self, obj: K8sObject) -> tuple[str, int, int] | None:
        """(file, first line, last line) of the source document of `obj`; None when unknown."""
        return None if self.locator is None else self.locator.span(obj)

    def source_text(self, path: str) -> str | None:
        """The text of a repository file as the run reads it (comments included); None when unknown."""
        return None if self.locator is None else self.locator.text(path)

    def locate_file(self, path: str, *field_path: Any, document: int = 0) -> Location:
        if self.locator is None:
            return Location(path, 1)
        return self.locator.locate_in_file(path, tuple(field_path), document)
