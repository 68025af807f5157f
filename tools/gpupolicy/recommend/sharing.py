"""The sharing switch of `recommend`: whether an inference pool's cards are time-sliced or handed out whole.

One knob decides both, `<pool>/replicas` (the name today's replica knob has, so records keep their meaning):
1 means exclusive (no sharing block at all: the device plugin refuses `replicas` below 2, SHARE001), 2 or more
time-sliced with that many replicas per card.

Which pools get the switch (`replica_range`):
- access mode `exclusive` or `time-sliced`. Not `mig` (its cards are partitioned by a layout, another knob),
  not
  `isolated` (`accessMode` is one value: a team's dedicated pool that time-slices would stop being declared
  isolated, which is not the search's call), not MPS (another sharing block, with its own client limits);
- purpose inference (`simulate.policy.pool_classes`, from the quota the queues hold there). A training pool
  stays out: whole-card jobs cannot run on a time-sliced card (the simulator refuses them there,
  `simulate/jobs.py` `shape_in_pool`), so switching one would only strand training. A time-sliced pool that is
  not switched keeps today's replica knob, 2 .. twice today's;
- `renameByDefault: false`: a renamed pool exposes `nvidia.com/gpu.shared`, and switching it would rename the
  resource in every quota on it.
Ranges: a time-sliced pool 1 .. twice today's count; an exclusive pool 1 .. EXCLUSIVE_MAX_REPLICAS. Both at
most `limits.MAX_TIME_SLICING_REPLICAS`.

What a switch changes, in the model (`pool_with_replicas`, `flavor_with_product`) and in the files
(`set_pool_sharing`, `set_plugin_sharing`, the text edit `pool_comments`): the access
mode, `timeSlicing`, the capacity in the new unit (the quotas are rescaled by `space.with_replicas` and
`CandidateEditor.set_replicas`, production's too: the same cards in the new unit, so CAP005's reserve stays),
GPU feature discovery's product label and the comments that state mode and counts.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from io import StringIO

from ruamel.yaml.comments import CommentedMap

from ..domain import catalog
from ..domain.startupcheck import line_family, table_fields
from ..editing import same_style
from ..infra.limits import MAX_TIME_SLICING_REPLICAS
from ..model import PRODUCT_LABEL, Cluster, Flavor, Fleet, Pool, StartupCheck
from ..simulate.policy import from_cluster, pool_classes

EXCLUSIVE, TIME_SLICED = "exclusive", "time-sliced"
SWITCHABLE_MODES = (EXCLUSIVE, TIME_SLICED)
# An exclusive pool may go up to 4 replicas: what each of the fleet's time-sliced pools runs today. The replay
# does not model memory pressure (decision 0058), and a card sized for whole-card serving split further than
# that leaves each replica less memory than the models it serves were sized for.
EXCLUSIVE_MAX_REPLICAS = 4
# GPU feature discovery appends "SHARED" to nvidia.com/gpu.product when a resource has more than one replica
# and is not renamed (NVIDIA/k8s-device-plugin internal/lm/resource.go, `resourceLabeler.productLabel`,
# `isShared`, `isRenamed`).
SHARED_SUFFIX = "-SHARED"


def replica_range(cluster: Cluster, pool: Pool) -> tuple[int, int] | None:
    """(low, high) of the pool's `<pool>/replicas` knob, or None when it has none (see the module
    docstring)."""
    replicas = pool.time_slicing_replicas
    if pool.sharing == TIME_SLICED and replicas:
        low = 1 if switchable(cluster, pool) else 2
        return low, max(min(2 * replicas, MAX_TIME_SLICING_REPLICAS), replicas)
    if pool.sharing == EXCLUSIVE and switchable(cluster, pool):
        return 1, min(EXCLUSIVE_MAX_REPLICAS, MAX_TIME_SLICING_REPLICAS)
    return None


def switchable(cluster: Cluster, pool: Pool) -> bool:
    """May the search switch the pool between exclusive and time-sliced cards?"""
    return switchable_mode(pool) and _purposes(cluster).get(pool.name) == "inference"


def switchable_mode(pool: Pool) -> bool:
    """Whether the pool's files can say either mode: exclusive or time-sliced, keeping nvidia.com/gpu."""
    return (
        pool.access_mode in SWITCHABLE_MODES and pool.sharing in SWITCHABLE_MODES and not pool.rename_shared
    )


def _purposes(cluster: Cluster) -> dict[str, str]:
    """pool -> inference | training, once per cluster (the simulator's own reading of the queues' quota)."""
    return cluster.memo("recommend.sharing.purposes", lambda: pool_classes(from_cluster(cluster)))


def tied_pools(fleet: Fleet) -> frozenset[str]:
    """Pools whose startup-check line (policies/startup-check/pools.conf, one table for the whole fleet)
    another pool of the fleet shares the family of: the same product word and MIG or not. On the node the
    check finds its line by that family alone, so POOL005 refuses two such pools with different sharing;
    changing the replicas of one alone would be refused on the copy, so such a pool gets no replica knob.
    Pools of a GPU model the
    catalog does not know are left to POOL001."""
    pools = {p.name: p for c in fleet.clusters.values() for p in c.pools if catalog.GPUS.get(p.gpu_model)}
    families = Counter(line_family(table_fields(p)) for p in pools.values())
    return frozenset(name for name, pool in pools.items() if families[line_family(table_fields(pool))] > 1)


def current_replicas(pool: Pool) -> int:
    """The knob's value today: the replica count of a time-sliced pool, 1 for an exclusive one."""
    return pool.time_slicing_replicas or 1


def pool_with_replicas(pool: Pool, old: int, new: int) -> Pool:
    """The pool at `new` replicas (1: exclusive) instead of `old`: access mode, replica count, capacity in the
    new
    unit (rounded down, as the quotas are) and the product label GPU feature discovery would write."""
    shared = new > 1
    labels = dict(pool.node_labels)
    if PRODUCT_LABEL in labels:
        labels[PRODUCT_LABEL] = product_label(labels[PRODUCT_LABEL], shared)
    mode = pool.access_mode
    if mode in SWITCHABLE_MODES:
        mode = TIME_SLICED if shared else EXCLUSIVE
    return dataclasses.replace(
        pool,
        access_mode=mode,
        time_slicing_replicas=new if shared else None,
        node_labels=labels,
        capacity={k: v * new // old for k, v in pool.capacity.items()},
    )


def product_label(value: str, shared: bool) -> str:
    """nvidia.com/gpu.product with or without GFD's `-SHARED` suffix."""
    bare = value.removesuffix(SHARED_SUFFIX)
    return bare + SHARED_SUFFIX if shared else bare


def flavor_with_product(flavor: Flavor, old: str, new: str) -> Flavor:
    """A flavor that selects the pool's nodes by their product label follows the label (else it would select
    no node after the switch: CAP003)."""
    if flavor.node_labels.get(PRODUCT_LABEL) != old:
        return flavor
    return dataclasses.replace(flavor, node_labels={**flavor.node_labels, PRODUCT_LABEL: new})


# ---- the files: structural edits on round-trip documents, then text edits on the comments they carry ----


def set_pool_sharing(spec, pool: Pool, new: int) -> None:
    """pool.yaml's `spec` for the switch: accessMode, timeSlicing (as pools/us-l40s-shared/pool.yaml has it),
    the product node label, and startupCheck: a time-sliced device is judged by one replica's share of its
    memory (check.sh uses sharePercent then), so `maxMemoryUsedPercent` is dropped where it is the default and
    said explicitly (as the exclusive pools do) when the pool becomes exclusive."""
    shared = new > 1
    spec["accessMode"] = TIME_SLICED if shared else EXCLUSIVE
    spec.pop("timeSlicing", None)  # a `replicas: 1` block (SHARE001) is replaced, not kept beside the new one
    if shared:
        at = list(spec).index("accessMode") + 1
        spec.insert(at, "timeSlicing", CommentedMap({"replicas": new, "renameByDefault": False}))
    check = spec.get("startupCheck")
    default = StartupCheck().max_memory_used_percent
    if isinstance(check, dict):
        if shared and check.get("maxMemoryUsedPercent") == default:
            del check["maxMemoryUsedPercent"]
        elif not shared and "maxMemoryUsedPercent" not in check:
            check["maxMemoryUsedPercent"] = pool.startup_check.max_memory_used_percent
    labels = spec.get("nodeLabels")
    if isinstance(labels, dict) and PRODUCT_LABEL in labels:
        labels[PRODUCT_LABEL] = same_style(
            labels[PRODUCT_LABEL], product_label(str(labels[PRODUCT_LABEL]), shared)
        )


# The time-slicing block of a device-plugin config, as pools/us-l40s-shared/device-plugin.yaml has it.
PLUGIN_SHARING = """\
sharing:
  timeSlicing:
    # Keep the resource name nvidia.com/gpu so queues and quotas count replicas.
    renameByDefault: false
    # A pod asking for 2 replicas would get no more compute than 1: refuse it instead.
    failRequestsGreaterThanOne: true
    resources:
      - name: nvidia.com/gpu
        # Pods share each GPU in turns (memory is not isolated).
        replicas: {replicas}
"""


def set_plugin_sharing(document, yaml, new: int) -> None:
    """The device-plugin config's top level for the switch: the time-slicing block (SHARE005 compares it with
    pool.yaml, SHARE006 asks for failRequestsGreaterThanOne), or no sharing block at all."""
    if not isinstance(document, dict):
        raise ValueError("not a mapping at the top level")
    if new > 1:
        document["sharing"] = yaml.load(StringIO(PLUGIN_SHARING.format(replicas=new)))["sharing"]
    elif set(document.get("sharing") or {}) - {"timeSlicing"}:
        raise ValueError("its sharing block has more than time-slicing; switch it to exclusive by hand")
    else:
        document.pop("sharing", None)


STARTUP_CHECK = (
    "# The GPU startup check before a pod's containers start (policies/startup-check, decision 0051)"
)
STARTUP_SHARED = "# a device passes while one replica's share (100 / replicas percent) of its memory is free."
MEMORY_USED = "# Another holder may have at most this share of a device's memory in use."
GFD_SHARED = "# GFD appends -SHARED to the product when a GPU is time-sliced without renaming."


def described(description: str, shared: bool) -> str:
    """The pool's description with the mode it opens with (`Time-sliced L40S pool for ...`) made the new one;
    a description that does not open with a mode is left as it is (rewriting prose by guess would be
    worse)."""
    old, new = (EXCLUSIVE, TIME_SLICED) if shared else (TIME_SLICED, EXCLUSIVE)
    if description.lower().startswith(old + " "):
        return new.capitalize() + description[len(old) :]
    return description


def pool_comments(text: str, new: int, pool: str = "", description: str = "") -> str:
    """pool.yaml's comments after a switch: the `# Pool <name>: <description>` line, and the comments above
    `startupCheck`, `maxMemoryUsedPercent` and the product label, which the YAML edit may have dropped or left
    above another key: each is taken out, then put above its key again. Counts are not restated (decision
    0090): a `Time-slicing: C GPUs x R replicas` line of an older pool file is taken out."""
    if pool and description:
        text = re.sub(
            rf"^# Pool {re.escape(pool)}: .*$",
            lambda _: f"# Pool {pool}: {description}",
            text,
            count=1,
            flags=re.M,
        )
    text = re.sub(r"^# Time-slicing: .*\n", "", text, flags=re.M)
    for line in (STARTUP_CHECK, STARTUP_SHARED, MEMORY_USED, GFD_SHARED):
        text = re.sub(rf"^ *{re.escape(line.rstrip('.'))}[.:]?\n", "", text, flags=re.M)
    shared = new > 1
    above = {
        "startupCheck": [STARTUP_CHECK + (":" if shared else "."), *([STARTUP_SHARED] if shared else [])],
        "maxMemoryUsedPercent": [MEMORY_USED],
        PRODUCT_LABEL: [GFD_SHARED] if shared else [],
    }
    for key, lines in above.items():
        text = re.sub(
            rf"^( *)({re.escape(key)}:)",
            lambda m, lines=lines: (
                "".join(f"{m.group(1)}{line}\n" for line in lines) + m.group(1) + m.group(2)
            ),
            text,
            count=1,
            flags=re.M,
        )
    return text
