"""Review and CI formatters: SARIF 2.1.0 (code review), JUnit XML (CI test reports), GitHub annotations.

Each formatter takes any result with `.findings` (a validate RunResult, or a diff's `findings_view`) and the
repository root, and returns text. A diff's view also carries `sarif_results`: (finding, baselineState) pairs,
so code review tools can tell new findings from old ones. The formatters are offered by name in
`report.FORMATTERS` (and, for a diff, `diff.OUTPUTS`); this module imports neither and registers nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any
from xml.etree import ElementTree

from .. import __version__
from ..findings import Finding, Severity
from ..infra.siteconfig import rule_page
from ..internal import INTERNAL, crashes

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
GITHUB_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}
SRCROOT = "%SRCROOT%"


def _registry() -> dict:
    from ..rules import all_rules

    return all_rules()


# --- SARIF
# ---------------------------------------------------------------------------------------------------


def as_sarif(result: Any, root: str = "") -> str:
    pairs = list(getattr(result, "sarif_results", None) or [(f, None) for f in result.findings])
    accepted = [item.finding for item in getattr(result, "waived", None) or []]
    linked = getattr(result, "causes", None) or {}
    site_url = _site_url(result, root)
    rules = _sarif_rules([*(f for f, _state in pairs), *accepted], site_url)
    index = {rule["id"]: position for position, rule in enumerate(rules)}
    # The runbook site (siteconfig: mkdocs.yml site_url) documents the tool and each rule; without one, no
    # link.
    driver = {
        "name": "gpupolicy",
        "version": __version__,
        **({"informationUri": site_url} if site_url else {}),
    }
    run: dict[str, Any] = {
        "tool": {"driver": {**driver, "rules": rules}},
        "originalUriBaseIds": {SRCROOT: {"description": {"text": "the policy repository root"}}},
        "columnKind": "unicodeCodePoints",
        "results": [_with_cause(_sarif_result(f, state, index), linked.get(f)) for f, state in pairs]
        + _sarif_waived(result, index),
        # A crashed check (INTERNAL) means the tool did not do its whole job: SARIF's own word for it.
        "invocations": [{"executionSuccessful": not crashes(f for f, _state in pairs)}],
    }
    return json.dumps({"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2)


def _with_cause(entry: dict, cause: Finding | None) -> dict:
    """A derived result points at its cause: SARIF's relatedLocations, with the cause's rule and message."""
    if cause is not None and cause.path:
        physical: dict[str, Any] = {"artifactLocation": {"uri": cause.path, "uriBaseId": SRCROOT}}
        if cause.line > 0:
            physical["region"] = {"startLine": cause.line}
        related = entry.setdefault("relatedLocations", [])
        related.append(
            {
                "id": len(related),
                "physicalLocation": physical,
                "message": {"text": f"caused by {cause.rule}: {cause.message}"},
            }
        )
    return entry


def _sarif_waived(result: Any, index: dict[str, int]) -> list[dict]:
    """Accepted findings as results with a SARIF `suppressions` entry (status accepted, the reason as its
    justification): review tools show them as suppressed, not as open."""
    results = []
    for item in getattr(result, "waived", None) or []:
        entry = _sarif_result(item.finding, None, index)
        exception = item.waiver
        entry["suppressions"] = [
            {
                "kind": "inSource" if exception.inline else "external",
                "status": "accepted",
                "justification": f"{exception.reason} (owner {exception.owner}, expires "
                f"{exception.expires.isoformat()})",
                "location": {
                    "physicalLocation": {
                        "artifactLocation": {"uri": exception.source.path, "uriBaseId": SRCROOT},
                        "region": {"startLine": max(exception.source.line, 1)},
                    }
                },
            }
        ]
        results.append(entry)
    return results


def _site_url(result: Any, root: str) -> str:
    """The runbook site's public URL: the run's (read with the fleet), else read from `root`, else ""."""
    fleet = getattr(result, "fleet", None)
    if fleet is not None:
        return str(getattr(fleet, "site_url", ""))
    if not root:
        return ""
    from ..infra.repopath import Reader
    from ..infra.siteconfig import read_site_url

    return read_site_url(Reader(root))[0]


def _sarif_rules(findings: Iterable[Finding], site_url: str = "") -> list[dict]:
    """Every registered rule (so a clean run still documents them), plus any unregistered ID a finding
    uses."""
    registry = _registry()
    ids = list(registry) + sorted({f.rule for f in findings} - set(registry))
    return [_sarif_rule(rule_id, registry.get(rule_id), site_url) for rule_id in ids]


def _sarif_rule(rule_id: str, rule: Any, site_url: str = "") -> dict:
    if rule is None:
        return {"id": rule_id, "shortDescription": {"text": rule_id}}
    descriptor: dict[str, Any] = {
        "id": rule.id,
        "name": rule.module.rpartition(".")[2],
        "shortDescription": {"text": rule.summary},
        "defaultConfiguration": {"level": SARIF_LEVEL[rule.severity]},
        "properties": {"category": rule.category},
    }
    if rule.doc:
        first_paragraph = rule.doc.split("\n\n", 1)[0].strip()
        descriptor["fullDescription"] = {"text": first_paragraph}
        descriptor["help"] = {"text": rule.doc, "markdown": rule.doc}
    if site_url:
        descriptor["helpUri"] = rule_page(site_url, rule.id)
    return descriptor


def _sarif_result(finding: Finding, baseline_state: str | None, index: dict[str, int]) -> dict:
    message = finding.message + (f" (hint: {finding.hint})" if finding.hint else "")
    result: dict[str, Any] = {
        "ruleId": finding.rule,
        "ruleIndex": index[finding.rule],
        "level": SARIF_LEVEL[finding.severity],
        "message": {"text": message},
        # Stable across line shifts, so review tools match a finding to itself between revisions.
        "partialFingerprints": {"gpupolicy/v1": fingerprint(finding)},
    }
    if finding.path:
        physical: dict[str, Any] = {"artifactLocation": {"uri": finding.path, "uriBaseId": SRCROOT}}
        if finding.line > 0:
            physical["region"] = {"startLine": finding.line}
        result["locations"] = [{"physicalLocation": physical}]
    if finding.related:  # the queue or policy the finding goes through, beside the line to change
        result["relatedLocations"] = [_related(n, where) for n, where in enumerate(finding.related)]
    if finding.cluster:
        result["properties"] = {"clusters": finding.cluster.split(",")}
    if baseline_state:
        result["baselineState"] = baseline_state
    return result


def _related(number: int, where: Any) -> dict:
    physical: dict[str, Any] = {"artifactLocation": {"uri": where.path, "uriBaseId": SRCROOT}}
    if where.line > 0:
        physical["region"] = {"startLine": where.line}
    return {"id": number, "physicalLocation": physical}


def fingerprint(finding: Finding) -> str:
    """`Finding.identity` (rule, file and message; not the line), hashed: what `gpupolicy diff` matches on."""
    return hashlib.sha256("\0".join(finding.identity).encode()).hexdigest()[:32]


# --- JUnit
# ---------------------------------------------------------------------------------------------------


def as_junit(result: Any, root: str = "") -> str:
    """One testcase per rule; a <failure> per error finding, an <error> per crashed check (INTERNAL). Warnings
    and notes go to the case's system-out, so a CI test report fails exactly when `validate` exits 1 or 2."""
    by_rule: dict[str, list[Finding]] = {rule_id: [] for rule_id in _registry()}
    for finding in result.findings:
        by_rule.setdefault(finding.rule, []).append(finding)
    crashed = len(crashes(result.findings))
    failures = sum(1 for f in result.findings if f.severity is Severity.ERROR) - crashed
    seconds = f"{sum(getattr(result, 'timings', {}).values()):.3f}"
    suites = ElementTree.Element(
        "testsuites",
        name="gpupolicy",
        tests=str(len(by_rule)),
        failures=str(failures),
        errors=str(crashed),
        time=seconds,
    )
    suite = ElementTree.SubElement(
        suites,
        "testsuite",
        name="gpupolicy",
        tests=str(len(by_rule)),
        failures=str(failures),
        errors=str(crashed),
        skipped="0",
        time=seconds,
    )
    registry = _registry()
    for rule_id, findings in by_rule.items():
        rule = registry.get(rule_id)
        case = ElementTree.SubElement(
            suite,
            "testcase",
            classname=f"gpupolicy.{rule_id.rstrip('0123456789')}",
            name=f"{rule_id}: {rule.summary}" if rule else rule_id,
            time="0",
        )
        notes = []
        for finding in findings:
            if finding.severity is Severity.ERROR:
                element = "error" if finding.rule == INTERNAL else "failure"
                failure = ElementTree.SubElement(case, element, message=finding.message, type=finding.rule)
                failure.text = _junit_detail(finding)
            else:
                notes.append(f"{finding.severity.value}: {_junit_detail(finding)}")
        if notes:
            ElementTree.SubElement(case, "system-out").text = "\n".join(notes)
    ElementTree.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(suites, encoding="unicode")


def _junit_detail(finding: Finding) -> str:
    parts = [f"{finding.place}: {finding.message}"]
    if finding.cluster:
        parts.append(f"clusters: {finding.cluster}")
    if finding.hint:
        parts.append(f"hint: {finding.hint}")
    return "\n".join(parts)


# --- GitHub workflow annotations ---------------------------------------------------------------------------


def as_github(result: Any, root: str = "") -> str:
    """`::error file=F,line=N,title=RULE::message` lines, which GitHub Actions turns into annotations on
    the pull request's diff."""
    return "\n".join(_github_line(f) for f in result.findings)


def _github_line(finding: Finding) -> str:
    properties = []
    if finding.path:
        properties.append(f"file={_escape_property(finding.path)}")
        if finding.line > 0:
            properties.append(f"line={finding.line}")
    properties.append(f"title={_escape_property(finding.rule)}")
    message = finding.message + (f"\n{finding.hint}" if finding.hint else "")
    if finding.cluster:
        message += f"\nclusters: {finding.cluster}"
    return f"::{GITHUB_COMMAND[finding.severity]} {','.join(properties)}::{_escape_data(message)}"


# The workflow command grammar: data escapes %, CR and LF; property values also escape ':' and ','.
def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")
