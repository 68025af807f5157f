"""Semantic diff between two runs of the pipeline: what a change does to the fleet, not which lines moved.

Both sides are plain data (`describe.fleet_as_dict`, plus RBAC grants and admission policies read from the
rendered objects, and the views of `diffviews`: namespace quotas, LimitRanges, node selection, labels, pool
declarations, upgrade plans). Every section flattens its side into `{key: value}` and reports the keys whose
values differ, so adding a comparison is adding one flattening function; amounts read in human units
(`quantity.human_amount`), and each section leaves the headline `Note`s weighted by risk (decision 0032).
Beneath the sections, `objectdiff` lists every rendered object that differs, with its YAML diff. Findings are
matched by `Finding.identity`.

Outputs: OUTPUTS is this result's table of formats, name -> formatter(diff, root) -> text, which `gpupolicy
diff --format` offers. It is separate from `report.FORMATTERS` because it formats a different result: a run's
text and json summarise one run, this module's markdown and json a comparison (sections, headline, findings
introduced and fixed), and both are rightly called "json". The formats that read nothing but findings (sarif,
junit, github) are not written twice: OUTPUTS takes them from `report.FORMATTERS` and hands them the diff's
`findings_view`. A new findings format joins a diff by being marked `findings_only` in `report.FORMATS`.

The head is judged by the base's guardrail configuration (`guardrails`, decision 0062): each guardrail file
the change edits is a CFG003 finding of the head, and the headline says so first. Every piece of content in
the Markdown comment goes through `mdescape` (text, code spans, links, HTML text), so no name, message or plan
field can open an HTML comment, inject HTML or break a table or heading.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from .. import report
from ..configure import rootcause
from ..domain import quotas
from ..domain.describe import fleet_as_dict
from ..domain.gpu_resources import is_gpu_device_resource
from ..domain.quantity import (
    HUGE_COUNT,
    QuantityError,
    counted_resource,
    human_amount,
    human_delta,
    parse_quantity,
)
from ..findings import Finding, Severity
from ..infra.siteconfig import rule_page
from ..internal import crashes
from ..model import MIG_RESOURCE_PREFIX, Cluster, Fleet
from ..report import mdescape
from ..report.mdescape import Markdown
from ..rules import cfg003_guardrail_changed as cfg003
from . import views as diffviews
from .objects import ClusterObjects, compare_objects, fence

ABSENT = None
ADMISSION_KINDS = (
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionPolicyBinding",
)
# Rules whose silence after a capacity or quota change is worth saying in the headline.
GUARANTEES = {"CAP005": "production reserve still holds", "CAP001": "quotas still fit the pools"}


NO_LIMIT = "no limit"  # a ResourceQuota without the resource does not limit it


@dataclass
class Section:
    key: str
    title: str
    columns: list[str]
    rows: list[list[Any]] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)  # what the headline may say about the rows
    # what this section's notes already say, so the headline leaves out other sections' notes about it (a new
    # pool explains its capacity and settings; a new team its quotas and its namespace's ResourceQuota)
    explains: set[tuple] = field(default_factory=set)


@dataclass
class FindingsDiff:
    introduced: list[Finding] = field(default_factory=list)
    fixed: list[Finding] = field(default_factory=list)
    preexisting: list[Finding] = field(default_factory=list)


@dataclass
class SemanticDiff:
    base_label: str
    head_label: str
    sections: list[Section]
    findings: FindingsDiff
    headline: str = ""
    objects: list[ClusterObjects] = field(default_factory=list)  # every rendered object that differs
    # waivers.Waived: the head's findings reviewed exceptions accept
    waived: list = field(default_factory=list)
    # the head's derived findings -> their causes
    causes: dict[Finding, Finding] = field(default_factory=dict)
    site_url: str = ""  # the runbook site (siteconfig); each finding's rule links to its page there
    guardrail_changes: list[str] = field(default_factory=list)  # guardrail files the change edits (CFG003)

    @property
    def introduced_errors(self) -> list[Finding]:
        return [f for f in self.findings.introduced if f.severity is Severity.ERROR]


# --- findings
# ------------------------------------------------------------------------------------------------


def compare_findings(base: Iterable[Finding], head: Iterable[Finding]) -> FindingsDiff:
    """Head findings whose identity the base has too are pre-existing (as often as the base has it); the rest
    are introduced, and base findings the head no longer has are fixed."""
    base, head = list(base), list(head)
    remaining = Counter(f.identity for f in base)
    result = FindingsDiff()
    for finding in head:
        key = finding.identity
        if remaining[key] > 0:
            remaining[key] -= 1
            result.preexisting.append(finding)
        else:
            result.introduced.append(finding)
    still_there = Counter(f.identity for f in head)
    for finding in base:
        key = finding.identity
        if still_there[key] > 0:
            still_there[key] -= 1
        else:
            result.fixed.append(finding)
    return result


# --- flattening: one side of the fleet to {key: value} -----------------------------------------------------


def _pools(model: dict) -> Iterable[tuple[str, dict]]:
    for cluster in model["clusters"]:
        for pool in cluster["pools"]:
            yield cluster["name"], pool
    for pool in model["unassignedPools"]:
        yield "(no cluster)", pool


def capacity_of(model: dict) -> dict[tuple, int]:
    return {
        (cluster, pool["name"], resource): amount
        for cluster, pool in _pools(model)
        for resource, amount in pool["capacity"].items()
    }


def pool_settings_of(model: dict) -> dict[tuple, str]:
    settings: dict[tuple, str] = {}
    for cluster, pool in _pools(model):
        key = (cluster, pool["name"])
        settings[(*key, "GPU model")] = pool["gpuModel"]
        settings[(*key, "nodes")] = f"{pool['nodes']} x {pool['gpusPerNode']} GPUs"
        settings[(*key, "access mode")] = pool["accessMode"]
        if "mig" in pool:
            settings[(*key, "MIG layout")] = f"{pool['mig']['layout']} ({pool['mig']['strategy']})"
        if "timeSlicing" in pool:
            settings[(*key, "time-slicing replicas")] = str(pool["timeSlicing"]["replicas"])
    return settings


def _queues(model: dict) -> Iterable[tuple[str, dict]]:
    for cluster in model["clusters"]:
        for queue in cluster["clusterQueues"]:
            yield cluster["name"], queue


def quotas_of(model: dict) -> dict[tuple, float]:
    return {
        (cluster, queue["name"], q["flavor"], q["resource"]): q["nominal"]
        for cluster, queue in _queues(model)
        for q in queue["quotas"]
    }


def limits_of(model: dict) -> dict[tuple, float]:
    limits: dict[tuple, float] = {}
    for cluster, queue in _queues(model):
        for q in queue["quotas"]:
            for name in ("borrowingLimit", "lendingLimit"):
                if q[name] is not None:
                    limits[(cluster, queue["name"], q["flavor"], q["resource"], name)] = q[name]
    return limits


def cohorts_of(model: dict) -> dict[tuple, str]:
    return {(cluster, queue["name"]): queue["cohort"] or "(none)" for cluster, queue in _queues(model)}


def preemption_of(model: dict) -> dict[tuple, str]:
    return {
        (cluster, queue["name"], path): value
        for cluster, queue in _queues(model)
        for path, value in _flatten(queue["preemption"] or {}).items()
    }


def priorities_of(model: dict) -> dict[tuple, Any]:
    found: dict[tuple, Any] = {}
    for cluster in model["clusters"]:
        for kind, items in (
            ("PriorityClass", cluster["priorityClasses"]),
            ("WorkloadPriorityClass", cluster["workloadPriorityClasses"]),
        ):
            for item in items:
                for setting in ("value", "preemptionPolicy", "globalDefault"):
                    if setting in item:
                        found[(cluster["name"], kind, item["name"], setting)] = item[setting]
    return found


def versions_of(model: dict) -> dict[tuple, str]:
    found: dict[tuple, str] = {}
    for cluster in model["clusters"]:
        found[(cluster["name"], "-", "GPU Operator")] = cluster["gpuOperatorVersion"] or "(unset)"
        for pool in cluster["pools"]:
            found[(cluster["name"], pool["name"], "driver")] = (
                ", ".join(pool.get("driverVersions") or []) or "(none)"
            )
    return found


def _flatten(value: Any, prefix: str = "") -> dict[str, str]:
    if isinstance(value, dict):
        flat: dict[str, str] = {}
        for key, inner in value.items():
            flat.update(_flatten(inner, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    return {prefix: json.dumps(value) if isinstance(value, list) else str(value)}


def admission_of(fleet: Fleet) -> dict[tuple, dict]:
    return {
        (name, obj.kind, obj.name): obj.spec
        for name, cluster in fleet.clusters.items()
        for obj in cluster.objects
        if obj.kind in ADMISSION_KINDS
    }


def rbac_grants(cluster: Cluster) -> set[tuple[str, str, str, str]]:
    """(subject, scope, resource, verb) for every binding in the cluster, through the role it names.

    Aggregated ClusterRoles count with the rules written in them; the aggregation controller's additions
    are not known before the cluster runs."""
    rules: dict[tuple[str, str], list] = {}
    for obj in cluster.objects:
        if obj.kind in ("ClusterRole", "Role") and obj.group == "rbac.authorization.k8s.io":
            rules[(obj.kind, obj.name if obj.kind == "ClusterRole" else f"{obj.namespace}/{obj.name}")] = (
                obj.body.get("rules") or []
            )
    grants: set[tuple[str, str, str, str]] = set()
    for obj in cluster.objects:
        if obj.kind not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        ref = obj.body.get("roleRef") or {}
        role_kind, role_name = str(ref.get("kind") or ""), str(ref.get("name") or "")
        role_key = role_name if role_kind == "ClusterRole" else f"{obj.namespace}/{role_name}"
        scope = "cluster" if obj.kind == "ClusterRoleBinding" else f"namespace {obj.namespace}"
        for subject in obj.body.get("subjects") or []:
            who = _subject(subject, obj.namespace)
            for resource, verb in _permissions(rules.get((role_kind, role_key), [])):
                grants.add((who, scope, resource, verb))
    return grants


def _subject(subject: dict, binding_namespace: str) -> str:
    kind = str(subject.get("kind") or "")
    if kind == "ServiceAccount":
        return f"ServiceAccount {subject.get('namespace') or binding_namespace}/{subject.get('name')}"
    return f"{kind} {subject.get('name')}"


def _permissions(rules: list) -> Iterable[tuple[str, str]]:
    for rule in rules:
        if not isinstance(rule, dict):
            continue
        names = rule.get("resourceNames") or []
        suffix = f" ({', '.join(map(str, names))})" if names else ""
        for verb in rule.get("verbs") or []:
            for url in rule.get("nonResourceURLs") or []:
                yield f"URL {url}", str(verb)
            for group in rule.get("apiGroups") or []:
                for resource in rule.get("resources") or []:
                    yield f"{group + '/' if group else ''}{resource}{suffix}", str(verb)


# --- comparing ---------------------------------------------------------------------------------------------


def changed(old: dict, new: dict) -> list[tuple[tuple, Any, Any]]:
    """(key, old value, new value) for every key whose value differs; ABSENT where a side lacks the key."""
    return [
        (key, old.get(key, ABSENT), new.get(key, ABSENT))
        for key in sorted(old.keys() | new.keys(), key=str)
        if old.get(key, ABSENT) != new.get(key, ABSENT)
    ]


def changed_amounts(
    old: dict, new: dict, absent_is_zero: bool = True
) -> list[tuple[tuple, Any, Any, Decimal]]:
    """`changed` for quantities: (key, old, new, new - old) compared as amounts, so "48" and 48 are one quota.
    With `absent_is_zero` (Kueue quotas, capacity: a resource not listed has none) a row whose amount does not
    move is no change and is left out; without it (a ResourceQuota's `hard`, where an absent resource has no
    limit at all) adding or removing a limit is always a change. A value that is no quantity compares as
    text."""
    rows = []
    for key, before, after in changed(old, new):
        old_amount, new_amount = _amount(before, absent_is_zero), _amount(after, absent_is_zero)
        if old_amount is not None and new_amount is not None:
            if old_amount == new_amount:
                continue
            rows.append((key, before, after, new_amount - old_amount))
        else:
            rows.append((key, before, after, Decimal(0)))
    return rows


def _amount(value: Any, absent_is_zero: bool) -> Decimal | None:
    if value is ABSENT:
        return Decimal(0) if absent_is_zero else None
    if isinstance(value, int | float | Decimal) and not isinstance(value, bool):
        return Decimal(str(value)) if isinstance(value, float) else Decimal(value)
    try:
        return parse_quantity(value)
    except QuantityError:
        return None


def _show(value: Any) -> str:
    if value is ABSENT:
        return "—"
    return human_amount("", value) if isinstance(value, int) and abs(value) >= HUGE_COUNT else str(value)


def _amount_shown(resource: str, value: Any, absent: str = "—") -> str:
    return absent if value is ABSENT else human_amount(resource, value)


def _is_gpu_row(resource: str) -> bool:
    """GPUs and MIG slices (also as a ResourceQuota names them, `requests.nvidia.com/gpu`): their rows come
    first."""
    return is_gpu_device_resource(counted_resource(resource))


def _risk_order(resource: str, delta: Decimal, key: tuple) -> tuple:
    """GPU rows first, then the losses before the gains, then by key."""
    return (not _is_gpu_row(resource), delta >= 0, [str(part) for part in key])


def _pool_capacity(model: dict) -> dict[tuple, float]:
    """(cluster, flavor, resource) -> what the flavor's pools expose (quotas.flavor_capacity, exported by
    describe): the denominator of a quota's share."""
    return {
        (cluster["name"], flavor["name"], resource): amount
        for cluster in model["clusters"]
        for flavor in cluster["flavors"]
        for resource, amount in flavor.get("capacity", {}).items()
    }


def _share(nominal: Any, capacity: float | None) -> str:
    shown = None if nominal is ABSENT else quotas.share_text(nominal, capacity or 0)
    return "—" if shown is None else f"{shown} of {capacity:g}"


def _teams(model: dict) -> dict[tuple, str]:
    return {(cluster, queue["name"]): queue["team"] or "-" for cluster, queue in _queues(model)}


@dataclass(frozen=True)
class Sides:
    """Both revisions: the typed fleets and their plain-data form (`describe.fleet_as_dict`)."""

    base: dict
    head: dict
    base_fleet: Fleet
    head_fleet: Fleet

    def views(self, view: Callable[[Fleet], dict]) -> tuple[dict, dict]:
        return view(self.base_fleet), view(self.head_fleet)


def build_sections(sides: Sides) -> list[Section]:
    """Every section with a change, in the order of risk: what loses capacity or access first (capacity,
    quotas, namespace quotas, access, node selection), then priority and preemption, then versions, plans and
    the declarations behind them."""
    base, head = sides.base, sides.head
    sections = [
        _members_section(base, head, sides.base_fleet, sides.head_fleet),
        _capacity_section(base, head),
        _pool_section(base, head),
        _quota_section(base, head),
        _namespace_quota_section(*sides.views(diffviews.namespace_quotas)),
        _limits_section(base, head),
        _rbac_section(sides.base_fleet, sides.head_fleet),
        _simple(
            "placement",
            "Node selection: labels, taints, tolerations and selectors",
            ["cluster", "kind", "object", "field"],
            *sides.views(diffviews.placement),
        ),
        _admission_section(admission_of(sides.base_fleet), admission_of(sides.head_fleet)),
        _simple(
            "priorities",
            "Priority classes",
            ["cluster", "kind", "name", "setting"],
            priorities_of(base),
            priorities_of(head),
        ),
        _simple(
            "preemption",
            "Queue preemption",
            ["cluster", "queue", "setting"],
            preemption_of(base),
            preemption_of(head),
        ),
        _simple("cohorts", "Cohort moves", ["cluster", "queue"], cohorts_of(base), cohorts_of(head)),
        _simple(
            "versions",
            "Driver and GPU Operator versions",
            ["cluster", "pool", "component"],
            versions_of(base),
            versions_of(head),
        ),
        _simple("plans", "Upgrade plans", ["plan", "field"], *sides.views(diffviews.upgrade_plans)),
        _pool_declaration_section(*sides.views(diffviews.pool_declarations)),
        _simple(
            "labels",
            "Labels with meaning",
            ["cluster", "kind", "object", "label"],
            *sides.views(diffviews.meaningful_labels),
        ),
        _limit_range_section(*sides.views(diffviews.limit_ranges)),
    ]
    return [s for s in sections if s.rows]


def _capacity_section(base: dict, head: dict) -> Section:
    section = Section("capacity", "Capacity", ["cluster", "pool", "resource", "old", "new", "delta"])
    rows = changed_amounts(capacity_of(base), capacity_of(head))
    for (cluster, pool, resource), old, new, delta in sorted(
        rows, key=lambda r: _risk_order(r[0][2], r[3], r[0])
    ):
        section.rows.append(
            [
                cluster,
                pool,
                resource,
                _amount_shown(resource, old),
                _amount_shown(resource, new),
                human_delta(resource, old, new),
            ]
        )
        section.notes.append(
            Note(
                _weight(LOST_CAPACITY if delta < 0 else GAINED_CAPACITY, resource, delta),
                f"{human_delta(resource, old, new)} {resource} in pool {pool} of {cluster} "
                f"({_amount_shown(resource, old)} -> {_amount_shown(resource, new)})",
                ("pool", cluster, pool),
            )
        )
    return section


def _pool_section(base: dict, head: dict) -> Section:
    section = Section(
        "pools", "Pool hardware, access mode and MIG layout", ["cluster", "pool", "setting", "old", "new"]
    )
    settings: dict[tuple, list[str]] = {}
    for (cluster, pool, setting), old, new in changed(pool_settings_of(base), pool_settings_of(head)):
        section.rows.append([cluster, pool, setting, _show(old), _show(new)])
        settings.setdefault((cluster, pool), []).append(f"{setting} {_show(old)} -> {_show(new)}")
    for (cluster, pool), changes in settings.items():
        section.notes.append(
            Note(POOL_SETTINGS, f"pool {pool} ({cluster}): {', '.join(changes)}", ("pool", cluster, pool))
        )
    section.explains = {note.about for note in section.notes}
    return section


def _quota_section(base: dict, head: dict) -> Section:
    section = Section(
        "quotas",
        "Quotas",
        [
            "cluster",
            "team",
            "queue",
            "flavor",
            "resource",
            "old",
            "new",
            "delta",
            "share of pool (old -> new)",
        ],
    )
    teams = {**_teams(base), **_teams(head)}
    models = {**_flavor_models(base), **_flavor_models(head)}
    old_capacity, new_capacity = _pool_capacity(base), _pool_capacity(head)
    rows = changed_amounts(quotas_of(base), quotas_of(head))
    for (cluster, queue, flavor, resource), old, new, delta in sorted(
        rows, key=lambda r: _risk_order(r[0][3], r[3], r[0])
    ):
        shares = (
            f"{_share(old, old_capacity.get((cluster, flavor, resource)))} -> "
            f"{_share(new, new_capacity.get((cluster, flavor, resource)))}"
        )
        team = teams.get((cluster, queue), "-")
        old_text, new_text = _amount_shown(resource, old), _amount_shown(resource, new)
        section.rows.append(
            [
                cluster,
                team,
                queue,
                flavor,
                resource,
                old_text,
                new_text,
                human_delta(resource, old, new),
                shares,
            ]
        )
        who = f"team {team}" if team != "-" else f"queue {queue}"
        section.notes.append(
            Note(
                _weight(LOST_CAPACITY if delta < 0 else GAINED_QUOTA, resource, delta),
                f"{human_delta(resource, old, new)} "
                f"{_unit(resource, models.get((cluster, flavor), ''))} on {flavor} for "
                f"{who} in {cluster} "
                f"({old_text} -> {new_text})",
                ("team", cluster, team),
            )
        )
    return section


def _namespace_quota_section(old: dict, new: dict) -> Section:
    section = Section(
        "namespace-quotas",
        "Namespace quotas (ResourceQuota)",
        ["cluster", "namespace", "quota", "resource", "old", "new", "delta"],
    )
    rows = changed_amounts(old, new, absent_is_zero=False)
    for (cluster, namespace, name, resource), before, after, delta in sorted(
        rows, key=lambda r: _risk_order(r[0][3], r[3], r[0])
    ):
        old_text, new_text = (
            _amount_shown(resource, before, NO_LIMIT),
            _amount_shown(resource, after, NO_LIMIT),
        )
        limited = before is not ABSENT and after is not ABSENT
        section.rows.append(
            [
                cluster,
                namespace,
                name,
                resource,
                old_text,
                new_text,
                human_delta(resource, before, after) if limited else "",
            ]
        )
        lost = after is not ABSENT and (before is ABSENT or delta < 0)  # a new limit, or a lower one
        words = (
            f"{counted_resource(resource)} for namespace {namespace} in {cluster} ({old_text} -> {new_text})"
        )
        section.notes.append(
            Note(
                _weight(LOST_ACCESS if lost else GAINED_QUOTA - 1, resource, delta),
                f"{human_delta(resource, before, after)} {words}" if limited else f"ResourceQuota {words}",
                ("namespace", cluster, namespace),
            )
        )
    return section


def _limits_section(base: dict, head: dict) -> Section:
    section = Section(
        "limits",
        "Borrowing and lending limits",
        ["cluster", "queue", "flavor", "resource", "limit", "old", "new"],
    )
    for (cluster, queue, flavor, resource, name), old, new in changed(limits_of(base), limits_of(head)):
        section.rows.append(
            [
                cluster,
                queue,
                flavor,
                resource,
                name,
                _amount_shown(resource, old),
                _amount_shown(resource, new),
            ]
        )
    return section


def _limit_range_section(old: dict, new: dict) -> Section:
    section = Section(
        "limit-ranges",
        "Namespace defaults and limits (LimitRange)",
        ["cluster", "namespace", "limit range", "type", "setting", "resource", "old", "new"],
    )
    for key, before, after, _delta in sorted(
        changed_amounts(old, new, absent_is_zero=False), key=lambda r: _risk_order(r[0][5], r[3], r[0])
    ):
        resource = key[5]
        section.rows.append([*key, _amount_shown(resource, before), _amount_shown(resource, after)])
    return section


def _simple(key: str, title: str, key_columns: list[str], old: dict, new: dict) -> Section:
    section = Section(key, title, [*key_columns, "old", "new"])
    for parts, before, after in changed(old, new):
        section.rows.append([*parts, _show(before), _show(after)])
    return section


def _pool_declaration_section(old: dict, new: dict) -> Section:
    """pool.yaml fields beyond the hardware; a new taint shuts every workload that does not tolerate it out of
    the
    pool's nodes, so the headline weighs it as lost access."""
    section = _simple(
        "pool-declarations",
        "Pool declarations (zones, node labels, taints, node shape)",
        ["pool", "field"],
        old,
        new,
    )
    for (pool, path), before, after in changed(old, new):
        added = _items(after) - _items(before) if path == "taints" else set()
        if added:
            section.notes.append(
                Note(
                    LOST_ACCESS - 3,
                    f"new taint {', '.join(sorted(added))} on pool {pool}",
                    ("pool-declaration", pool),
                )
            )
    return section


def _items(text: Any) -> set[str]:
    """The items of a list `diffviews` wrote as one line."""
    return set() if text is ABSENT or text == "[]" else set(text.split(", "))


def _admission_section(old: dict, new: dict) -> Section:
    section = Section("admission", "Admission policies", ["cluster", "kind", "name", "change", "fields"])
    for (cluster, kind, name), before, after in changed(old, new):
        if before is ABSENT:
            section.rows.append([cluster, kind, name, "added", ""])
        elif after is ABSENT:
            section.rows.append([cluster, kind, name, "removed", ""])
        else:
            fields = sorted(
                {path.split(".")[0] for path, _a, _b in changed(_flatten(before), _flatten(after))}
            )
            section.rows.append([cluster, kind, name, "changed", ", ".join(f"spec.{f}" for f in fields)])
    return section


def _rbac_section(base_fleet: Fleet, head_fleet: Fleet) -> Section:
    """One row per subject, scope, direction and set of verbs, naming the resources: a new team's 34 grants
    read
    as a few rows, grouped by who gets them; what is lost comes first."""
    section = Section(
        "rbac", "Access (RBAC)", ["cluster", "subject", "scope", "change", "verbs", "resources"]
    )
    subjects: set[tuple[str, str]] = set()
    for name in sorted(base_fleet.clusters.keys() | head_fleet.clusters.keys()):
        old = rbac_grants(base_fleet.clusters[name]) if name in base_fleet.clusters else set()
        new = rbac_grants(head_fleet.clusters[name]) if name in head_fleet.clusters else set()
        rows: dict[tuple[str, str, str, str], set[str]] = {}
        for change, grants in (("loses", old - new), ("gains", new - old)):
            verbs: dict[tuple[str, str, str], set[str]] = {}
            for subject, scope, resource, verb in grants:
                verbs.setdefault((subject, scope, resource), set()).add(verb)
            for (subject, scope, resource), granted in verbs.items():
                rows.setdefault((subject, scope, change, ", ".join(sorted(granted))), set()).add(resource)
                subjects.add((name, subject))
        for (subject, scope, change, verb_list), resources in sorted(
            rows.items(), key=lambda item: (item[0][2] != "loses", item[0])
        ):
            section.rows.append([name, subject, scope, change, verb_list, ", ".join(sorted(resources))])
    if section.rows:
        section.notes.append(Note(LOST_ACCESS - 1, f"RBAC changes for {len(subjects)} subject(s)"))
    return section


def _members_section(base: dict, head: dict, base_fleet: Fleet, head_fleet: Fleet) -> Section:
    """Pools and teams that are new or gone: the headline says so first, and leaves out what follows from them
    (the new pool's capacity, the new team's quotas and namespace quota)."""
    section = Section(
        "members", "New and removed pools and teams", ["cluster", "kind", "name", "change", "what"]
    )
    old_pools, new_pools = dict(_pool_keys(base)), dict(_pool_keys(head))
    for key in sorted(old_pools.keys() ^ new_pools.keys()):
        change = "new" if key in new_pools else "removed"
        _member(section, "pool", key, change, (new_pools if change == "new" else old_pools)[key])
    old_teams, new_teams = _team_queues(base), _team_queues(head)
    for key in sorted(old_teams.keys() ^ new_teams.keys()):
        change = "new" if key in new_teams else "removed"
        queues = (new_teams if change == "new" else old_teams)[key]
        _member(section, "team", key, change, f"ClusterQueue {', '.join(sorted(queues))}")
    old_ns, new_ns = _namespaces(base_fleet), _namespaces(head_fleet)
    section.explains |= {("namespace", *key) for key in old_ns ^ new_ns}
    return section


def _member(section: Section, kind: str, key: tuple[str, str], change: str, what: str) -> None:
    cluster, name = key
    section.rows.append([cluster, kind, name, change, what])
    weight = NEW_OR_REMOVED + (1 if change == "removed" else 0)  # what goes away first
    section.notes.append(Note(weight, f"{change} {kind} {name} on {cluster} ({what})", (kind, cluster, name)))
    section.explains.add((kind, cluster, name))
    if kind == "pool":  # its pool.yaml is new (or gone) too: its taints are part of the new pool
        section.explains.add(("pool-declaration", name))


def _pool_keys(model: dict) -> Iterable[tuple[tuple[str, str], str]]:
    for cluster, pool in _pools(model):
        yield (
            (cluster, pool["name"]),
            (f"{pool['nodes']} x {pool['gpusPerNode']} {pool['gpuModel']}, {pool['accessMode']}"),
        )


def _team_queues(model: dict) -> dict[tuple[str, str], set[str]]:
    teams: dict[tuple[str, str], set[str]] = {}
    for (cluster, queue), team in _teams(model).items():
        if team != "-":
            teams.setdefault((cluster, team), set()).add(queue)
    return teams


def _namespaces(fleet: Fleet) -> set[tuple[str, str]]:
    return {
        (name, obj.name)
        for name, cluster in fleet.clusters.items()
        for obj in cluster.objects
        if obj.kind == "Namespace"
    }


# --- the headline ------------------------------------------------------------------------------------------

# Weights of the headline's phrases, by risk: lost capacity, then lost access, then priority and preemption
# changes, then the gains and the rest. Within a band a GPU change outweighs any other resource, and a bigger
# change a smaller one (`_weight`).
LOST_CAPACITY, LOST_ACCESS, PRIORITY, GAINED_QUOTA, POOL_SETTINGS, GAINED_CAPACITY = (
    9e6,
    8e6,
    7e6,
    6e6,
    5e6,
    4e6,
)
NEW_OR_REMOVED = 1e7  # a new or removed pool or team is what the change is: said first
# Sections summed up as a count, with their band.
COUNTED = (
    ("placement", LOST_ACCESS - 2, "node selection change(s)"),
    ("priorities", PRIORITY, "priority setting(s)"),
    ("preemption", PRIORITY - 1, "preemption setting(s)"),
    ("cohorts", PRIORITY - 2, "cohort move(s)"),
    ("admission", 3e6, "admission policy change(s)"),
    ("versions", 2e6, ""),
    ("plans", 1e6, "upgrade plan setting(s)"),
    ("pool-declarations", 9e5, "pool declaration setting(s)"),
    ("labels", 8e5, "label change(s)"),
    ("limit-ranges", 7e5, "LimitRange setting(s)"),
    ("limits", 6e5, "borrowing/lending limit change(s)"),
)


@dataclass(frozen=True)
class Note:
    """One phrase the headline may use: its weight (higher first), its words, and what it is about (a pool's
    setting change already explains its capacity change)."""

    weight: float
    words: str
    about: tuple[str, ...] | None = None  # ("pool" | "team" | "namespace", cluster, name)


def _weight(band: float, resource: str, delta: Decimal) -> float:
    size = min(float(abs(delta)), 1e5)  # a huge quota must not jump a band
    return band + (5e5 if _is_gpu_row(resource) else 0) + size


def _unit(resource: str, model_name: str) -> str:
    """How a reader names one unit of a resource: the GPU model, or the MIG profile."""
    if resource.startswith(MIG_RESOURCE_PREFIX):
        return f"{resource[len(MIG_RESOURCE_PREFIX) :]} MIG slices"
    if is_gpu_device_resource(resource) and model_name:
        return model_name.split("-")[0]
    return resource


def _flavor_models(model: dict) -> dict[tuple, str]:
    models: dict[tuple, str] = {}
    for cluster in model["clusters"]:
        pools = {p["name"]: p for p in cluster["pools"]}
        for flavor in cluster["flavors"]:
            names = {pools[p]["gpuModel"] for p in flavor["pools"]}
            models[(cluster["name"], flavor["name"])] = names.pop() if len(names) == 1 else ""
    return models


def guardrail_changes(head_findings: Iterable[Finding]) -> list[str]:
    """The files whose guardrail configuration the change edits (the head's CFG003 findings)."""
    return sorted({f.path for f in head_findings if f.rule == cfg003.ID})


def headline(
    sections: list[Section],
    findings: FindingsDiff,
    head_findings: list[Finding],
    rule_ids: Iterable[str],
    objects: int = 0,
    waived_rules: Iterable[str] = (),
) -> str:
    """The riskiest changes in words, then what the rules say about them; first, when the change edits the
    guardrail configuration, that it does and that its effect waits for the merge. `waived_rules`: rules whose
    findings a reviewed exception accepted (the finding is still there: no guarantee is claimed for them)."""
    by_key = {s.key: s for s in sections}
    members = by_key["members"].explains if "members" in by_key else set()
    settings = by_key["pools"].explains if "pools" in by_key else set()
    notes = [
        note
        for section in sections
        for note in section.notes
        if section.key == "members"
        or not (note.about in members or (section.key == "capacity" and note.about in settings))
    ]
    for cluster, pool, component, old, new in _rows(by_key, "versions"):
        if ("pool", cluster, pool) in members:  # a new pool's driver is part of the new pool
            continue
        notes.append(Note(2e6, f"{component} {old} -> {new} on {f'pool {pool}' if pool != '-' else cluster}"))
    notes += [
        Note(weight, f"{len(by_key[key].rows)} {words}")
        for key, weight, words in COUNTED
        if key in by_key and words
    ]
    if not notes and objects:
        notes.append(Note(1, f"{objects} rendered object change(s)"))
    notes.sort(key=lambda note: -note.weight)
    parts = [note.words for note in notes[:3]]
    if len(notes) > 3:
        parts.append(f"{len(notes) - 3} more change(s)")
    parts.append(_verdict(findings, by_key, head_findings, set(rule_ids), set(waived_rules)))
    if not notes:
        parts.insert(0, "no change to what the clusters get")
    changed = guardrail_changes(head_findings)
    if changed:
        parts.insert(
            0, f"guardrail configuration changed ({', '.join(changed)}): its effect is deferred until merged"
        )
    return "; ".join(parts)


def _notes(by_key: dict[str, Section], key: str) -> list[Note]:
    return by_key[key].notes if key in by_key else []


def _rows(by_key: dict[str, Section], key: str) -> list[list[Any]]:
    return by_key[key].rows if key in by_key else []


def _verdict(
    findings: FindingsDiff,
    by_key: dict[str, Section],
    head_findings: list[Finding],
    rule_ids: set[str],
    waived_rules: set[str],
) -> str:
    crashed = len(crashes(head_findings))
    if crashed:  # never a reassuring verdict when a check did not run
        return f"INCOMPLETE: {crashed} check(s) crashed on the head (INTERNAL); its findings are missing"
    errors = [f for f in findings.introduced if f.severity is Severity.ERROR]
    if errors:
        rules = sorted({f.rule for f in errors})
        return f"introduces {len(errors)} error(s) ({', '.join(rules)})"
    words = []
    if "quotas" in by_key or "capacity" in by_key or "pools" in by_key:
        # a waived CAP001 is still a quota over capacity
        firing = {f.rule for f in head_findings} | waived_rules
        words = [text for rule, text in GUARANTEES.items() if rule in rule_ids and rule not in firing]
    if findings.introduced:
        words.append(f"{len(findings.introduced)} new warning(s)")
    if findings.fixed:
        words.append(f"fixes {len(findings.fixed)} finding(s)")
    return "; ".join(words) or "no new findings"


# --- entry point -------------------------------------------------------------------------------------------


def compare(
    base_fleet: Fleet,
    head_fleet: Fleet,
    base_findings: list[Finding],
    head_findings: list[Finding],
    base_label: str,
    head_label: str,
    rule_ids: Iterable[str] = (),
    head_waived: Iterable = (),
    head_causes: dict[Finding, Finding] | None = None,
) -> SemanticDiff:
    sides = Sides(fleet_as_dict(base_fleet), fleet_as_dict(head_fleet), base_fleet, head_fleet)
    sections = build_sections(sides)
    findings = compare_findings(base_findings, head_findings)
    objects = compare_objects(base_fleet, head_fleet)
    result = SemanticDiff(
        base_label,
        head_label,
        sections,
        findings,
        objects=objects,
        waived=list(head_waived),
        causes=dict(head_causes or {}),
        site_url=str(getattr(head_fleet, "site_url", "") or ""),
    )
    result.guardrail_changes = guardrail_changes(head_findings)
    result.headline = headline(
        sections,
        findings,
        head_findings,
        rule_ids,
        sum(len(cluster.changes) for cluster in objects),
        {item.finding.rule for item in result.waived},
    )
    return result


# --- output ------------------------------------------------------------------------------------------------


def _cell(value: Any) -> str:
    """A table cell: Markdown the writer built passes; anything else is content, escaped (`mdescape.text`)."""
    return value if isinstance(value, Markdown) else mdescape.text(value)


def _table(columns: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return lines


def _finding_rows(
    findings: list[Finding], causes: dict[Finding, Finding] | None = None, site_url: str = ""
) -> list[list[str]]:
    """Table rows, each cause followed by the findings it causes (marked ↳, rootcause.ordered); with a runbook
    site, each rule links to its page there (the same URL SARIF's helpUri gives, siteconfig.rule_page)."""

    def rule(f: Finding) -> Markdown:
        return mdescape.link(f.rule, rule_page(site_url, f.rule)) if site_url else mdescape.text(f.rule)

    return [
        [
            f.severity.value,
            Markdown(("↳ " if depth else "") + rule(f)),
            mdescape.code(f.place),
            f.message,
            f.cluster or "-",
        ]
        for f, depth in rootcause.ordered(findings, causes or {})
    ]


FINDING_COLUMNS = ["severity", "rule", "where", "message", "clusters"]


def to_markdown(diff: SemanticDiff, root: str = "") -> str:
    lines = [
        f"### gpupolicy: {mdescape.text(diff.headline)}",
        "",
        f"Compared {mdescape.code(diff.base_label)} (base) with {mdescape.code(diff.head_label)} (head).",
        "",
    ]
    if diff.guardrail_changes:
        lines += [
            "> **Guardrail configuration changed** in "
            f"{', '.join(mdescape.code(p) for p in diff.guardrail_changes)}"
            ": this comparison applies the base's configuration; the change's own takes effect only "
            "once merged, after review by the code owners its CFG003 findings name.",
            "",
        ]
    for section in diff.sections:
        lines += [f"#### {section.title}", "", *_table(section.columns, section.rows), ""]
    found = diff.findings
    if found.introduced or found.fixed or found.preexisting or diff.waived:
        lines += [
            "#### Findings",
            "",
            f"{len(found.introduced)} introduced, {len(found.fixed)} fixed, "
            f"{len(found.preexisting)} pre-existing, {len(diff.waived)} waived by reviewed exceptions.",
            "",
        ]
        for title, items in (("Introduced", found.introduced), ("Fixed", found.fixed)):
            if items:
                lines += [
                    f"**{title}**",
                    "",
                    *_table(FINDING_COLUMNS, _finding_rows(items, diff.causes, diff.site_url)),
                    "",
                ]
        if found.preexisting:
            lines += [
                "<details><summary>Pre-existing</summary>",
                "",
                *_table(FINDING_COLUMNS, _finding_rows(found.preexisting, diff.causes, diff.site_url)),
                "",
                "</details>",
                "",
            ]
        if diff.waived:
            rows = [
                [
                    *_finding_rows([w.finding], site_url=diff.site_url)[0],
                    w.waiver.reason,
                    w.waiver.owner,
                    w.waiver.expires.isoformat(),
                ]
                for w in diff.waived
            ]
            lines += [
                "<details><summary>Waived by reviewed exceptions</summary>",
                "",
                *_table([*FINDING_COLUMNS, "reason", "owner", "expires"], rows),
                "",
                "</details>",
                "",
            ]
    lines += _objects_markdown(diff.objects)
    return "\n".join(lines).rstrip() + "\n"


# Diff lines a Markdown report holds over all objects: a PR comment has a size limit (GitHub: 65,536
# characters), and the list of objects matters more than the last diff. `--format json` keeps every diff.
MARKDOWN_DIFF_BUDGET = 1200


def _objects_markdown(objects: list[ClusterObjects]) -> list[str]:
    """Every rendered object that changed, per cluster; each changed object's YAML diff collapsed, as long as
    the report's budget of diff lines lasts (then the objects are still listed)."""
    if not objects:
        return []
    lines = [
        "#### Rendered objects",
        "",
        "Every object the clusters get that the change adds, removes or changes.",
        "",
    ]
    budget = MARKDOWN_DIFF_BUDGET
    shown: dict[tuple, str] = {}  # (object, diff) -> the cluster whose section shows it
    for cluster in objects:
        lines += [
            f"##### {mdescape.text(cluster.cluster)}: {mdescape.text(cluster.summary())}",
            "",
            *_table(
                ["change", "object", "source"],
                [[c.change, c.ref, mdescape.code(c.source) if c.source else "-"] for c in cluster.changes],
            ),
            "",
        ]
        for change in (c for c in cluster.changes if c.diff):
            if (change.ref, change.diff) in shown:  # a shared base changes every cluster the same way
                lines += [
                    f"{mdescape.text(change.ref, line_start=True)}: the same diff as in "
                    f"{mdescape.text(shown[(change.ref, change.diff)])}.",
                    "",
                ]
                continue
            shown[(change.ref, change.diff)] = cluster.cluster
            if len(change.diff) > budget:
                lines += [
                    f"Diff of {mdescape.text(change.ref)} left out (report size): `gpupolicy diff "
                    "--format json`"
                    " has it.",
                    "",
                ]
                continue
            budget -= len(change.diff)
            body = [*change.diff, *([f"... {change.cut} more line(s)"] if change.cut else [])]
            mark = fence(body)
            lines += [
                f"<details><summary>{mdescape.html_text(change.ref)}</summary>",
                "",
                f"{mark}diff",
                *body,
                mark,
                "",
                "</details>",
                "",
            ]
    return lines


def to_json(diff: SemanticDiff, root: str = "") -> str:
    payload = {
        "headline": diff.headline,
        "base": diff.base_label,
        "head": diff.head_label,
        "guardrail_changes": diff.guardrail_changes,
        "sections": {
            s.key: [dict(zip(s.columns, row, strict=True)) for row in s.rows] for s in diff.sections
        },
        "findings": {
            name: [report.finding_json(f, diff.causes.get(f)) for f in getattr(diff.findings, name)]
            for name in ("introduced", "fixed", "preexisting")
        },
        "objects": [change.as_dict() for cluster in diff.objects for change in cluster.changes],
        "waived": [item.as_dict() for item in diff.waived],
    }
    return json.dumps(payload, indent=2, default=str)


@dataclass
class FindingsView:
    """What the finding formatters (sarif, junit, github) see of a diff: the findings the head introduces,
    and for SARIF every head finding with its baseline state."""

    findings: list[Finding]
    sarif_results: list[tuple[Finding, str]]
    timings: dict[str, float] = field(default_factory=dict)
    waived: list = field(default_factory=list)  # SARIF lists them with their suppression
    # SARIF relates a derived result to its cause
    causes: dict[Finding, Finding] = field(default_factory=dict)


def findings_view(diff: SemanticDiff) -> FindingsView:
    states = [(f, "new") for f in diff.findings.introduced] + [
        (f, "unchanged") for f in diff.findings.preexisting
    ]
    # A check that crashed on the head is shown even when it crashed on the base too: this run is incomplete.
    crashed = crashes(diff.findings.preexisting)
    return FindingsView(
        findings=list(diff.findings.introduced) + crashed,
        sarif_results=states,
        waived=diff.waived,
        causes=diff.causes,
    )


Formatter = Callable[[SemanticDiff, str], str]


def _on_findings(formatter: report.Formatter) -> Formatter:
    """A findings format (sarif, junit, github) applied to what the head introduces: see `findings_view`."""

    def format_diff(diff: SemanticDiff, root: str = "") -> str:
        return formatter(findings_view(diff), root)

    return format_diff


# The findings formats a diff is offered in (the registry's `findings_only` ones); text and json of
# report.FORMATS summarise a run, not a diff.
FINDINGS_FORMATS = report.FINDINGS_FORMATS
OUTPUTS: dict[str, Formatter] = {
    "markdown": to_markdown,
    "json": to_json,
    **{name: _on_findings(report.FORMATTERS[name]) for name in FINDINGS_FORMATS},
}
