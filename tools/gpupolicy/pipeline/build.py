"""From rendered objects and pool declarations to the typed fleet model (model.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..domain import capacity
from ..domain.gpu_operator import OPERATOR_NAMESPACE
from ..domain.kustomization import KUSTOMIZATION_NAMES, ORIGIN_ANNOTATION, overlay_file
from ..domain.quantity import QuantityError, kueue_quantity
from ..findings import Location
from ..infra import repopath
from ..infra.yamlload import Document, load_text, mappings, parse_source
from ..model import (
    TEAM_LABEL,
    TIER_LABEL,
    WORKLOAD_LABEL,
    Cluster,
    ClusterFacts,
    ClusterQueue,
    Cohort,
    ConfigEntry,
    Flavor,
    FlavorQuotas,
    K8sObject,
    LocalQueue,
    Namespace,
    NamespaceQuota,
    NvidiaDriver,
    Pool,
    PriorityClass,
    ResourceGroup,
    ResourceQuota,
    StartupCheck,
    Taint,
    WorkloadPriorityClass,
)
from .render import patchsources

VALUES_CONFIGMAP = "gpu-operator-values"


class SourceIndex:
    """Maps a rendered object and a field path back to the source file and line it came from.

    Paths reach it from content (origin annotations, generator sources), so every file is read through the
    trust boundary (repopath): a path that resolves outside the repository, is not a regular file or is over
    the size limit is never opened, and reads as a file without documents."""

    def __init__(
        self,
        reader: repopath.Reader,
        documents: dict[str, list[Document]],
        edit_documents: dict[str, list[Document]] | None = None,
        texts: dict[str, str] | None = None,
    ) -> None:
        self.root = str(reader.root)
        self.documents = documents  # the loader's: only files it did not load are read here
        # patch/replacements files as lists, from the loader's read
        self.edit_documents = edit_documents or {}
        self.reader = reader
        self.texts = texts or {}  # loaded files whose text rules about comments read (the loader's read)
        self.refused: dict[str, str] = {}  # repo-relative path -> why the boundary refused it
        self.overlays: dict[str, str] = {}  # cluster -> its kustomization file, where refused origins point
        # The overlay edits of each cluster and its generated ConfigMap keys: a field they set is located at
        # the edit (patchsources), and the place in the base it replaced is kept in `bases` as context.
        self.setters: dict[str, list] = {}
        self.generated: dict[str, dict[tuple[str, str], str]] = {}
        self.bases: dict[tuple[str, int], Location] = {}
        self._edit_cache: dict[tuple[str, str], list[Document]] = {}

    def docs(self, path: str) -> list[Document]:
        if path not in self.documents:
            self.documents[path] = self._load(path)
        return self.documents[path]

    def _load(self, path: str) -> list[Document]:
        if not path:
            return []
        try:
            raw = self.reader.read(path)
        except repopath.Refused as refusal:
            self.refused[path] = str(refusal)
            return []
        return parse_source(raw, path).documents

    def locate(self, obj: K8sObject, field_path: tuple) -> Location:
        """Where `field_path` of `obj` was set: the overlay edit that set it (the base then kept in `bases`),
        else
        its place in the object's source document."""
        path = tuple(str(part) for part in field_path)
        generated = patchsources.generated_location(self.generated.get(obj.cluster, {}), obj, path, self.docs)
        if generated is not None:  # the generator's file is the key's own source, not an edit over a base
            return generated
        base = self._locate_in_origin(obj, field_path)
        edited = self._edit_location(obj, path)
        if edited is None or edited == base:
            return base
        self.bases[(edited.path, edited.line)] = base
        return edited

    def edit_docs(self, path: str) -> list[Document]:
        """The documents of an overlay edit's file: the loader's (a kustomization, a strategic-merge patch),
        or, for a file the loader kept no document of, its lists (a JSON6902 patch or a replacements file,
        which the
        loader refuses as manifests), parsed once through the boundary."""
        loaded = self.docs(path)
        if loaded:
            return loaded
        if path in self.edit_documents:
            return self.edit_documents[path]
        key = ("edit", path)
        if key not in self._edit_cache:
            try:
                text = self.reader.read(path).decode("utf-8")
            except (repopath.Refused, OSError, UnicodeDecodeError):
                text = ""
            self._edit_cache[key] = load_text(text, path, lists=True).documents
        return self._edit_cache[key]

    def _edit_location(self, obj: K8sObject, path: tuple[str, ...]) -> Location | None:
        for setter in self.setters.get(obj.cluster, ()):
            if setter.applies_to(obj):
                line = setter.line_for(path)
                if line:
                    return Location(setter.file, line)
        return None

    def _locate_in_origin(self, obj: K8sObject, field_path: tuple) -> Location:
        if not obj.origin:
            return Location("", 0)
        docs = self.docs(obj.origin)
        if obj.origin in self.refused:  # the origin names no file we may read: the cluster's overlay instead
            return self._overlay_location(obj)
        doc = _matching_document(docs, obj)
        if doc is None:
            return Location(obj.origin, 1 if docs else 0)
        return Location(obj.origin, doc.line_of(field_path))

    def text(self, path: str) -> str | None:
        """The text of repo-relative `path`, for rules about a file's comments, which the model does not carry
        (DOC006). A file the loader read: the text kept from that read (`texts`), None when none was kept (it
        has no queue header block), so no input is read twice. Any other file: through the run's reader (the
        trust boundary); None when refused or not UTF-8."""
        if path in self.texts or path in self.documents:
            return self.texts.get(path)
        try:
            return self.reader.read(path).decode("utf-8")
        except (repopath.Refused, UnicodeDecodeError):
            return None

    def span(self, obj: K8sObject) -> tuple[str, int, int] | None:
        """(file, first line, last line) of the source document `obj` comes from; the last document of a file
        runs to its end (a very large last line). None when the document is not known."""
        if not obj.origin or obj.origin in self.refused:
            return None
        docs = self.docs(obj.origin)
        doc = _matching_document(docs, obj)
        if doc is None:
            return None
        later = [d.line for d in docs if d.line > doc.line]
        return obj.origin, doc.line, (min(later) - 1) if later else 2**31

    def _overlay_location(self, obj: K8sObject) -> Location:
        if obj.cluster not in self.overlays:
            self.overlays[obj.cluster] = overlay_file(self.root, obj.cluster) if obj.cluster else ""
        overlay = self.overlays[obj.cluster]
        return Location(overlay, 1) if overlay else Location("", 0)

    def locate_in_file(self, path: str, field_path: tuple, document: int = 0) -> Location:
        docs = self.docs(path)
        if document < len(docs):
            return Location(path, docs[document].line_of(field_path))
        return Location(path, 1)


def _matching_document(docs: list[Document], obj: K8sObject) -> Document | None:
    same_kind = [d for d in docs if isinstance(d.data, dict) and d.data.get("kind") == obj.kind]
    for doc in same_kind:
        if (doc.data.get("metadata") or {}).get("name") == obj.name:
            return doc
    if len(same_kind) == 1:
        return same_kind[0]  # renamed by a prefix/suffix transformer
    return docs[0] if len(docs) == 1 else None


# --- objects ---------------------------------------------------------------------------------------------


def object_from(body: dict, cluster_dir: str, cluster: str, kustomization: str = "") -> K8sObject:
    """A rendered object. Its origin is the source file its origin annotation names, or, when that names
    something outside the repository, the overlay's kustomization (`kustomization`, else the usual name in
    `cluster_dir`): the file that set the annotation, and never a file the toolkit may not open."""
    metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    refused = ""
    try:
        origin = origin_path(metadata, cluster_dir)
    except repopath.Refused as refusal:
        origin = kustomization or (f"{cluster_dir}/{KUSTOMIZATION_NAMES[0]}" if cluster_dir else "")
        refused = str(refusal)
    return K8sObject(
        api_version=str(body.get("apiVersion") or ""),
        kind=str(body.get("kind") or ""),
        name=str(metadata.get("name") or ""),
        namespace=str(metadata.get("namespace") or ""),
        body=body,
        origin=origin,
        cluster=cluster,
        origin_refused=refused,
    )


def origin_path(metadata: dict, cluster_dir: str) -> str:
    """Repo-relative source file named by kustomize's origin annotation (the generator's kustomization for
    generated objects); "" when there is none or it names a remote resource. Raises repopath.Refused when
    the annotation names a path outside the repository (an absolute path, `../` above the root): the
    annotation is ordinary content, which an overlay can set on every object."""
    annotations = metadata.get("annotations")
    raw = annotations.get(ORIGIN_ANNOTATION) if isinstance(annotations, dict) else None
    if not isinstance(raw, str):
        return ""
    relative = _origin_field(raw, "path") or _origin_field(raw, "configuredIn")
    if not relative or _origin_field(raw, "repo"):  # a remote resource: its path is in another repository
        return ""
    return repopath.normalize(cluster_dir, relative)


def _origin_field(raw: str, name: str) -> str:
    """A top-level `name: value` line of kustomize's origin annotation (a tiny YAML map; parsing it with a
    YAML
    library per object costs more than the rest of the object's handling)."""
    prefix = f"{name}:"
    for line in raw.splitlines():
        if line.startswith(prefix):
            return line[len(prefix) :].strip().strip("'\"")
    return ""


# --- pools and cluster facts -------------------------------------------------------------------------------


def pool_from(doc: Document) -> Pool:
    """A Pool from a pool.yaml document that passed its schema."""
    spec = doc.data["spec"]
    mig = spec.get("mig") or {}
    sliced = spec.get("timeSlicing") or {}
    return Pool(
        name=doc.data["metadata"]["name"],
        path=doc.path,
        gpu_model=spec["gpu"]["model"],
        gpus_per_node=spec["gpu"]["perNode"],
        zones=dict(spec["zones"]),
        access_mode=spec["accessMode"],
        node_labels=dict(spec.get("nodeLabels") or {}),
        taints=tuple(Taint(t["key"], t.get("value", ""), t["effect"]) for t in spec.get("taints") or []),
        team=spec.get("team", ""),
        description=doc.data["metadata"].get("description", ""),
        time_slicing_replicas=sliced.get("replicas"),
        rename_shared=bool(sliced.get("renameByDefault")),
        mig_layout=mig.get("layout"),
        mig_strategy=mig.get("strategy"),
        mps_replicas=(spec.get("mps") or {}).get("replicas"),
        **_node_shape(spec.get("node")),
        startup_check=_startup_check(spec.get("startupCheck")),
    )


def _startup_check(settings: Any) -> StartupCheck:
    """pool.yaml `startupCheck` over the schema's defaults (a malformed block: defaults; the schema reports
    it)."""
    settings = settings if isinstance(settings, dict) else {}
    fields = {
        "skip": "skip",
        "retries": "retries",
        "backoffSeconds": "backoff_seconds",
        "maxMemoryUsedPercent": "max_memory_used_percent",
    }
    return StartupCheck(
        **{
            name: settings[key]
            for key, name in fields.items()
            if key in settings and type(settings[key]) is type(getattr(StartupCheck, name))
        }
    )


def _node_shape(node: Any) -> dict:
    """pool.yaml `node: {cpu, memory}` as Pool fields (absent or unparsable: None; the schema reports it)."""
    node = node if isinstance(node, dict) else {}
    shape: dict[str, Any] = {"node_cpu": None, "node_memory": None}
    for key, field_name in (("cpu", "node_cpu"), ("memory", "node_memory")):
        if key in node:
            try:
                amount = kueue_quantity(node[key])
            except QuantityError:
                continue
            shape[field_name] = float(amount) if key == "cpu" else int(amount)
    return shape


def facts_from(doc: Document) -> ClusterFacts:
    spec = doc.data["spec"]
    return ClusterFacts(
        name=doc.data["metadata"]["name"],
        path=doc.path,
        environment=spec["environment"],
        region=spec["region"],
        zones=tuple(spec["zones"]),
        kubernetes_version=str(spec["kubernetesVersion"]),
        gpu_operator_version=spec["gpuOperatorVersion"],
        sync_engine=spec["syncEngine"],
        description=doc.data["metadata"].get("description", ""),
    )


# --- the cluster model -------------------------------------------------------------------------------------


def build_cluster(
    facts: ClusterFacts,
    objects: list[K8sObject],
    pools: list[Pool],
    generated: dict[tuple[str, str], str],
    gpu_model_of: Any = None,
    source_docs: Any = None,
) -> Cluster:
    """`generated` maps (ConfigMap name, key) to the source file that generator key came from;
    `source_docs(path)` gives that file's strictly loaded documents (the pipeline's SourceIndex), so a config
    file shared by every cluster is parsed once, and its line numbers are the file's own."""
    cluster = Cluster(facts=facts, objects=objects)
    for obj in objects:
        if not _typable(obj):
            continue  # the schema stage reports the malformed metadata; the model cannot type it
        _ADD.get((obj.group.split(".")[0] if obj.group else "", obj.kind), _ignore)(cluster, obj)
    _add_implied_cohorts(cluster)
    configs = _ConfigReader(generated, source_docs)
    cluster.cluster_policy = _cluster_policy(cluster, configs)
    _read_operator_configs(cluster, configs)
    cluster.pools = [_with_capacity(pool, cluster, gpu_model_of) for pool in pools]
    return cluster


def _typable(obj: K8sObject) -> bool:
    """Whether the object's metadata has the shapes the model reads (labels and annotations are mappings)."""
    metadata = obj.body.get("metadata")
    if not isinstance(metadata, dict):
        return False
    return all(isinstance(metadata.get(key) or {}, dict) for key in ("labels", "annotations"))


def _ignore(cluster: Cluster, obj: K8sObject) -> None:
    return None


def _with_capacity(pool: Pool, cluster: Cluster, gpu_model_of: Any) -> Pool:
    entries = None
    if pool.mig_layout and pool.mig_layout in cluster.mig_configs:
        entries = cluster.mig_configs[pool.mig_layout].data
    model = gpu_model_of(pool.gpu_model) if gpu_model_of else None
    return replace(pool, capacity=capacity.pool_capacity(pool, entries, model))


def _number(value: Any) -> int | float | None:
    if value is None:
        return None
    try:
        amount = kueue_quantity(value)  # 1e5000 is 2^63-1 (CAP016 reports it), never a 5,001-digit int
    except QuantityError:
        return None
    return int(amount) if amount == amount.to_integral_value() else float(amount)


def _resource_groups(spec: dict) -> tuple[ResourceGroup, ...]:
    groups = []
    for group in mappings(spec.get("resourceGroups")):
        flavors = []
        for flavor in mappings(group.get("flavors")):
            quotas = tuple(
                ResourceQuota(
                    name=str(r.get("name")),
                    nominal=_number(r.get("nominalQuota")) or 0,
                    borrowing_limit=_number(r.get("borrowingLimit")),
                    lending_limit=_number(r.get("lendingLimit")),
                )
                for r in mappings(flavor.get("resources"))
            )
            flavors.append(FlavorQuotas(flavor=str(flavor.get("name")), resources=quotas))
        listed = group.get("coveredResources")
        covered = tuple(r for r in listed if isinstance(r, str)) if isinstance(listed, list) else ()
        groups.append(ResourceGroup(covered_resources=covered, flavors=tuple(flavors)))
    return tuple(groups)


def _taints(value: Any) -> tuple[Taint, ...]:
    return tuple(
        Taint(str(t.get("key")), str(t.get("value", "")), str(t.get("effect", ""))) for t in mappings(value)
    )


def _add_flavor(cluster: Cluster, obj: K8sObject) -> None:
    spec = obj.spec
    # anything but a mapping of strings is SCHEMA002's finding; the model keeps
    labels = spec.get("nodeLabels")
    # only the string labels, so no rule sees a list where Kubernetes has a string
    cluster.flavors[obj.name] = Flavor(
        name=obj.name,
        node_labels={k: v for k, v in labels.items() if isinstance(k, str) and isinstance(v, str)}
        if isinstance(labels, dict)
        else {},
        node_taints=_taints(spec.get("nodeTaints")),
        tolerations=tuple(mappings(spec.get("tolerations"))),
        obj=obj,
    )


def _add_cluster_queue(cluster: Cluster, obj: K8sObject) -> None:
    spec = obj.spec
    selector = spec.get("namespaceSelector")
    labels = obj.labels
    cluster.cluster_queues[obj.name] = ClusterQueue(
        name=obj.name,
        cohort=str(spec.get("cohortName") or spec.get("cohort") or ""),
        namespace_selector=selector if isinstance(selector, dict) else None,
        resource_groups=_resource_groups(spec),
        preemption=dict(spec.get("preemption") or {}),
        team=labels.get(TEAM_LABEL, ""),
        tier=labels.get(TIER_LABEL, ""),
        workload=labels.get(WORKLOAD_LABEL, ""),
        labels=dict(labels),
        obj=obj,
    )


def _add_cohort(cluster: Cluster, obj: K8sObject) -> None:
    spec = obj.spec
    cluster.cohorts[obj.name] = Cohort(
        name=obj.name,
        parent=str(spec.get("parentName") or spec.get("parent") or ""),
        resource_groups=_resource_groups(spec),
        obj=obj,
    )


def _add_implied_cohorts(cluster: Cluster) -> None:
    named = {cq.cohort for cq in cluster.cluster_queues.values() if cq.cohort}
    named |= {c.parent for c in cluster.cohorts.values() if c.parent}
    for name in sorted(named - set(cluster.cohorts)):
        cluster.cohorts[name] = Cohort(name=name, parent="", resource_groups=(), obj=None)


def _add_local_queue(cluster: Cluster, obj: K8sObject) -> None:
    cluster.local_queues.append(
        LocalQueue(
            name=obj.name,
            namespace=obj.namespace,
            cluster_queue=str(obj.spec.get("clusterQueue") or ""),
            obj=obj,
        )
    )


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _add_priority_class(cluster: Cluster, obj: K8sObject) -> None:
    body = obj.body
    cluster.priority_classes[obj.name] = PriorityClass(
        name=obj.name,
        value=_int(body.get("value")),
        global_default=bool(body.get("globalDefault")),
        preemption_policy=str(body.get("preemptionPolicy") or "PreemptLowerPriority"),
        tier=obj.labels.get(TIER_LABEL, ""),
        obj=obj,
    )


def _add_workload_priority_class(cluster: Cluster, obj: K8sObject) -> None:
    cluster.workload_priority_classes[obj.name] = WorkloadPriorityClass(
        name=obj.name, value=_int(obj.body.get("value")), tier=obj.labels.get(TIER_LABEL, ""), obj=obj
    )


def _add_namespace(cluster: Cluster, obj: K8sObject) -> None:
    cluster.namespaces[obj.name] = Namespace(name=obj.name, labels=dict(obj.labels), obj=obj)


def _add_resource_quota(cluster: Cluster, obj: K8sObject) -> None:
    hard = obj.spec.get("hard")  # not a mapping: the schema stage reports it; the model counts no quota
    cluster.namespace_quotas.append(
        NamespaceQuota(
            name=obj.name, namespace=obj.namespace, hard=dict(hard) if isinstance(hard, dict) else {}, obj=obj
        )
    )


def _add_nvidia_driver(cluster: Cluster, obj: K8sObject) -> None:
    spec = obj.spec
    cluster.nvidia_drivers.append(
        NvidiaDriver(
            name=obj.name,
            version=str(spec.get("version") or ""),
            driver_type=str(spec.get("driverType") or "gpu"),
            node_selector=dict(spec.get("nodeSelector") or {}),
            upgrade_policy=dict(spec.get("upgradePolicy") or {}),
            obj=obj,
            tolerations=tuple(mappings(spec.get("tolerations"))),
        )
    )


def _add_cluster_policy(cluster: Cluster, obj: K8sObject) -> None:
    cluster.cluster_policy = obj


_ADD = {
    ("kueue", "ResourceFlavor"): _add_flavor,
    ("kueue", "ClusterQueue"): _add_cluster_queue,
    ("kueue", "Cohort"): _add_cohort,
    ("kueue", "LocalQueue"): _add_local_queue,
    ("kueue", "WorkloadPriorityClass"): _add_workload_priority_class,
    ("scheduling", "PriorityClass"): _add_priority_class,
    ("", "Namespace"): _add_namespace,
    ("", "ResourceQuota"): _add_resource_quota,
    ("nvidia", "NVIDIADriver"): _add_nvidia_driver,
    ("nvidia", "ClusterPolicy"): _add_cluster_policy,
}


# --- GPU Operator: Helm values -> ClusterPolicy, and its ConfigMaps
# -------------------------------------------

# Helm values sections that become ClusterPolicy spec sections of the same name (GPU Operator chart template).
_SPEC_SECTIONS = (
    "operator",
    "daemonsets",
    "driver",
    "toolkit",
    "devicePlugin",
    "dcgm",
    "dcgmExporter",
    "gfd",
    "mig",
    "migManager",
    "nodeStatusExporter",
    "validator",
    "gds",
    "gdrcopy",
    "sandboxWorkloads",
    "vgpuManager",
    "vgpuDeviceManager",
    "vfioManager",
    "sandboxDevicePlugin",
    "cdi",
    "psa",
    "hostPaths",
    "ccManager",
    "kataManager",
    "kataSandboxDevicePlugin",
)
_CHART_ONLY = {
    "operator": (
        "nodeSelector",
        "tolerations",
        "affinity",
        "resources",
        "logging",
        "cleanupCRD",
        "upgradeCRD",
        "priorityClassName",
        "repository",
        "image",
        "version",
        "imagePullPolicy",
        "imagePullSecrets",
    ),
    "driver": ("nvidiaDriverCRD",),
    "devicePlugin": (),
    "migManager": (),
    "dcgmExporter": (),
}


def values_to_cluster_policy_spec(values: dict) -> dict:
    """The ClusterPolicy spec the GPU Operator chart renders from these values (the parts we model)."""
    spec: dict[str, Any] = {}
    for section in _SPEC_SECTIONS:
        if isinstance(values.get(section), dict):
            spec[section] = {
                k: v for k, v in values[section].items() if k not in _CHART_ONLY.get(section, ())
            }
    driver = values.get("driver") if isinstance(values.get("driver"), dict) else {}
    crd = driver.get("nvidiaDriverCRD") if isinstance(driver.get("nvidiaDriverCRD"), dict) else {}
    if "enabled" in crd:
        spec.setdefault("driver", {})["useNvidiaDriverCRD"] = bool(crd["enabled"])
    policy = spec.get("driver", {}).get("upgradePolicy")
    if isinstance(policy, dict) and "gpuPodDeletion" in policy:
        policy = dict(policy)
        policy["podDeletion"] = policy.pop("gpuPodDeletion")
        spec["driver"]["upgradePolicy"] = policy
    for section in ("devicePlugin", "migManager", "dcgmExporter"):
        config = spec.get(section, {}).get("config")
        if isinstance(config, dict):  # `create` and `data` only make the chart create a ConfigMap
            spec[section]["config"] = {k: v for k, v in config.items() if k in ("name", "default")}
    return spec


def merge_values(base: Any, override: Any) -> Any:
    """Helm's merge: maps merge key by key, anything else is replaced."""
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for key, value in override.items():
            merged[key] = merge_values(base.get(key), value) if key in base else value
        return merged
    return override


def _configmap(cluster: Cluster, name: str) -> K8sObject | None:
    for obj in cluster.objects:
        if obj.kind == "ConfigMap" and obj.name == name and obj.namespace in (OPERATOR_NAMESPACE, ""):
            return obj
    return None


class _ConfigReader:
    """The parsed document behind a ConfigMap key: the generator's source file as the pipeline loaded it when
    the key came from a file, else the key's own text (an inline ConfigMap)."""

    def __init__(self, generated: dict[tuple[str, str], str], source_docs: Any) -> None:
        self.generated = generated
        self.source_docs = source_docs

    def source(self, configmap: K8sObject, key: str) -> str:
        return self.generated.get((configmap.name, key), configmap.origin)

    def document(self, configmap: K8sObject, key: str) -> Document | None:
        text = (configmap.body.get("data") or {}).get(key)
        if not isinstance(text, str):
            return None
        source = self.source(configmap, key)
        if self.source_docs is not None and (configmap.name, key) in self.generated:
            docs = self.source_docs(source)
        else:
            docs = load_text(text, source).documents
        return docs[0] if docs else None


def _cluster_policy(cluster: Cluster, configs: _ConfigReader) -> K8sObject | None:
    if cluster.cluster_policy is not None:
        return cluster.cluster_policy
    values_map = _configmap(cluster, VALUES_CONFIGMAP)
    if values_map is None:
        return None
    merged: dict = {}
    for key in sorted(values_map.body.get("data") or {}):
        layer = configs.document(values_map, key)
        merged = merge_values(merged, layer.data) if layer and isinstance(layer.data, dict) else merged
    body = {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy"},
        "spec": values_to_cluster_policy_spec(merged),
    }
    return K8sObject(
        api_version="nvidia.com/v1",
        kind="ClusterPolicy",
        name="cluster-policy",
        namespace="",
        body=body,
        origin=values_map.origin,
        cluster=cluster.name,
    )


def _config_name(cluster: Cluster, section: str, default: str) -> str:
    spec = cluster.cluster_policy.spec if cluster.cluster_policy else {}
    config = (spec.get(section) or {}).get("config") if isinstance(spec.get(section), dict) else None
    return str(config.get("name") or default) if isinstance(config, dict) else default


def _read_operator_configs(cluster: Cluster, configs: _ConfigReader) -> None:
    plugin_map = _configmap(cluster, _config_name(cluster, "devicePlugin", "device-plugin-config"))
    for key in (plugin_map.body.get("data") or {}) if plugin_map else {}:
        doc = configs.document(plugin_map, key)
        cluster.device_plugin_configs[key] = ConfigEntry(
            plugin_map.name, key, doc.data if doc else None, Location(configs.source(plugin_map, key), 1)
        )
    mig_map = _configmap(cluster, _config_name(cluster, "migManager", "mig-parted-config"))
    doc = configs.document(mig_map, "config.yaml") if mig_map else None
    if doc is None:
        return
    source = configs.source(mig_map, "config.yaml")
    layouts = doc.data.get("mig-configs") if isinstance(doc.data, dict) else None
    for name, entries in (layouts or {}).items() if isinstance(layouts, dict) else []:
        cluster.mig_configs[str(name)] = ConfigEntry(
            mig_map.name, str(name), entries, Location(source, doc.line_of(("mig-configs", name)))
        )
