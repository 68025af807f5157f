"""mig-parted configurations: parse them, lay them out per GPU, and place every instance exactly.

The format is NVIDIA/mig-parted `api/spec/v1` (`version: v1`, `mig-configs: {name: [entry, ...]}`); each entry
has `devices` ("all" or GPU indices), `mig-enabled`, `mig-devices` ({profile: count}) and an optional
`device-filter` (PCI IDs). mig-parted walks the entries in order and applies each to every GPU it matches,
so a later entry overrides an earlier one for the same GPU.

`solve()` answers "can these instances coexist on one GPU?" exactly: each instance takes `memory_slices`
consecutive memory slots from one of its profile's allowed start positions, no two overlap, compute slices
stay within the GPU's, and at most one instance takes the media engines. The search is a backtracking over
start positions, most constrained profile first, with identical instances ordered to avoid symmetric work.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .catalog import GPUModel, MigProfile, gpu_by_pci_id, mig_capable_models, normalize_pci_id

Path = tuple  # a field path inside the config document, for line lookups

# mig-parted's profile grammar (pkg/types): [<c>c.]<g>g.<gb>gb, then "+attr[,attr]" or "-attr[,attr]".
_PROFILE = re.compile(r"^(?:(?P<c>\d+)c\.)?(?P<g>\d+)g\.(?P<gb>\d+)gb(?:(?P<sign>[+-])(?P<attrs>[^+-]+))?$")
_ATTRIBUTE = re.compile(r"^[A-Za-z][A-Za-z0-9.]*$")


# --------------------------------------------------------------------------------------------------
# Config model
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """Something wrong (or worth saying) about a config; `path` locates it in the source document."""

    severity: str  # error | warning | info
    # schema, unknown-profile, unplaceable, disabled-with-devices, not-uniform, no-mig, overlap, unchecked
    kind: str
    message: str
    path: Path = ()
    layout: str = ""
    gpu: str = ""


@dataclass(frozen=True)
class LayoutEntry:
    index: int
    devices: tuple[int, ...] | None  # None: every GPU ("all")
    mig_enabled: bool
    mig_devices: dict[str, int] = field(hash=False)
    device_filter: tuple[str, ...] = ()  # normalized PCI IDs; empty: every GPU type
    raw_filter: tuple[str, ...] = ()  # as written, for messages

    def applies_to(self, model: GPUModel | None) -> bool:
        """Whether mig-parted would apply this entry to a GPU of `model` (None: a GPU we know nothing of)."""
        if not self.device_filter:
            return True
        if model is None:
            return False
        return any(pci in model.pci_device_ids for pci in self.device_filter)

    def covers(self, index: int) -> bool:
        return self.devices is None or index in self.devices

    def counts(self) -> dict[str, int]:
        """The instances this entry creates on each GPU it covers (zero counts dropped)."""
        return {name: count for name, count in self.mig_devices.items() if count} if self.mig_enabled else {}


@dataclass(frozen=True)
class MigConfig:
    version: str
    layouts: dict[str, tuple[LayoutEntry, ...]] = field(hash=False)


def parse_profile_name(name: str) -> str | None:
    """None when `name` follows mig-parted's profile grammar, else what is wrong with it."""
    match = _PROFILE.match(name)
    if not match:
        return f"{name!r} is not a MIG profile name (expected e.g. 1g.10gb, 1g.10gb+me or 1c.2g.20gb)"
    if match["c"] and int(match["c"]) > int(match["g"]):
        return (
            f"{name!r} asks for more compute slices ({match['c']}c) than its GPU instance has ({match['g']}g)"
        )
    attributes = (match["attrs"] or "").split(",") if match["attrs"] is not None else []
    if any(not _ATTRIBUTE.match(attribute) for attribute in attributes):
        return f"{name!r} has a malformed attribute list"
    if len(set(attributes)) != len(attributes):
        return f"{name!r} repeats an attribute"
    return None


def gpu_instance_profile(name: str) -> str:
    """'1c.2g.20gb' -> '2g.20gb': the GPU-instance part, which is what takes memory slots."""
    match = _PROFILE.match(name)
    if not match or not match["c"]:
        return name
    return name.split(".", 1)[1]


def parse_config(data: Any) -> tuple[MigConfig | None, list[Problem]]:
    """Typed layouts from a loaded mig-parted document, and every schema problem (paths for line lookup)."""
    problems: list[Problem] = []
    if not isinstance(data, dict):
        return None, [
            Problem("error", "schema", "a mig-parted config is a mapping with version and mig-configs")
        ]
    for key in data:
        if key not in ("version", "mig-configs"):
            problems.append(
                Problem("error", "schema", f"unexpected field {key!r} (mig-parted rejects it)", (key,))
            )
    version = data.get("version")
    if version != "v1":
        problems.append(Problem("error", "schema", f"version must be v1, not {version!r}", ("version",)))
    configs = data.get("mig-configs")
    if not isinstance(configs, dict) or not configs:
        problems.append(
            Problem(
                "error", "schema", "mig-configs must be a mapping with at least one layout", ("mig-configs",)
            )
        )
        return None, problems
    layouts: dict[str, tuple[LayoutEntry, ...]] = {}
    for name, entries in configs.items():
        layouts[str(name)] = tuple(_parse_layout(str(name), entries, problems))
    return MigConfig(version=str(version), layouts=layouts), problems


def _parse_layout(name: str, entries: Any, problems: list[Problem]) -> list[LayoutEntry]:
    at: Path = ("mig-configs", name)
    if not isinstance(entries, list) or not entries:
        problems.append(
            Problem(
                "error", "schema", f"layout {name!r} must be a non-empty list of entries", at, layout=name
            )
        )
        return []
    parsed = []
    for index, raw in enumerate(entries):
        entry = _parse_entry(name, index, raw, problems)
        if entry is not None:
            parsed.append(entry)
    return parsed


def _parse_entry(layout: str, index: int, raw: Any, problems: list[Problem]) -> LayoutEntry | None:
    at: Path = ("mig-configs", layout, index)

    def problem(message: str, *sub: Any) -> None:
        problems.append(Problem("error", "schema", f"{layout}[{index}]: {message}", at + sub, layout=layout))

    if not isinstance(raw, dict):
        problem("an entry is a mapping with devices, mig-enabled and mig-devices")
        return None
    for key in raw:
        if key not in ("devices", "device-filter", "mig-enabled", "mig-devices"):
            problem(f"unexpected field {key!r} (mig-parted rejects it)", key)
    ok = True
    devices = _parse_devices(raw.get("devices", _MISSING))
    if isinstance(devices, str):
        problem(devices, "devices")
        ok = False
    enabled = raw.get("mig-enabled", _MISSING)
    if not isinstance(enabled, bool):
        problem("mig-enabled is required and must be true or false", "mig-enabled")
        ok = False
    mig_devices = _parse_mig_devices(raw.get("mig-devices"), lambda m, *s: problem(m, "mig-devices", *s))
    if enabled is True and "mig-devices" not in raw:
        problem("mig-devices is required when mig-enabled is true (use {} for none)", "mig-enabled")
        ok = False
    raw_filter, normalized = _parse_filter(raw.get("device-filter"), lambda m: problem(m, "device-filter"))
    if not ok or mig_devices is None:
        return None
    return LayoutEntry(
        index=index,
        devices=devices,
        mig_enabled=enabled,
        mig_devices=mig_devices,  # type: ignore[arg-type]
        device_filter=normalized,
        raw_filter=raw_filter,
    )


_MISSING = object()


def _parse_devices(value: Any) -> tuple[int, ...] | None | str:
    """None for "all", the indices for a list, or a message (str) when invalid."""
    if value is _MISSING:
        return "devices is required ('all' or a list of GPU indices)"
    if value == "all":
        return None
    if isinstance(value, list) and value and all(type(i) is int and i >= 0 for i in value):
        return tuple(value)
    return f"devices must be 'all' or a non-empty list of GPU indices, not {value!r}"


def _parse_mig_devices(value: Any, problem: Any) -> dict[str, int] | None:
    if value is None:
        return {}
    if not isinstance(value, dict):
        problem("mig-devices must map profile names to counts")
        return None
    counts: dict[str, int] = {}
    for name, count in value.items():
        name = str(name)
        wrong = parse_profile_name(name)
        if wrong:
            problem(wrong, name)
        elif type(count) is not int or count < 0:
            problem(f"count of {name} must be a whole number >= 0, not {count!r}", name)
        else:
            counts[name] = count
    if value and len(counts) == len(value) and not any(counts.values()):
        problem("every count is 0; mig-parted rejects a layout that creates nothing (use mig-devices: {})")
    return counts


def _parse_filter(value: Any, problem: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if value is None:
        return (), ()
    raw = [value] if isinstance(value, str) else value
    if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
        problem(f"device-filter must be a PCI ID or a list of them, not {value!r}")
        return (), ()
    normalized = []
    for item in raw:
        pci = normalize_pci_id(item)
        if pci is None:
            problem(f"{item!r} is not a PCI device ID (expected e.g. 0x233010DE)")
        else:
            normalized.append(pci)
    return tuple(raw), tuple(normalized)


# --------------------------------------------------------------------------------------------------
# Per-GPU layouts
# --------------------------------------------------------------------------------------------------


def layout_devices(
    entries: Iterable[LayoutEntry], gpus_per_node: int, model: GPUModel | None = None
) -> dict[int, dict[str, int]]:
    """MIG instances per GPU index of a node, for every GPU the layout puts in MIG mode.

    GPUs left out (MIG disabled, or no entry matches) are absent; a MIG-enabled GPU with no instances maps to
    {}. Entries with a device-filter apply only when `model` is given and its PCI IDs match.
    """
    state: dict[int, dict[str, int] | None] = {}
    for entry in entries:
        if not entry.applies_to(model):
            continue
        for index in range(gpus_per_node):
            if entry.covers(index):
                state[index] = entry.counts() if entry.mig_enabled else None
    return {index: counts for index, counts in sorted(state.items()) if counts is not None}


def per_node_profile_counts(
    entries: Iterable[LayoutEntry], gpus_per_node: int, model: GPUModel | None = None
) -> dict[str, int]:
    """Total instances per profile on one node."""
    totals: dict[str, int] = {}
    for counts in layout_devices(entries, gpus_per_node, model).values():
        for name, count in counts.items():
            totals[name] = totals.get(name, 0) + count
    return totals


def whole_gpus_per_node(
    entries: Iterable[LayoutEntry], gpus_per_node: int, model: GPUModel | None = None
) -> int:
    """GPUs of a node the layout leaves out of MIG mode (advertised as whole nvidia.com/gpu)."""
    return gpus_per_node - len(layout_devices(entries, gpus_per_node, model))


def uniform(entries: Iterable[LayoutEntry]) -> bool:
    """True when a node under the `single` strategy could run this layout: every GPU MIG-disabled, or every
    GPU MIG-enabled with one profile type between them (the device plugin refuses mixed types under
    single)."""
    entries = list(entries)
    if not entries:
        return True
    if all(not entry.mig_enabled for entry in entries):
        return True
    if any(not entry.mig_enabled for entry in entries):
        return False
    return len({name for entry in entries for name in entry.counts()}) <= 1


# --------------------------------------------------------------------------------------------------
# The placement solver
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlacedInstance:
    profile: str
    start: int
    memory_slices: int
    compute_slices: int

    @property
    def slots(self) -> range:
        return range(self.start, self.start + self.memory_slices)


@dataclass(frozen=True)
class Placement:
    gpu: str
    instances: tuple[PlacedInstance, ...]

    @property
    def starts(self) -> dict[str, tuple[int, ...]]:
        """profile -> start slot of each of its instances."""
        result: dict[str, list[int]] = {}
        for instance in self.instances:
            result.setdefault(instance.profile, []).append(instance.start)
        return {name: tuple(sorted(starts)) for name, starts in result.items()}

    @property
    def compute_used(self) -> int:
        return sum(instance.compute_slices for instance in self.instances)

    @property
    def slots_used(self) -> int:
        return sum(instance.memory_slices for instance in self.instances)


@dataclass(frozen=True)
class Unplaceable:
    reason: str


def solve(model: GPUModel, counts: Mapping[str, int]) -> Placement | None:
    """A placement of every instance on one GPU of `model`, or None when none exists (see `place` for why)."""
    result = place(model, counts)
    return result if isinstance(result, Placement) else None


def place(model: GPUModel, counts: Mapping[str, int]) -> Placement | Unplaceable:
    """Place `counts` ({profile: count}) on one GPU exactly, or say why it cannot be done."""
    wanted = {name: count for name, count in counts.items() if count}
    reason = _impossible(model, wanted)
    if reason:
        return Unplaceable(reason)
    profiles = {name: model.mig_profiles[gpu_instance_profile(name)] for name in wanted}
    # Most constrained first: fewest start positions, then widest; identical instances stay adjacent.
    order = sorted(wanted, key=lambda n: (len(profiles[n].placements), -profiles[n].memory_slices, n))
    instances = [(name, profiles[name]) for name in order for _ in range(wanted[name])]
    starts = _search(instances, model.memory_slots)
    if starts is None:
        return Unplaceable(_geometry_reason(profiles))
    placed = tuple(
        PlacedInstance(name, start, profile.memory_slices, profile.compute_slices)
        for (name, profile), start in zip(instances, starts, strict=True)
    )
    return Placement(model.key, tuple(sorted(placed, key=lambda i: (i.start, i.profile))))


def _impossible(model: GPUModel, wanted: Mapping[str, int]) -> str | None:
    """Necessary conditions, checked first because each gives a clearer reason than a failed search."""
    if not model.mig_capable:
        return f"{model.key} has no MIG support"
    unknown = [name for name in wanted if gpu_instance_profile(name) not in model.mig_profiles]
    if unknown:
        return (
            f"{', '.join(sorted(unknown))} "
            f"{'is not a profile' if len(unknown) == 1 else 'are not profiles'}"
            f" of {model.key} (it has {', '.join(model.mig_profiles)})"
        )
    profiles = {name: model.mig_profiles[gpu_instance_profile(name)] for name in wanted}
    for name, count in wanted.items():
        if count < 0:
            return f"negative count {count} for {name}"
        if count > profiles[name].max_count:
            return f"{count} x {name} asked, at most {profiles[name].max_count} fit on {model.key}"
    compute = sum(profiles[name].compute_slices * count for name, count in wanted.items())
    if compute > model.compute_slices:
        return f"needs {compute} compute slices, {model.key} has {model.compute_slices}"
    media = sum(count for name, count in wanted.items() if profiles[name].media_extensions)
    if media > 1:
        return f"{media} instances ask for the media engines (+me); a GPU has one set, so at most one"
    memory = sum(profiles[name].memory_slices * count for name, count in wanted.items())
    if memory > model.memory_slots:
        return f"needs {memory} memory slices, {model.key} has {model.memory_slots}"
    return None


def _search(instances: list[tuple[str, MigProfile]], slots: int) -> list[int] | None:
    """Start slots for `instances` in order, or None. Backtracking with a memo of dead (position, mask)
    states."""
    widths_left = [0] * (len(instances) + 1)
    for position in range(len(instances) - 1, -1, -1):
        widths_left[position] = widths_left[position + 1] + instances[position][1].memory_slices
    dead: set[tuple[int, int, int]] = set()
    chosen: list[int] = []

    def extend(position: int, used: int, lowest: int) -> bool:
        if position == len(instances):
            return True
        if widths_left[position] > slots - bin(used).count("1"):
            return False
        state = (position, used, lowest)
        if state in dead:
            return False
        name, profile = instances[position]
        for start in profile.placements:
            if start < lowest or start + profile.memory_slices > slots:
                continue
            mask = ((1 << profile.memory_slices) - 1) << start
            if used & mask:
                continue
            chosen.append(start)
            following = instances[position + 1][0] if position + 1 < len(instances) else None
            # The next instance of the same profile starts after this one: no need to try both orders.
            if extend(position + 1, used | mask, start + 1 if following == name else 0):
                return True
            chosen.pop()
        dead.add(state)
        return False

    return chosen if extend(0, 0, 0) else None


def _geometry_reason(profiles: Mapping[str, MigProfile]) -> str:
    limits = "; ".join(
        f"{name} may start only at slot {', '.join(map(str, p.placements))}"
        for name, p in sorted(profiles.items())
        if len(p.placements) < 4
    )
    reason = "no arrangement of the allowed start positions avoids overlapping memory slices"
    return f"{reason} ({limits})" if limits else reason


# --------------------------------------------------------------------------------------------------
# Diagram
# --------------------------------------------------------------------------------------------------


def diagram(model: GPUModel, placement: Placement) -> str:
    """A text picture: memory slots as columns, one row per instance ('#' taken, '.' free)."""
    slots = model.memory_slots
    label_width = max([len("profile")] + [len(i.profile) for i in placement.instances])
    header = f"{'profile':<{label_width}}  start  " + " ".join(str(slot) for slot in range(slots))
    lines = [header]
    for instance in placement.instances:
        cells = " ".join("#" if slot in instance.slots else "." for slot in range(slots))
        lines.append(f"{instance.profile:<{label_width}}  {instance.start:>5}  {cells}")
    if not placement.instances:
        lines.append("(MIG enabled, no instances)")
    lines.append(
        f"compute slices {placement.compute_used}/{model.compute_slices}, "
        f"memory slices {placement.slots_used}/{slots}"
    )
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# Checking a whole config
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EntryResult:
    """One layout entry checked against one GPU model."""

    layout: str
    entry: int
    gpu: str
    placement: Placement | None
    path: Path


@dataclass
class LayoutReport:
    layout: str
    gpus: list[str] = field(default_factory=list)
    inferred: bool = False  # GPUs chosen because they offer the layout's profiles (no filter, no --gpu)
    results: list[EntryResult] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def evaluate(
    config: MigConfig, gpu_keys: Iterable[str] | None = None, strategy: str | None = None
) -> list[LayoutReport]:
    """Check every layout against the GPU models it is meant for, placing each entry's instances.

    GPU models come from `gpu_keys` when given, else from the layout's device-filters, else every MIG-capable
    model that offers all of the layout's profiles (`inferred`). `strategy` "single" adds the uniformity
    check.
    """
    from .catalog import gpu as catalog_gpu  # local: keeps the import list above about placement

    chosen = [catalog_gpu(key) for key in gpu_keys] if gpu_keys else None
    return [_evaluate_layout(name, entries, chosen, strategy) for name, entries in config.layouts.items()]


def check_config(
    config: MigConfig, gpu_keys: Iterable[str] | None = None, strategy: str | None = None
) -> list[Problem]:
    return [problem for report in evaluate(config, gpu_keys, strategy) for problem in report.problems]


def _evaluate_layout(
    name: str, entries: tuple[LayoutEntry, ...], chosen: list[GPUModel] | None, strategy: str | None
) -> LayoutReport:
    report = LayoutReport(layout=name)
    at: Path = ("mig-configs", name)
    for entry in entries:
        if not entry.mig_enabled and entry.mig_devices:
            report.problems.append(
                Problem(
                    "error",
                    "disabled-with-devices",
                    f"{name}[{entry.index}]: mig-enabled is false but mig-devices lists "
                    f"{_describe(entry.mig_devices)}; mig-parted rejects this",
                    at + (entry.index, "mig-devices"),
                    name,
                )
            )
    if not entries:  # every entry failed to parse; the schema problems say why
        return report
    models = chosen if chosen is not None else _models_for(name, entries, report)
    per_model: dict[str, list[Problem]] = {}
    for model in models:
        report.gpus.append(model.key)
        before = len(report.problems)
        _check_on_model(name, entries, model, strategy, report)
        per_model[model.key] = report.problems[before:]
    if report.inferred:
        _soften_guesses(report, per_model)
    return report


def _soften_guesses(report: LayoutReport, per_model: dict[str, list[Problem]]) -> None:
    """With no device-filter and no --gpu we only guess the GPU a layout is for: a profile name like 1g.10gb
    exists on both A100-40GB and the 80 GB cards. When it fits some candidate, misfits on the others are
    info."""
    fits = [key for key, problems in per_model.items() if not any(p.severity == "error" for p in problems)]
    if not fits:
        return
    softened = {id(p) for problems in per_model.values() for p in problems if p.severity == "error"}
    report.problems = [
        Problem(
            "info",
            p.kind,
            f"{p.message} (fits {', '.join(fits)}; name the GPU with --gpu or a "
            "device-filter "
            "to make this an error)",
            p.path,
            p.layout,
            p.gpu,
        )
        if id(p) in softened
        else p
        for p in report.problems
    ]


def _models_for(name: str, entries: tuple[LayoutEntry, ...], report: LayoutReport) -> list[GPUModel]:
    named: dict[str, GPUModel] = {}
    for entry in entries:
        for raw, pci in zip(entry.raw_filter, entry.device_filter, strict=False):
            model = gpu_by_pci_id(pci)
            if model is None:
                report.problems.append(
                    Problem(
                        "info",
                        "unchecked",
                        f"{name}[{entry.index}]: device-filter {raw} is not a GPU in the "
                        "catalog; "
                        "not checked for it",
                        ("mig-configs", name, entry.index, "device-filter"),
                        name,
                    )
                )
            else:
                named.setdefault(model.key, model)
    if any(entry.device_filter for entry in entries):
        return list(named.values())
    profiles = {gpu_instance_profile(p) for entry in entries for p in entry.counts()}
    candidates = [m for m in mig_capable_models() if profiles <= set(m.mig_profiles)]
    report.inferred = True
    if not candidates:
        report.problems.append(
            Problem(
                "info",
                "unchecked",
                f"{name}: no GPU model in the catalog offers {', '.join(sorted(profiles))}; "
                "not checked (name a model with --gpu to check it)",
                ("mig-configs", name),
                name,
            )
        )
    return candidates


def _check_on_model(
    name: str, entries: tuple[LayoutEntry, ...], model: GPUModel, strategy: str | None, report: LayoutReport
) -> None:
    applicable = [entry for entry in entries if entry.applies_to(model)]
    if not applicable:
        report.problems.append(
            Problem(
                "info",
                "unchecked",
                f"{name}: no entry applies to {model.key} (device-filter); mig-parted "
                "would leave "
                "its GPUs as they are",
                ("mig-configs", name),
                name,
                model.key,
            )
        )
        return
    _report_overlaps(name, applicable, model, report)
    if strategy == "single" and not uniform(applicable):
        report.problems.append(
            Problem(
                "error",
                "not-uniform",
                f"{name} on {model.key}: the single MIG strategy needs every GPU of a "
                "node "
                "MIG-enabled with one profile type; this layout mixes "
                f"{_describe_mix(applicable)}",
                ("mig-configs", name),
                name,
                model.key,
            )
        )
    for entry in applicable:
        if entry.mig_enabled:
            _place_entry(name, entry, model, report)


def _place_entry(name: str, entry: LayoutEntry, model: GPUModel, report: LayoutReport) -> None:
    at: Path = ("mig-configs", name, entry.index, "mig-devices")
    if not model.mig_capable:
        report.problems.append(
            Problem(
                "error",
                "no-mig",
                f"{name}[{entry.index}]: {model.key} has no MIG support, but the entry enables MIG",
                ("mig-configs", name, entry.index, "mig-enabled"),
                name,
                model.key,
            )
        )
        return
    counts = entry.counts()
    unknown = sorted(p for p in counts if gpu_instance_profile(p) not in model.mig_profiles)
    for profile in unknown:
        report.problems.append(
            Problem(
                "error",
                "unknown-profile",
                f"{name}[{entry.index}]: {profile} is not a MIG profile of "
                f"{model.key} (it has {', '.join(model.mig_profiles)})",
                at + (profile,),
                name,
                model.key,
            )
        )
    if unknown:
        return
    result = place(model, counts)
    if isinstance(result, Unplaceable):
        report.problems.append(
            Problem(
                "error",
                "unplaceable",
                f"{name}[{entry.index}]: {_describe(counts)} cannot be placed on one "
                f"{model.key}: {result.reason}",
                at,
                name,
                model.key,
            )
        )
        report.results.append(EntryResult(name, entry.index, model.key, None, at))
    else:
        report.results.append(EntryResult(name, entry.index, model.key, result, at))


def _report_overlaps(name: str, entries: list[LayoutEntry], model: GPUModel, report: LayoutReport) -> None:
    """Two entries on the same GPU index: mig-parted applies both in order, the later silently wins."""
    for later_position, later in enumerate(entries):
        for earlier in entries[:later_position]:
            shared = _shared_devices(earlier, later)
            if shared:
                report.problems.append(
                    Problem(
                        "warning",
                        "overlap",
                        f"{name}: entries {earlier.index} and {later.index} both configure "
                        f"{shared} on {model.key}; mig-parted applies them in order, so entry {later.index} "
                        "wins",
                        ("mig-configs", name, later.index, "devices"),
                        name,
                        model.key,
                    )
                )


def _shared_devices(first: LayoutEntry, second: LayoutEntry) -> str:
    if first.devices is None or second.devices is None:
        return (
            "every GPU"
            if first.devices is None and second.devices is None
            else "GPU " + ", ".join(map(str, sorted(first.devices or second.devices or ())))
        )
    common = sorted(set(first.devices) & set(second.devices))
    return ("GPU " + ", ".join(map(str, common))) if common else ""


def _describe(counts: Mapping[str, int]) -> str:
    return " + ".join(f"{count} x {name}" for name, count in counts.items()) or "nothing"


def _describe_mix(entries: list[LayoutEntry]) -> str:
    kinds = sorted({name for entry in entries for name in entry.counts()})
    disabled = any(not entry.mig_enabled for entry in entries)
    parts = kinds + (["MIG-disabled GPUs"] if disabled else [])
    return ", ".join(parts)
