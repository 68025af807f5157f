"""All-or-nothing writes of several files: an edit of a plan and its pools, a set of generated pages, the
schemas of an import, a cache entry.

Every new content goes to a temporary file in its target's folder (same file system, so the rename is atomic)
and is flushed to disk; only when every one is written do the renames start. A failure before that leaves
every target as it was and removes the temporaries. A failure during the renames (rare: the folder changed
under us) puts back what was already replaced, from hard links to the originals taken just before. Either
way the caller gets a ToolError naming the file, never a traceback and never half an edit.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .errors import ToolError


def _process_umask() -> int:
    """Read once, at import (single-threaded): os.umask can only be read by setting it, which would race
    with files other threads create meanwhile."""
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


_UMASK = _process_umask()


class WriteError(ToolError):
    """A multi-file write that did not happen; nothing was changed."""


@dataclass
class _Staged:
    target: str
    temporary: str | None  # None: the target is to be removed
    backup: str | None = None
    existed: bool = False


@dataclass
class _Transaction:
    staged: list[_Staged] = field(default_factory=list)
    created_folders: list[str] = field(default_factory=list)
    committed: list[_Staged] = field(default_factory=list)
    current: str = ""  # the target being staged or committed, for the message of a failure
    durable: bool = True


def write_files(contents: Mapping[str | Path, str | bytes], remove: Iterable[str | Path] = (),
                durable: bool = True) -> None:
    """Write every `contents` target (text as UTF-8) and remove every `remove` target, all or nothing.
    Backups (to undo a failed rename) are taken when more than one file changes.
    `durable=False` skips the fsyncs: for cache entries, which verify themselves when read."""
    transaction = _Transaction(durable=durable)
    removals = [os.fspath(path) for path in remove]
    guarded = len(contents) + len(removals) > 1
    try:
        for target, data in contents.items():
            _stage(transaction, os.fspath(target), data.encode("utf-8") if isinstance(data, str) else data)
        transaction.staged += [_Staged(target=path, temporary=None) for path in removals if os.path.lexists(path)]
        if guarded:
            _take_backups(transaction)
        _commit(transaction)
    except OSError as exc:
        _undo(transaction)
        raise WriteError(f"cannot write {transaction.current}: {exc.strerror or exc}; nothing was changed") from None
    except BaseException:
        _undo(transaction)
        raise
    _discard_backups(transaction)
    if durable:
        _sync_folders({os.path.dirname(s.target) for s in transaction.staged})


def _stage(transaction: _Transaction, target: str, data: bytes) -> None:
    transaction.current = target
    folder = os.path.dirname(target) or "."
    _make_folders(transaction, folder)
    staged = _Staged(target=target, temporary=None, existed=os.path.lexists(target))
    descriptor, staged.temporary = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(target)}.",
                                                    suffix=".tmp")
    transaction.staged.append(staged)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)
        if transaction.durable:
            handle.flush()
            os.fsync(handle.fileno())
    os.chmod(staged.temporary, _mode_for(target))


def _make_folders(transaction: _Transaction, folder: str) -> None:
    missing = []
    current = os.path.abspath(folder)
    while not os.path.isdir(current):
        missing.append(current)
        current = os.path.dirname(current)
    for path in reversed(missing):
        try:
            os.mkdir(path)
        except FileExistsError:  # made by a parallel writer (render threads share the cache folder)
            continue
        transaction.created_folders.append(path)


def _mode_for(target: str) -> int:
    """The target's own permissions when it exists (a rewrite keeps them), else the umask's default."""
    try:
        return os.stat(target).st_mode & 0o7777
    except OSError:
        return 0o666 & ~_UMASK


def _take_backups(transaction: _Transaction) -> None:
    for staged in transaction.staged:
        if not os.path.lexists(staged.target):
            continue
        staged.existed = True
        staged.backup = _free_name(staged.target, "bak")
        try:
            os.link(staged.target, staged.backup, follow_symlinks=False)
        except OSError:  # a file system without hard links: a copy does as well
            shutil.copy2(staged.target, staged.backup, follow_symlinks=False)


def _free_name(target: str, suffix: str) -> str:
    folder, name = os.path.split(target)
    descriptor, path = tempfile.mkstemp(dir=folder or ".", prefix=f".{name}.", suffix=f".{suffix}")
    os.close(descriptor)
    os.unlink(path)  # only the unique name is wanted; os.link needs it free
    return path


def _commit(transaction: _Transaction) -> None:
    for staged in transaction.staged:
        transaction.current = staged.target
        if staged.temporary is None:
            os.unlink(staged.target)
        else:
            os.replace(staged.temporary, staged.target)
            staged.temporary = None
        transaction.committed.append(staged)


def _undo(transaction: _Transaction) -> None:
    """Put back what the renames replaced, remove every temporary and the folders made for them."""
    for staged in reversed(transaction.committed):
        with contextlib.suppress(OSError):
            if staged.backup:
                os.replace(staged.backup, staged.target)
                staged.backup = None
            elif not staged.existed:
                os.unlink(staged.target)
    for staged in transaction.staged:
        for leftover in (staged.temporary, staged.backup):
            if leftover:
                with contextlib.suppress(OSError):
                    os.unlink(leftover)
    for folder in reversed(transaction.created_folders):
        with contextlib.suppress(OSError):
            os.rmdir(folder)


def _discard_backups(transaction: _Transaction) -> None:
    for staged in transaction.staged:
        if staged.backup:
            with contextlib.suppress(OSError):
                os.unlink(staged.backup)


def _sync_folders(folders: set[str]) -> None:
    """Make the renames durable (best effort: not every platform can open a folder)."""
    for folder in folders:
        with contextlib.suppress(OSError):
            descriptor = os.open(folder or ".", os.O_RDONLY)
            try:
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
