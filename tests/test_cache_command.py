"""`gpupolicy cache`: prune keeps what runs still read and drops the rest, including the parse results of
other toolkit versions; clear removes everything; the next run only renders and parses again."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from gpupolicy.cli import main
from gpupolicy.infra.cache import parsed as parsecache

DAY = 86400


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("GPUPOLICY_CACHE_DIR", str(folder))
    return folder


def _entry(path: Path, age_days: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * 100)
    then = time.time() - age_days * DAY
    os.utime(path, (then, then))
    return path


def test_prune_keeps_recent_entries_of_this_version(cache: Path, capsys) -> None:
    current = parsecache.ParseCache(cache / "parsed").directory
    keep = [
        _entry(cache / "fresh.yaml", 1),
        _entry(current / "ab" / "recent", 2),
        _entry(current / "graphs" / "g1", 0),
    ]
    drop = [
        _entry(cache / "old.yaml", 40),
        _entry(current / "cd" / "old", 31),
        _entry(cache / "parsed" / "0123456789abcdef" / "ef" / "other-version", 0),
    ]
    assert main(["cache", "--prune", "30"]) == 0
    assert all(p.exists() for p in keep)
    assert not any(p.exists() for p in drop)
    assert not (cache / "parsed" / "0123456789abcdef").exists(), "empty folders are left behind"
    out = capsys.readouterr().out
    assert "pruned 3 entries (300 B)" in out and "3 entries" in out


def test_clear_and_an_absent_cache(cache: Path, capsys) -> None:
    assert main(["cache"]) == 0  # nothing there yet: not an error
    _entry(cache / "a.yaml", 0)
    assert main(["cache", "--clear"]) == 0
    assert not cache.exists()
    assert main(["cache", "--prune", "1"]) == 0
    assert "0 entries" in capsys.readouterr().out


@pytest.mark.parametrize("days", ["-1", "soon"])
def test_bad_days_is_a_usage_error(cache: Path, days: str, capsys) -> None:
    assert main(["cache", "--prune", days]) == 2
    assert "DAYS" in capsys.readouterr().err or "days" in capsys.readouterr().err


def test_usage_shows_the_render_and_parse_caches_separately(cache: Path, capsys) -> None:
    current = parsecache.ParseCache(cache / "parsed").directory
    for entry in (
        cache / "a.yaml",
        cache / "b.yaml",
        current / "ab" / "r1",
        current / "graphs" / "g1",
        cache / "parsed" / "0123456789abcdef" / "ef" / "old",
    ):
        _entry(entry, 0)
    assert main(["cache"]) == 0
    lines = {
        line.split("  ")[1].strip() if line.startswith("  ") else "": " ".join(line.split()[-4:])
        for line in capsys.readouterr().out.splitlines()
    }
    assert lines["render cache (rendered overlays)"] == "2 entries 200 B"
    assert lines["parse cache (strict-load results, rendered-document memos)"] == "1 entries 100 B"
    assert lines["kustomize graph cache"] == "1 entries 100 B"
    assert lines["parse results of other toolkit versions (--prune deletes them)"] == "1 entries 100 B"
    assert lines["total"] == "5 entries 500 B"
