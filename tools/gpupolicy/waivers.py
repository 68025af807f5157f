"""Reviewed exceptions: a finding accepted for a stated reason, by an owner, until a date.

Two forms, one set of terms (`reason`, `owner`, `expires`; schema `schemas/repo/exceptions.yaml`):
- `policies/exceptions.yaml` lists exceptions, each for one rule and one selector: `path`, a glob over the
  findings' files (`*` within a folder, `**` across folders), or `object` (kind, name, optional namespace), whose
  findings are those in the object's source document; `cluster` narrows either to one cluster;
- an object's annotation `exception.gpupolicy.io/<RULE>: '{reason: ..., owner: ..., expires: YYYY-MM-DD}'`
  accepts that rule's findings in the object's own source document.

An exception that lacks a term or names no known rule is itself an error (EXC001) and accepts nothing; an
expired one fails the build (EXC002) and accepts nothing; one that accepts nothing in a run over every cluster is
stale (EXC003). Accepted findings are not dropped: the run keeps them as `waived`, which every output counts and
`--show-waived`, JSON and SARIF (`suppressions`) show. A crash (INTERNAL) and the exception rules themselves can
never be waived. The reasons are in decision 0033.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from functools import cache
from typing import Any

from .findings import Finding, Location
from .internal import INTERNAL
from .model import Fleet, K8sObject
from .schema import validate_repo_file
from .yamlload import load_text

EXCEPTIONS_FILE = "policies/exceptions.yaml"
ANNOTATION_PREFIX = "exception.gpupolicy.io/"
API_VERSION, KIND = "gpupolicy/v1", "Exceptions"
UNWAIVABLE_PREFIXES = ("EXC",)  # the checks of the exceptions themselves
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
        return any(path == finding.path and first <= finding.line <= last and cluster in ("", finding.cluster)
                   for path, first, last, cluster in self.spans)

    def as_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "selector": self.selector, "reason": self.reason, "owner": self.owner,
                "expires": self.expires.isoformat(), "source": str(self.source), "inline": self.inline}


@dataclass(frozen=True)
class Problem:
    """Why an exception accepts nothing (EXC001): where it is written, and what to do."""

    message: str
    location: Location
    hint: str = ""


@dataclass
class WaiverSet:
    waivers: list[Waiver] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    known_rules: frozenset[str] = frozenset()  # what an exception may name: built-in, plugin and declarative rules


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
    from . import orgchecks
    from .rules import all_rules

    installed = set(all_rules())
    found = WaiverSet(known_rules=frozenset(installed | set(orgchecks.of_fleet(fleet, installed).rules)))
    for doc in fleet.documents:
        if doc.path == EXCEPTIONS_FILE:
            _read_file(fleet, doc, found)
    _read_annotations(fleet, found)
    return found


# --- policies/exceptions.yaml ----------------------------------------------------------------------------------

def _read_file(fleet: Fleet, doc: Any, found: WaiverSet) -> None:
    if doc.data is None:  # an empty file holds no exceptions
        return
    errors = validate_repo_file("exceptions", doc.data)
    if errors:
        for error in errors:
            found.problems.append(Problem(f"exceptions: {error.message}", Location(doc.path, doc.line_of(error.path)),
                                          "every exception needs rule, reason, owner and expires (YYYY-MM-DD)"))
        return
    for index, entry in enumerate(doc.data["exceptions"]):
        where = Location(doc.path, doc.line_of(("exceptions", index)))
        terms = _terms(entry, where, found)
        selector = _file_selector(fleet, entry, where, found)
        if terms is not None and selector is not None:
            found.waivers.append(replace(terms, **selector))


def _file_selector(fleet: Fleet, entry: dict, where: Location, found: WaiverSet) -> dict | None:
    cluster = entry.get("cluster", "")
    if ("path" in entry) == ("object" in entry):
        found.problems.append(Problem(f"exception for {entry['rule']}: give exactly one selector, `path` or `object`",
                                      where, "path: a glob over the findings' files; object: {kind, name, namespace}"))
        return None
    if "path" in entry:
        return {"path_glob": entry["path"], "cluster": cluster}
    wanted = entry["object"]
    objects = [(name, obj) for name, c in fleet.clusters.items() for obj in c.objects
               if obj.kind == wanted["kind"] and obj.name == wanted["name"]
               and obj.namespace == wanted.get("namespace", obj.namespace) and cluster in ("", name)]
    ref = f"{wanted['kind']} {wanted['namespace'] + '/' if wanted.get('namespace') else ''}{wanted['name']}"
    return {"object_ref": ref, "cluster": cluster, "spans": _spans(fleet, objects)}


def _spans(fleet: Fleet, objects: Iterable[tuple[str, K8sObject]]) -> tuple[tuple[str, int, int, str], ...]:
    spans = []
    for cluster, obj in objects:
        span = fleet.span(obj)
        if span is not None:
            spans.append((*span, cluster))
    return tuple(sorted(set(spans)))


def _terms(entry: dict, where: Location, found: WaiverSet, rule: str = "", inline: bool = False) -> Waiver | None:
    """The terms as a Waiver without a selector, or None (and a problem) when the rule or the date is wrong."""
    rule = rule or entry["rule"]
    problem = _rule_problem(rule, found.known_rules)
    expires = _date(entry["expires"])
    if expires is None:
        problem = problem or f"expires {entry['expires']} is not a date"
    if problem:
        found.problems.append(Problem(f"exception for {rule}: {problem}", where,
                                      "name a rule of `gpupolicy rules` and a real date (YYYY-MM-DD)"))
        return None
    assert expires is not None
    return Waiver(rule=rule, reason=str(entry["reason"]).strip(), owner=str(entry["owner"]).strip(), expires=expires,
                  source=where, inline=inline)


def _rule_problem(rule: str, known_rules: frozenset[str]) -> str:
    if rule == INTERNAL or rule.startswith(UNWAIVABLE_PREFIXES):
        return f"{rule} cannot be waived (a crashed check, or the exceptions' own checks)"
    if rule not in known_rules:
        return f"no rule {rule}"
    return ""


def _date(text: str) -> date | None:
    try:
        return date.fromisoformat(text)
    except ValueError:  # the schema checks the shape; this, that the day exists (2027-02-30 does not)
        return None


# --- inline annotations ----------------------------------------------------------------------------------------

def _read_annotations(fleet: Fleet, found: WaiverSet) -> None:
    """One waiver per annotation written in a source file, whichever clusters render the object."""
    by_source: dict[Location, Waiver] = {}
    for cluster_name, cluster in sorted(fleet.clusters.items()):
        for obj in cluster.objects:
            annotations = (obj.body.get("metadata") or {}).get("annotations")
            for key, value in (annotations.items() if isinstance(annotations, dict) else ()):
                if isinstance(key, str) and key.startswith(ANNOTATION_PREFIX):
                    where = fleet.locate(obj, "metadata", "annotations", key) or Location(obj.origin, 0)
                    waiver = by_source.get(where) or _annotation(key[len(ANNOTATION_PREFIX):], value, obj, where,
                                                                 found)
                    if waiver is not None:
                        by_source[where] = replace(waiver, spans=tuple(sorted({*waiver.spans,
                                                                               *_spans(fleet, [(cluster_name, obj)])})))
    found.waivers.extend(by_source.values())


def _annotation(rule: str, value: Any, obj: K8sObject, where: Location, found: WaiverSet) -> Waiver | None:
    hint = f"annotate exception.gpupolicy.io/{rule or '<RULE>'}: '{{reason: ..., owner: ..., expires: YYYY-MM-DD}}'"
    if not isinstance(value, str) or len(value) > MAX_ANNOTATION_CHARS:
        found.problems.append(Problem(f"{obj.ref()}: exception annotation for {rule} is not a short text", where, hint))
        return None
    loaded = load_text(value, where.path)
    terms = loaded.documents[0].data if len(loaded.documents) == 1 and not loaded.findings else None
    errors = validate_repo_file("exceptions", terms, definition="inlineTerms") if isinstance(terms, dict) else None
    if errors is None or errors:
        detail = "; ".join(e.message for e in errors or []) or "not a {reason, owner, expires} mapping"
        found.problems.append(Problem(f"{obj.ref()}: exception annotation for {rule}: {detail}", where, hint))
        return None
    assert isinstance(terms, dict)
    waiver = _terms(terms, where, found, rule=rule, inline=True)
    return None if waiver is None else replace(waiver, object_ref=obj.ref())


# --- applying them -------------------------------------------------------------------------------------------

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
    return finding.rule == INTERNAL or finding.rule.startswith(UNWAIVABLE_PREFIXES)


@cache
def glob_pattern(pattern: str) -> re.Pattern[str]:
    """`*` any name part within a folder, `?` one character of it, `**/` any folders (or none), `**` anything."""
    parts = re.split(r"(\*\*/|\*\*|\*|\?)", pattern)
    table = {"**/": "(?:.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}
    return re.compile("".join(table.get(part, re.escape(part)) for part in parts))
