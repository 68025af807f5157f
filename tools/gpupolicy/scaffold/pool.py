"""`gpupolicy new pool`: a GPU node pool and every edit it needs.

- `pools/<name>/`: pool.yaml, the Kustomize Component with its ResourceFlavor (nodeLabels: the pool label),
  its
  own NVIDIADriver (so a rollout can move it alone) and its device-plugin config key;
- a MIG pool: its layout in the cluster's mig-parted config when the config has no entry of that name for
  the GPU (a `device-filter` of the GPU's PCI IDs from the catalog); a layout the config has is used as it is;
- its line in the startup check's `pools.conf` (POOL005), by `startupcheck.table_with`;
- the component in `clusters/<cluster>/kustomization.yaml`, after the cluster's other pools;
- its NVIDIADriver's version and its place in every unfinished driver rollout plan: the last stage that takes
  pools of the same cluster by name gets it (a stage that takes the whole cluster takes it already), at the
  version that stage's pools run, so UPG003 and UPG011 hold;
- with `--quota QUEUE=[RESOURCE:]N,...`: the flavor in that ClusterQueue with N devices nominal, cpu and
  memory
  at the pool's per-device share of a node (WL006), new resources (MIG profiles) added to `coveredResources`
  and to every other flavor of the group at 0 (Kueue requires every flavor to list every covered resource);
  then each team namespace's ResourceQuota is raised to what its queues can admit (CAP015).
Nothing is counted in comments: `gpupolicy inspect` and the generated pool pages state what the pool exposes.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import DoubleQuotedScalarString

from ..domain import catalog, startupcheck
from ..domain.gpu_resources import NVIDIA_DOMAIN, is_gpu_device_resource, is_nvidia_resource
from ..errors import ToolError
from ..model import MIG_RESOURCE_PREFIX
from ..recommend.edits import _source
from ..upgrade.plans import drivers_of_pool, plans_of, stage_units
from .common import Workspace, check_name, insert_list_item

ACCESS_MODES = ("exclusive", "time-sliced", "mig")
GPU = "nvidia.com/gpu"
TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


@dataclass(frozen=True)
class PoolRequest:
    name: str
    cluster: str
    gpu: str
    per_node: int
    zones: dict[str, int]
    access: str
    node_cpu: int
    node_memory: str
    replicas: int = 1
    layout: str = ""
    mig_devices: dict[str, int] | None = None  # profile -> count per GPU, for a layout the config lacks
    description: str = ""
    quotas: dict[str, dict[str, int]] | None = None  # ClusterQueue -> resource -> nominal devices


def check(request: PoolRequest) -> catalog.GPUModel:
    check_name("pool", request.name)
    try:
        model = catalog.gpu(request.gpu)
    except (KeyError, ToolError):
        known = ", ".join(catalog.GPUS)
        raise ToolError(f"--gpu {request.gpu}: not a GPU model of the catalog ({known})") from None
    if request.access not in ACCESS_MODES:
        raise ToolError(f"--access {request.access}: one of {', '.join(ACCESS_MODES)}")
    if request.access == "mig":
        if not model.min_mig_driver:
            raise ToolError(f"--access mig: {model.key} has no MIG")
        if not request.layout:
            raise ToolError(
                "--access mig needs --layout NAME (a layout of the mig-parted config, or a new "
                "one with --mig-devices)"
            )
        for profile in request.mig_devices or {}:
            if profile not in model.mig_profiles:
                raise ToolError(
                    f"--mig-devices {profile}: not a MIG profile of {model.key} "
                    f"({', '.join(model.mig_profiles)})"
                )
    elif request.layout or request.mig_devices:
        raise ToolError("--layout and --mig-devices are for --access mig")
    if request.access == "time-sliced" and request.replicas < 2:
        raise ToolError("--access time-sliced needs --replicas N (2 or more pods per GPU)")
    if request.per_node < 1 or not request.zones or any(n < 1 for n in request.zones.values()):
        raise ToolError("--per-node and every --zone ZONE=NODES must be at least 1")
    return model


def steps(request: PoolRequest):
    """The scaffold's steps on a workspace (see the module docstring), for `common.scaffold`."""
    model = check(request)

    def run(workspace: Workspace) -> None:
        fleet = workspace.fleet([request.cluster]) if request.cluster in _clusters(workspace) else None
        if fleet is None:
            raise ToolError(f"--cluster {request.cluster}: no clusters/{request.cluster}/cluster.yaml")
        cluster = fleet.clusters[request.cluster]
        unknown = set(request.zones) - set(cluster.facts.zones)
        if unknown:
            raise ToolError(
                f"--zone {', '.join(sorted(unknown))}: not a zone of {request.cluster} "
                f"({', '.join(cluster.facts.zones)})"
            )
        version, placement = _rollout_place(fleet, request)
        workspace.create(pool_files(request, model, version))
        workspace.edit(lambda editor: _wire(editor, workspace, cluster, request, model))
        after = workspace.fleet([request.cluster])
        workspace.edit(lambda editor: _plans(editor, placement, request.name))
        if request.quotas:
            before = after.clusters[request.cluster]
            workspace.edit(lambda editor: _quotas(editor, after, before, request, model))
            quoted = workspace.fleet([request.cluster])
            workspace.edit(
                lambda editor: editor.set_namespace_quotas(quoted, before, quoted.clusters[request.cluster])
            )
        else:
            workspace.notes.append(
                f"no queue has quota on {request.name} yet: rerun with --quota QUEUE=N, "
                f"or `gpupolicy recommend --cluster {request.cluster}`"
            )

    return run


def _clusters(workspace: Workspace) -> set[str]:
    folder = workspace.copy / "clusters"
    return {p.name for p in folder.iterdir() if (p / "cluster.yaml").is_file()} if folder.is_dir() else set()


# --- the new files
# ---------------------------------------------------------------------------------------------


def product_label(request: PoolRequest, model: catalog.GPUModel) -> str:
    """GFD's nvidia.com/gpu.product: the catalog's first label, with -SHARED on a time-sliced GPU not
    renamed."""
    label = model.product_labels[0]
    return f"{label}-SHARED" if request.access == "time-sliced" else label


def pool_files(request: PoolRequest, model: catalog.GPUModel, driver_version: str) -> dict[str, str]:
    name, base = request.name, f"pools/{request.name}"
    description = request.description or f"{model.key} {request.access} pool of {request.cluster}."
    zones = "".join(f"    {zone}: {count}\n" for zone, count in request.zones.items())
    sharing = {
        "mig": f"  mig:\n    layout: {request.layout}\n    strategy: mixed\n",
        "time-sliced": f"  timeSlicing:\n    replicas: {request.replicas}\n    renameByDefault: false\n",
        "exclusive": "",
    }[request.access]
    layout_label = f'    nvidia.com/mig.config: "{request.layout}"\n' if request.access == "mig" else ""
    plugin = (
        "version: v1\nflags:\n  # Must match the ClusterPolicy mig.strategy "
        "(policies/gpu-operator/values.yaml).\n"
        "  migStrategy: mixed\n"
    )
    if request.access == "time-sliced":
        plugin += (
            "sharing:\n  timeSlicing:\n    renameByDefault: false\n    failRequestsGreaterThanOne: "
            "true\n"
            f"    resources:\n      - name: nvidia.com/gpu\n        replicas: {request.replicas}\n"
        )
    return {
        f"{base}/pool.yaml": f"""\
# Pool {name}: {description} Written by `gpupolicy new pool`; `gpupolicy inspect` shows what it exposes.
apiVersion: gpupolicy/v1
kind: Pool
metadata:
  name: {name}
  description: "{description}"
spec:
  gpu:
    model: {model.key}
    perNode: {request.per_node}
  # One node's cpu and memory: WL006 measures cpu/memory quota against the per-GPU share of it.
  node:
    cpu: {request.node_cpu}
    memory: "{request.node_memory}"
  zones:
{zones}  accessMode: {request.access}
{sharing}  # The GPU startup check before a pod's containers start (policies/startup-check, decision 0051).
  startupCheck:
    skip: false
    retries: 3
    backoffSeconds: 5
  nodeLabels:
    gpupolicy.io/pool: "{name}"
    nvidia.com/gpu.product: "{product_label(request, model)}"
    nvidia.com/device-plugin.config: "{name}"
{layout_label}  taints:
    # Every GPU node carries the GPU taint; admission keeps pods without a GPU request off it.
    - key: {TAINT["key"]}
      value: {TAINT["value"]}
      effect: {TAINT["effect"]}
""",
        f"{base}/kustomization.yaml": f"""\
# Kustomize Component for pool {name}: include it from the overlay of the cluster that owns the pool.
apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
resources:
  - resourceflavor.yaml
  - nvidiadriver.yaml
configMapGenerator:
  - name: device-plugin-config
    namespace: gpu-operator
    behavior: merge
    files:
      - {name}=device-plugin.yaml
""",
        f"{base}/device-plugin.yaml": f"# Device-plugin config key `{name}`, selected by the node label "
        f"nvidia.com/device-plugin.config: {name}.\n" + plugin,
        f"{base}/resourceflavor.yaml": f"""\
# Kueue flavor for pool {name}; nodeLabels select exactly this pool's nodes and are injected into admitted
# pods, tolerations are appended so those pods can pass the pool taints.
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: {name}
  labels:
    gpupolicy.io/pool: {name}
spec:
  nodeLabels:
    gpupolicy.io/pool: {name}
  tolerations:
    - key: {TAINT["key"]}
      operator: Equal
      value: {TAINT["value"]}
      effect: {TAINT["effect"]}
""",
        f"{base}/nvidiadriver.yaml": f"""\
# Driver for pool {name} only: nodeSelector is the pool label, so no node is claimed by two NVIDIADriver
# objects and a rollout plan can move this pool on its own.
apiVersion: nvidia.com/v1alpha1
kind: NVIDIADriver
metadata:
  name: {name}
  labels:
    gpupolicy.io/pool: {name}
spec:
  default: false
  driverType: gpu
  repository: nvcr.io/nvidia
  image: driver
  version: "{driver_version}"
  kernelModuleType: auto
  nodeSelector:
    gpupolicy.io/pool: {name}
  tolerations:
    - key: nvidia.com/gpu
      operator: Exists
      effect: NoSchedule
  upgradePolicy:
    autoUpgrade: true
    # One node of the pool at a time.
    maxParallelUpgrades: 1
    maxUnavailable: 1
    waitForCompletion:
      # Let running batch Jobs finish before their node is drained (0 = wait as long as it takes).
      podSelector: "gpupolicy.io/wait-for-completion=true"
      timeoutSeconds: 0
    podDeletion:
      force: false
      timeoutSeconds: 300
      deleteEmptyDir: true
    drain:
      enable: true
      force: false
      podSelector: ""
      timeoutSeconds: 600
      deleteEmptyDir: true
""",
    }


# --- the files that wire the pool in
# ---------------------------------------------------------------------------


def _wire(editor, workspace: Workspace, cluster, request: PoolRequest, model: catalog.GPUModel) -> None:
    kustomization = f"clusters/{request.cluster}/kustomization.yaml"
    editor._load(kustomization)  # loaded round-trip through the trust boundary; the text edit follows
    editor.text_edits.append(
        (
            kustomization,
            lambda t: insert_list_item(
                t, "components", f"../../pools/{request.name}", "../../pools/", kustomization
            ),
        )
    )
    # pools.conf: the line pool.yaml's startupCheck says (POOL005), written by the table writer
    editor.table_rows[request.name] = (
        request.name,
        request.access,
        startupcheck.product(model.key),
        "false",
        "3",
        "5",
        "5",
        str(100 // request.replicas) if request.access == "time-sliced" else "0",
    )
    if request.access == "mig":
        _layout(editor, cluster, request, model)
    del workspace


def _layout(editor, cluster, request: PoolRequest, model: catalog.GPUModel) -> None:
    """The pool's layout: the config's entry for this GPU when it has one, else the layout written from
    --mig-devices (a new layout, or a new entry of an existing one for this GPU's PCI IDs)."""
    entry = cluster.mig_configs.get(request.layout)
    if entry is not None and _covers(entry.data, model):
        if request.mig_devices:
            raise ToolError(
                f"layout {request.layout} exists for {model.key}; drop --mig-devices or name a new layout"
            )
        return
    if not request.mig_devices:
        raise ToolError(
            f"layout {request.layout} has no entry for {model.key}: give its slices with "
            f"--mig-devices PROFILE=N,... ({', '.join(model.mig_profiles)})"
        )
    path = next((e.source.path for e in cluster.mig_configs.values() if e.source.path), "")
    if not path:
        raise ToolError(
            f"cluster {cluster.name}: no mig-parted config file to add layout {request.layout} to"
        )
    documents = editor._load(path).documents
    configs = documents[0].get("mig-configs") if documents and isinstance(documents[0], dict) else None
    if not isinstance(configs, dict):
        raise ToolError(f"{path}: no mig-configs mapping to add layout {request.layout} to")
    item = CommentedMap()
    ids = CommentedSeq(DoubleQuotedScalarString(i) for i in model.pci_device_ids)
    ids.fa.set_flow_style()
    item["device-filter"] = ids
    item["devices"] = "all"
    item["mig-enabled"] = True
    item["mig-devices"] = CommentedMap(
        (DoubleQuotedScalarString(p), n) for p, n in request.mig_devices.items()
    )
    if request.layout in configs:
        configs[request.layout].append(item)
        return
    entries = CommentedSeq([item])
    configs[request.layout] = entries
    comment = (
        " + ".join(f"{n}x {p}" for p, n in request.mig_devices.items())
        + f" per {model.key} (gpupolicy new pool {request.name})."
    )
    configs.yaml_set_comment_before_after_key(request.layout, before=comment, indent=2)
    editor.text_edits.append(
        (path, lambda text: text.replace(f"\n  # {comment}\n", f"\n\n  # {comment}\n", 1))
    )


def _covers(entries, model: catalog.GPUModel) -> bool:
    """Whether a layout's entries give this GPU a MIG cut: an entry without device-filter applies to all."""
    for item in entries if isinstance(entries, list) else ():
        if isinstance(item, dict) and item.get("mig-enabled"):
            filters = item.get("device-filter")
            filters = [filters] if isinstance(filters, str) else filters
            if not filters or set(model.pci_device_ids) & {
                str(f).upper().replace("0X", "0x") for f in filters
            }:
                return True
    return False


# --- rollout plans
# ---------------------------------------------------------------------------------------------


def _rollout_place(fleet, request: PoolRequest) -> tuple[str, list[tuple]]:
    """The driver version the new pool starts at and, per unfinished driver plan, the (plan, stage, selector
    index) whose `pools` list gets it: the last stage that names pools of the same cluster."""
    cluster = fleet.clusters[request.cluster]
    placements, version = [], ""
    for plan in plans_of(fleet).plans:
        if plan.component != "driver" or plan.finished:
            continue
        chosen = None
        for stage in plan.stages:
            for selector in stage.selectors:
                if selector.cluster == request.cluster and selector.pools and not selector.match_labels:
                    chosen = (plan, stage, selector)
                elif (
                    selector.cluster in (None, request.cluster)
                    and selector.pools is None
                    and not selector.match_labels
                ):
                    chosen = (plan, stage, None)  # takes every pool of the cluster: the new one too
        if chosen is None:
            continue
        plan_, stage, selector = chosen
        peers = [u.pool for u in stage_units(fleet, plan_, stage) if u.cluster == request.cluster and u.pool]
        versions = {d.version for pool in peers for d in drivers_of_pool(cluster, pool)}
        version = version or (sorted(versions)[0] if len(versions) == 1 else "")
        if selector is not None:
            placements.append((plan_, stage, selector))
    if not version:
        versions = sorted({d.version for d in cluster.nvidia_drivers})
        version = versions[-1] if versions else _operator_default(cluster)
    return version, placements


def _operator_default(cluster) -> str:
    release = catalog.OPERATOR_RELEASES.get(cluster.facts.gpu_operator_version)
    if release is None:
        raise ToolError(
            f"cluster {cluster.name}: no NVIDIADriver to take a version from, and GPU Operator "
            f"{cluster.facts.gpu_operator_version} is not in the catalog"
        )
    return release.default_driver


def _plans(editor, placements: list[tuple], name: str) -> None:
    for plan, stage, selector in placements:
        document = editor._document(plan.path, "RolloutPlan", plan.name)
        document["spec"]["stages"][stage.index]["select"][selector.index]["pools"].append(name)


# --- quotas
# ----------------------------------------------------------------------------------------------------


def per_device(pool, model: catalog.GPUModel, resource: str) -> tuple[Fraction, Fraction]:
    """(cpu, memory in Gi) of one device of `resource` on a node of the pool: the node's share per GPU,
    split by replicas (time-slicing) or by the profile's compute slices (MIG)."""
    if pool.node_cpu is None or pool.node_memory is None:
        raise ToolError(f"pool {pool.name}: no node cpu/memory to size the cpu and memory quota by")
    cpu = Fraction(pool.node_cpu) / pool.gpus_per_node
    memory = Fraction(pool.node_memory) / 2**30 / pool.gpus_per_node
    if resource.startswith(MIG_RESOURCE_PREFIX):
        profile = model.mig_profiles[resource[len(MIG_RESOURCE_PREFIX) :]]
        share = Fraction(profile.compute_slices, model.compute_slices)
    else:
        share = Fraction(1, pool.time_slicing_replicas or 1)
    return cpu * share, memory * share


def _quotas(editor, fleet, cluster, request: PoolRequest, model: catalog.GPUModel) -> None:
    pool = next(p for p in cluster.pools if p.name == request.name)
    for queue_name, wanted in (request.quotas or {}).items():
        queue = cluster.cluster_queues.get(queue_name)
        if queue is None:
            raise ToolError(
                f"--quota {queue_name}: no ClusterQueue of that name in {request.cluster} "
                f"({', '.join(sorted(cluster.cluster_queues))})"
            )
        amounts = {GPU if r == "" else r: n for r, n in wanted.items()}
        if set(amounts) == {GPU} and set(pool.capacity) != {GPU}:
            raise ToolError(
                f"--quota {queue_name}: {request.name} exposes "
                f"{', '.join(sorted(pool.capacity))}; "
                "name the resource (QUEUE=RESOURCE:N)"
            )
        for resource, count in amounts.items():
            if resource not in pool.capacity:
                raise ToolError(
                    f"--quota {queue_name}: {request.name} exposes no {resource} "
                    f"({', '.join(sorted(pool.capacity))})"
                )
            if count > pool.capacity[resource]:
                raise ToolError(
                    f"--quota {queue_name}: {count} {resource}, the pool exposes {pool.capacity[resource]}"
                )
        source = _source(fleet, queue.obj, ("spec", "resourceGroups"))
        spec = editor._document(source, "ClusterQueue", queue.name)["spec"]
        _add_flavor(spec, queue, pool, model, amounts, source)


def _add_flavor(spec, queue, pool, model, amounts: dict[str, int], source: str) -> None:
    groups = spec.get("resourceGroups")
    gpu_group = next(
        (g for g in groups or () if any(is_gpu_device_resource(r) for r in g.get("coveredResources") or ())),
        None,
    )
    if gpu_group is None:  # the queue's first GPUs (`new team` in a new cluster): a group of their own
        if groups is None or "cpu" not in {r for g in groups for r in g.get("coveredResources") or ()}:
            raise ToolError(
                f"{source}: ClusterQueue {queue.name} has no resource group with GPU resources "
                f"to add {pool.name} to"
            )
        gpu_group = CommentedMap([("coveredResources", CommentedSeq()), ("flavors", CommentedSeq())])
        groups.append(gpu_group)
    covered = gpu_group["coveredResources"]
    for resource in sorted(pool.capacity):
        if resource not in covered:
            covered.append(resource)
            for flavor in gpu_group["flavors"]:
                flavor["resources"].append(_zero(resource, flavor["resources"]))
    if any(f.get("name") == pool.name for f in gpu_group["flavors"]):
        raise ToolError(f"{source}: ClusterQueue {queue.name} has a flavor {pool.name} already")
    cpu = sum((per_device(pool, model, r)[0] * n for r, n in amounts.items()), Fraction(0))
    memory = sum((per_device(pool, model, r)[1] * n for r, n in amounts.items()), Fraction(0))
    resources = CommentedSeq()
    for resource in covered:
        if resource == "cpu":
            value = int(cpu)
        elif resource == "memory":
            value = DoubleQuotedScalarString(f"{int(memory)}Gi")
        else:
            value = amounts.get(resource, 0)
        item = CommentedMap()
        item["name"] = resource
        item["nominalQuota"] = value
        item["borrowingLimit"] = 0 if not isinstance(value, str) else DoubleQuotedScalarString("0Gi")
        resources.append(item)
    flavor = CommentedMap()
    flavor["name"] = pool.name
    flavor["resources"] = resources
    gpu_group["flavors"].append(flavor)
    if "cpu" not in covered:  # cpu and memory in a group of their own (decision 0069): its flavor grows
        _grow_cpu_group(groups, queue, int(cpu), int(memory), source)


def _grow_cpu_group(groups, queue, cpu: int, memory_gi: int, source: str) -> None:
    """Add the new GPUs' cpu/memory share to the cpu-and-memory group's first flavor."""
    group = next((g for g in groups if "cpu" in (g.get("coveredResources") or ())), None)
    if group is None or not group.get("flavors"):
        return  # the queue tracks no cpu quota at all: nothing to keep in step
    for item in group["flavors"][0]["resources"]:
        if item.get("name") == "cpu":
            item["nominalQuota"] = int(Fraction(str(item["nominalQuota"]))) + cpu
        elif item.get("name") == "memory":
            current = str(item["nominalQuota"])
            if not current.endswith("Gi"):
                raise ToolError(
                    f"{source}: ClusterQueue {queue.name}: memory quota {current} is not in Gi; "
                    "raise it by hand"
                )
            item["nominalQuota"] = DoubleQuotedScalarString(f"{int(current[:-2]) + memory_gi}Gi")


def _zero(resource: str, neighbours) -> CommentedMap:
    item = CommentedMap()
    item["name"] = resource
    item["nominalQuota"] = 0
    if any("borrowingLimit" in n for n in neighbours):
        item["borrowingLimit"] = 0
    return item


def quota_amounts(text: str) -> tuple[str, dict[str, int]]:
    """`QUEUE=N` or `QUEUE=RESOURCE:N,RESOURCE:N` (RESOURCE: nvidia.com/... or a MIG profile such as
    1g.23gb)."""
    queue, sep, rest = text.partition("=")
    if not sep or not queue:
        raise ToolError(f"--quota {text}: write QUEUE=N or QUEUE=RESOURCE:N[,RESOURCE:N]")
    amounts: dict[str, int] = {}
    for part in rest.split(","):
        resource, _, count = part.rpartition(":")
        if resource and not is_nvidia_resource(resource):
            resource = (
                f"{MIG_RESOURCE_PREFIX}{resource}" if resource[:1].isdigit() else f"{NVIDIA_DOMAIN}{resource}"
            )
        try:
            amounts[resource] = int(count)
        except ValueError:
            raise ToolError(f"--quota {text}: {count!r} is not a whole number of devices") from None
        if amounts[resource] < 0:
            raise ToolError(f"--quota {text}: negative quota")
    return queue, amounts
