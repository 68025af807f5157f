"""The guardrail configuration, and which side of a change it is read from.

The guardrail files decide what every other check reports, so a pull request must not write its own:
`gpupolicy.yaml` (severities, disabled rules), `policies/exceptions.yaml` (reviewed exceptions), the
declarative checks under `policies/checks/`, and CODEOWNERS (who reviews those files, and whom an exception's
`owner` must name) in every place a forge reads it. `GUARDED_FILES` and `GUARDED_FOLDERS` are the one list.

With a base revision (`validate --base REV`, the CI gate; `diff` always) they are read from that revision with
`gitrev.read_blob` (git cat-file: no attribute filters, no LFS, bounded; symlinks and submodules refused), and
the head's versions are data: each guardrail file the head changes is CFG003 at its first changed line, naming
its code owners, and takes effect only once merged. Without a base (a developer's run) they are read from the
working tree, as before. Decision 0062.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..domain.waivers import ANNOTATION_PREFIX, EXCEPTIONS_FILE
from ..errors import ToolError
from ..findings import Finding
from ..infra import codeowners, gitrev, repopath
from ..infra.yamlload import MAX_FILE_BYTES, parse_source
from ..model import Fleet
from ..orgchecks import CHECKS_DIR, YAML_SUFFIXES
from ..rules import cfg003_guardrail_changed as cfg003
from .repoconfig import CONFIG_FILE

GUARDED_FILES = (CONFIG_FILE, EXCEPTIONS_FILE, *codeowners.LOCATIONS)
GUARDED_FOLDERS = (CHECKS_DIR,)
MAX_LISTED = 10_000  # files of a guarded folder at a revision: far more checks than any organization writes
GIT_TIMEOUT_SECONDS = 60
_MEMO = "guardrail-source"


def is_guarded(rel: str) -> bool:
    """Whether the repository-relative `rel` is a guardrail file."""
    return rel in GUARDED_FILES or any(
        rel.startswith(folder + "/") and rel.endswith(YAML_SUFFIXES) for folder in GUARDED_FOLDERS
    )


class Source(Protocol):
    """Where the guardrail files are read: `read` is None for a missing file and raises repopath.Refused for
    one
    that cannot be read; `files(folder)` lists a guarded folder's YAML files."""

    label: str

    def read(self, rel: str) -> bytes | None: ...

    def files(self, folder: str) -> list[str]: ...


@dataclass
class WorkingTree:
    """The files as the checkout has them, through the run's trust boundary."""

    reader: repopath.Reader
    label: str = "the working tree"

    def read(self, rel: str) -> bytes | None:
        if not os.path.lexists(os.path.join(self.reader.real_root, rel)):
            return None
        return self.reader.read(rel)

    def files(self, folder: str) -> list[str]:
        root = self.reader.real_root
        found = []
        for directory, _subdirs, names in os.walk(os.path.join(root, folder)):
            rel_dir = os.path.relpath(directory, root).replace(os.sep, "/")
            found.extend(f"{rel_dir}/{name}" for name in names if name.endswith(YAML_SUFFIXES))
        return sorted(found)[:MAX_LISTED]


@dataclass
class FromBase:
    """The files as committed at the base revision of the git repository at `git_root` (the policy repository,
    or a folder of it), read as data."""

    git_root: Path
    rev: str
    commit: str = ""
    _annotations: dict[str, set[tuple[str, str]]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.commit = self.commit or gitrev.resolve(self.git_root, self.rev)

    @property
    def label(self) -> str:
        return f"the base {self.rev} ({self.commit[:12]})"

    def read(self, rel: str) -> bytes | None:
        try:
            return gitrev.read_blob(self.git_root, self.commit, rel, MAX_FILE_BYTES)
        except ToolError as exc:
            raise repopath.Refused(f"{rel} at {self.rev}: {exc}") from None

    def files(self, folder: str) -> list[str]:
        """The YAML blobs under `folder` at the base (`git ls-tree`: paths relative to the policy
        repository)."""
        try:
            listed = subprocess.run(
                ["git", "ls-tree", "-r", "-z", self.commit, "--", folder],
                cwd=self.git_root,
                capture_output=True,
                timeout=GIT_TIMEOUT_SECONDS,
                check=True,
            ).stdout
        except (OSError, subprocess.SubprocessError) as exc:
            raise ToolError(f"cannot list {folder} at {self.rev}: {exc}") from None
        found = []
        for entry in listed.decode(errors="replace").split("\0"):
            meta, _tab, path = entry.partition("\t")
            if path.endswith(YAML_SUFFIXES) and meta.split(" ")[1:2] == ["blob"]:
                found.append(path)
        return sorted(found)[:MAX_LISTED]

    def has_annotation(self, rel: str, key: str, value: str) -> bool:
        """Whether the base's `rel` already writes annotation `key: value` (anywhere: metadata, a patch, a
        kustomization's commonAnnotations). A file the base lacks or cannot read has none."""
        if rel not in self._annotations:
            self._annotations[rel] = _annotations_in(self, rel)
        return (key, value) in self._annotations[rel]


def _annotations_in(base: FromBase, rel: str) -> set[tuple[str, str]]:
    try:
        raw = base.read(rel)
    except repopath.Refused:
        return set()
    found: set[tuple[str, str]] = set()
    for doc in parse_source(raw, rel).documents if raw is not None else ():
        _collect(doc.data, found)
    return found


def _collect(value: object, found: set[tuple[str, str]]) -> None:
    """Every `exception.gpupolicy.io/...: text` pair in a loaded document (the loader bounds its depth)."""
    if isinstance(value, dict):
        for key, inner in value.items():
            if isinstance(key, str) and key.startswith(ANNOTATION_PREFIX) and isinstance(inner, str):
                found.add((key, inner))
            else:
                _collect(inner, found)
    elif isinstance(value, list):
        for inner in value:
            _collect(inner, found)


# --- which source a run reads
# ----------------------------------------------------------------------------------


def attach(fleet: Fleet, source: Source) -> None:
    """Make `source` the fleet's guardrail source for this run (before any rule reads the configuration)."""
    fleet.memo(_MEMO, lambda: source)


def source_of(fleet: Fleet) -> Source:
    return fleet.memo(_MEMO, lambda: WorkingTree(repopath.Reader(fleet.root)))


def base_of(fleet: Fleet) -> FromBase | None:
    source = source_of(fleet)
    return source if isinstance(source, FromBase) else None


def owners_of(fleet: Fleet) -> codeowners.CodeOwners:
    """The CODEOWNERS of the guardrail source (the base's, with a base), once per run."""
    return fleet.memo("codeowners", lambda: read_codeowners(source_of(fleet)))


def read_codeowners(source: Source) -> codeowners.CodeOwners:
    """The first CODEOWNERS the forge would use; an unreadable one names nobody (so no owner matches)."""
    for rel in codeowners.LOCATIONS:
        try:
            raw = source.read(rel)
        except repopath.Refused:
            return codeowners.CodeOwners(rel)
        if raw is not None:
            return codeowners.parse(raw.decode("utf-8", errors="replace"), rel)
    return codeowners.CodeOwners("")


def reviewers(owners: codeowners.CodeOwners, rel: str) -> str:
    named = owners.owners_of(rel)
    if named:
        return f"{' '.join(named)} ({owners.path})"
    return f"the guardrail owners (no CODEOWNERS entry names any for {rel})"


# --- what the change does to them
# --------------------------------------------------------------------------------


def changes(base: FromBase, head: Source, owners: codeowners.CodeOwners) -> list[Finding]:
    """CFG003 for each guardrail file whose head version differs from the base's, at its first changed
    line."""
    found = []
    for rel in sorted(_guarded_paths(base) | _guarded_paths(head)):
        old, new = _content(base, rel), _content(head, rel)
        if old == new:
            continue
        what = "added" if old is None else "deleted" if new is None else "changed"
        found.append(
            cfg003.finding(
                f"guardrail configuration {what} by this change: {rel} takes effect only once merged (this "
                f"run applies {base.label}'s); needs review by {reviewers(owners, rel)}",
                rel,
                0 if new is None else first_changed_line(old or b"", new),
                hint="propose guardrail changes in their own pull request, for the code owners to review and "
                "merge",
            )
        )
    return found


def inline_change(base: FromBase, rule: str, owners: codeowners.CodeOwners, path: str, line: int) -> Finding:
    """CFG003 for an exception annotation the base does not have: it accepts nothing until merged."""
    return cfg003.finding(
        f"exception annotation for {rule} added by this change: it accepts nothing until merged (this run "
        f"applies {base.label}'s exceptions); needs review by {reviewers(owners, EXCEPTIONS_FILE)}",
        path,
        line,
        hint="an exception is a guardrail change: propose it on its own, for the code owners to review",
    )


def _guarded_paths(source: Source) -> set[str]:
    paths = set(GUARDED_FILES)
    for folder in GUARDED_FOLDERS:
        try:
            paths.update(source.files(folder))
        except ToolError:
            continue
    return paths


def _content(source: Source, rel: str) -> bytes | None:
    try:
        return source.read(rel)
    except repopath.Refused as exc:  # unreadable on one side: never equal to a readable version
        return f"\0refused: {exc}".encode()


def first_changed_line(old: bytes, new: bytes) -> int:
    """The first line of `new` that differs from `old` (1-based); past the end when only lines were
    removed."""
    old_lines, new_lines = old.splitlines(), new.splitlines()
    for number, (before, after) in enumerate(zip(old_lines, new_lines, strict=False), start=1):
        if before != after:
            return number
    return (
        min(len(old_lines), len(new_lines)) + 1 if len(new_lines) > len(old_lines) else max(len(new_lines), 1)
    )
