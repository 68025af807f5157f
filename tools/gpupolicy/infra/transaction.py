"""All-or-nothing writes of several files: an edit of a plan and its pools, a set of generated pages, the
schemas of an import, a cache entry.

Every new content goes to a temporary file in its target's folder (same file system, so the rename is atomic)
and is flushed to disk; only when every one is written do the renames start. A failure before that leaves
every target as it was and removes the temporaries. A failure during the renames (rare: the folder changed
under us) puts back what was already replaced, from hard links to the originals taken just before. Either
way the caller gets a ToolError naming the file, never a traceback and never half an edit.

A process killed between two renames (SIGKILL, a lost machine) runs no undo. A write inside a repository
(`journal_root`) therefore keeps a journal, `.gpupolicy-journal` at the repository root, written and flushed
before the first temporary and again before the first rename, removed once done. The temporaries and backups
carry the transaction's id in their names, so the journal never has to name them: `recover` (run by every
writing command first, `gpupolicy recover` on its own) rolls a journal in the committing phase forward and one
in the staging phase back, and removes only files named after the journal's id next to its targets. The
journal is content like any other (decision 0066): a tracked one, or one naming a path outside the repository,
is refused, never obeyed.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ToolError
from . import repopath

JOURNAL_NAME = ".gpupolicy-journal"
MAX_JOURNAL_BYTES = 1024 * 1024
_ID = re.compile(r"^[0-9a-f]{16}$")
_KILL_AFTER_ENV = "GPUPOLICY_TEST_KILL_AFTER_RENAMES"  # test seam: SIGKILL after N renames; inert unless set


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
    id: str = field(default_factory=lambda: secrets.token_hex(8))
    journal: str | None = None  # the journal's path while one is kept
    root: str = ""


def write_files(
    contents: Mapping[str | Path, str | bytes],
    remove: Iterable[str | Path] = (),
    durable: bool = True,
    journal_root: Path | str | None = None,
) -> None:
    """Write every `contents` target (text as UTF-8) and remove every `remove` target, all or nothing.
    Backups (to undo a failed rename) are taken when more than one file changes; then, with `journal_root`
    (the repository the targets lie in), a journal lets `recover` finish the write after a kill.
    `durable=False` skips the fsyncs: for cache entries, which verify themselves when read."""
    transaction = _Transaction(durable=durable)
    removals = [os.fspath(path) for path in remove]
    guarded = len(contents) + len(removals) > 1
    targets = [os.fspath(t) for t in contents] + removals
    try:
        if guarded and journal_root is not None:
            _open_journal(transaction, Path(journal_root), targets)
        for target, data in contents.items():
            _stage(transaction, os.fspath(target), data.encode("utf-8") if isinstance(data, str) else data)
        transaction.staged += [
            _Staged(target=path, temporary=None) for path in removals if os.path.lexists(path)
        ]
        if guarded:
            _take_backups(transaction)
        _write_journal(transaction, "committing", targets, removals)
        _commit(transaction)
    except OSError as exc:
        _undo(transaction)
        raise WriteError(
            f"cannot write {transaction.current}: {exc.strerror or exc}; nothing was changed"
        ) from None
    except BaseException:
        _undo(transaction)
        raise
    _discard_backups(transaction)
    if durable:
        _sync_folders({os.path.dirname(s.target) for s in transaction.staged})
    _close_journal(transaction)


# --- the journal -------------------------------------------------------------------------------------------


def _open_journal(transaction: _Transaction, root: Path, targets: list[str]) -> None:
    transaction.root = os.path.realpath(root)
    journal = os.path.join(transaction.root, JOURNAL_NAME)
    if os.path.lexists(journal):
        raise WriteError(
            f"{JOURNAL_NAME} in {root}: an earlier edit was interrupted; run `gpupolicy "
            "recover` "
            "first; nothing was changed"
        )
    transaction.journal = journal
    _write_journal(transaction, "staging", targets, [])


def _write_journal(transaction: _Transaction, phase: str, targets: list[str], removals: list[str]) -> None:
    if transaction.journal is None:
        return
    relative = [os.path.relpath(os.path.realpath(t), transaction.root) for t in targets]
    removed = {os.path.relpath(os.path.realpath(t), transaction.root) for t in removals}
    body = {
        "version": 1,
        "id": transaction.id,
        "phase": phase,
        "targets": [{"path": rel, "remove": rel in removed} for rel in relative],
    }
    staging = f"{transaction.journal}.{transaction.id}.tmp"
    with open(staging, "w", encoding="utf-8") as handle:
        json.dump(body, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(staging, transaction.journal)
    _sync_folders({transaction.root})


def _close_journal(transaction: _Transaction) -> None:
    if transaction.journal is not None:
        with contextlib.suppress(OSError):
            os.unlink(transaction.journal)
        transaction.journal = None


def _named(target: str, transaction_id: str, suffix: str) -> str:
    folder, name = os.path.split(target)
    return os.path.join(folder, f".{name}.{transaction_id}.{suffix}")


def _stage(transaction: _Transaction, target: str, data: bytes) -> None:
    transaction.current = target
    _refuse_special(target)
    folder = os.path.dirname(target) or "."
    _make_folders(transaction, folder)
    staged = _Staged(target=target, temporary=None, existed=os.path.lexists(target))
    if transaction.journal is None:
        descriptor, staged.temporary = tempfile.mkstemp(
            dir=folder, prefix=f".{os.path.basename(target)}.", suffix=".tmp"
        )
    else:  # named after the transaction, so that recovery finds it without trusting a name from the journal
        staged.temporary = _named(target, transaction.id, "tmp")
        descriptor = os.open(
            staged.temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600
        )
    transaction.staged.append(staged)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)
        if transaction.durable:
            handle.flush()
            os.fsync(handle.fileno())
    os.chmod(staged.temporary, _mode_for(target))


def _refuse_special(target: str) -> None:
    """A device, FIFO or socket where a file is to be written is refused: the rename would put a regular file
    in its place (`--events /dev/full` run as root replaced the device node)."""
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        return
    reason = None if stat.S_ISLNK(mode) else repopath.special_file_reason(mode)
    if reason is not None:
        raise OSError(errno.EINVAL, reason)


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
        staged.backup = (
            _free_name(staged.target, "bak")
            if transaction.journal is None
            else _named(staged.target, transaction.id, "bak")
        )
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
    for done, staged in enumerate(transaction.staged):
        _test_kill_point(done)
        transaction.current = staged.target
        if staged.temporary is None:
            os.unlink(staged.target)
        else:
            os.replace(staged.temporary, staged.target)
            staged.temporary = None
        transaction.committed.append(staged)


def _test_kill_point(renames_done: int) -> None:
    """The test seam for an interrupted commit: with $GPUPOLICY_TEST_KILL_AFTER_RENAMES=N the process kills
    itself (SIGKILL: no undo, no finally) once N renames are done. Unset, it does nothing."""
    limit = os.environ.get(_KILL_AFTER_ENV)
    if limit is not None and limit.isdigit() and renames_done == int(limit):
        os.kill(os.getpid(), 9)


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
    _close_journal(transaction)


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


# --- recovery ----------------------------------------------------------------------------------------------


def interrupted(root: Path) -> bool:
    return os.path.lexists(os.path.join(root, JOURNAL_NAME))


def recover(root: Path) -> str | None:
    """Finish or undo the write a journal at `root` records, remove its temporaries and backups and the
    journal; a sentence saying what was done, or None when there was nothing to do. A journal that is tracked
    by git, malformed, or names a path outside the repository is refused with a ToolError and left alone."""
    journal = os.path.join(os.path.realpath(root), JOURNAL_NAME)
    if not os.path.lexists(journal):
        return None
    body = _trusted_journal(Path(root), journal)
    forward = body["phase"] == "committing"
    for entry in body["targets"]:
        target = os.path.join(os.path.realpath(root), entry["path"])
        temporary, backup = _named(target, body["id"], "tmp"), _named(target, body["id"], "bak")
        if forward and os.path.isfile(temporary) and not os.path.islink(temporary):
            os.replace(temporary, target)
        elif forward and entry["remove"] and os.path.isfile(backup) and os.path.lexists(target):
            os.unlink(target)  # a removal not yet done: the backup of this transaction shows it was staged
        for leftover in (temporary, backup):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(leftover)
    os.unlink(journal)
    done = "completed" if forward else "rolled back"
    return f"an interrupted edit of {len(body['targets'])} file(s) was {done} ({JOURNAL_NAME} removed)"


def _trusted_journal(root: Path, journal: str) -> dict:
    where = f"{JOURNAL_NAME} in {root}"
    if os.path.islink(journal) or not os.path.isfile(journal) or os.path.getsize(journal) > MAX_JOURNAL_BYTES:
        raise ToolError(
            f"{where} is not a small regular file; refusing to recover from it (remove it by hand)"
        )
    if _tracked(root, JOURNAL_NAME):
        raise ToolError(
            f"{where} is tracked by git: a journal comes from an interrupted run, never from a "
            "commit; refusing to act on it (remove it in its own commit)"
        )
    try:
        with open(journal, encoding="utf-8") as handle:
            body = json.load(handle)
        _require(body.get("version") == 1 and bool(_ID.match(body["id"])), "no version 1 or id")
        _require(body["phase"] in ("staging", "committing"), "unknown phase")
        for entry in body["targets"]:
            _require(isinstance(entry["remove"], bool), "a target without its remove flag")
            entry["path"] = repopath.normalize("", entry["path"])  # refuses '..', absolute paths, URLs
            if not repopath.within(root, root / entry["path"]):  # a symlinked folder on the way out
                raise repopath.Refused(f"{entry['path']} resolves outside the repository")
    except (OSError, ValueError, KeyError, TypeError, repopath.Refused) as exc:
        raise ToolError(
            f"{where} is not a journal this toolkit wrote ({exc or 'malformed'}); refusing to "
            "recover from it (remove it by hand)"
        ) from None
    return body


def _require(holds: bool, problem: str) -> None:
    if not holds:
        raise ValueError(problem)


def _tracked(root: Path, rel: str) -> bool:
    try:
        return (
            subprocess.run(
                ["git", "ls-files", "--error-unmatch", "--", rel],
                cwd=root,
                capture_output=True,
                timeout=60,
                check=False,
            ).returncode
            == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
