"""A candidate written into the repository's files, and checked by every rule on a temporary copy first.

What changes, in step, for each knob:
- the ClusterQueue's GPU `nominalQuota`/`borrowingLimit`/`lendingLimit` on the flavor, and the same field of
  the cpu and memory that serve it, so Kueue never stops at cpu before the GPUs the quota promises: on the
  flavor itself at its per-device ratio (from its nominal quotas, else from a limit both set) where the flavor
  carries cpu/memory (WL006), else on the queue's `cpu` flavor of its own resource group (decision 0069),
  moved by the GPU change x the per-device share `cpu_share` finds, where that flavor sets the field (an unset
  limit stays unlimited); `spec.cohortName` for a cohort knob;
- the queue file's header block (`# Quotas per flavor (pool) ...`), where it has one, regenerated from the
  edited queue and pools by `domain/queue_header.py` once the copy is re-loaded (decision 0090);
- each team namespace's ResourceQuota (`requests.nvidia.com/...`), raised to what its queues can now admit
  (CAP015)
  or lowered with them where it was exactly that before; a key its queues can now admit and it lacks (a new
  MIG profile) is added;
- for a replica knob: pool.yaml's `timeSlicing.replicas`, the `replicas` of the pool's device-plugin config,
  its
  line in the startup check's pools.conf (POOL005; rewritten with `startupcheck.table_with`), every GPU quota
  on the pool's flavors in the new unit (ClusterQueues' and Cohorts', production's too), and the comments that
  state the counts;
- for a replica knob that switches the pool between exclusive (1) and time-sliced, besides: pool.yaml's
  `accessMode`, its `timeSlicing` block, GFD's `-SHARED` product label, `startupCheck.maxMemoryUsedPercent`
  and the comments that explain them; the device-plugin config's `sharing.timeSlicing` block (added or
  removed); a ResourceFlavor's product label where it selects the nodes by it (recommend/sharing.py). The
  config must be the pool's own: one that other pools select is refused;
- for a layout knob (`layout_edits`): pool.yaml's `spec.mig.layout`, its `nvidia.com/mig.config` node label,
  header
  lines and description; a generated layout appended to the mig-parted config; every mig-* quota on the pool's
  flavors converted (new profiles added to `coveredResources` and to every flavor of the group);
- for a split knob (`split_edits`): both pools' `spec.zones` in pool.yaml, and every GPU quota on their
  flavors scaled with the nodes (the queues' cpu and memory moved with them, as for a quota knob).
Files are edited round-trip (comments, quoting and layout kept) with `upgrade promote`'s Editor; everything is
written through the transactional writer, to the copy and, with --apply, to the repository.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from decimal import ROUND_CEILING, Decimal
from pathlib import Path

from ..domain import queue_header
from ..domain.gpu_resources import is_nvidia_resource
from ..domain.quantity import QuantityError, parse_quantity
from ..domain.queues import namespace_labels, queues_selecting
from ..domain.quotas import admissible, flavors_of
from ..domain.startupcheck import table_fields, table_with
from ..editing import Editor, same_style
from ..errors import ToolError
from ..findings import Severity
from ..infra import repopath
from ..infra.transaction import write_files
from ..model import PRODUCT_LABEL, Cluster, Fleet
from . import cpu_share, layout_edits, lending, sharing, split_edits
from .rescale import QUOTA_KEYS, rescaled
from .space import COHORT, LAYOUT, LIMIT_FIELDS, REPLICAS, SPLIT, Knob, changes

FIELD = {kind: QUOTA_KEYS[field] for kind, field in LIMIT_FIELDS.items()}  # a quota knob -> its YAML key
# what a validation run never reads: git's store, build output and tool caches
_NOT_COPIED = frozenset(
    {
        ".git",
        ".venv",
        "artifacts",
        "site",
        "node_modules",
        "__pycache__",
        ".hypothesis",
        ".pytest_cache",
        ".ruff_cache",
    }
)
GI = Decimal(2**30)
POOLS_CONF = "policies/startup-check/pools.conf"  # the startup check's settings per pool (sharePercent)
DEVICE_PLUGIN_LABEL = "nvidia.com/device-plugin.config"


class CandidateEditor(Editor):
    def apply(
        self, fleet: Fleet, cluster: Cluster, knob_list: list[Knob], params: Mapping[str, int | str]
    ) -> None:
        found = changes(knob_list, params)
        queue_knobs = [(knob, value) for knob, value in found if knob.kind not in (REPLICAS, LAYOUT, SPLIT)]
        for knob, value in queue_knobs:
            if not knob.grid:
                self._set_queue_knob(fleet, cluster, knob, value)
        for knob, value in found:  # after the quota knobs: their values are in today's replica units
            if knob.kind == REPLICAS:
                self.set_replicas(fleet, cluster, knob.pool, int(knob.current), int(value))
        changed = cluster  # a pool whose layout is searched has no mig-* quota knobs (space.knobs)
        for knob, value in found:  # each layout change starts from the one before, as space.with_params does
            if knob.kind == LAYOUT:
                changed = layout_edits.set_layout(
                    self, changed, knob.pool, str(value), lambda obj, path: _source(fleet, obj, path)
                )
        # a lending knob lists the lender's flavor in the file after the layouts converted the groups: the
        # entry then carries every covered resource of the converted group (lending.add_entry)
        for knob, value in queue_knobs:
            if knob.grid:  # a lending knob (lending.py)
                self._set_queue_knob(fleet, cluster, knob, value)
        # last, on the cluster the other knobs made (space.with_params)
        split_edits.set_splits(
            self, cluster, knob_list, params, found, lambda obj, path: _source(fleet, obj, path)
        )

    def _set_queue_knob(self, fleet: Fleet, cluster: Cluster, knob: Knob, value: int | str) -> None:
        cq = cluster.cluster_queues[knob.queue]
        source = _source(fleet, cq.obj, ("spec", "cohortName") if knob.kind == COHORT else ("spec",))
        spec = self._document(source, "ClusterQueue", cq.name)["spec"]
        if knob.kind == COHORT:
            spec["cohortName"] = str(value)
            return
        if knob.grid:  # a lending knob: list the lender's flavor at nominal 0 first (lending.py)
            lending.add_entry(spec, knob.flavor)
        ratio = cpu_share.per_device(cluster, cq, knob.flavor, knob.resource)
        self._set_limit(spec, knob, int(value), ratio)

    def set_replicas(self, fleet: Fleet, cluster: Cluster, pool_name: str, old: int, new: int) -> None:
        """Every file that carries the pool's replica count (pool.yaml, its device-plugin config, the startup
        check's pools.conf), and every GPU quota on the pool's flavors rescaled (`rescale.rescaled`). A
        count of 1 is an exclusive pool: going from or to it switches the mode in those files too
        (`_set_sharing`)."""
        pool = next(p for p in cluster.pools if p.name == pool_name)
        entry = self._plugin_config(cluster, pool)
        flavors = flavors_of(cluster, pool_name)
        if old == 1 or new == 1:
            self._set_sharing(fleet, cluster, pool, entry.source.path, flavors, old, new)
        else:
            self._document(pool.path, "Pool", pool_name)["spec"]["timeSlicing"]["replicas"] = new
            config = self._load(entry.source.path).documents[0]
            for resource in config["sharing"]["timeSlicing"]["resources"]:
                if resource.get("name") == "nvidia.com/gpu":
                    resource["replicas"] = new
        self.table_rows[pool_name] = table_fields(sharing.pool_with_replicas(pool, old, new))
        for owner in [*cluster.cluster_queues.values(), *(c for c in cluster.cohorts.values() if c.obj)]:
            if any(fq.flavor in flavors for g in owner.resource_groups for fq in g.flavors):
                source = _source(fleet, owner.obj, ("spec",))
                kind = "ClusterQueue" if owner in cluster.cluster_queues.values() else "Cohort"
                self._rescale(self._document(source, kind, owner.name)["spec"], flavors, old, new)

    def _plugin_config(self, cluster: Cluster, pool):
        """The device-plugin config entry only this pool's nodes select (editing a shared one would change the
        other pools' devices too)."""
        key = pool.node_labels.get(DEVICE_PLUGIN_LABEL, "")
        entry = cluster.device_plugin_configs.get(key)
        if entry is None or not entry.source.path:
            raise ToolError(
                f"pool {pool.name}: no device-plugin config entry of its own to set its replicas in"
            )
        others = sorted(
            p.name
            for p in cluster.pools
            if p.name != pool.name and p.node_labels.get(DEVICE_PLUGIN_LABEL) == key
        )
        if others:
            raise ToolError(
                f"pool {pool.name}: its device-plugin config {key} is also the config of "
                f"{', '.join(others)}; give the pool a config of its own before its replicas "
                "change"
            )
        return entry

    def _set_sharing(
        self, fleet: Fleet, cluster: Cluster, pool, plugin_path: str, flavors: set[str], old: int, new: int
    ) -> None:
        """The switch between exclusive (1) and time-sliced cards in pool.yaml, the device-plugin config and
        any
        ResourceFlavor that selects the nodes by their product label (recommend/sharing.py)."""
        if not sharing.switchable_mode(pool):
            raise ToolError(
                f"pool {pool.name} ({pool.access_mode}, {pool.sharing}"
                f"{', renamed' if pool.rename_shared else ''}): only exclusive and time-sliced "
                "pools "
                "that keep the resource name nvidia.com/gpu switch between the two"
            )
        document = self._document(pool.path, "Pool", pool.name)
        sharing.set_pool_sharing(document["spec"], pool, new)
        described = sharing.described(pool.description, new > 1)
        if described != pool.description and isinstance(document.get("metadata"), dict):
            document["metadata"]["description"] = same_style(document["metadata"]["description"], described)
        self.text_edits.append(
            (
                pool.path,
                functools.partial(sharing.pool_comments, new=new, pool=pool.name, description=described),
            )
        )
        plugin = self._load(plugin_path)
        try:
            sharing.set_plugin_sharing(plugin.documents[0], plugin.yaml, new)
        except ValueError as exc:
            raise ToolError(f"{plugin_path}: {exc}") from None
        before = pool.node_labels.get(PRODUCT_LABEL)
        for name in sorted(flavors):
            flavor = cluster.flavors[name]
            if before is None or flavor.node_labels.get(PRODUCT_LABEL) != before:
                continue
            source = _source(fleet, flavor.obj, ("spec", "nodeLabels", PRODUCT_LABEL))
            labels = self._document(source, "ResourceFlavor", name)["spec"]["nodeLabels"]
            labels[PRODUCT_LABEL] = sharing.product_label(before, new > 1)

    @staticmethod
    def _rescale(spec, flavors: set[str], old: int, new: int) -> None:
        for group in spec.get("resourceGroups") or ():
            for flavor in group.get("flavors") or ():
                if flavor.get("name") not in flavors:
                    continue
                for resource in flavor.get("resources") or ():
                    if is_nvidia_resource(str(resource.get("name"))):
                        for key in FIELD.values():
                            if key in resource:
                                _set_value(resource, key, rescaled(int(resource[key]), old, new))

    def _set_limit(self, spec, knob: Knob, value: int, ratio: Mapping[str, Decimal] | None) -> None:
        key = FIELD[knob.kind]
        for group in spec.get("resourceGroups") or ():
            for flavor in group.get("flavors") or ():
                if flavor.get("name") != knob.flavor:
                    continue
                resources = {r.get("name"): r for r in flavor.get("resources") or ()}
                gpu = resources[knob.resource]
                if resources.keys() & {"cpu", "memory"}:  # the old shape: cpu/memory per GPU flavor
                    for name in ("cpu", "memory"):
                        if name in resources:
                            _set_in_step(resources[name], gpu, key, value)
                else:
                    _shift_cpu_flavor(cpu_share.cpu_flavor(spec, group), gpu, key, value, ratio)
                _set_value(gpu, key, value)

    def set_namespace_quotas(self, fleet: Fleet, before: Cluster, after: Cluster) -> None:
        """Each team ResourceQuota's GPU keys follow what the namespace's queues can admit (CAP015), edited in
        the file that sets the value (the cluster's team-quotas.yaml patch, else the base)."""
        old, new = _admitted(before), _admitted(after)
        for quota in after.namespace_quotas:
            was, now = old.get(quota.namespace, {}), new.get(quota.namespace, {})
            # a MIG profile the queues can admit since a layout change
            for key in sorted(now.keys() - quota.hard.keys()):
                self._add_quota_key(fleet, quota, key, now[key])
            # a key the queues no longer admit (a profile the new layout drops) comes down to 0 with them
            for key, amount in [*now.items(), *((k, Decimal(0)) for k in was.keys() - now.keys())]:
                if key not in quota.hard:
                    continue
                source = _source(fleet, quota.obj, ("spec", "hard", key))
                hard = self._document(source, "ResourceQuota", quota.name, quota.namespace)["spec"]["hard"]
                if key not in hard:
                    continue
                try:
                    current = parse_quantity(hard[key])
                except QuantityError:
                    continue
                if current < amount or current == old.get(quota.namespace, {}).get(key):
                    _set_value(hard, key, str(int(amount)))

    def _add_quota_key(self, fleet: Fleet, quota, key: str, amount: Decimal) -> None:
        """`key: "<amount>"` added to the ResourceQuota's `spec.hard` in the file that sets it, after the keys
        that
        sort before it, quoted like its neighbours."""
        source = _source(fleet, quota.obj, ("spec", "hard"))
        hard = self._document(source, "ResourceQuota", quota.name, quota.namespace)["spec"]["hard"]
        keys = list(hard)
        position = next((i for i, other in enumerate(keys) if other > key), len(keys))
        neighbour = hard[keys[position - 1]] if position else None
        hard.insert(position, key, same_style(neighbour, str(int(amount))))

    def _document(self, rel: str, kind: str, name: str, namespace: str = "") -> object:
        for document in self._load(rel).documents:
            metadata = (document or {}).get("metadata") or {} if isinstance(document, dict) else {}
            if (
                document.get("kind") == kind
                and metadata.get("name") == name
                and (not namespace or metadata.get("namespace") == namespace)
            ):
                return document
        raise ToolError(f"{rel}: no {kind} named {name} to edit (is it made by a kustomize patch?)")

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.table_rows: dict[str, tuple[str, ...]] = {}  # pools.conf: pool -> its line's fields
        # (file, comment edit) after the YAML edits
        self.text_edits: list[tuple[str, Callable[[str], str]]] = []

    def rendered(self) -> dict[str, str]:
        texts = super().rendered()
        for rel, edit in self.text_edits:
            texts[rel] = edit(texts[rel])
        if self.table_rows:
            try:
                texts[POOLS_CONF] = table_with(self.original(POOLS_CONF), self.table_rows)
            except ValueError as exc:
                raise ToolError(f"{POOLS_CONF}: cannot be rewritten ({exc}); edit it by hand") from None
        return texts

    def original(self, rel: str) -> str:
        """The file's text before any edit (YAML files are loaded round-trip; pools.conf is plain text)."""
        if rel in self.files:
            return self.files[rel].original
        try:
            return self.reader.read(rel).decode("utf-8")
        except (repopath.Refused, UnicodeDecodeError) as exc:
            raise ToolError(f"{rel}: cannot be edited ({exc})") from None


def _source(fleet: Fleet, obj, path: tuple[str, ...]) -> str:
    """The repo-relative file that sets `path` of the object (an overlay patch, or the object's own file)."""
    location = fleet.locate(obj, *path)
    return location.path if location is not None and location.path else obj.origin


def _set_value(mapping, key: str, value) -> None:
    mapping[key] = same_style(mapping.get(key), value)


def _set_in_step(resource, gpu, key: str, devices: int) -> None:
    """cpu or memory `key` at the flavor's ratio per GPU device (from its nominal quotas, else from the first
    limit both set); left alone when no ratio is known."""
    for pair in dict.fromkeys(("nominalQuota", key, "borrowingLimit", "lendingLimit")):
        try:
            per_device = parse_quantity(resource.get(pair, 0)) / Decimal(gpu.get(pair) or 0)
        except (QuantityError, ArithmeticError):
            continue
        _set_quantity(resource, key, per_device * devices)
        return


def _shift_cpu_flavor(flavor, gpu, key: str, devices: int, ratio: Mapping[str, Decimal] | None) -> None:
    """The `cpu` flavor's cpu and memory `key` moved by (devices - the GPU's present value) x the per-device
    ratio; left alone where the GPU field or the flavor's field is unset (unlimited) or no ratio is known."""
    if flavor is None or ratio is None or key not in gpu:
        return
    try:
        delta = Decimal(devices) - parse_quantity(gpu[key])
    except QuantityError:
        return
    for resource in flavor.get("resources") or ():
        name = resource.get("name")
        if name not in ratio or key not in resource:
            continue
        try:
            current = parse_quantity(resource[key])
        except QuantityError:
            continue
        amount = max(current + delta * ratio[name], Decimal(0))
        _set_quantity(resource, key, _rounded_up(name, amount, current))


def _rounded_up(name: str, amount: Decimal, current: Decimal) -> Decimal:
    """A derived amount (cpu_share's ratios are exact fractions) up to the unit the quota is written in now:
    whole cores, whole Gi; rounding up, so the GPUs never wait for a fraction of a core."""
    unit = GI if name == "memory" and current % GI == 0 else Decimal(1) if current == int(current) else None
    return amount if unit is None else (amount / unit).to_integral_value(rounding=ROUND_CEILING) * unit


def _set_quantity(resource, key: str, amount: Decimal) -> None:
    """cpu as a whole number where it is one; memory in Gi where it is whole Gi."""
    if resource.get("name") == "memory" and amount % GI == 0:
        _set_value(resource, key, f"{int(amount / GI)}Gi")
    else:
        _set_value(resource, key, int(amount) if amount == int(amount) else str(amount))


def _admitted(cluster: Cluster) -> dict[str, dict[str, Decimal]]:
    """namespace -> `requests.<GPU resource>` -> what its queues can admit (the sum CAP015 checks)."""
    result: dict[str, dict[str, Decimal]] = {}
    for name in cluster.namespaces:
        for queue in queues_selecting(cluster, namespace_labels(cluster, name) or {}):
            for resource, amount in admissible(cluster, queue).items():
                if is_nvidia_resource(resource) and amount > 0:
                    key = f"requests.{resource}"
                    result.setdefault(name, {})[key] = result.get(name, {}).get(key, Decimal(0)) + Decimal(
                        amount
                    )
    return result


def copy_repository(root: Path, into: Path) -> Path:
    """The repository's content (not .git, virtual environments, artifacts or caches) copied; symlinks stay
    links, so the copy's trust boundary refuses the same paths the repository's does."""
    target = into / "repo"
    top = os.path.abspath(root)

    def not_copied(folder: str, names: list[str]) -> set[str]:
        at_top = os.path.abspath(folder) == top
        return {name for name in names if name in _NOT_COPIED or (at_top and _is_venv(folder, name))}

    shutil.copytree(root, target, symlinks=True, ignore=not_copied)
    return target


def _is_venv(folder: str, name: str) -> bool:
    """A virtual environment beside the repository's content: a top-level `.venv*` directory (the Makefile's
    `.venv`, the fork job's `.venv-system`, 55,000 files) holding a `pyvenv.cfg`. Only there and only by that
    name, so a pull request cannot leave a folder the rules read (clusters/, .github/) out of the copy by
    putting a `pyvenv.cfg` in it."""
    path = os.path.join(folder, name)
    return (
        name.startswith(".venv")
        and not os.path.islink(path)
        and os.path.isfile(os.path.join(path, "pyvenv.cfg"))
    )


def repository_errors(root: Path) -> set[str]:
    """The error findings the repository has before any edit (a candidate is judged on the ones it adds)."""
    from ..pipeline import run

    return _errors(run(root, use_cache=False).findings)


def _errors(findings) -> set[str]:
    return {f"{f.rule} {f.path}: {f.message}" for f in findings if f.severity == Severity.ERROR}


def edited_files(
    root: Path,
    cluster_name: str,
    knob_list: list[Knob],
    params: Mapping[str, int | str],
    known: set[str] = frozenset(),
) -> tuple[dict[str, str], list[str]]:
    """(repo-relative path -> new text, error findings the edit adds) for the candidate: applied to a
    temporary copy of the repository, the copy re-loaded to set the namespace quotas, then validated with
    every rule;
    `known` are the repository's own errors (repository_errors), which no candidate is blamed for."""
    from ..pipeline import load_fleet, run

    with tempfile.TemporaryDirectory(prefix="gpupolicy-recommend-") as tmp:
        copy = copy_repository(root, Path(tmp))
        before_fleet = load_fleet(copy, [cluster_name], use_cache=False)
        before = before_fleet.clusters[cluster_name]
        editor = CandidateEditor(copy)
        editor.apply(before_fleet, before, knob_list, params)
        _write(copy, editor.rendered())
        after_fleet: Fleet = load_fleet(copy, [cluster_name], use_cache=False)
        editor.set_namespace_quotas(after_fleet, before, after_fleet.clusters[cluster_name])
        texts = {rel: text for rel, text in editor.rendered().items() if text != editor.original(rel)}
        _write(copy, texts)
        headers = refreshed_headers(before_fleet, after_fleet, texts)
        texts.update(headers)
        _write(copy, headers)
        errors = sorted(_errors(run(copy, use_cache=False).findings) - known)
    return texts, errors


def refreshed_headers(before: Fleet, after: Fleet, texts: Mapping[str, str]) -> dict[str, str]:
    """The header blocks regenerated from the edited model `after` (`queue_header`, decision 0090: one home
    for the counts, never a regex over the old figures), in the edited files (`texts`) and in any queue file
    whose block the change moves without editing its YAML (a layout change alters what the pool exposes, the
    `of M`
    of a queue whose quota on it stays)."""
    was = queue_header.expected_blocks(before)
    moved = {rel for rel, blocks in queue_header.expected_blocks(after).items() if blocks != was.get(rel)}
    return {
        rel: text for rel, text in queue_header.refreshed_files(after).items() if rel in texts or rel in moved
    }


def _write(copy: Path, texts: Mapping[str, str]) -> None:
    write_files({copy / rel: text for rel, text in texts.items()})


def apply_to_repository(root: Path, texts: Mapping[str, str]) -> None:
    """Write the candidate's files in place, all or none, each resolved through the trust boundary."""
    editor = Editor(root)
    targets = {}
    for rel, text in texts.items():
        try:
            targets[editor.reader.regular_file(rel)] = text
        except repopath.Refused as refusal:
            raise ToolError(f"refusing to write {rel}: {refusal}") from None
    write_files(targets, journal_root=root)
