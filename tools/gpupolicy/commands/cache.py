"""`gpupolicy cache`: what the toolkit keeps between runs, and pruning it.

Everything lives under one folder (`cachestore.CacheStore`: $GPUPOLICY_CACHE_DIR, else
$XDG_CACHE_HOME/gpupolicy/render, else ~/.cache/gpupolicy/render): rendered overlays, strict-load results,
rendered-document memos and kept kustomize graphs (decision 0021). Entries are addressed by content, so a
stale one is never used, only kept; nothing deletes them on its own. `--prune DAYS` deletes what no run has
read for DAYS days (the file's last access or change, whichever is later) and every entry of other toolkit
versions; `--clear` deletes it all. Either is always safe: the next run only renders and parses again. In CI,
prune before saving the folder.
"""

from __future__ import annotations

import argparse

from ..infra.cache.store import CacheStore
from . import COMMANDS, number_in

NAME = "cache"
HELP = COMMANDS[NAME]  # one home for the help text: the table `--help` reads
NEEDS_REPO = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    action = parser.add_mutually_exclusive_group()
    action.add_argument(
        "--prune", metavar="DAYS", type=_days, help="delete entries no run has read for DAYS days"
    )
    action.add_argument("--clear", action="store_true", help="delete the whole cache folder")


_days = number_in(float, "a number of days", lambda days: days >= 0, "DAYS cannot be negative")


def run(args: argparse.Namespace) -> int:
    store = CacheStore()
    folder = store.root
    if args.clear:
        store.clear()
        print(f"cleared {folder}")
        return 0
    if args.prune is not None:
        removed, freed = store.prune(args.prune)
        print(f"pruned {removed:,} entries ({_size(freed)}) from {folder}")
    print(_usage_table(folder, store.usage()))
    return 0


def _usage_table(folder, usage: dict[str, tuple[int, int]]) -> str:
    """One line per cache (the render and parse caches always, the rest when they hold something), then the
    total."""
    from ..infra.cache.store import GRAPH_KIND, PARSE_KIND, RENDER_KIND

    shown = {
        kind: counts
        for kind, counts in usage.items()
        if kind in (RENDER_KIND, PARSE_KIND, GRAPH_KIND) or counts[0]
    }
    width = max(len(kind) for kind in shown)
    entries, size = (sum(column) for column in zip(*usage.values(), strict=True))
    lines = [f"{folder}:"]
    lines += [
        f"  {kind:{width}}  {count:>9,} entries  {_size(amount):>10}"
        for kind, (count, amount) in shown.items()
    ]
    lines.append(f"  {'total':{width}}  {entries:>9,} entries  {_size(size):>10}")
    return "\n".join(lines)


def _size(amount: float) -> str:
    units = ("B", "KiB", "MiB", "GiB")
    for unit in units:
        if amount < 1024 or unit == units[-1]:
            break
        amount /= 1024
    return f"{amount:,.0f} B" if unit == "B" else f"{amount:,.1f} {unit}"
