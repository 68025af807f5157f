"""The one shape every check reports in: a Finding with rule, severity, place and a hint."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from enum import StrEnum


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 0, "warning": 1, "info": 2}[self.value]


@dataclass(frozen=True)
class Location:
    """A place in the repository: a path relative to its root and a 1-based line (0 when unknown)."""

    path: str
    line: int = 0

    def __str__(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: Severity
    message: str
    path: str = ""
    line: int = 0
    cluster: str = ""
    hint: str = ""
    # Other places that take part (the queue or policy a workload's error goes through): SARIF
    # relatedLocations. Not part of `identity`: the same finding may be reached through a queue renamed since.
    related: tuple[Location, ...] = ()

    def as_dict(self) -> dict:
        data = asdict(self)
        data["severity"] = self.severity.value
        data["related"] = [{"path": r.path, "line": r.line} for r in self.related]
        if not self.related:
            del data["related"]  # the common case: reports stay as they were
        return data

    def as_tuple(self) -> tuple:
        """Plain values only (for caches that store marshal data); `from_tuple` reads it back."""
        return (
            self.rule,
            self.severity.value,
            self.message,
            self.path,
            self.line,
            self.cluster,
            self.hint,
            tuple((r.path, r.line) for r in self.related),
        )

    @classmethod
    def from_tuple(cls, values: tuple) -> Finding:
        rule, severity, message, path, line, cluster, hint, *rest = values
        related = tuple(Location(p, n) for p, n in rest[0]) if rest else ()
        return cls(rule, Severity(severity), message, path, line, cluster, hint, related)

    def sort_key(self) -> tuple:
        return (self.path, self.line, self.rule, self.message)

    @property
    def place(self) -> str:
        """Where it points, as every output writes it: "path:line", "path" when the line is unknown, and
        "<repository>" for a finding about no file in particular."""
        return str(Location(self.path, self.line)) or "<repository>"

    @property
    def identity(self) -> tuple[str, str, str]:
        """The same finding in two revisions: rule, file and message. Not the line, which edits above it
        shift, nor the clusters, which come and go with the fleet. `gpupolicy diff` matches base and head
        findings by it; SARIF's partialFingerprints are its hash (`formats.fingerprint`), so review tools
        match the same."""
        return (self.rule, self.path, self.message)


def at(location: Location | None) -> dict:
    """Keyword arguments placing a Finding at a Location."""
    if location is None:
        return {}
    return {"path": location.path, "line": location.line}


# finding(message, path, line, *, cluster="", hint="") -> Finding
StageFinding = Callable[..., Finding]


def stage_finding(rule: str, severity: Severity) -> StageFinding:
    """The `finding()` helper of a stage rule (one that declares `STAGE`): the loader, the graph and the
    pipeline report the rule's findings through it, so its ID and severity are written once, in its module."""

    def finding(message: str, path: str, line: int, *, cluster: str = "", hint: str = "") -> Finding:
        return Finding(rule, severity, message, path, line, cluster, hint)

    finding.__doc__ = f"A {rule} finding as the stage that reports it creates it (severity {severity.value})."
    return finding
