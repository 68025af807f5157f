"""Git revisions for `diff` and `--changed-since`, read without touching the user's working tree or index.

A revision is materialized into a temporary directory from `git ls-tree` and `git cat-file --batch` (read-only
plumbing: no checkout, no index, no worktree bookkeeping, and no filter: `git archive` would run the smudge
filter a `.gitattributes` of the revision names, git-lfs among them, which fetches what `.lfsconfig` says;
decision 0064). The policy repository may be a subdirectory of the git repository; every path here is relative
to the policy repository root.
"""

from __future__ import annotations

import io
import os
import shutil
import stat
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from ..errors import ToolError
from . import repopath

GIT_TIMEOUT_SECONDS = 120
MAX_REVISION_FILES = 200_000
MAX_REVISION_BYTES = 512 * 1024 * 1024
DEFAULT_BRANCH = "main"


def _git(root: Path, *args: str, binary: bool = False) -> str | bytes:
    try:
        proc = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, timeout=GIT_TIMEOUT_SECONDS, check=False
        )
    except FileNotFoundError as exc:
        raise ToolError("git is not installed; it is needed to compare revisions") from exc
    except subprocess.TimeoutExpired as exc:
        raise ToolError(f"git {args[0]} timed out after {GIT_TIMEOUT_SECONDS}s") from exc
    if proc.returncode != 0:
        message = proc.stderr.decode(errors="replace").strip().splitlines()
        raise ToolError(f"git {' '.join(args)}: {message[-1] if message else 'failed'}")
    return proc.stdout if binary else proc.stdout.decode()


def _prefix(root: Path) -> str:
    """The policy repository's path inside the git repository ('' at the top, else 'sub/dir/')."""
    try:
        return str(_git(root, "rev-parse", "--show-prefix")).strip()
    except ToolError as exc:
        raise ToolError(f"{root} is not inside a git repository ({exc})") from exc


def resolve(root: Path, rev: str) -> str:
    """The commit a revision names, or a clear error."""
    try:
        return str(_git(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")).strip()
    except ToolError:
        _require_repository(root)  # asked only on failure: one git process per revision, not two
        raise ToolError(f"unknown git revision {rev!r}") from None


# a regular file in a git tree; 120000 (symlink) and 160000 (submodule) are not
_BLOB_MODES = ("100644", "100755")


def read_blob(root: Path, rev: str, path: str, max_bytes: int) -> bytes | None:
    """One file of the policy repository as committed at `rev`, or None when the revision has no such file.

    Read with `git cat-file blob`, which applies no filter: no `.gitattributes` smudge, no git-lfs, no
    `.lfsconfig` (content the pull request controls never runs or reaches the network through it). A path
    that is a symlink or a submodule at `rev`, or a blob over `max_bytes`, is a ToolError, never followed or
    read: the trusted side of a comparison is read as data, bounded."""
    name = repopath.normalize("", path)  # raises repopath.Refused for '..' or an absolute path
    commit = resolve(root, rev)
    spec = f"{commit}:{_prefix(root)}{name}"
    listed = str(_git(root, "ls-tree", "-z", commit, "--", f"{_prefix(root)}{name}")).rstrip("\0")
    if not listed:
        return None
    mode, kind, _rest = listed.split(" ", 2)
    if kind != "blob" or mode not in _BLOB_MODES:
        raise ToolError(f"{name} at {rev} is not a regular file (git mode {mode}); refused")
    size = int(str(_git(root, "cat-file", "-s", spec)).strip())
    if size > max_bytes:
        raise ToolError(f"{name} at {rev} is {size} bytes, over the limit of {max_bytes}; refused")
    return bytes(_git(root, "cat-file", "blob", spec, binary=True))


def _require_repository(root: Path) -> None:
    """Outside any git repository every revision is "unknown": say what is really wrong."""
    try:
        _git(root, "rev-parse", "--git-dir")
    except ToolError as exc:
        if "not a git repository" not in str(exc):  # git missing, or another failure: its own message
            raise
        raise ToolError(
            f"{root} is not a git repository (nor inside one); diff and --changed-since compare git revisions"
        ) from None


def default_base(root: Path, branch: str = DEFAULT_BRANCH) -> tuple[str, str]:
    """(commit, description) of the merge base of HEAD with `branch` (or origin/`branch`); HEAD itself when
    neither exists."""
    for candidate in (branch, f"origin/{branch}"):
        try:
            resolve(root, candidate)
        except ToolError:
            continue
        commit = str(_git(root, "merge-base", "HEAD", candidate)).strip()
        return commit, f"merge base with {candidate} ({commit[:12]})"
    commit = resolve(root, "HEAD")
    return commit, f"HEAD ({commit[:12]}; no {branch} branch)"


def dirty_paths(root: Path, paths: Sequence[str] = (".",)) -> list[str]:
    """The files among `paths` (relative to the policy repository) with uncommitted changes, untracked ones
    included, relative to the policy repository; a ToolError when git cannot tell."""
    listed = str(_git(root, "status", "--porcelain", "-z", "--untracked-files=all", "--", *paths))
    prefix = _prefix(root)
    entries = listed.split("\0")
    found = []
    for i, entry in enumerate(entries):
        if len(entry) < 4 or (i and entries[i - 1][:1] == "R"):  # a rename's second entry is its old path
            continue
        path = entry[3:]
        found.append(path[len(prefix) :] if path.startswith(prefix) else path)
    return found


def dirty_reason(root: Path, paths: Sequence[str] = (".",)) -> str | None:
    """Why the files among `paths` are not clean enough to edit (naming them, and what to do), or None. The
    one check every command that writes files in place makes first (`upgrade`, `recommend --apply`)."""
    try:
        changed = dirty_paths(root, paths)
    except ToolError as exc:
        return f"cannot ask git whether the working tree is clean ({exc})"
    if not changed:
        return None
    listed = ", ".join(changed[:5]) + (" ..." if len(changed) > 5 else "")
    return (
        f"the git working tree is dirty ({len(changed)} path(s) with uncommitted changes: {listed}); "
        "commit or stash them first"
    )


# What `git archive` writes: folders, files and symlinks. Anything else in an archive is refused.
_FILE_MODE, _EXECUTABLE_MODE, _FOLDER_MODE = 0o644, 0o755, 0o755
_CREATE_FLAGS = (
    os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
)


def unpack(archive: bytes, target: Path) -> None:
    """Write a tar archive's folders, files and symlinks under the empty folder `target`.

    Our own unpacker rather than `TarFile.extractall(filter=...)`, which Debian 12's Python 3.11.2 lacks (it
    came in 3.11.4; decision 0038). Each member name goes through the trust boundary (`repopath.normalize`:
    no absolute path, no `..` above the root); each folder on the way must be a real folder, never a symlink,
    so no member is written outside `target`; files are created, never overwritten. A symlink is kept as a
    link whatever it points at, as in the working tree: readers resolve it through `repopath`, which reports
    one that leaves the repository (YAML008). Hard links, devices and FIFOs are refused: git never writes one.
    """
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar:
            try:
                name = repopath.normalize("", member.name)
            except repopath.Refused as exc:
                raise ToolError(f"archive member refused: {exc}") from None
            parts = name.split("/")
            folder = _real_folder(target, parts[:-1])
            if member.isdir():
                _real_folder(folder, parts[-1:])
            elif member.isreg():
                _write_file(folder / parts[-1], tar.extractfile(member), member.mode)
            elif member.issym():
                os.symlink(member.linkname, folder / parts[-1])
            else:
                raise ToolError(f"archive member {name!r} is not a file, folder or symlink; refused")


def _real_folder(base: Path, parts: list[str]) -> Path:
    """`base/parts...`, creating missing folders; an existing part that is not a real folder (a symlink, a
    file) is refused, so nothing is ever written through a link."""
    folder = base
    for part in parts:
        folder = folder / part
        try:
            os.mkdir(folder, _FOLDER_MODE)
        except FileExistsError:
            if not stat.S_ISDIR(os.lstat(folder).st_mode):
                raise ToolError(
                    f"archive member path {str(folder.relative_to(base))!r} goes through a "
                    "symlink or a file; refused"
                ) from None
    return folder


def _write_file(path: Path, source: BinaryIO | None, mode: int) -> None:
    descriptor = os.open(path, _CREATE_FLAGS, _EXECUTABLE_MODE if mode & 0o111 else _FILE_MODE)
    with os.fdopen(descriptor, "wb") as sink:
        if source is not None:
            shutil.copyfileobj(source, sink)


@contextmanager
def materialize(root: Path, rev: str) -> Iterator[Path]:
    """The policy repository as it was at `rev`, in a temporary directory removed afterwards. The whole tree:
    rules may check any path (a decision record's `affects`, a runbook link)."""
    commit = resolve(root, rev)
    prefix = _prefix(root)
    archive = _tree_archive(root, f"{commit}:{prefix}" if prefix else f"{commit}^{{tree}}")
    with tempfile.TemporaryDirectory(prefix="gpupolicy-rev-") as tmp:
        target = Path(tmp) / "repo"
        target.mkdir()
        try:
            unpack(bytes(archive), target)
        except (tarfile.TarError, OSError, ToolError) as exc:
            raise ToolError(f"cannot unpack revision {rev}: {exc}") from exc
        yield target


def _tree_archive(root: Path, tree: str) -> bytes:
    """The tree's files and symlinks as a tar archive for `unpack`, each blob exactly as committed. Submodules
    (mode 160000) are left out, as `git archive` leaves them."""
    listing = str(_git(root, "ls-tree", "-r", "-l", "-z", tree)).split("\0")
    entries, total = [], 0
    for line in filter(None, listing):
        meta, name = line.split("\t", 1)
        mode, kind, oid, size = meta.split()
        if kind == "blob":
            entries.append((name, int(mode, 8), oid))
            total += int(size)
    # a revision is content: bounded before a byte of it is read (the working tree's loader has its own
    # limits)
    if len(entries) > MAX_REVISION_FILES or total > MAX_REVISION_BYTES:
        raise ToolError(
            f"revision tree {tree} holds {len(entries):,} files of {total:,} bytes, over the "
            f"limit of {MAX_REVISION_FILES:,} files or {MAX_REVISION_BYTES:,} bytes; refused"
        )
    contents = _blobs(root, [oid for _, _, oid in entries])
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, mode, oid in entries:
            data = contents[oid]
            member = tarfile.TarInfo(name)
            if stat.S_ISLNK(mode):
                member.type, member.linkname = tarfile.SYMTYPE, data.decode("utf-8", "surrogateescape")
                tar.addfile(member)
            else:
                member.size, member.mode = len(data), 0o755 if mode & 0o111 else 0o644
                tar.addfile(member, io.BytesIO(data))
    return buffer.getvalue()


def _blobs(root: Path, oids: list[str]) -> dict[str, bytes]:
    """oid -> content of each blob, in one `git cat-file --batch` (no --filters, no --textconv: raw bytes)."""
    if not oids:
        return {}
    try:
        proc = subprocess.run(
            ["git", "cat-file", "--batch"],
            cwd=root,
            input="\n".join(oids).encode() + b"\n",
            capture_output=True,
            timeout=GIT_TIMEOUT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise ToolError(f"git cat-file timed out after {GIT_TIMEOUT_SECONDS}s") from exc
    if proc.returncode != 0:
        raise ToolError(f"git cat-file --batch: {proc.stderr.decode(errors='replace').strip() or 'failed'}")
    out, found, at = proc.stdout, {}, 0
    while at < len(out):
        end = out.index(b"\n", at)
        oid, _kind, size = out[at:end].decode().split(" ")
        found[oid] = out[end + 1 : end + 1 + int(size)]
        at = end + 1 + int(size) + 1  # the content, then one newline
    return found


@dataclass
class Changes:
    """Paths (relative to the policy repository) that differ between a revision and the working tree."""

    modified: set[str] = field(default_factory=set)  # added, modified, renamed-to, untracked
    deleted: set[str] = field(default_factory=set)  # present at the revision, gone now (or renamed-from)

    @property
    def all(self) -> set[str]:
        return self.modified | self.deleted


def changed_since(root: Path, rev: str) -> Changes:
    """What `git diff REV` (staged and unstaged) plus untracked files change under the policy repository."""
    commit = resolve(root, rev)
    changes = Changes()
    status = str(_git(root, "diff", "--name-status", "--no-renames", "--relative", "-z", commit, "--", "."))
    fields = [f for f in status.split("\0") if f]
    for code, path in zip(fields[::2], fields[1::2], strict=False):
        (changes.deleted if code.startswith("D") else changes.modified).add(path)
    untracked = str(_git(root, "ls-files", "--others", "--exclude-standard", "-z", "--", "."))
    changes.modified.update(p for p in untracked.split("\0") if p)
    return changes
