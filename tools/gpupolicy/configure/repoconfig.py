"""The repository's one configuration file, `gpupolicy.yaml` at its root: severity overrides and disabled
rules.

```yaml
apiVersion: gpupolicy/v1
kind: Config
severity:                      # the first entry naming the finding's rule whose paths match its file wins
  - {rule: OBS003, severity: error, paths: ["clusters/prod-*/**"]}
disable:                       # the rule's findings in these files are not reported
  - {rule: DOC002, paths: ["docs/archive/**"], reason: "archived runbooks are frozen"}
```

The pipeline applies it after every check has run and before exceptions and the report (`apply`), so every
output and `gpupolicy diff` see the same findings; the summary counts what it changed. A config that does not
load, breaks the schema (`schemas/repo/config.yaml`), names an unknown rule or tries to silence a protected
one (`protection.is_protected`: INTERNAL, the EXC and CFG rules, the security rules) is a CFG001 error at the
offending line, and is then not applied at all: half a configuration would be a policy nobody wrote. The
reasons are in decision 0041. Which side the file is read from (the base revision, when one is given) is
`guardrails.source_of`'s answer (decision 0062).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

from ..domain import protection
from ..domain.waivers import glob_pattern
from ..findings import Finding, Location, Severity
from ..infra import repopath
from ..infra.schema.check import validate_repo_file
from ..infra.yamlload import Document, parse_source
from ..rules import cfg001_invalid_config as cfg001

CONFIG_FILE = "gpupolicy.yaml"
API_VERSION, KIND = "gpupolicy/v1", "Config"


class Source(Protocol):
    """Where the file is read (`guardrails.Source`): None when it is missing; repopath.Refused when
    unreadable."""

    label: str

    def read(self, rel: str) -> bytes | None: ...


@dataclass(frozen=True)
class Override:
    rule: str
    severity: Severity
    paths: tuple[str, ...]  # empty: every file
    source: Location

    def matches(self, finding: Finding) -> bool:
        return finding.rule == self.rule and _in_paths(finding.path, self.paths)


@dataclass(frozen=True)
class Disabled:
    rule: str
    paths: tuple[str, ...]
    reason: str
    source: Location

    def matches(self, finding: Finding) -> bool:
        return finding.rule == self.rule and _in_paths(finding.path, self.paths)


@dataclass
class RepoConfig:
    """What gpupolicy.yaml says; `problems` (CFG001 and loader findings) when it cannot be applied."""

    overrides: list[Override] = field(default_factory=list)
    disabled: list[Disabled] = field(default_factory=list)
    problems: list[Finding] = field(default_factory=list)
    present: bool = False


@dataclass
class Applied:
    """The findings as configured, and what the configuration changed (the summary shows the counts)."""

    findings: list[Finding]
    disabled: int = 0
    rerated: int = 0


def read(source: Source, known_rules: Mapping[str, Severity]) -> RepoConfig:
    """The configuration at the repository root of `source` (none is an empty one), checked against
    `known_rules` (rule ID -> its own severity: the built-in, plugin and declarative rules)."""
    try:
        raw = source.read(CONFIG_FILE)
    except repopath.Refused as exc:
        return RepoConfig(
            problems=[cfg001.finding(f"cannot read the configuration: {exc}", CONFIG_FILE, 1)], present=True
        )
    if raw is None:
        return RepoConfig()
    loaded = parse_source(raw, CONFIG_FILE)
    if loaded.findings:  # the loader's own findings (syntax, duplicate keys...) carry the line
        return RepoConfig(
            problems=[
                *loaded.findings,
                cfg001.finding("the configuration does not load, so none of it is applied", CONFIG_FILE, 1),
            ],
            present=True,
        )
    if len(loaded.documents) != 1:
        return RepoConfig(
            problems=[
                cfg001.finding(
                    f"the configuration must be one YAML document, found {len(loaded.documents)}",
                    CONFIG_FILE,
                    1,
                    hint=f"one mapping with apiVersion: {API_VERSION} and kind: {KIND}",
                )
            ],
            present=True,
        )
    return parse(loaded.documents[0], known_rules)


def parse(doc: Document, known_rules: Mapping[str, Severity]) -> RepoConfig:
    config = RepoConfig(present=True)
    errors = validate_repo_file("config", doc.data)
    for error in errors:
        config.problems.append(
            cfg001.finding(
                f"gpupolicy.yaml: {error.message}",
                doc.path,
                doc.line_of(error.path),
                hint="see docs/operations/configuration.md for the format",
            )
        )
    if errors:
        return config
    for index, entry in enumerate(doc.data.get("severity", [])):
        where = Location(doc.path, doc.line_of(("severity", index)))
        severity = Severity(entry["severity"])
        problem = _rule_problem(entry["rule"], known_rules) or _downgrade_problem(
            entry["rule"], severity, known_rules
        )
        if problem:
            config.problems.append(cfg001.finding(problem, where.path, where.line, hint=_HINT))
        else:
            config.overrides.append(Override(entry["rule"], severity, tuple(entry.get("paths", ())), where))
    for index, entry in enumerate(doc.data.get("disable", [])):
        where = Location(doc.path, doc.line_of(("disable", index)))
        problem = _rule_problem(entry["rule"], known_rules) or _protection_problem(entry["rule"], "disabled")
        if problem:
            config.problems.append(cfg001.finding(problem, where.path, where.line, hint=_HINT))
        else:
            config.disabled.append(
                Disabled(entry["rule"], tuple(entry["paths"]), entry["reason"].strip(), where)
            )
    if config.problems:  # all or nothing: see the module docstring
        config.overrides, config.disabled = [], []
    return config


_HINT = (
    "name a rule of `gpupolicy rules`; INTERNAL, the EXC and CFG rules and the security rules (SEC, "
    "RBAC and the trust-boundary rules) can be raised, never lowered or disabled"
)


def _rule_problem(rule: str, known_rules: Mapping[str, Severity]) -> str:
    return "" if rule in known_rules else f"no rule {rule}"


def _protected(rule: str) -> bool:
    return protection.is_protected(rule)


def _protection_problem(rule: str, what: str) -> str:
    return f"{rule} cannot be {what} ({protection.why(rule)})" if _protected(rule) else ""


def _downgrade_problem(rule: str, severity: Severity, known_rules: Mapping[str, Severity]) -> str:
    if severity.rank > known_rules[rule].rank:
        return _protection_problem(rule, f"lowered to {severity.value}")
    return ""


def apply(config: RepoConfig, findings: Iterable[Finding]) -> Applied:
    """`findings` without those a `disable` entry matches, each re-rated as its first matching override says.
    The configuration's own problems are added (they are never disabled)."""
    applied = Applied(findings=[])
    for finding in findings:
        if not _protected(finding.rule) and any(entry.matches(finding) for entry in config.disabled):
            applied.disabled += 1
            continue
        override = next((entry for entry in config.overrides if entry.matches(finding)), None)
        if override is not None and override.severity is not finding.severity:
            finding = replace(finding, severity=override.severity)
            applied.rerated += 1
        applied.findings.append(finding)
    applied.findings.extend(config.problems)
    return applied


def _in_paths(path: str, globs: tuple[str, ...]) -> bool:
    return not globs or any(glob_pattern(pattern).fullmatch(path) for pattern in globs)
