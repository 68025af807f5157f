"""The decision log: MADR records under docs/decisions/, read with their front matter and its line numbers.

A record is `docs/decisions/NNNN-slug.md` and starts with YAML front matter between `---` lines:

    ---
    status: accepted            # proposed | accepted | deprecated | superseded
    date: 2026-11-29
    deciders: platform team     # a name or a list of names
    affects: [tools/gpupolicy, Makefile]   # repository paths the decision governs
    superseded-by: "0017"       # only when status is superseded
    ---
    # 0016: Title

Front matter values are read as written (every scalar a string, YAML's BaseLoader), so `superseded-by: 0016`
is not read as the octal number 14 and a date stays the text the author typed. The strict loader runs first
for what a person gets wrong (duplicate keys, syntax), with lines. Validation lives in the DOC rules; this
module only parses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from ..infra import repopath, yamlload

DECISIONS_DIR = "docs/decisions"
NOT_RECORDS = frozenset({"index.md", "template.md"})  # pages of the log that are not decisions
RECORD_NAME = re.compile(r"^(?P<number>\d{4})-(?P<slug>[a-z0-9]+(?:-[a-z0-9]+)*)\.md$")
LEADING_NUMBER = re.compile(r"^(?P<number>\d+)[-_]")
STATUSES = ("proposed", "accepted", "deprecated", "superseded")
SUPERSEDED_BY = "superseded-by"
TITLE = re.compile(r"^#\s+(?:(?P<number>\d{1,4})\s*[:.-]\s*)?(?P<title>.+?)\s*#*\s*$")
LINK_TARGET = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


@dataclass(frozen=True)
class Problem:
    """Front matter that could not be read at all: no block, bad YAML, not a mapping."""

    message: str
    line: int
    hint: str = ""


@dataclass
class Decision:
    path: str  # repo-relative, docs/decisions/NNNN-slug.md
    number: str | None  # "0016", from the file name; None when the name has no leading number
    meta: dict[str, Any]  # front matter as written: strings, lists of strings, mappings
    meta_lines: dict[tuple, int] = field(default_factory=dict, repr=False)  # field path -> file line
    front_matter_line: int = 0  # file line of the opening `---` (0: no front matter)
    title: str = ""
    title_number: str | None = None  # the number written in the heading, "# 0016: ..."
    title_line: int = 0
    body: str = field(default="", repr=False)
    body_line: int = 1  # file line where the body starts
    problems: list[Problem] = field(default_factory=list)

    @property
    def name(self) -> str:
        return Path(self.path).name

    @property
    def status(self) -> str:
        return _text(self.meta.get("status"))

    @property
    def date(self) -> str:
        return _text(self.meta.get("date"))

    @property
    def superseded_by(self) -> str:
        return _text(self.meta.get(SUPERSEDED_BY))

    @property
    def affects(self) -> list[str]:
        value = self.meta.get("affects")
        return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []

    @property
    def deciders(self) -> list[str]:
        value = self.meta.get("deciders")
        if isinstance(value, str):
            return [value] if value.strip() else []
        return (
            [item for item in value if isinstance(item, str) and item.strip()]
            if isinstance(value, list)
            else []
        )

    def line_of(self, *field_path: Any) -> int:
        """The file line of a front matter field (its deepest existing part), else of the front matter."""
        for depth in range(len(field_path), 0, -1):
            line = self.meta_lines.get(tuple(field_path[:depth]))
            if line:
                return line
        return self.front_matter_line or 1

    def links(self) -> list[tuple[str, int]]:
        """(target, file line) of every Markdown link in the body."""
        found = []
        for offset, line in enumerate(self.body.splitlines()):
            found += [(match.group(1), self.body_line + offset) for match in LINK_TARGET.finditer(line)]
        return found


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def record_files(reader: repopath.Reader) -> list[str]:
    """Every Markdown file of the decision log that should be a record (index and template excluded)."""
    try:
        names = reader.listdir(DECISIONS_DIR)
    except OSError:  # no log (or not a folder)
        return []
    return sorted(
        f"{DECISIONS_DIR}/{name}"
        for name in names
        if name.endswith(".md") and name not in NOT_RECORDS and reader.isfile(f"{DECISIONS_DIR}/{name}")
    )


def load_log(reader: repopath.Reader) -> list[Decision]:
    """Every record of the log, by file name; unreadable files come back with their problems. Read through
    `reader`: the run's, so the pipeline reads each record once (a generator makes its own)."""
    return [load_record(reader, rel) for rel in record_files(reader)]


GLOB_CHARACTERS = frozenset("*?[")
# The folders whose children are the fleet's instances (one cluster, pool, team each). A fork replaces them
# (decision 0075), so a record governs a kind of fleet file (`clusters/*/queues`), never one instance of it.
FLEET_FOLDERS = ("clusters", "pools", "policies/teams")


def fleet_instance(written: str) -> tuple[str, str] | None:
    """(fleet folder, instance name) when `written` names one instance under a fleet folder without a glob in
    the instance's place: `clusters/prod-us/queues` -> ("clusters", "prod-us"); `clusters/*/queues` ->
    None."""
    parts = PurePosixPath(written.rstrip("/") or "/").parts
    for folder in FLEET_FOLDERS:
        depth = len(PurePosixPath(folder).parts)
        if parts[:depth] == PurePosixPath(folder).parts and len(parts) > depth:
            instance = parts[depth]
            return None if GLOB_CHARACTERS & set(instance) else (folder, instance)
    return None


def affected_paths(reader: repopath.Reader, log: list[Decision]) -> dict[str, bool]:
    """Whether each path (or glob) the records' `affects` lists names something in the repository; looked up
    once by the load stage, so DOC002 reads the answer from the model. Paths outside the repository (absolute,
    with `..`) are not looked up: DOC002 refuses them as written."""
    found: dict[str, bool] = {}
    for decision in log:
        value = decision.meta.get("affects")
        for item in value if isinstance(value, list) else ():
            written = item.strip() if isinstance(item, str) else ""
            path = PurePosixPath(written.rstrip("/") or "/")
            if written and written not in found and not path.is_absolute() and ".." not in path.parts:
                found[written] = _names_something(reader.root, written, path)
    return found


def _names_something(root: Path, written: str, path: PurePosixPath) -> bool:
    if GLOB_CHARACTERS & set(written):
        return any(root.glob(path.as_posix()))
    return (root / path).exists()


def number_of(file_name: str) -> str | None:
    match = RECORD_NAME.match(file_name) or LEADING_NUMBER.match(file_name)
    return match.group("number") if match else None


def load_record(reader: repopath.Reader, rel: str) -> Decision:
    decision = Decision(path=rel, number=number_of(PurePosixPath(rel).name), meta={})
    try:  # through the trust boundary: a record may be a symlink out of the repository, or a FIFO
        text = reader.read(rel).decode("utf-8")
    except (repopath.Refused, UnicodeDecodeError) as exc:
        decision.problems.append(Problem(f"cannot read the record: {exc}", 1, "save it as UTF-8 Markdown"))
        return decision
    lines = text.splitlines()
    closing = _front_matter_end(lines)
    if closing is None:
        decision.problems.append(
            Problem(
                "no front matter: the record must start with a `---` line, the YAML fields, and a closing "
                "`---`",
                1,
                "copy the block from docs/decisions/template.md",
            )
        )
        _read_body(decision, lines, 0)
        return decision
    decision.front_matter_line = 1
    _read_front_matter(decision, "\n".join(lines[1:closing]) + "\n")
    _read_body(decision, lines, closing + 1)
    return decision


def _front_matter_end(lines: list[str]) -> int | None:
    """Index of the closing `---` line when the file opens with a front matter block."""
    if not lines or lines[0].strip() != "---":
        return None
    for index in range(1, len(lines)):
        if lines[index].strip() in ("---", "..."):
            return index
    return None


def _read_front_matter(decision: Decision, yaml_text: str) -> None:
    offset = 1  # the YAML starts on the file's second line
    strict = yamlload.load_text(yaml_text, decision.path)
    for finding in strict.findings:
        decision.problems.append(
            Problem(f"front matter: {finding.message}", finding.line + offset, finding.hint)
        )
    if strict.findings:
        return
    if not strict.documents:
        decision.problems.append(
            Problem("front matter is empty", 1, "add status, date, deciders and affects")
        )
        return
    document = strict.documents[0]
    decision.meta_lines = {path: line + offset for path, line in document.lines.items()}
    # BaseLoader builds only str/list/dict; its C twin is 10x faster (the strict load above found any error)
    as_written = yaml.load(yaml_text, Loader=getattr(yaml, "CBaseLoader", yaml.BaseLoader))  # noqa: S506
    decision.meta = as_written if isinstance(as_written, dict) else {}


def _read_body(decision: Decision, lines: list[str], start: int) -> None:
    decision.body_line = start + 1
    decision.body = "\n".join(lines[start:])
    in_fence = False
    for index in range(start, len(lines)):
        line = lines[index]
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        if in_fence or not line.startswith("# "):
            continue
        match = TITLE.match(line)
        if match:
            decision.title = match.group("title")
            decision.title_number = match.group("number")
            decision.title_line = index + 1
        return
