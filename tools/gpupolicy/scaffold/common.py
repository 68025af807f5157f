"""The copy-edit-validate-write cycle every scaffold shares, and the small checks of its arguments."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ToolError
from ..infra import repopath, transaction
from ..recommend.edits import CandidateEditor, _errors, copy_repository

NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")  # a DNS label: what every object name here is


def check_name(kind: str, name: str) -> str:
    """`name` when it is a DNS label (it becomes a folder and object names); a ToolError otherwise."""
    if not NAME.match(name):
        raise ToolError(
            f"{kind} name {name!r}: use lower-case letters, digits and '-' (a DNS label, at most 63)"
        )
    return name


@dataclass
class Result:
    """What a scaffold wrote (or would write): repo-relative path -> new text; the errors it would add."""

    texts: dict[str, str] = field(default_factory=dict)
    created: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class Workspace:
    """A temporary copy of the repository the scaffold edits in steps; `result()` compares it with the
    original."""

    def __init__(self, root: Path, tmp: Path) -> None:
        self.root = root
        self.copy = copy_repository(root, tmp)
        self.touched: set[str] = set()
        self.notes: list[str] = []

    def create(self, files: Mapping[str, str]) -> None:
        """New files; refused when one exists already (a scaffold never overwrites)."""
        for rel in files:
            if (self.root / rel).exists() or (self.root / rel).is_symlink():
                raise ToolError(f"{rel} exists already; `gpupolicy new` only adds")
        self.write(files)

    def write(self, files: Mapping[str, str]) -> None:
        transaction.write_files({self.copy / rel: text for rel, text in files.items()})
        self.touched.update(files)

    def edit(self, step: Callable[[CandidateEditor], None]) -> None:
        """Round-trip edits of existing files (CandidateEditor: YAML kept as written, pools.conf rows, text
        edits after the YAML ones), written into the copy."""
        editor = CandidateEditor(self.copy)
        step(editor)
        texts = {rel: text for rel, text in editor.rendered().items() if text != editor.original(rel)}
        self.write(texts)

    def fleet(self, clusters: list[str] | None = None):
        from ..pipeline import load_fleet

        return load_fleet(self.copy, clusters, use_cache=False)

    def regenerate_pages(self) -> None:
        """The header blocks of the queue files the change touched (`queue_header`, DOC006, decision 0090),
        and the generated pages it rewrites, in the copy, when the repository commits them: without them
        `validate` would fail on every page the new pool or team appears in (DOC005, decision 0089)."""
        from .. import docsgen
        from ..domain import queue_header

        fleet = self.fleet()
        headers = queue_header.refreshed_files(fleet)
        self.write({rel: text for rel, text in headers.items() if rel in self.touched})
        if (self.copy / docsgen.GENERATED_DIR).is_dir():
            pages = docsgen.generate(self.copy, fleet)
            changed = [rel for rel in docsgen.stale_pages(self.copy, pages) if rel in pages]
            self.write({rel: pages[rel] for rel in changed})

    def result(self, known: set[str]) -> Result:
        from ..pipeline import run

        self.regenerate_pages()
        result = Result(notes=self.notes)
        for rel in sorted(self.touched):
            text = (self.copy / rel).read_text(encoding="utf-8")
            original = self.root / rel
            if not original.exists():
                result.created.append(rel)
            elif original.read_text(encoding="utf-8") == text:
                continue
            result.texts[rel] = text
        result.errors = sorted(_errors(run(self.copy, use_cache=False).findings) - known)
        return result


def scaffold(root: Path, steps: Callable[[Workspace], None]) -> Result:
    """Run `steps` on a copy of the repository; the files they change and the errors they add."""
    from ..recommend.edits import repository_errors

    known = repository_errors(root)
    with tempfile.TemporaryDirectory(prefix="gpupolicy-new-") as tmp:
        workspace = Workspace(root, Path(tmp))
        steps(workspace)
        return workspace.result(known)


def apply(root: Path, result: Result) -> None:
    """The scaffold's files written into the repository, all or none: existing ones resolved through the trust
    boundary, new ones only below real folders of the repository (never through a symbolic link)."""
    reader = repopath.Reader(root)
    targets = {}
    for rel, text in result.texts.items():
        if rel in result.created:
            targets[_new_file(root, rel)] = text
            continue
        try:
            targets[reader.regular_file(rel)] = text
        except repopath.Refused as refusal:
            raise ToolError(f"refusing to write {rel}: {refusal}") from None
    transaction.write_files(targets, journal_root=root)


def _new_file(root: Path, rel: str) -> str:
    path = root
    for part in Path(rel).parts[:-1]:
        path = path / part
        if path.is_symlink() or (path.exists() and not path.is_dir()):
            raise ToolError(
                f"refusing to write {rel}: {path.relative_to(root)} is not a folder of the repository"
            )
    if (root / rel).exists() or (root / rel).is_symlink():
        raise ToolError(f"{rel} exists already; `gpupolicy new` only adds")
    return str(root / rel)


def insert_list_item(text: str, key: str, item: str, after_prefix: str, path: str) -> str:
    """`text` with `- item` added to the top-level YAML list `key:` after its last item starting with
    `after_prefix` (else as its first item), in the list's own indentation; comments stay where they are."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.rstrip() == f"{key}:"), None)
    if start is None:
        raise ToolError(f"{path}: no top-level `{key}:` list to add {item} to")
    items, indent, end = [], "  ", start + 1
    for i in range(start + 1, len(lines)):
        stripped = lines[i].strip()
        if lines[i][:1] not in (" ", "\n", "#") and stripped:
            break
        if stripped.startswith("- "):
            items.append(i)
            indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
        end = i + 1
    del end
    matching = [i for i in items if lines[i].strip()[2:].startswith(after_prefix)]
    at = matching[-1] + 1 if matching else (items[0] if items else start + 1)
    if any(lines[i].strip() == f"- {item}" for i in items):
        return text
    lines.insert(at, f"{indent}- {item}\n")
    return "".join(lines)


def describe(result: Result, root_name: str = "") -> Iterable[str]:
    del root_name
    for rel in result.texts:
        yield f"  {'new' if rel in result.created else 'edited'}  {rel}"
