"""Sharded validation for big fleets: `validate --shard K/N` and `report merge`.

A shard is a run over every N-th cluster in name order (shard K takes the K-th, the K+N-th, ...): the split
depends only on the cluster names, balances the clusters within one, and needs no state. Shard 1 also does the
fleet-level work, exactly once: it reads what no cluster includes (loose files, pools in no cluster, the
kustomize graph's findings outside every overlay; `sources.discover(fleet_level=True)`). Each shard writes its
JSON report with a `shard` block: its place in the split, its clusters, the exceptions that accepted nothing
in it (EXC003 candidates: only the merge can tell which no shard used), and its `source`: the commit and tree
id it validated and whether the working tree had uncommitted changes.

`merge` reads the shards' JSON reports, checks each against its schema (`schemas/inputs/shard-report.yaml`),
checks that every shard of one split is there exactly once and that all of them validated the same commit and
tree (the one `--repo` is at, when it is a git checkout; a dirty tree has no id, so its shards are refused),
and returns one `pipeline.RunResult`: a finding reported by several shards (a shared file, rendered into
clusters of different shards) is one finding naming every cluster, as in a single run; any format of
`report.FORMATTERS` then writes it, so the merged JSON, SARIF and JUnit are those a single run writes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from ..domain.waivers import Waived
from ..errors import ToolError
from ..findings import Finding, Location, Severity
from ..infra.inputs import read_given
from ..infra.schema import inputs as inputschemas
from ..model import Fleet

SHARD_PATTERN = re.compile(r"^([1-9][0-9]{0,3})/([1-9][0-9]{0,3})$")
MAX_REPORT_BYTES = 256 * 1024 * 1024  # a shard report of a huge fleet fits; more is not a report
GIT_TIMEOUT_SECONDS = 60


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int

    @property
    def fleet_level(self) -> bool:
        """Shard 1 does the fleet-level work."""
        return self.index == 1

    def clusters(self, all_clusters: list[str]) -> list[str]:
        return sorted(all_clusters)[self.index - 1 :: self.count]

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    match = SHARD_PATTERN.match(text.strip())
    if not match or int(match.group(1)) > int(match.group(2)):
        raise ToolError(f"--shard {text!r}: expected K/N with 1 <= K <= N (such as 2/4)")
    return Shard(int(match.group(1)), int(match.group(2)))


def shard_block(
    shard: Shard,
    clusters: list[str],
    unused_exceptions: list[Finding],
    proposed: list[Finding] = (),
    root: str | os.PathLike = ".",
) -> dict[str, Any]:
    """What a shard's JSON report adds for `merge`: its exceptions that accepted nothing, the whole-fleet
    findings it can only propose (UPG003 on a selector that takes nothing here: `Fleet.proposed`), and the
    commit and tree it validated (`source_ids`)."""
    return {
        "index": shard.index,
        "count": shard.count,
        "clusters": clusters,
        "unused_exceptions": [f.as_dict() for f in unused_exceptions],
        "proposed": [f.as_dict() for f in proposed],
        "source": source_ids(root),
    }


def source_ids(root: str | os.PathLike) -> dict[str, Any]:
    """{commit, tree, dirty} of the git checkout at `root` (`git rev-parse HEAD HEAD^{tree}`; dirty: `git
    status`
    lists a change, untracked files included, ignored ones not); all None outside a git checkout."""
    ids = _git(root, "rev-parse", "HEAD", "HEAD^{tree}")
    if ids is None or len(ids.split()) != 2:
        return {"commit": None, "tree": None, "dirty": None}
    commit, tree = ids.split()
    status = _git(root, "status", "--porcelain", "--untracked-files=normal", "--", ".")
    return {"commit": commit, "tree": tree, "dirty": None if status is None else bool(status.strip())}


def _git(root: str | os.PathLike, *args: str) -> str | None:
    """git's output, or None when git is missing, fails or is not in a checkout (no id to give)."""
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=root,
            capture_output=True,
            timeout=GIT_TIMEOUT_SECONDS,
            check=False,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.decode(errors="replace") if proc.returncode == 0 else None


# --- merge
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReportedException:
    """An exception as a shard's report states it (`waivers.Waiver.as_dict`): what the outputs show of it."""

    rule: str
    selector: str
    reason: str
    owner: str
    expires: date
    source: Location
    inline: bool

    @classmethod
    def from_dict(cls, data: dict) -> ReportedException:
        path, _, line = str(data["source"]).rpartition(":")
        source = Location(path, int(line)) if path and line.isdigit() else Location(str(data["source"]))
        try:
            expires = date.fromisoformat(str(data["expires"]))
        except ValueError:
            raise ToolError(
                f"a shard report holds an exception whose expiry is not a date: {data['expires']!r}"
            ) from None
        return cls(
            str(data["rule"]),
            str(data["selector"]),
            str(data["reason"]),
            str(data["owner"]),
            expires,
            source,
            bool(data["inline"]),
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


def merge(paths: list[Path], root: str) -> Any:
    """One run's result from the shards' JSON reports (`paths`); a ToolError names a file that is not one,
    or a split that is incomplete."""
    from . import RunResult, dedupe

    reports = [_read(path) for path in paths]
    _check_complete(reports, paths)
    _check_same_source(reports, paths, root)
    findings, causes, waived, unused = [], {}, [], []
    for report in reports:
        for data in report["findings"]:
            finding = _finding(data)
            findings.append(finding)
            if "caused_by" in data:
                causes.setdefault(_key(finding), data["caused_by"])
        waived.extend(
            Waived(_finding(item), ReportedException.from_dict(item["exception"]))
            for item in report["waived"]
        )
        unused.extend(_finding(data) for data in report["shard"]["unused_exceptions"])
    used = {str(item.waiver.source) for item in waived}
    findings += [f for f in unused if f.place not in used]  # EXC003: an exception no shard used
    findings += _agreed(reports)
    merged = dedupe(findings)
    summaries = [report["summary"] for report in reports]
    return RunResult(
        fleet=_merged_fleet(root),
        findings=merged,
        waived=_merge_waived(waived),
        causes=_causes(merged, causes),
        timings={"slowest shard": max(s["seconds"] for s in summaries)},
        objects=sum(s["objects"] for s in summaries),
        rendered_clusters=sorted(c for r in reports for c in r["shard"]["clusters"]),
        unrendered_clusters=sorted(c for s in summaries for c in s.get("unrendered_clusters", [])),
        disabled=sum(s.get("disabled", 0) for s in summaries),
        rerated=sum(s.get("rerated", 0) for s in summaries),
    )


def _merged_fleet(root: str) -> Fleet:
    """The merged run's fleet: no model (the shards had it), but the site setting the reports link to, as in a
    single run (SARIF's informationUri and helpUri, the PR comment's rule links)."""
    from ..infra.repopath import Reader
    from ..infra.siteconfig import read_site_url

    return Fleet(root=root, site_url=read_site_url(Reader(root))[0] if root else "")


def _agreed(reports: list[dict]) -> list[Finding]:
    """The proposed findings every shard with clusters proposed: true of the whole fleet (a shard without
    clusters
    has nothing to contradict them)."""
    voters = [r for r in reports if r["shard"]["clusters"]]
    votes: dict[Finding, int] = {}
    for report in voters:
        proposed = report["shard"].get("proposed", [])
        if not isinstance(proposed, list):
            raise ToolError("a shard report's shard.proposed is not a list: not the JSON report of a shard")
        for finding in {_finding(data) for data in proposed}:
            votes[finding] = votes.get(finding, 0) + 1
    return [finding for finding, count in votes.items() if count == len(voters)]


def _read(path: Path) -> dict:
    raw = read_given(path, MAX_REPORT_BYTES, "a shard report")
    try:
        report = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise ToolError(
            f"{path}: not JSON ({exc}); merge reads the JSON reports of `validate --shard K/N "
            "--format json`, and writes SARIF or JUnit itself (--format)"
        ) from None
    if (
        not isinstance(report, dict)
        or not isinstance(report.get("shard"), dict)
        or not all(key in report for key in ("findings", "waived", "summary"))
    ):
        raise ToolError(f"{path}: not the JSON report of a shard (`validate --shard K/N --format json`)")
    inputschemas.check(
        "shard-report",
        report,
        str(path),
        "the JSON report of a shard (`validate --shard K/N --format json` of this toolkit)",
    )
    return report


def _check_complete(reports: list[dict], paths: list[Path]) -> None:
    counts = {report["shard"]["count"] for report in reports}
    if len(counts) != 1:
        raise ToolError(f"the reports come from different splits (N = {', '.join(map(str, sorted(counts)))})")
    count = counts.pop()
    seen: dict[int, Path] = {}
    for report, path in zip(reports, paths, strict=True):
        index = report["shard"]["index"]
        if index in seen:
            raise ToolError(f"shard {index}/{count} twice: {seen[index]} and {path}")
        seen[index] = path
    missing = [f"{k}/{count}" for k in range(1, count + 1) if k not in seen]
    if missing:
        raise ToolError(
            f"shard(s) {', '.join(missing)} missing: a merge of part of a split would drop findings"
        )


def _check_same_source(reports: list[dict], paths: list[Path], root: str) -> None:
    """Every shard validated one commit and tree, with no uncommitted changes, and (when `root` is a git
    checkout) the one `root` is at: a shard kept from another commit would otherwise merge unseen."""
    sources = [report["shard"]["source"] for report in reports]
    for source, path in zip(sources, paths, strict=True):
        if source["dirty"]:
            raise ToolError(
                f"{path}: the shard ran on a working tree with uncommitted changes, which no "
                "tree id "
                "covers; commit them and run every shard again"
            )
    first = sources[0]
    for source, path in zip(sources[1:], paths[1:], strict=True):
        if source != first:
            raise ToolError(
                f"the shards validated different trees: {paths[0]} {_described(first)}, {path} "
                f"{_described(source)}; run every shard of the split on one commit"
            )
    here = source_ids(root) if root else None
    if here and here["commit"] and here["tree"] != first["tree"]:
        raise ToolError(
            f"the shards validated {_described(first)}, but {root} is at {_described(here)}; "
            "merge "
            "in a checkout of the commit the shards ran on"
        )


def _described(source: dict) -> str:
    if not source["commit"]:
        return "outside a git checkout (no commit)"
    return f"commit {source['commit'][:12]} (tree {source['tree'][:12]})"


def _finding(data: dict) -> Finding:
    try:
        return Finding(
            str(data["rule"]),
            Severity(data["severity"]),
            str(data["message"]),
            str(data["path"]),
            int(data["line"]),
            str(data["cluster"]),
            str(data["hint"]),
        )
    except (KeyError, ValueError, TypeError) as exc:
        raise ToolError(
            f"a shard report holds a finding that is not one ({exc}): {str(data)[:200]}"
        ) from None


def _key(finding: Finding) -> tuple:
    return finding.rule, finding.path, finding.line, finding.message


def _causes(findings: list[Finding], caused_by: dict[tuple, dict]) -> dict[Finding, Finding]:
    """Derived finding -> its cause, the cause found among the merged findings by its rule, place and
    message."""
    by_key = {_key(f): f for f in findings}
    linked = {}
    for finding in findings:
        cause = caused_by.get(_key(finding))
        if cause is not None:
            found = by_key.get((cause["rule"], cause["path"], cause["line"], cause["message"]))
            if found is not None:
                linked[finding] = found
    return linked


def _merge_waived(waived: list[Waived]) -> list[Waived]:
    """One entry per finding and exception, naming every cluster (as `pipeline` merges them)."""
    from . import dedupe

    by_exception: dict[str, list[Waived]] = {}
    for item in waived:
        by_exception.setdefault(str(item.waiver.source), []).append(item)
    merged = [
        Waived(finding, items[0].waiver)
        for items in by_exception.values()
        for finding in dedupe([item.finding for item in items])
    ]
    return sorted(merged, key=lambda item: item.finding.sort_key())
