"""`gpupolicy cache`: what the toolkit keeps between runs, and pruning it.

Everything lives under one folder ($GPUPOLICY_CACHE_DIR, else $XDG_CACHE_HOME/gpupolicy/render, else
~/.cache/gpupolicy/render): rendered overlays, strict-load results, rendered-document memos and kept kustomize
graphs (decision 0021). Entries are addressed by content, so a stale one is never used, only kept; nothing
deletes them on its own. `--prune DAYS` deletes what no run has read for DAYS days (the file's last access or
change, whichever is later) and every entry of other toolkit versions; `--clear` deletes it all. Either is
always safe: the next run only renders and parses again. In CI, prune before saving the folder.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

from .. import kustomize, parsecache

NAME = "cache"
HELP = "show the size of the render and parse caches, prune entries unused for N days, or clear them"
NEEDS_REPO = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--prune", metavar="DAYS", type=_days, help="delete entries no run has read for DAYS days")
    action.add_argument("--clear", action="store_true", help="delete the whole cache folder")


def _days(text: str) -> float:
    try:
        days = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of days") from None
    if days < 0:
        raise argparse.ArgumentTypeError("DAYS cannot be negative")
    return days


def run(args: argparse.Namespace) -> int:
    folder = kustomize.cache_dir()
    if args.clear:
        if folder.is_dir():
            shutil.rmtree(folder)
        print(f"cleared {folder}")
        return 0
    if args.prune is not None:
        removed, freed = prune(folder, args.prune)
        print(f"pruned {removed:,} entries ({_size(freed)}) from {folder}")
    files, size = _usage(folder)
    print(f"{folder}: {files:,} entries, {_size(size)}")
    return 0


def prune(folder: Path, days: float, now: float | None = None) -> tuple[int, int]:
    """Delete entries unread for `days` days and parse results of other toolkit versions: (count, bytes)."""
    if not folder.is_dir():
        return 0, 0
    cutoff = (now if now is not None else time.time()) - days * 86400
    current = parsecache.ParseCache(folder / "parsed").directory
    removed = freed = 0
    for directory, _, names in os.walk(folder):
        other_version = _under(Path(directory), folder / "parsed") and not _under(Path(directory), current)
        for name in names:
            path = os.path.join(directory, name)
            try:
                info = os.stat(path)
                if other_version or max(info.st_atime, info.st_mtime) < cutoff:
                    os.unlink(path)
                    removed, freed = removed + 1, freed + info.st_size
            except OSError as exc:
                print(f"gpupolicy cache: cannot remove {path}: {exc.strerror}", file=sys.stderr)
    _remove_empty_folders(folder)
    return removed, freed


def _under(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents


def _remove_empty_folders(folder: Path) -> None:
    for directory, _, _ in os.walk(folder, topdown=False):  # deepest first, so emptied parents go too
        if directory != str(folder):
            try:
                os.rmdir(directory)
            except OSError:
                pass  # not empty (or filled again by a run in parallel): keep it


def _usage(folder: Path) -> tuple[int, int]:
    files = size = 0
    for directory, _, names in os.walk(folder):
        for name in names:
            try:
                size += os.stat(os.path.join(directory, name)).st_size
                files += 1
            except OSError:
                pass
    return files, size


def _size(amount: float) -> str:
    units = ("B", "KiB", "MiB", "GiB")
    for unit in units:
        if amount < 1024 or unit == units[-1]:
            break
        amount /= 1024
    return f"{amount:,.0f} B" if unit == "B" else f"{amount:,.1f} {unit}"
