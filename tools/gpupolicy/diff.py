"""Semantic diff between two runs of the pipeline: what a change does to the fleet, not which lines moved.

Both sides are plain data (`describe.fleet_as_dict`, plus RBAC grants and admission policies read from the
rendered objects). Every section flattens its side into `{key: value}` and reports the keys whose values
differ, so adding a comparison is adding one flattening function. Findings are matched by `Finding.identity`.

Outputs: OUTPUTS is this result's table of formats, name -> formatter(diff, root) -> text, which `gpupolicy
diff --format` offers. It is separate from `report.FORMATTERS` because it formats a different result: a run's
text and json summarise one run, this module's markdown and json a comparison (sections, headline, findings
introduced and fixed), and both are rightly called "json". The formats that read nothing but findings (sarif,
junit, github) are not written twice: OUTPUTS takes them from `report.FORMATTERS` and hands them the diff's
`findings_view`. A new findings format joins a diff by adding its name to FINDINGS_FORMATS below.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from . import quotas, report
from .describe import fleet_as_dict
from .findings import Finding, Severity
from .internal import crashes
from .model import MIG_RESOURCE_PREFIX, Cluster, Fleet

ABSENT = None
ADMISSION_KINDS = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
                   "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding")
# Rules whose silence after a capacity or quota change is worth saying in the headline.
GUARANTEES = {"CAP005": "production reserve still holds", "CAP001": "quotas still fit the pools"}


@dataclass
class Section:
    key: str
    title: str
    columns: list[str]
    rows: list[list[Any]] = field(default_factory=list)


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

    @property
    def introduced_errors(self) -> list[Finding]:
        return [f for f in self.findings.introduced if f.severity is Severity.ERROR]


# --- findings ------------------------------------------------------------------------------------------------

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
    return {(cluster, pool["name"], resource): amount
            for cluster, pool in _pools(model) for resource, amount in pool["capacity"].items()}


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
    return {(cluster, queue["name"], q["flavor"], q["resource"]): q["nominal"]
            for cluster, queue in _queues(model) for q in queue["quotas"]}


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
    return {(cluster, queue["name"], path): value for cluster, queue in _queues(model)
            for path, value in _flatten(queue["preemption"] or {}).items()}


def priorities_of(model: dict) -> dict[tuple, Any]:
    found: dict[tuple, Any] = {}
    for cluster in model["clusters"]:
        for kind, items in (("PriorityClass", cluster["priorityClasses"]),
                            ("WorkloadPriorityClass", cluster["workloadPriorityClasses"])):
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
            found[(cluster["name"], pool["name"], "driver")] = ", ".join(pool.get("driverVersions") or []) or "(none)"
    return found


def _flatten(value: Any, prefix: str = "") -> dict[str, str]:
    if isinstance(value, dict):
        flat: dict[str, str] = {}
        for key, inner in value.items():
            flat.update(_flatten(inner, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    return {prefix: json.dumps(value) if isinstance(value, list) else str(value)}


def admission_of(fleet: Fleet) -> dict[tuple, dict]:
    return {(name, obj.kind, obj.name): obj.spec for name, cluster in fleet.clusters.items()
            for obj in cluster.objects if obj.kind in ADMISSION_KINDS}


def rbac_grants(cluster: Cluster) -> set[tuple[str, str, str, str]]:
    """(subject, scope, resource, verb) for every binding in the cluster, through the role it names.

    Aggregated ClusterRoles count with the rules written in them; the aggregation controller's additions
    are not known before the cluster runs."""
    rules: dict[tuple[str, str], list] = {}
    for obj in cluster.objects:
        if obj.kind in ("ClusterRole", "Role") and obj.group == "rbac.authorization.k8s.io":
            rules[(obj.kind, obj.name if obj.kind == "ClusterRole" else f"{obj.namespace}/{obj.name}")] = \
                obj.body.get("rules") or []
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
    return [(key, old.get(key, ABSENT), new.get(key, ABSENT)) for key in sorted(old.keys() | new.keys(), key=str)
            if old.get(key, ABSENT) != new.get(key, ABSENT)]


# Above this an amount is shown in scientific notation: an int as large as 1e400 (a quota the model holds
# exactly) would overflow a float in `:g`, and one past 4,300 digits cannot even be turned into text.
HUGE = 10**15


def _show(value: Any) -> str:
    if value is ABSENT:
        return "—"
    return f"{Decimal(value):.3e}" if isinstance(value, int) and abs(value) >= HUGE else str(value)


def _delta(old: Any, new: Any) -> str:
    amount = (new or 0) - (old or 0)
    return f"{Decimal(amount):+.3e}" if isinstance(amount, int) and abs(amount) >= HUGE else f"{amount:+g}"


def _pool_capacity(model: dict) -> dict[tuple, float]:
    """(cluster, flavor, resource) -> what the flavor's pools expose (quotas.flavor_capacity, exported by
    describe): the denominator of a quota's share."""
    return {(cluster["name"], flavor["name"], resource): amount for cluster in model["clusters"]
            for flavor in cluster["flavors"] for resource, amount in flavor.get("capacity", {}).items()}


def _share(nominal: Any, capacity: float | None) -> str:
    shown = None if nominal is ABSENT else quotas.share_text(nominal, capacity or 0)
    return "—" if shown is None else f"{shown} of {capacity:g}"


def _teams(model: dict) -> dict[tuple, str]:
    return {(cluster, queue["name"]): queue["team"] or "-" for cluster, queue in _queues(model)}


def build_sections(base: dict, head: dict, base_fleet: Fleet, head_fleet: Fleet) -> list[Section]:
    sections = [_capacity_section(base, head), _pool_section(base, head), _quota_section(base, head),
                _limits_section(base, head), _simple("cohorts", "Cohort moves", ["cluster", "queue"],
                                                     cohorts_of(base), cohorts_of(head)),
                _simple("preemption", "Queue preemption", ["cluster", "queue", "setting"],
                        preemption_of(base), preemption_of(head)),
                _simple("priorities", "Priority classes", ["cluster", "kind", "name", "setting"],
                        priorities_of(base), priorities_of(head)),
                _simple("versions", "Driver and GPU Operator versions", ["cluster", "pool", "component"],
                        versions_of(base), versions_of(head)),
                _admission_section(admission_of(base_fleet), admission_of(head_fleet)),
                _rbac_section(base_fleet, head_fleet)]
    return [s for s in sections if s.rows]


def _capacity_section(base: dict, head: dict) -> Section:
    section = Section("capacity", "Capacity", ["cluster", "pool", "resource", "old", "new", "delta"])
    for (cluster, pool, resource), old, new in changed(capacity_of(base), capacity_of(head)):
        section.rows.append([cluster, pool, resource, _show(old), _show(new), _delta(old, new)])
    return section


def _pool_section(base: dict, head: dict) -> Section:
    section = Section("pools", "Pool hardware, access mode and MIG layout",
                      ["cluster", "pool", "setting", "old", "new"])
    for (cluster, pool, setting), old, new in changed(pool_settings_of(base), pool_settings_of(head)):
        section.rows.append([cluster, pool, setting, _show(old), _show(new)])
    return section


def _quota_section(base: dict, head: dict) -> Section:
    section = Section("quotas", "Quotas", ["cluster", "team", "queue", "flavor", "resource", "old", "new", "delta",
                                           "share of pool (old -> new)"])
    teams = {**_teams(base), **_teams(head)}
    old_capacity, new_capacity = _pool_capacity(base), _pool_capacity(head)
    for (cluster, queue, flavor, resource), old, new in changed(quotas_of(base), quotas_of(head)):
        shares = (f"{_share(old, old_capacity.get((cluster, flavor, resource)))} -> "
                  f"{_share(new, new_capacity.get((cluster, flavor, resource)))}")
        section.rows.append([cluster, teams.get((cluster, queue), "-"), queue, flavor, resource, _show(old),
                             _show(new), _delta(old, new), shares])
    return section


def _limits_section(base: dict, head: dict) -> Section:
    section = Section("limits", "Borrowing and lending limits",
                      ["cluster", "queue", "flavor", "resource", "limit", "old", "new"])
    for (cluster, queue, flavor, resource, name), old, new in changed(limits_of(base), limits_of(head)):
        section.rows.append([cluster, queue, flavor, resource, name, _show(old), _show(new)])
    return section


def _simple(key: str, title: str, key_columns: list[str], old: dict, new: dict) -> Section:
    section = Section(key, title, [*key_columns, "old", "new"])
    for parts, before, after in changed(old, new):
        section.rows.append([*parts, _show(before), _show(after)])
    return section


def _admission_section(old: dict, new: dict) -> Section:
    section = Section("admission", "Admission policies", ["cluster", "kind", "name", "change", "fields"])
    for (cluster, kind, name), before, after in changed(old, new):
        if before is ABSENT:
            section.rows.append([cluster, kind, name, "added", ""])
        elif after is ABSENT:
            section.rows.append([cluster, kind, name, "removed", ""])
        else:
            fields = sorted({path.split(".")[0] for path, _a, _b in changed(_flatten(before), _flatten(after))})
            section.rows.append([cluster, kind, name, "changed", ", ".join(f"spec.{f}" for f in fields)])
    return section


def _rbac_section(base_fleet: Fleet, head_fleet: Fleet) -> Section:
    section = Section("rbac", "Access (RBAC)", ["cluster", "subject", "scope", "resource", "gained", "lost"])
    for name in sorted(base_fleet.clusters.keys() | head_fleet.clusters.keys()):
        old = rbac_grants(base_fleet.clusters[name]) if name in base_fleet.clusters else set()
        new = rbac_grants(head_fleet.clusters[name]) if name in head_fleet.clusters else set()
        grouped: dict[tuple, tuple[set, set]] = {}
        for grant in new - old:
            grouped.setdefault(grant[:3], (set(), set()))[0].add(grant[3])
        for grant in old - new:
            grouped.setdefault(grant[:3], (set(), set()))[1].add(grant[3])
        for (subject, scope, resource), (gained, lost) in sorted(grouped.items()):
            section.rows.append([name, subject, scope, resource, ", ".join(sorted(gained)),
                                 ", ".join(sorted(lost))])
    return section


# --- the headline ------------------------------------------------------------------------------------------

def _unit(resource: str, model_name: str) -> str:
    """How a reader names one unit of a resource: the GPU model, or the MIG profile."""
    if resource.startswith(MIG_RESOURCE_PREFIX):
        return f"{resource[len(MIG_RESOURCE_PREFIX):]} MIG slices"
    if resource.startswith("nvidia.com/gpu") and model_name:
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


def headline(sections: list[Section], findings: FindingsDiff, base: dict, head: dict,
             head_findings: list[Finding], rule_ids: Iterable[str]) -> str:
    """The biggest changes in words, then what the rules say about them."""
    phrases: list[tuple[float, str]] = []  # (weight, words): quotas first, then pools, versions, access
    by_key = {s.key: s for s in sections}
    models = {**_flavor_models(base), **_flavor_models(head)}
    for cluster, team, queue, flavor, resource, old, new, delta, _share_text in _rows(by_key, "quotas"):
        who = f"team {team}" if team != "-" else f"queue {queue}"
        phrases.append((3000 + abs(float(delta)), f"{delta} {_unit(resource, models.get((cluster, flavor), ''))} "
                                                  f"for {who} in {cluster} ({old} -> {new})"))
    settings: dict[tuple, list[str]] = {}
    for cluster, pool, setting, old, new in _rows(by_key, "pools"):
        settings.setdefault((cluster, pool), []).append(f"{setting} {old} -> {new}")
    for (cluster, pool), changes in settings.items():
        phrases.append((2000, f"pool {pool} ({cluster}): {', '.join(changes)}"))
    for cluster, pool, resource, old, new, delta in _rows(by_key, "capacity"):
        if (cluster, pool) not in settings:  # a layout change already explains its capacity change
            phrases.append((1000 + abs(float(delta)), f"{delta} {resource} in pool {pool} of {cluster} "
                                                      f"({old} -> {new})"))
    for cluster, pool, component, old, new in _rows(by_key, "versions"):
        where = f"pool {pool}" if pool != "-" else cluster
        phrases.append((600, f"{component} {old} -> {new} on {where}"))
    for key, weight, words in (("rbac", 500, "RBAC grant change(s)"), ("admission", 400, "admission policy change(s)"),
                               ("priorities", 300, "priority setting(s)"), ("preemption", 200, "preemption setting(s)"),
                               ("cohorts", 150, "cohort move(s)"), ("limits", 100, "borrowing/lending limit change(s)")):
        if key in by_key:
            phrases.append((weight, f"{len(by_key[key].rows)} {words}"))
    phrases.sort(key=lambda item: -item[0])
    parts = [text for _weight, text in phrases[:3]]
    if len(phrases) > 3:
        parts.append(f"{len(phrases) - 3} more change(s)")
    parts.append(_verdict(findings, by_key, head_findings, set(rule_ids)))
    if not phrases:
        parts.insert(0, "no change to capacity, quotas, priorities, drivers or access")
    return "; ".join(parts)


def _rows(by_key: dict[str, Section], key: str) -> list[list[Any]]:
    return by_key[key].rows if key in by_key else []


def _verdict(findings: FindingsDiff, by_key: dict[str, Section], head_findings: list[Finding],
             rule_ids: set[str]) -> str:
    crashed = len(crashes(head_findings))
    if crashed:  # never a reassuring verdict when a check did not run
        return f"INCOMPLETE: {crashed} check(s) crashed on the head (INTERNAL); its findings are missing"
    errors = [f for f in findings.introduced if f.severity is Severity.ERROR]
    if errors:
        rules = sorted({f.rule for f in errors})
        return f"introduces {len(errors)} error(s) ({', '.join(rules)})"
    words = []
    if "quotas" in by_key or "capacity" in by_key or "pools" in by_key:
        firing = {f.rule for f in head_findings}
        words = [text for rule, text in GUARANTEES.items() if rule in rule_ids and rule not in firing]
    if findings.introduced:
        words.append(f"{len(findings.introduced)} new warning(s)")
    if findings.fixed:
        words.append(f"fixes {len(findings.fixed)} finding(s)")
    return "; ".join(words) or "no new findings"


# --- entry point -------------------------------------------------------------------------------------------

def compare(base_fleet: Fleet, head_fleet: Fleet, base_findings: list[Finding], head_findings: list[Finding],
            base_label: str, head_label: str, rule_ids: Iterable[str] = ()) -> SemanticDiff:
    base, head = fleet_as_dict(base_fleet), fleet_as_dict(head_fleet)
    sections = build_sections(base, head, base_fleet, head_fleet)
    findings = compare_findings(base_findings, head_findings)
    result = SemanticDiff(base_label, head_label, sections, findings)
    result.headline = headline(sections, findings, base, head, head_findings, rule_ids)
    return result


# --- output ------------------------------------------------------------------------------------------------

def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _table(columns: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return lines


def _finding_rows(findings: list[Finding]) -> list[list[str]]:
    return [[f.severity.value, f.rule, f"`{f.place}`", f.message, f.cluster or "-"] for f in findings]


FINDING_COLUMNS = ["severity", "rule", "where", "message", "clusters"]


def to_markdown(diff: SemanticDiff, root: str = "") -> str:
    lines = [f"### gpupolicy: {diff.headline}", "",
             f"Compared `{diff.base_label}` (base) with `{diff.head_label}` (head).", ""]
    for section in diff.sections:
        lines += [f"#### {section.title}", "", *_table(section.columns, section.rows), ""]
    found = diff.findings
    if found.introduced or found.fixed or found.preexisting:
        lines += ["#### Findings", "",
                  f"{len(found.introduced)} introduced, {len(found.fixed)} fixed, "
                  f"{len(found.preexisting)} pre-existing.", ""]
        for title, items in (("Introduced", found.introduced), ("Fixed", found.fixed)):
            if items:
                lines += [f"**{title}**", "", *_table(FINDING_COLUMNS, _finding_rows(items)), ""]
        if found.preexisting:
            lines += ["<details><summary>Pre-existing</summary>", "",
                      *_table(FINDING_COLUMNS, _finding_rows(found.preexisting)), "", "</details>", ""]
    return "\n".join(lines).rstrip() + "\n"


def to_json(diff: SemanticDiff, root: str = "") -> str:
    payload = {
        "headline": diff.headline, "base": diff.base_label, "head": diff.head_label,
        "sections": {s.key: [dict(zip(s.columns, row, strict=True)) for row in s.rows] for s in diff.sections},
        "findings": {name: [f.as_dict() for f in getattr(diff.findings, name)]
                     for name in ("introduced", "fixed", "preexisting")},
    }
    return json.dumps(payload, indent=2, default=str)


@dataclass
class FindingsView:
    """What the finding formatters (sarif, junit, github) see of a diff: the findings the head introduces,
    and for SARIF every head finding with its baseline state."""

    findings: list[Finding]
    sarif_results: list[tuple[Finding, str]]
    timings: dict[str, float] = field(default_factory=dict)


def findings_view(diff: SemanticDiff) -> FindingsView:
    states = [(f, "new") for f in diff.findings.introduced] + [(f, "unchanged") for f in diff.findings.preexisting]
    # A check that crashed on the head is shown even when it crashed on the base too: this run is incomplete.
    crashed = crashes(diff.findings.preexisting)
    return FindingsView(findings=list(diff.findings.introduced) + crashed, sarif_results=states)


Formatter = Callable[[SemanticDiff, str], str]


def _on_findings(formatter: report.Formatter) -> Formatter:
    """A findings format (sarif, junit, github) applied to what the head introduces: see `findings_view`."""
    def format_diff(diff: SemanticDiff, root: str = "") -> str:
        return formatter(findings_view(diff), root)

    return format_diff


# The findings formats a diff is offered in; text and json of report.FORMATTERS summarise a run, not a diff.
FINDINGS_FORMATS = ("github", "junit", "sarif")
OUTPUTS: dict[str, Formatter] = {
    "markdown": to_markdown,
    "json": to_json,
    **{name: _on_findings(report.FORMATTERS[name]) for name in FINDINGS_FORMATS},
}
