"""Reviewed exceptions: a finding accepted for a stated reason, by an owner, until a date.

Two forms, one set of terms (`reason`, `owner`, `expires`; schema `schemas/repo/exceptions.yaml`):
- `policies/exceptions.yaml` lists exceptions, each for one rule and one selector: `path`, a glob over the
  findings' files (`*` within a folder, `**` across folders), or `object` (kind, name, optional namespace),
  whose findings are those in the object's source document; `cluster` narrows either to one cluster;
- an object's annotation `exception.gpupolicy.io/<RULE>: '{reason: ..., owner: ..., expires: YYYY-MM-DD}'`
  accepts that rule's findings in the object's own source document.

An exception that lacks a term or names no known rule is itself an error (EXC001) and accepts nothing; an
expired one fails the build (EXC002) and accepts nothing; one that accepts nothing in a run over every cluster
is stale (EXC003). Accepted findings are not dropped: the run keeps them as `waived`, which every output
counts and `--show-waived`, JSON and SARIF (`suppressions`) show. The reasons are in decision 0033.

Bounds (decision 0062): no exception, in the file or inline, is for a protected rule (`protection`: a crash,
the CFG and EXC rules, the security rules), EXC001; and each must be bounded (EXC004): a `path` that names a
concrete top-level folder and one more literal part, with at most one `**` (`bounded_glob_problem`), an expiry
at most MAX_EXPIRY_DAYS away, and an `owner` that CODEOWNERS names for the exceptions file. With a base
revision (`guardrails`) the file and CODEOWNERS are the base's, and an annotation the base does not have is
`pending`: a guardrail change (CFG003) that accepts nothing until merged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from functools import cache
from typing import Any

from ..findings import Finding, Location
from ..infra import codeowners
from ..infra.schema.check import validate_repo_file
from ..infra.yamlload import load_text
from ..model import Fleet, K8sObject
from . import protection

EXCEPTIONS_FILE = "policies/exceptions.yaml"
ANNOTATION_PREFIX = "exception.gpupolicy.io/"
API_VERSION, KIND = "gpupolicy/v1", "Exceptions"
# An exception comes back for review within a quarter: long enough for the usual reason (hardware on order, a
# chart release), short enough that a forgotten one fails the build before the next planning cycle. Decision
# 0062.
MAX_EXPIRY_DAYS = 90
MAX_ANNOTATION_CHARS = 4000  # an exception's terms fit easily; a larger value is refused before parsing


def today() -> date:
    return datetime.now(UTC).date()


@dataclass(frozen=True)
class Waiver:
    """One reviewed exception: its terms, where it is written, and what it selects."""

    rule: str
    reason: str
    owner: str
    expires: date
    source: Location  # the exception's entry in policies/exceptions.yaml, or the object's annotation
    path_glob: str = ""
    object_ref: str = ""  # "Kind namespace/name" for an object selector or an annotation
    cluster: str = ""
    inline: bool = False
    spans: tuple[tuple[str, int, int, str], ...] = ()  # (file, first line, last line, cluster) of the objects

    @property
    def selector(self) -> str:
        what = f"path {self.path_glob}" if self.path_glob else f"object {self.object_ref}"
        return what + (f" in {self.cluster}" if self.cluster else "")

    def expired(self, on: date) -> bool:
        return on > self.expires  # it holds through its expiry day

    def covers(self, finding: Finding) -> bool:
        """Whether this exception accepts `finding` (a finding of one cluster, or of none)."""
        if finding.rule != self.rule:
            return False
        if self.cluster and finding.cluster != self.cluster:
            return False
        if self.path_glob:
            return glob_pattern(self.path_glob).fullmatch(finding.path) is not None
        return any(
            path == finding.path and first <= finding.line <= last and cluster in ("", finding.cluster)
            for path, first, last, cluster in self.spans
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "selector": self.selector,
            "reason": self.reason,
            "owner": self.owner,
            "expires": self.expires.isoformat(),
            "source": str(self.source),
            "inline": self.inline,
        }


@dataclass(frozen=True)
class Problem:
    """Why an exception accepts nothing (EXC001): where it is written, and what to do."""

    message: str
    location: Location
    hint: str = ""
    bound: bool = False  # a bound broken (EXC004) rather than an incomplete exception (EXC001)


@dataclass
class WaiverSet:
    waivers: list[Waiver] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    # what an exception may name: built-in, plugin and declarative rules
    known_rules: frozenset[str] = frozenset()
    owners: tuple[str, ...] = ()  # who may own an exception: CODEOWNERS' owners of the exceptions file
    owners_file: str = ""  # the CODEOWNERS they were read from ('' when the repository has none)
    pending: list[Waiver] = field(default_factory=list)  # annotations the base lacks (CFG003), not applied


@dataclass(frozen=True)
class Waived:
    """A finding an exception accepts."""

    finding: Finding
    waiver: Waiver

    def as_dict(self) -> dict[str, Any]:
        return {**self.finding.as_dict(), "exception": self.waiver.as_dict()}


def waivers_of(fleet: Fleet) -> WaiverSet:
    """The fleet's exceptions, read once per run."""
    return fleet.memo("waivers", lambda: _read(fleet))


def _read(fleet: Fleet) -> WaiverSet:
    from .. import orgchecks
    from ..configure import guardrails
    from ..rules import all_rules

    installed = set(all_rules())
    owners = guardrails.owners_of(fleet)
    found = WaiverSet(
        known_rules=frozenset(installed | set(orgchecks.of_fleet(fleet, installed).rules)),
        owners=owners.owners_of(EXCEPTIONS_FILE),
        owners_file=owners.path,
    )
    for doc in _exception_documents(fleet, found):
        _read_file(fleet, doc, found)
    _read_annotations(fleet, found, guardrails.base_of(fleet))
    return found


def _exception_documents(fleet: Fleet, found: WaiverSet) -> list:
    """The exceptions file's documents: the head's as loaded, or the base's when the run has a base."""
    from ..configure import guardrails
    from ..infra import repopath
    from ..infra.yamlload import parse_source

    base = guardrails.base_of(fleet)
    if base is None:
        return [doc for doc in fleet.documents if doc.path == EXCEPTIONS_FILE]
    try:
        raw = base.read(EXCEPTIONS_FILE)
    except repopath.Refused as exc:
        found.problems.append(
            Problem(f"cannot read the base's exceptions: {exc}", Location(EXCEPTIONS_FILE, 1))
        )
        return []
    loaded = parse_source(raw, EXCEPTIONS_FILE) if raw is not None else None
    if loaded is not None and loaded.findings:
        found.problems.append(
            Problem(
                f"the base's exceptions do not load: {loaded.findings[0].message}",
                Location(EXCEPTIONS_FILE, loaded.findings[0].line),
            )
        )
        return []
    return loaded.documents if loaded is not None else []


# --- policies/exceptions.yaml
# ----------------------------------------------------------------------------------


def _read_file(fleet: Fleet, doc: Any, found: WaiverSet) -> None:
    if doc.data is None:  # an empty file holds no exceptions
        return
    errors = validate_repo_file("exceptions", doc.data)
    if errors:
        for error in errors:
            found.problems.append(
                Problem(
                    f"exceptions: {error.message}",
                    Location(doc.path, doc.line_of(error.path)),
                    "every exception needs rule, reason, owner and expires (YYYY-MM-DD)",
                )
            )
        return
    for index, entry in enumerate(doc.data["exceptions"]):
        where = Location(doc.path, doc.line_of(("exceptions", index)))
        terms = _terms(entry, where, found)
        selector = _file_selector(fleet, entry, where, found)
        if terms is None or selector is None:
            continue
        glob_problem = bounded_glob_problem(entry["path"]) if "path" in entry else ""
        if glob_problem:
            found.problems.append(
                Problem(
                    f"exception for {terms.rule}: path {entry['path']!r} {glob_problem}",
                    where,
                    _GLOB_HINT,
                    bound=True,
                )
            )
            continue
        found.waivers.append(replace(terms, **selector))


_GLOB_HINT = (
    "name the findings' own files: a concrete top-level folder and one more literal folder or file "
    "name, at most one `**` (clusters/test-us/queues.yaml, clusters/**/queues.yaml)"
)


def bounded_glob_problem(pattern: str) -> str:
    """Why `pattern` selects too much, or '' when it is bounded: its first part is a literal folder name, at
    least one more part is literal, and it holds at most one `**`, only ever as a whole part. So no pattern
    matches a whole top-level folder (`clusters/**`, `clusters/**/*.yaml`) or every folder
    (`*/queues.yaml`)."""
    parts = pattern.split("/")
    literal = [part for part in parts if part and not any(mark in part for mark in "*?")]
    if not parts[0] or any(mark in parts[0] for mark in "*?"):
        return "does not start with a concrete top-level folder"
    if any("**" in part and part != "**" for part in parts):
        return "uses `**` inside a name; `**` may only stand for whole folders"
    if parts.count("**") > 1:
        return "has more than one `**`"
    if len(literal) < 2:
        return "matches a whole top-level folder; name a literal folder or file below it"
    return ""


def _file_selector(fleet: Fleet, entry: dict, where: Location, found: WaiverSet) -> dict | None:
    cluster = entry.get("cluster", "")
    if ("path" in entry) == ("object" in entry):
        found.problems.append(
            Problem(
                f"exception for {entry['rule']}: give exactly one selector, `path` or `object`",
                where,
                "path: a glob over the findings' files; object: {kind, name, namespace}",
            )
        )
        return None
    if "path" in entry:
        return {"path_glob": entry["path"], "cluster": cluster}
    wanted = entry["object"]
    objects = [
        (name, obj)
        for name, c in fleet.clusters.items()
        for obj in c.objects
        if obj.kind == wanted["kind"]
        and obj.name == wanted["name"]
        and obj.namespace == wanted.get("namespace", obj.namespace)
        and cluster in ("", name)
    ]
    ref = f"{wanted['kind']} {wanted['namespace'] + '/' if wanted.get('namespace') else ''}{wanted['name']}"
    return {"object_ref": ref, "cluster": cluster, "spans": _spans(fleet, objects)}


def _spans(fleet: Fleet, objects: Iterable[tuple[str, K8sObject]]) -> tuple[tuple[str, int, int, str], ...]:
    spans = []
    for cluster, obj in objects:
        span = fleet.span(obj)
        if span is not None:
            spans.append((*span, cluster))
    return tuple(sorted(set(spans)))


def _terms(
    entry: dict, where: Location, found: WaiverSet, rule: str = "", inline: bool = False
) -> Waiver | None:
    """The terms as a Waiver without a selector, or None (and a problem) when the rule or the date is wrong
    (EXC001), or the expiry or the owner is out of bounds (EXC004)."""
    rule = rule or entry["rule"]
    problem = _rule_problem(rule, found.known_rules)
    expires = _date(entry["expires"])
    if expires is None:
        problem = problem or f"expires {entry['expires']} is not a date"
    if problem:
        found.problems.append(
            Problem(
                f"exception for {rule}: {problem}",
                where,
                "name a rule of `gpupolicy rules` and a real date (YYYY-MM-DD)",
            )
        )
        return None
    assert expires is not None
    owner = str(entry["owner"]).strip()
    bound = _expiry_problem(expires) or _owner_problem(owner, found)
    if bound:
        found.problems.append(Problem(f"exception for {rule}: {bound[0]}", where, bound[1], bound=True))
        return None
    return Waiver(
        rule=rule,
        reason=str(entry["reason"]).strip(),
        owner=owner,
        expires=expires,
        source=where,
        inline=inline,
    )


def _rule_problem(rule: str, known_rules: frozenset[str]) -> str:
    if rule not in known_rules:
        return f"no rule {rule}"
    if protection.is_protected(rule):
        return f"{rule} cannot be waived ({protection.why(rule)})"
    return ""


def _expiry_problem(expires: date) -> tuple[str, str] | None:
    latest = today() + timedelta(days=MAX_EXPIRY_DAYS)
    if expires <= latest:
        return None
    return (
        f"expires {expires.isoformat()} is more than {MAX_EXPIRY_DAYS} days away (at most "
        f"{latest.isoformat()})",
        "set an expiry within the bound; renew the exception after a fresh review when it is still needed",
    )


def _owner_problem(owner: str, found: WaiverSet) -> tuple[str, str] | None:
    if codeowners.matches(owner, found.owners):
        return None
    if not found.owners:
        where = (
            f"{found.owners_file} names no owner"
            if found.owners_file
            else "the repository has no CODEOWNERS file naming the owners"
        )
        return (
            f"owner {owner!r} cannot be checked: {where} of {EXCEPTIONS_FILE}",
            f"list the guardrail owners of {EXCEPTIONS_FILE} in docs/CODEOWNERS",
        )
    return (
        f"owner {owner!r} is not an owner CODEOWNERS names for {EXCEPTIONS_FILE} "
        f"({' '.join(found.owners)}, {found.owners_file})",
        "name one of the code owners of the guardrail files as the owner",
    )


def _date(text: str) -> date | None:
    try:
        return date.fromisoformat(text)
    except ValueError:  # the schema checks the shape; this, that the day exists (2027-02-30 does not)
        return None


# --- inline annotations
# ----------------------------------------------------------------------------------------


def _read_annotations(fleet: Fleet, found: WaiverSet, base: Any = None) -> None:
    """One waiver per annotation written in a source file, whichever clusters render the object. With a `base`
    (guardrails.FromBase), one the base's file does not write is `pending`: a change not yet reviewed."""
    by_source: dict[Location, Waiver] = {}
    pending: set[Location] = set()
    for cluster_name, cluster in sorted(fleet.clusters.items()):
        for obj in cluster.objects:
            annotations = (obj.body.get("metadata") or {}).get("annotations")
            for key, value in annotations.items() if isinstance(annotations, dict) else ():
                if isinstance(key, str) and key.startswith(ANNOTATION_PREFIX):
                    where = fleet.locate(obj, "metadata", "annotations", key) or Location(obj.origin, 0)
                    waiver = by_source.get(where) or _annotation(
                        key[len(ANNOTATION_PREFIX) :], value, obj, where, found
                    )
                    if waiver is not None:
                        by_source[where] = replace(
                            waiver,
                            spans=tuple(sorted({*waiver.spans, *_spans(fleet, [(cluster_name, obj)])})),
                        )
                        if base is not None and not base.has_annotation(where.path, key, value):
                            pending.add(where)
    found.waivers.extend(w for where, w in by_source.items() if where not in pending)
    found.pending.extend(w for where, w in by_source.items() if where in pending)


def _annotation(rule: str, value: Any, obj: K8sObject, where: Location, found: WaiverSet) -> Waiver | None:
    hint = (
        f"annotate exception.gpupolicy.io/{rule or '<RULE>'}: '{{reason: ..., owner: ..., expires: "
        f"YYYY-MM-DD}}'"
    )
    if not isinstance(value, str) or len(value) > MAX_ANNOTATION_CHARS:
        found.problems.append(
            Problem(f"{obj.ref()}: exception annotation for {rule} is not a short text", where, hint)
        )
        return None
    loaded = load_text(value, where.path)
    terms = loaded.documents[0].data if len(loaded.documents) == 1 and not loaded.findings else None
    errors = (
        validate_repo_file("exceptions", terms, definition="inlineTerms") if isinstance(terms, dict) else None
    )
    if errors is None or errors:
        detail = "; ".join(e.message for e in errors or []) or "not a {reason, owner, expires} mapping"
        found.problems.append(Problem(f"{obj.ref()}: exception annotation for {rule}: {detail}", where, hint))
        return None
    assert isinstance(terms, dict)
    waiver = _terms(terms, where, found, rule=rule, inline=True)
    return None if waiver is None else replace(waiver, object_ref=obj.ref())


# --- applying them
# -------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    kept: list[Finding] = field(default_factory=list)
    waived: list[Waived] = field(default_factory=list)
    unused: list[Waiver] = field(default_factory=list)


def apply(fleet: Fleet, findings: Iterable[Finding], on: date | None = None) -> Outcome:
    """Split `findings` (one cluster each, before the run merges clusters) into those kept and those a valid,
    unexpired exception accepts; and the valid exceptions that accepted nothing."""
    on = on or today()
    active = [w for w in waivers_of(fleet).waivers if not w.expired(on)]
    used: set[int] = set()
    outcome = Outcome()
    for finding in findings:
        waiver = None if _unwaivable(finding) else next((w for w in active if w.covers(finding)), None)
        if waiver is None:
            outcome.kept.append(finding)
        else:
            used.add(id(waiver))
            outcome.waived.append(Waived(finding, waiver))
    outcome.unused = [w for w in active if id(w) not in used]
    return outcome


def _unwaivable(finding: Finding) -> bool:
    return protection.is_protected(finding.rule)


@cache
def glob_pattern(pattern: str) -> re.Pattern[str]:
    """`*` any name part within a folder, `?` one character of it, `**/` any folders (or none), `**`
    anything."""
    parts = re.split(r"(\*\*/|\*\*|\*|\?)", pattern)
    table = {"**/": "(?:.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}
    return re.compile("".join(table.get(part, re.escape(part)) for part in parts))
