"""The files a MIG layout change touches, edited round-trip through `CandidateEditor` (recommend/edits.py).

For `<pool>/layout` = L (the values come from `layouts.with_layout`, so the files say what the simulator
replayed):
- `pools/<pool>/pool.yaml`: `spec.mig.layout`, the node label `nvidia.com/mig.config`, and the description
  (metadata and header line) where it states the cut;
- the mig-parted config (`policies/gpu-operator/mig-parted-config.yaml`): L appended under `mig-configs` when
  it is
  a generated layout (a `device-filter` of the GPU's PCI IDs and a comment); nothing when the config has it;
- every ClusterQueue and Cohort with quota on the pool's flavors: the converted mig-* quotas, new profiles
  added
  to `coveredResources` and to every flavor of the group at the same place (Kueue's rule, see
  `layouts._converted_group`); their header blocks follow from the converted quotas when the edited copy is
  re-loaded (`edits.refreshed_headers`, decision 0090).
The team namespaces' ResourceQuotas follow in `CandidateEditor.set_namespace_quotas` (CAP015), which adds the
new profiles' keys. A layout name is data, never a path: files come from the model (`pool.path`, the config
entry's source) and are opened through the editor's reader.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import DoubleQuotedScalarString

from ..domain import catalog
from ..domain.quotas import flavors_of
from ..editing import same_style
from ..errors import ToolError
from ..model import MIG_CONFIG_LABEL, MIG_RESOURCE_PREFIX, Cluster, K8sObject, Pool
from . import layouts
from .rescale import QUOTA_KEYS

FIELDS = tuple((key, field) for field, key in QUOTA_KEYS.items())  # (YAML key, model field)
# the file that sets a field of an object (edits._source)
Source = Callable[[K8sObject, tuple[str, ...]], str]


def set_layout(editor: Any, cluster: Cluster, pool_name: str, new_layout: str, source_of: Source) -> Cluster:
    """Every file a layout change touches (see the module docstring), edited in `editor` (a CandidateEditor);
    returns the cluster with the change, which the files now match (the next layout change starts from it)."""
    pool = next(p for p in cluster.pools if p.name == pool_name)
    choice = layouts.layout_choices(cluster, pool).get(new_layout)
    if choice is None:
        raise ToolError(
            f"pool {pool_name}: {new_layout!r} is not a layout the solver accepts for {pool.gpu_model}"
        )
    after = layouts.with_layout(cluster, pool_name, new_layout)
    model = catalog.gpu(pool.gpu_model)
    _edit_pool(editor, pool, choice, model)
    if choice.generated:
        _append_layout(editor, cluster, choice, pool, model)
    flavors = flavors_of(cluster, pool_name)
    for kind, before, changed in _owners(cluster, after):
        if before.resource_groups == changed.resource_groups or before.obj is None:
            continue
        source = source_of(before.obj, ("spec",))
        spec = editor._document(source, kind, before.name)["spec"]
        _edit_groups(spec, before, changed, flavors, source)
    return after


def _owners(cluster: Cluster, after: Cluster):
    for name, cq in cluster.cluster_queues.items():
        yield "ClusterQueue", cq, after.cluster_queues[name]
    for name, cohort in cluster.cohorts.items():
        yield "Cohort", cohort, after.cohorts[name]


# --- pool.yaml
# -------------------------------------------------------------------------------------------------


def _edit_pool(editor: Any, pool: Pool, choice: layouts.LayoutChoice, model: catalog.GPUModel) -> None:
    document = editor._document(pool.path, "Pool", pool.name)
    spec = document["spec"]
    spec["mig"]["layout"] = same_style(spec["mig"].get("layout"), choice.name)
    labels = spec.get("nodeLabels")
    if labels is None or MIG_CONFIG_LABEL not in labels:
        raise ToolError(f"{pool.path}: no nodeLabels {MIG_CONFIG_LABEL} to set the layout in")
    labels[MIG_CONFIG_LABEL] = same_style(labels[MIG_CONFIG_LABEL], choice.name)
    metadata = document.get("metadata") or {}
    old_description = str(metadata.get("description") or "")
    description = _description(old_description, pool, choice, model)
    if description != old_description:
        metadata["description"] = same_style(metadata.get("description"), description)
    editor.text_edits.append((pool.path, lambda text: _pool_header(text, pool, old_description, description)))


def cut(per_card: dict[str, int], model: catalog.GPUModel, joiner: str = ", ", space: str = " ") -> str:
    """`2x 1g.10gb, 1x 2g.20gb` (or, with joiner " + " and no space, `2x1g.10gb + 1x2g.20gb`), catalog
    order."""
    order = list(model.mig_profiles)
    ranked = sorted(per_card, key=lambda p: (order.index(p) if p in order else len(order), p))
    return joiner.join(f"{per_card[p]}x{space}{p}" for p in ranked)


def _cards(choice: layouts.LayoutChoice) -> list[tuple[int, dict[str, int]]]:
    return [(index, dict(pairs)) for index, pairs in choice.per_card]


def _description(text: str, pool: Pool, choice: layouts.LayoutChoice, model: catalog.GPUModel) -> str:
    """The description with the cut restated where it states one: a profile of today's layout named in it
    replaces what follows its first ': ' with the new cut; the old layout's name (or its name less `all-`)
    named
    as a word becomes the new name. Otherwise it is left as the owner wrote it."""
    old_profiles = _old_profiles(pool)
    if any(re.search(rf"(?<![\d.]){re.escape(p)}(?!\w)", text) for p in old_profiles):  # "2x1g.10gb" too
        head = text.split(": ", 1)[0] + ": " if ": " in text else ""
        cards = _cards(choice)
        stated = (
            cut(cards[0][1], model, " + ", "")
            if all(c == cards[0][1] for _, c in cards)
            else f"by the {choice.name} layout"
        )
        return f"{head}every {pool.gpu_model.split('-')[0]} cut {stated}."
    for old in dict.fromkeys((pool.mig_layout or "", (pool.mig_layout or "").removeprefix("all-"))):
        if old and re.search(rf"(?<![\w.-]){re.escape(old)}(?![\w.-])", text):
            return re.sub(rf"(?<![\w.-]){re.escape(old)}(?![\w.-])", choice.name, text, count=1)
    return text


def _old_profiles(pool: Pool) -> set[str]:
    return {catalog.profile_name(name) for name in pool.capacity if name.startswith(MIG_RESOURCE_PREFIX)}


def _pool_header(text: str, pool: Pool, old_description: str, description: str) -> str:
    """The leading `# Pool <name>: <description>` line with the new description. The comments state no counts
    and no cut (decision 0090): `gpupolicy inspect` and the pool's page do."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if not line.startswith("#"):
            break
        if (
            old_description
            and description != old_description
            and line == (f"# Pool {pool.name}: {old_description}")
        ):
            lines[i] = f"# Pool {pool.name}: {description}"
    return "\n".join(lines)


# --- the mig-parted config
# -------------------------------------------------------------------------------------


def _append_layout(
    editor: Any, cluster: Cluster, choice: layouts.LayoutChoice, pool: Pool, model: catalog.GPUModel
) -> None:
    """The generated layout appended under `mig-configs`, in the file's style (a flow list of quoted PCI IDs,
    quoted profile names), with a comment saying what it is and who asked for it."""
    path = layouts.mig_config_path(cluster)
    if not path:
        raise ToolError(f"cluster {cluster.name}: no mig-parted config file to add layout {choice.name} to")
    documents = editor._load(path).documents
    configs = documents[0].get("mig-configs") if documents and isinstance(documents[0], dict) else None
    if not isinstance(configs, dict):
        raise ToolError(f"{path}: no mig-configs mapping to add layout {choice.name} to")
    if choice.name in configs:
        return  # another pool's change in this candidate added it already
    entries = CommentedSeq()
    for entry in choice.entries:
        item = CommentedMap()
        ids = CommentedSeq(DoubleQuotedScalarString(i) for i in entry["device-filter"])
        ids.fa.set_flow_style()
        item["device-filter"] = ids
        item["devices"] = entry["devices"]
        item["mig-enabled"] = entry["mig-enabled"]
        item["mig-devices"] = CommentedMap(
            (DoubleQuotedScalarString(p), n) for p, n in entry["mig-devices"].items()
        )
        entries.append(item)
    configs[choice.name] = entries
    comment = _layout_comment(choice, pool, model)
    configs.yaml_set_comment_before_after_key(choice.name, before=comment, indent=2)
    # ruamel writes the comment right after the previous layout; the file keeps a blank line between layouts
    editor.text_edits.append(
        (path, lambda text: text.replace(f"\n  # {comment}\n", f"\n\n  # {comment}\n", 1))
    )


def _layout_comment(choice: layouts.LayoutChoice, pool: Pool, model: catalog.GPUModel) -> str:
    counts = _cards(choice)[0][1]
    profiles = {name: model.mig_profiles[name] for name in counts}
    compute = sum(profiles[p].compute_slices * n for p, n in counts.items())
    memory = sum(profiles[p].memory_slices * n for p, n in counts.items())
    return (
        f"{cut(counts, model, ' + ', '')} = {compute} of {model.compute_slices} compute slices, {memory} "
        f"of {model.memory_slots} memory slices on {model.key} (gpupolicy recommend, pool {pool.name})."
    )


# --- ClusterQueues and Cohorts
# ---------------------------------------------------------------------------------


def _edit_groups(spec: Any, before: Any, after: Any, flavors: set[str], source: str) -> None:
    """The file's resource groups brought to the converted model's: new covered resources inserted where the
    model has them, new resources inserted in each flavor, and the mig-* amounts of the pool's flavors set."""
    groups = spec.get("resourceGroups") or []
    if len(groups) != len(after.resource_groups):
        raise ToolError(
            f"{source}: {before.name}'s resource groups differ from the rendered ones "
            "(is it made by a kustomize patch?)"
        )
    for group, old, new in zip(groups, before.resource_groups, after.resource_groups, strict=True):
        if old == new:
            continue
        if [f.get("name") for f in group.get("flavors") or ()] != [fq.flavor for fq in new.flavors]:
            raise ToolError(f"{source}: {before.name}'s flavors differ from the rendered ones")
        _insert_missing(group["coveredResources"], new.covered_resources, lambda name: name, source)
        for flavor, fq, old_fq in zip(group["flavors"], new.flavors, old.flavors, strict=True):
            known = {q.name for q in old_fq.resources}
            resources = flavor["resources"]
            _insert_missing(
                resources,
                [q.name for q in fq.resources],
                lambda r: r.get("name"),
                source,
                make=lambda name: CommentedMap(name=name),
            )
            for resource, quota in zip(resources, fq.resources, strict=True):
                if quota.name in known and (
                    fq.flavor not in flavors or not quota.name.startswith(MIG_RESOURCE_PREFIX)
                ):
                    continue
                _set_fields(resource, quota)


def _insert_missing(items: list, wanted, key, source: str, make=None) -> None:
    """`items` (a YAML list) with the `wanted` names it lacks inserted at their place in `wanted`."""
    for index, name in enumerate(wanted):
        if index >= len(items) or key(items[index]) != name:
            items.insert(index, make(name) if make else name)
    if [key(item) for item in items] != list(wanted):
        raise ToolError(
            f"{source}: resources {[key(i) for i in items]} do not follow coveredResources {list(wanted)}"
        )


def _set_fields(resource: Any, quota: Any) -> None:
    for key, field in FIELDS:
        value = getattr(quota, field)
        if value is not None:
            resource[key] = same_style(resource.get(key), int(value))
