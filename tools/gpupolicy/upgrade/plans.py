"""Staged upgrades: rollout plans (`policies/upgrades/*.yaml`, kind RolloutPlan), the platform's upgrade
requirements (kind UpgradeRequirements), who may approve (kind Approvers, see approvals.py), what each stage
takes, the state the repository is in, and the capacity left while a stage's nodes drain.

The UPG rules, `gpupolicy upgrade` and the generated update-procedure page all read this module. It never
writes; editing lives in `commands/upgrade.py`. See docs/decisions/0018-upgrade-plans.md.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from ..domain import catalog, quotas
from ..domain.gpu_resources import is_nvidia_resource
from ..domain.quantity import number
from ..findings import Location
from ..infra.schema.check import validate_repo_file
from ..infra.yamlload import Document
from ..model import Cluster, Fleet, K8sObject, NvidiaDriver, Pool
from ..model.selectors import labels_match

PLAN_DIR = "policies/upgrades"
API_VERSION = "gpupolicy/v1"
PLAN_KIND = "RolloutPlan"
REQUIREMENTS_KIND = "UpgradeRequirements"
APPROVERS_KIND = "Approvers"
PHASES = ("test", "limited", "full")
COMPONENTS = ("driver", "gpu-operator")
# Without an UpgradeRequirements file: a day on test pools, three days on the canaries, nothing after the
# last stage (the fleet itself is the soak).
DEFAULT_MINIMUM_SOAK = {"test": timedelta(hours=24), "limited": timedelta(hours=72), "full": timedelta(0)}
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"  # an NVIDIADriver without nodeSelector selects nodes with it
PRODUCTION_TIER = "production"

_DURATION = re.compile(r"^(\d+)([mhd])$")
_UNITS = {"m": timedelta(minutes=1), "h": timedelta(hours=1), "d": timedelta(days=1)}


# --- small parsers
# -------------------------------------------------------------------------------------------


def parse_duration(text: str) -> timedelta:
    match = _DURATION.match(str(text).strip())
    if not match:
        raise ValueError(f"not a duration (30m, 48h, 7d): {text!r}")
    try:
        return int(match.group(1)) * _UNITS[match.group(2)]
    except OverflowError as exc:  # timedelta stops at 999,999,999 days
        raise ValueError(f"duration too long: {text!r}") from exc


def parse_date(text: str) -> date:
    """'2026-11-24' -> a date; a ValueError for one the pattern admits but the calendar does not
    (2026-02-30)."""
    try:
        return date.fromisoformat(str(text).strip())
    except ValueError as exc:
        raise ValueError(f"not a calendar date: {text!r} ({exc})") from exc


def format_duration(value: timedelta) -> str:
    """48h -> '2d', 90m -> '1h30m', negative -> '0m'."""
    minutes = max(int(value.total_seconds() // 60), 0)
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    parts = [f"{days}d" if days else "", f"{hours}h" if hours else "", f"{minutes}m" if minutes else ""]
    return "".join(parts) or "0m"


def parse_timestamp(text: str) -> datetime:
    """'2026-11-24T10:00:00Z' (or without seconds) -> an aware UTC datetime."""
    value = str(text).strip()
    for pattern in ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%MZ"):
        try:
            return datetime.strptime(value, pattern).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ValueError(f"not a UTC timestamp (2026-11-24T10:00:00Z): {text!r}")


def format_timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- the plan model
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Selector:
    cluster: str | None
    pools: tuple[str, ...] | None
    match_labels: dict[str, str]
    index: int

    def describe(self) -> str:
        parts = [
            f"cluster {self.cluster}" if self.cluster else "",
            f"pools {', '.join(self.pools)}" if self.pools else "",
            "labels " + ", ".join(f"{k}={v}" for k, v in self.match_labels.items())
            if self.match_labels
            else "",
        ]
        return " and ".join(p for p in parts if p)

    def takes_pool(self, cluster: str, pool: Pool) -> bool:
        return (
            (self.cluster is None or self.cluster == cluster)
            and (self.pools is None or pool.name in self.pools)
            and labels_match(self.match_labels, pool.node_labels)
        )


@dataclass(frozen=True)
class Stage:
    index: int
    name: str
    phase: str
    planned: date
    minimum_soak: timedelta
    approvers: tuple[str, ...]
    selectors: tuple[Selector, ...]
    started: datetime | None = None
    completed: datetime | None = None
    approved_by: str = ""
    description: str = ""
    two_person: bool = False  # two distinct verified signers, one of them the stage's approver
    promoted_by: str = ""

    @property
    def state(self) -> str:
        if self.completed:
            return "done"
        return "in progress" if self.started else "pending"

    @property
    def path(self) -> tuple:
        return ("spec", "stages", self.index)


@dataclass(frozen=True)
class RollbackCriteria:
    silent_alerts: tuple[str, ...] = ()
    max_failed_pods: int | None = None
    max_xid_errors: int | None = None
    window: timedelta | None = None

    def describe(self) -> list[str]:
        lines = []
        if self.silent_alerts:
            lines.append("alerts stay silent: " + ", ".join(self.silent_alerts))
        if self.max_failed_pods is not None:
            lines.append(f"at most {self.max_failed_pods} failed GPU pod(s) on the stage's nodes")
        if self.max_xid_errors is not None:
            lines.append(f"at most {self.max_xid_errors} XID error(s) on the stage's GPUs")
        if self.window is not None:
            lines.append(f"measured over {format_duration(self.window)} windows during the soak")
        return lines


@dataclass(frozen=True)
class Plan:
    name: str
    path: str
    component: str  # driver | gpu-operator
    from_version: str
    to_version: str
    stages: tuple[Stage, ...]
    rollback_target: str
    criteria: RollbackCriteria
    description: str = ""
    owner: str = ""
    document: Document | None = field(default=None, compare=False, repr=False)

    def locate(self, *path: Any) -> Location:
        return Location(self.path, self.document.line_of(tuple(path)) if self.document else 0)

    def locate_stage(self, stage: Stage, *path: Any) -> Location:
        return self.locate(*stage.path, *path)

    @property
    def finished(self) -> bool:
        """Every stage done: the plan is history and no longer constrains the repository."""
        return all(stage.completed for stage in self.stages)

    def current_stage(self) -> Stage | None:
        """The last promoted stage (started), or None before the first promote."""
        started = [s for s in self.stages if s.started]
        return started[-1] if started else None

    def next_stage(self) -> Stage | None:
        return next((s for s in self.stages if not s.started), None)


@dataclass(frozen=True)
class CudaNeed:
    team: str
    version: str
    reason: str
    location: Location


@dataclass(frozen=True)
class Requirements:
    minimum_soak: dict[str, timedelta]
    cuda: tuple[CudaNeed, ...] = ()
    path: str = ""
    document: Document | None = field(default=None, compare=False, repr=False)

    def locate(self, *path: Any) -> Location:
        return Location(self.path, self.document.line_of(tuple(path)) if self.document else 0)

    def needs_of(self, team: str) -> list[CudaNeed]:
        return [need for need in self.cuda if need.team == team]


@dataclass(frozen=True)
class Problem:
    """A plan or requirements file that cannot be used as written (reported by UPG001)."""

    message: str
    location: Location
    hint: str = ""


@dataclass(frozen=True)
class Person:
    name: str
    emails: tuple[str, ...]
    handles: tuple[str, ...] = ()
    signing_keys: tuple[str, ...] = ()  # SSH public keys whose signatures are this person's approvals


@dataclass(frozen=True)
class Approvers:
    """policies/upgrades/approvers.yaml: people (name -> git emails, forge handles) and groups of them."""

    people: dict[str, Person]
    groups: dict[str, tuple[str, ...]]
    path: str = ""
    document: Document | None = field(default=None, compare=False, repr=False)

    def locate(self, *path: Any) -> Location:
        return Location(self.path, self.document.line_of(tuple(path)) if self.document else 0)

    def members(self, name: str) -> tuple[str, ...]:
        """The people a stage approver entry stands for: a group's members, or the person; () when unknown."""
        if name in self.groups:
            return self.groups[name]
        return (name,) if name in self.people else ()


@dataclass
class PlanSet:
    plans: list[Plan] = field(default_factory=list)
    requirements: Requirements = field(default_factory=lambda: Requirements(dict(DEFAULT_MINIMUM_SOAK)))
    problems: list[Problem] = field(default_factory=list)
    approvers: Approvers | None = None

    def plan(self, name_or_path: str) -> Plan | None:
        wanted = name_or_path.rstrip("/")
        for plan in self.plans:
            if (
                wanted in (plan.name, plan.path)
                or wanted.endswith("/" + plan.path)
                or wanted == plan.path.rsplit("/", 1)[-1]
                or wanted == plan.path.rsplit("/", 1)[-1][:-5]
            ):
                return plan
        return None

    def minimum_soak(self, phase: str) -> timedelta:
        return self.requirements.minimum_soak.get(phase, DEFAULT_MINIMUM_SOAK[phase])

    def effective_soak(self, stage: Stage) -> timedelta:
        return max(stage.minimum_soak, self.minimum_soak(stage.phase))


# --- loading
# -------------------------------------------------------------------------------------------------


def plans_of(fleet: Fleet) -> PlanSet:
    """The plans and requirements of the fleet's repository (parsed once per fleet)."""
    return fleet.memo("upgrade-plans", lambda: load_plans(fleet.documents))


def load_plans(documents: list[Document]) -> PlanSet:
    result = PlanSet()
    requirement_docs: list[Document] = []
    for doc in sorted(documents, key=lambda d: (d.path, d.index)):
        if not doc.path.startswith(PLAN_DIR + "/"):
            continue
        data = doc.data
        kind = data.get("kind") if isinstance(data, dict) else None
        if (
            not isinstance(data, dict)
            or data.get("apiVersion") != API_VERSION
            or kind not in (PLAN_KIND, REQUIREMENTS_KIND, APPROVERS_KIND)
        ):
            result.problems.append(
                Problem(
                    f"{PLAN_DIR}/ holds only apiVersion {API_VERSION} {PLAN_KIND}, {REQUIREMENTS_KIND} or "
                    f"{APPROVERS_KIND} documents",
                    Location(doc.path, doc.line),
                    "move other files out of policies/upgrades/",
                )
            )
            continue
        errors = validate_repo_file("plan", data)
        for error in errors:
            result.problems.append(
                Problem(
                    f"{kind}: {error.message}",
                    Location(doc.path, doc.line_of(error.path)),
                    "see policies/upgrades/README.md for the format",
                )
            )
        if errors:
            continue
        if kind == REQUIREMENTS_KIND:
            requirement_docs.append(doc)
            continue
        if kind == APPROVERS_KIND:
            _add_approvers(result, doc)
            continue
        plan, problems = _plan_from(doc)
        result.problems.extend(problems)
        if plan is not None:
            result.plans.append(plan)
    if len(requirement_docs) > 1:
        for doc in requirement_docs[1:]:
            result.problems.append(
                Problem(
                    f"more than one {REQUIREMENTS_KIND} document (the first is "
                    f"{requirement_docs[0].path}); this one is ignored",
                    Location(doc.path, doc.line),
                )
            )
    if requirement_docs:
        result.requirements = _requirements_from(requirement_docs[0])
    _check_names(result)
    return result


def _add_approvers(result: PlanSet, doc: Document) -> None:
    if result.approvers is not None:
        result.problems.append(
            Problem(
                f"more than one {APPROVERS_KIND} document (the first is "
                f"{result.approvers.path}); this one is ignored",
                Location(doc.path, doc.line),
            )
        )
        return
    spec = doc.data["spec"]
    people = {
        name: Person(
            name, tuple(raw["emails"]), tuple(raw.get("handles") or ()), tuple(raw.get("signingKeys") or ())
        )
        for name, raw in spec["people"].items()
    }
    groups = {name: tuple(members) for name, members in (spec.get("groups") or {}).items()}
    for group, members in groups.items():
        if group in people:
            result.problems.append(
                Problem(
                    f"{group} is both a person and a group",
                    Location(doc.path, doc.line_of(("spec", "groups", group))),
                )
            )
        for index, member in enumerate(members):
            if member not in people:
                result.problems.append(
                    Problem(
                        f"group {group}: {member} is not one of the people",
                        Location(doc.path, doc.line_of(("spec", "groups", group, index))),
                        "groups list people only; add the person under spec.people",
                    )
                )
    claimed: dict[str, str] = {}
    for person in people.values():
        for index, email in enumerate(person.emails):
            owner = claimed.setdefault(email.lower(), person.name)
            if owner != person.name:
                result.problems.append(
                    Problem(
                        f"{email} belongs to both {owner} and {person.name}",
                        Location(doc.path, doc.line_of(("spec", "people", person.name, "emails", index))),
                    )
                )
    result.approvers = Approvers(people, groups, doc.path, doc)


def _check_names(result: PlanSet) -> None:
    seen: dict[str, Plan] = {}
    for plan in result.plans:
        if plan.name in seen:
            result.problems.append(
                Problem(
                    f"plan name {plan.name} is also used by {seen[plan.name].path}",
                    plan.locate("metadata", "name"),
                )
            )
        seen.setdefault(plan.name, plan)


def _plan_from(doc: Document) -> tuple[Plan | None, list[Problem]]:
    data = doc.data
    spec = data["spec"]
    metadata = data["metadata"]

    def where(*path: Any) -> Location:
        return Location(doc.path, doc.line_of(tuple(path)))

    problems = _unreadable_times(spec, where)
    if problems:
        return None, problems
    stages = tuple(_stage_from(i, raw) for i, raw in enumerate(spec["stages"]))
    plan = Plan(
        name=metadata["name"],
        path=doc.path,
        component=spec["component"],
        from_version=str(spec["from"]),
        to_version=str(spec["to"]),
        stages=stages,
        rollback_target=str(spec["rollback"]["target"]),
        criteria=_criteria_from(spec["rollback"]["criteria"]),
        description=metadata.get("description", ""),
        owner=spec.get("owner", ""),
        document=doc,
    )
    problems += _version_problems(plan, where)
    problems += _stage_problems(plan, where)
    return (None if problems else plan), problems


def _unreadable_times(spec: dict, where: Callable[..., Location]) -> list[Problem]:
    """Dates, timestamps and durations that match the schema's patterns but that the calendar or timedelta
    cannot hold (2026-02-30, 99999999999d): problems at their lines, found before the plan is built on
    them."""
    fields: list[tuple[tuple, Any, Callable[[str], Any]]] = []
    for i, raw in enumerate(spec["stages"]):
        fields += [
            (("spec", "stages", i, name), raw[name], parse) for name, parse in _STAGE_TIMES if raw.get(name)
        ]
    window = spec["rollback"]["criteria"].get("window")
    if window:
        fields.append((("spec", "rollback", "criteria", "window"), window, parse_duration))
    problems = []
    for path, value, parse in fields:
        try:
            parse(value)
        except ValueError as exc:
            problems.append(Problem(str(exc), where(*path)))
    return problems


_STAGE_TIMES = (
    ("planned", parse_date),
    ("minimumSoak", parse_duration),
    ("started", parse_timestamp),
    ("completed", parse_timestamp),
)


def _stage_from(index: int, raw: dict) -> Stage:
    selectors = tuple(
        Selector(
            cluster=s.get("cluster"),
            pools=tuple(s["pools"]) if "pools" in s else None,
            match_labels=dict(s.get("matchLabels") or {}),
            index=i,
        )
        for i, s in enumerate(raw["select"])
    )
    return Stage(
        index=index,
        name=raw["name"],
        phase=raw["phase"],
        planned=parse_date(raw["planned"]),
        minimum_soak=parse_duration(raw["minimumSoak"]),
        approvers=tuple(raw["approvers"]),
        selectors=selectors,
        started=_maybe_time(raw.get("started")),
        completed=_maybe_time(raw.get("completed")),
        approved_by=raw.get("approvedBy", ""),
        promoted_by=raw.get("promotedBy", ""),
        description=raw.get("description", ""),
        two_person=raw.get("twoPersonApproval") is True,
    )


def _maybe_time(value: Any) -> datetime | None:
    return parse_timestamp(value) if value else None


def _criteria_from(raw: dict) -> RollbackCriteria:
    return RollbackCriteria(
        silent_alerts=tuple(raw.get("silentAlerts") or ()),
        max_failed_pods=raw.get("maxFailedPods"),
        max_xid_errors=raw.get("maxXidErrors"),
        window=parse_duration(raw["window"]) if raw.get("window") else None,
    )


def _version_problems(plan: Plan, where: Any) -> list[Problem]:
    problems = []
    driver = plan.component == "driver"
    for key, value in (("from", plan.from_version), ("to", plan.to_version)):
        if driver and value.startswith("v"):
            problems.append(Problem(f"a driver version has no 'v' prefix: {value}", where("spec", key)))
        if not driver and not re.fullmatch(r"v\d+\.\d+\.\d+", value):
            problems.append(
                Problem(f"a GPU Operator chart version looks like v26.7.0, not {value}", where("spec", key))
            )
    if plan.from_version == plan.to_version:
        problems.append(
            Problem(
                f"from and to are the same version ({plan.to_version}): nothing to roll out",
                where("spec", "to"),
            )
        )
    return problems


def _stage_problems(plan: Plan, where: Any) -> list[Problem]:
    problems = []
    names: set[str] = set()
    for stage in plan.stages:
        if stage.name in names:
            problems.append(Problem(f"stage name {stage.name} is used twice", where(*stage.path, "name")))
        names.add(stage.name)
        if plan.component == "gpu-operator":
            for selector in stage.selectors:
                if selector.pools is not None or selector.match_labels or not selector.cluster:
                    problems.append(
                        Problem(
                            f"stage {stage.name}: a gpu-operator plan selects whole clusters "
                            "(`cluster:` only)",
                            where(*stage.path, "select", selector.index),
                        )
                    )
        if stage.completed and stage.started and stage.completed < stage.started:
            problems.append(
                Problem(f"stage {stage.name} completed before it started", where(*stage.path, "completed"))
            )
    problems += _record_order_problems(plan, where)
    return problems


def _record_order_problems(plan: Plan, where: Any) -> list[Problem]:
    """Stages are promoted in order: a started stage follows only completed ones."""
    problems = []
    for earlier, later in zip(plan.stages, plan.stages[1:], strict=False):
        if later.started and not earlier.completed:
            problems.append(
                Problem(
                    f"stage {later.name} started but the stage before it ({earlier.name}) is not completed",
                    where(*later.path, "started"),
                    "record `completed` on the earlier stage, or remove `started`",
                )
            )
        if later.started and earlier.completed and later.started < earlier.completed:
            problems.append(
                Problem(
                    f"stage {later.name} started before stage {earlier.name} completed",
                    where(*later.path, "started"),
                )
            )
    return problems


def _requirements_from(doc: Document) -> Requirements:
    spec = doc.data.get("spec") or {}
    soak = dict(DEFAULT_MINIMUM_SOAK)
    soak.update({phase: parse_duration(text) for phase, text in (spec.get("minimumSoak") or {}).items()})
    needs = tuple(
        CudaNeed(
            team,
            str(item["version"]),
            item.get("reason", ""),
            Location(doc.path, doc.line_of(("spec", "cuda", team, i, "version"))),
        )
        for team, items in (spec.get("cuda") or {}).items()
        for i, item in enumerate(items)
    )
    return Requirements(minimum_soak=soak, cuda=needs, path=doc.path, document=doc)


# --- what a stage takes
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Unit:
    """One thing a plan upgrades: a pool (driver plans, `pool` set) or a cluster (gpu-operator plans)."""

    cluster: str
    pool_name: str = ""
    pool: Pool | None = field(default=None, compare=False, hash=False)

    @property
    def label(self) -> str:
        return f"{self.cluster}/{self.pool_name}" if self.pool_name else self.cluster


def node_labels(pool: Pool) -> dict[str, str]:
    """The labels every node of the pool carries, as far as the repository knows them."""
    return {GPU_PRESENT_LABEL: "true", **pool.node_labels}


def is_default(driver: NvidiaDriver) -> bool:
    return driver.obj.spec.get("default") is True


def selects(driver: NvidiaDriver, pool: Pool) -> bool:
    selector = driver.node_selector or {GPU_PRESENT_LABEL: "true"}
    labels = node_labels(pool)
    return labels_match(selector, labels)


def drivers_of_pool(cluster: Cluster, pool: Pool) -> list[NvidiaDriver]:
    """The NVIDIADriver objects that own the pool's nodes: non-default ones take precedence (GPU Operator
    26.7)."""
    matching = [d for d in cluster.nvidia_drivers if selects(d, pool)]
    specific = [d for d in matching if not is_default(d)]
    return specific or matching


def driver_units(fleet: Fleet) -> list[Unit]:
    """Every pool that runs a driver from an NVIDIADriver object, in cluster order."""
    return [
        Unit(name, pool.name, pool)
        for name, cluster in sorted(fleet.clusters.items())
        for pool in cluster.pools
        if drivers_of_pool(cluster, pool)
    ]


def all_units(fleet: Fleet, plan: Plan) -> list[Unit]:
    if plan.component == "driver":
        return driver_units(fleet)
    return [Unit(name) for name in sorted(fleet.clusters)]


def selector_units(fleet: Fleet, plan: Plan, selector: Selector) -> list[Unit]:
    if plan.component == "gpu-operator":
        return [Unit(selector.cluster)] if selector.cluster in fleet.clusters else []
    return [unit for unit in driver_units(fleet) if selector.takes_pool(unit.cluster, unit.pool)]


def clusters_by_stage(fleet: Fleet, plan: Plan) -> Iterator[tuple[Stage, str]]:
    """(stage, cluster) for every cluster the plan's stages take, each cluster once, in stage order (the
    checks
    that depend on a cluster's facts, not on its pools: its operator release and the drivers it lists)."""
    seen: set[str] = set()
    for stage in plan.stages:
        for unit in stage_units(fleet, plan, stage):
            if unit.cluster not in seen:
                seen.add(unit.cluster)
                yield stage, unit.cluster


def stage_units(fleet: Fleet, plan: Plan, stage: Stage) -> list[Unit]:
    """The units a stage takes, each once, in selector order."""
    taken: list[Unit] = []
    for selector in stage.selectors:
        taken += [unit for unit in selector_units(fleet, plan, selector) if unit not in taken]
    return taken


def repository_clusters(fleet: Fleet) -> set[str]:
    """Every cluster of the repository, loaded or not (`validate --cluster` loads a subset)."""
    return set(fleet.repository_clusters)


def selector_fully_loaded(fleet: Fleet, selector: Selector) -> bool:
    """Whether every cluster the selector could take is in this (possibly partial) fleet."""
    if selector.cluster:
        return selector.cluster in fleet.clusters
    return repository_clusters(fleet) <= set(fleet.clusters)


def environment_of(fleet: Fleet, unit: Unit) -> str:
    cluster = fleet.clusters.get(unit.cluster)
    return cluster.facts.environment if cluster else ""


# --- versions the repository declares
# ------------------------------------------------------------------------


def unit_version(fleet: Fleet, plan: Plan, unit: Unit) -> str | None:
    """The version the repository runs for a unit now: the NVIDIADriver's spec.version, or the cluster's
    gpuOperatorVersion. None when several drivers disagree or none exists."""
    cluster = fleet.clusters[unit.cluster]
    if plan.component == "gpu-operator":
        return cluster.facts.gpu_operator_version or None
    versions = {d.version for d in drivers_of_pool(cluster, unit.pool)}
    return versions.pop() if len(versions) == 1 else None


def expected_version(plan: Plan, stage: Stage) -> str:
    """A promoted stage (started) runs the target; a stage not yet promoted runs the source."""
    return plan.to_version if stage.started else plan.from_version


def unit_location(fleet: Fleet, plan: Plan, unit: Unit) -> Location:
    cluster = fleet.clusters[unit.cluster]
    if plan.component == "gpu-operator":
        return fleet.locate_file(cluster.facts.path, "spec", "gpuOperatorVersion")
    drivers = drivers_of_pool(cluster, unit.pool)
    if drivers:
        return fleet.locate(drivers[0].obj, "spec", "version") or Location(drivers[0].obj.origin, 0)
    return Location(unit.pool.path, 0)


# --- the GPU Operator chart each cluster installs
# -------------------------------------------------------------

OPERATOR_CHART = "gpu-operator"
# clusters/<name>/: the JSON patch that pins the cluster's chart version
CHART_PIN_FILE = "gpu-operator-chart.yaml"


@dataclass(frozen=True)
class ChartInstall:
    """A rendered object that installs the GPU Operator chart: a Flux HelmRelease or an Argo CD
    Application."""

    obj: K8sObject
    version: str
    field_path: tuple  # where the version sits in the object (JSON patch path = "/" + "/".join)

    @property
    def patch_path(self) -> str:
        return "/" + "/".join(str(part) for part in self.field_path)


def chart_installs(cluster: Cluster) -> list[ChartInstall]:
    """Every GPU Operator chart install the cluster renders, with the chart version it asks for."""
    installs = []
    for obj in cluster.of_kind("HelmRelease", "helm.toolkit.fluxcd.io"):
        chart = _mapping(_mapping(obj.spec.get("chart")).get("spec"))
        if chart.get("chart") == OPERATOR_CHART:
            installs.append(
                ChartInstall(obj, str(chart.get("version", "")), ("spec", "chart", "spec", "version"))
            )
    for obj in cluster.of_kind("Application", "argoproj.io"):
        sources = obj.spec.get("sources") if isinstance(obj.spec.get("sources"), list) else []
        for index, source in enumerate(sources):
            if isinstance(source, dict) and source.get("chart") == OPERATOR_CHART:
                installs.append(
                    ChartInstall(
                        obj,
                        str(source.get("targetRevision", "")),
                        ("spec", "sources", index, "targetRevision"),
                    )
                )
        source = _mapping(obj.spec.get("source"))
        if source.get("chart") == OPERATOR_CHART:
            installs.append(
                ChartInstall(obj, str(source.get("targetRevision", "")), ("spec", "source", "targetRevision"))
            )
    return installs


def _mapping(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def chart_pin_path(cluster: Cluster) -> str:
    return f"clusters/{cluster.name}/{CHART_PIN_FILE}"


# --- teams and CUDA
# ------------------------------------------------------------------------------------------


def teams_on_pool(cluster: Cluster, pool: Pool) -> list[str]:
    """The owning team, and every team whose ClusterQueue may admit work (nominal or borrowing > 0) there."""
    teams = {pool.team} if pool.team else set()
    for queue in cluster.cluster_queues.values():
        if not queue.team:
            continue
        for group in queue.resource_groups:
            for flavor_quotas in group.flavors:
                flavor = cluster.flavors.get(flavor_quotas.flavor)
                if flavor is None or pool not in cluster.pools_of_flavor(flavor):
                    continue
                if any(
                    is_nvidia_resource(q.name) and ((q.nominal or 0) > 0 or (q.borrowing_limit or 0) > 0)
                    for q in flavor_quotas.resources
                ):
                    teams.add(queue.team)
    return sorted(teams)


# --- capacity while a stage drains
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DrainMoment:
    """The worst moment of a pool's upgrade: how many nodes are out at once, and what production still has."""

    cluster: str
    pool: Pool
    nodes_down: int
    # "NVIDIADriver <name>[ (CRD defaults)]", "ClusterPolicy driver.upgradePolicy", "CRD defaults"
    policy_source: str
    auto_upgrade: bool
    online: dict[str, int]  # resource -> devices left online at the worst moment
    production_need: dict[str, float]  # resource -> production queues' nominal quota on the pool
    stalls: bool = False  # maxUnavailable resolves to 0: the operator never takes a node
    # False for a MIG pool whose layout is missing from the mig-parted config: it exposes nothing we can
    # count, so there is no shortfall to report (MIG004 names the layout)
    capacity_known: bool = True

    @property
    def shortfalls(self) -> dict[str, tuple[int, float]]:
        if not self.capacity_known:
            return {}
        return {
            name: (self.online.get(name, 0), need)
            for name, need in self.production_need.items()
            if self.online.get(name, 0) < need
        }

    def describe(self) -> str:
        gpus_left = self.pool.gpus_per_node * (self.pool.nodes - self.nodes_down)
        text = (
            f"{self.nodes_down} of {self.pool.nodes} node(s) out at once, {gpus_left} of "
            f"{self.pool.gpus} GPUs online"
        )
        needs = ", ".join(f"{number(need)} {name}" for name, need in sorted(self.production_need.items()))
        if needs and not self.capacity_known:
            text += (
                f"; production needs {needs}, and what the pool exposes is unknown (MIG layout "
                f"{self.pool.mig_layout} is not in the cluster's mig-parted config)"
            )
        elif needs:
            left = ", ".join(f"{self.online.get(name, 0)} {name}" for name in sorted(self.production_need))
            text += f"; production needs {needs}, has {left}"
        return text


# NVIDIADriver `spec.upgradePolicy` when unset (NVIDIA/gpu-operator api/nvidia/v1alpha1/nvidiadriver_types.go,
# `GetUpgradePolicyWithDefaults` / `getDefaultUpgradePolicySpec`, v26.7.0).
NVIDIADRIVER_DEFAULT_POLICY = {"autoUpgrade": True, "maxParallelUpgrades": 1, "maxUnavailable": "25%"}


def uses_nvidia_driver_crd(cluster: Cluster) -> bool:
    """Driver upgrades are reconciled per NVIDIADriver: no ClusterPolicy, or its `driver.useNvidiaDriverCRD`
    (chart value `driver.nvidiaDriverCRD.enabled`; default false) is true (upgrade_controller.go `Reconcile`:
    `clusterPolicy == nil || clusterPolicy.Spec.Driver.UseNvidiaDriverCRDType()`)."""
    if cluster.cluster_policy is None:
        return True
    policy = cluster.cluster_policy.spec
    driver = policy.get("driver") if isinstance(policy.get("driver"), dict) else {}
    return driver.get("useNvidiaDriverCRD") is True


def upgrade_policy(cluster: Cluster, driver: NvidiaDriver | None) -> tuple[dict, str]:
    """The driver upgrade policy in force for a pool.

    With the NVIDIADriver CRD on (`driver.useNvidiaDriverCRD`), the operator's upgrade controller reconciles
    each NVIDIADriver with its own `spec.upgradePolicy` (defaults when unset) and never reads the
    ClusterPolicy's `driver.upgradePolicy` (NVIDIA/gpu-operator controllers/upgrade_controller.go, `Reconcile`
    -> `reconcileNVIDIADriverUpgrades`, v26.7.0). With it off, only the ClusterPolicy's `driver.upgradePolicy`
    counts (`reconcileClusterPolicyDriverUpgrades`; nothing when unset: autoUpgrade false)."""
    if uses_nvidia_driver_crd(cluster):
        if driver is not None and driver.upgrade_policy:
            return driver.upgrade_policy, f"NVIDIADriver {driver.name}"
        if driver is not None:
            return dict(NVIDIADRIVER_DEFAULT_POLICY), f"NVIDIADriver {driver.name} (CRD defaults)"
        return {}, "no NVIDIADriver selects the pool"
    policy = cluster.cluster_policy.spec if cluster.cluster_policy else {}
    values = (
        (policy.get("driver") or {}).get("upgradePolicy") if isinstance(policy.get("driver"), dict) else None
    )
    if isinstance(values, dict) and values:
        return values, "ClusterPolicy driver.upgradePolicy"
    return {}, "CRD defaults"


def resolve_max_unavailable(value: Any, nodes: int) -> int:
    """`maxUnavailable` as a node count: an integer, or a percentage of the nodes rounded up (the upgrade
    controller scales percentages with round-up; ../shared/reference/gpu-operator.md section 1.4)."""
    if value is None:
        value = "25%"  # CRD default
    text = str(value).strip()
    if text.endswith("%"):
        return math.ceil(float(text[:-1]) * nodes / 100)
    return int(float(text))


def nodes_down_at_once(policy: dict, nodes_in_scope: int, pool_nodes: int) -> tuple[int, bool]:
    """(nodes of the pool out at once, the upgrade stalls). `maxParallelUpgrades` 0 means unlimited;
    `maxUnavailable` also caps parallelism and counts already cordoned nodes."""
    if not policy.get("autoUpgrade", False):
        # The operator does not orchestrate: nodes move one at a time as someone restarts their driver pods.
        return min(1, pool_nodes), False
    parallel = int(policy.get("maxParallelUpgrades", 1) or 0)
    unavailable = resolve_max_unavailable(policy.get("maxUnavailable"), nodes_in_scope)
    limit = min(parallel, unavailable) if parallel > 0 else unavailable
    return min(max(limit, 0), pool_nodes), limit <= 0


def production_need(cluster: Cluster, pool: Pool) -> dict[str, float]:
    """Nominal quota of production-tier ClusterQueues on the flavors that select this pool, per GPU
    resource."""
    need: dict[str, float] = {}
    for entry in quotas.quota_entries(cluster):
        queue = cluster.cluster_queues.get(entry.owner) if entry.kind == "ClusterQueue" else None
        if queue is None or queue.tier != PRODUCTION_TIER or not is_nvidia_resource(entry.quota.name):
            continue
        if entry.quota.nominal and quotas.pool_of(cluster, entry.flavor) == pool:
            need[entry.quota.name] = need.get(entry.quota.name, 0) + entry.quota.nominal
    return need


def drain_moments(fleet: Fleet, plan: Plan, stage: Stage) -> list[DrainMoment]:
    """The worst moment of every pool of a driver stage."""
    if plan.component != "driver":
        return []
    units = stage_units(fleet, plan, stage)
    moments = []
    for unit in units:
        cluster = fleet.clusters[unit.cluster]
        drivers = drivers_of_pool(cluster, unit.pool)
        driver = drivers[0] if drivers else None
        policy, source = upgrade_policy(cluster, driver)
        if driver is not None and uses_nvidia_driver_crd(cluster):  # each NVIDIADriver has its own budget
            scope = sum(
                u.pool.nodes
                for u in units
                if u.cluster == unit.cluster and driver in drivers_of_pool(cluster, u.pool)
            )
        else:  # a cluster-wide policy spreads its budget over every node the stage upgrades in the cluster
            scope = sum(u.pool.nodes for u in units if u.cluster == unit.cluster)
        down, stalls = nodes_down_at_once(policy, scope, unit.pool.nodes)
        moments.append(
            DrainMoment(
                unit.cluster,
                unit.pool,
                down,
                source,
                bool(policy.get("autoUpgrade", False)),
                unit.pool.capacity_without(down),
                production_need(cluster, unit.pool),
                stalls,
                quotas.capacity_known(cluster, unit.pool),
            )
        )
    return moments


# --- status
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UnitStatus:
    unit: Unit
    version: str | None
    expected: str
    gpus: int

    @property
    def agrees(self) -> bool:
        return self.version == self.expected


@dataclass(frozen=True)
class StageStatus:
    stage: Stage
    units: tuple[UnitStatus, ...]
    soak_required: timedelta
    soak_elapsed: timedelta | None  # None before the stage starts

    @property
    def soak_remaining(self) -> timedelta | None:
        if self.soak_elapsed is None:
            return None
        return max(self.soak_required - self.soak_elapsed, timedelta(0))

    @property
    def soaked(self) -> bool:
        return self.soak_remaining is not None and self.soak_remaining == timedelta(0)

    @property
    def gpus(self) -> int:
        return sum(u.gpus for u in self.units)


def stage_status(fleet: Fleet, plans: PlanSet, plan: Plan, now: datetime) -> list[StageStatus]:
    statuses = []
    for stage in plan.stages:
        units = tuple(
            UnitStatus(
                unit, unit_version(fleet, plan, unit), expected_version(plan, stage), unit_gpus(fleet, unit)
            )
            for unit in stage_units(fleet, plan, stage)
        )
        elapsed = None
        if stage.started:
            end = stage.completed or now
            elapsed = end - stage.started
        statuses.append(StageStatus(stage, units, plans.effective_soak(stage), elapsed))
    return statuses


def unit_gpus(fleet: Fleet, unit: Unit) -> int:
    if unit.pool is not None:
        return unit.pool.gpus
    cluster = fleet.clusters.get(unit.cluster)
    return sum(pool.gpus for pool in cluster.pools) if cluster else 0


def soak_blocker(plans: PlanSet, plan: Plan, now: datetime) -> str | None:
    """Why the current stage may not be left yet, or None when it has soaked (or nothing started)."""
    stage = plan.current_stage()
    if stage is None or stage.completed:
        return None
    required = plans.effective_soak(stage)
    elapsed = now - stage.started
    if elapsed < timedelta(0):
        return f"stage {stage.name} is recorded as started in the future ({format_timestamp(stage.started)})"
    if elapsed < required:
        return (
            f"stage {stage.name} has soaked {format_duration(elapsed)} of {format_duration(required)} "
            f"(since {format_timestamp(stage.started)}); {format_duration(required - elapsed)} to go"
        )
    return None


# --- compatibility facts (shared by the rules and the status page)
# -------------------------------------------


def gpu_support_problems(driver_version: str, pool: Pool, kernel_module_type: str = "auto") -> list[str]:
    """Why `driver_version` cannot run the pool's GPUs (architecture minimum, MIG minimum, open modules)."""
    try:
        model = catalog.gpu(pool.gpu_model)
    except KeyError:
        return []  # an unknown model is reported by the pool rules
    problems = []
    if not catalog.driver_at_least(driver_version, model.min_driver):
        problems.append(f"{model.key} ({model.architecture}) needs driver {model.min_driver} or newer")
    if pool.mig_layout:
        if model.min_mig_driver is None:
            problems.append(f"{model.key} has no MIG")
        elif not catalog.driver_at_least(driver_version, model.min_mig_driver):
            problems.append(f"MIG on {model.key} needs driver {model.min_mig_driver} or newer")
    if model.architecture == "blackwell" and kernel_module_type == "proprietary":
        problems.append(
            f"{model.key} (Blackwell) runs only the open kernel modules; kernelModuleType is proprietary"
        )
    return problems


def cuda_problems(driver_version: str, needs: list[CudaNeed]) -> Iterator[tuple[CudaNeed, str]]:
    for need in needs:
        minimum = catalog.min_driver_for_cuda(need.version)
        if minimum is None:
            yield need, f"CUDA {need.version} is not in the CUDA-to-driver table"
        elif not catalog.driver_at_least(driver_version, minimum):
            yield need, f"CUDA {need.version} needs driver {minimum} or newer"


def now_utc() -> datetime:
    return datetime.now(UTC)
