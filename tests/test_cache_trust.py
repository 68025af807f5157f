"""Caches a pull request cannot plant, redirect or make us read without end (issue 29, items 4 and 5)."""

from __future__ import annotations

import hashlib
import hmac
import os
import shutil
import struct
import time
from pathlib import Path

import pytest

from gpupolicy import PACKAGE_DIR
from gpupolicy.errors import ToolError
from gpupolicy.infra.cache import files as cachefiles
from gpupolicy.infra.cache import store as cachestore
from gpupolicy.pipeline.render import kustomize


@pytest.fixture(autouse=True)
def _own_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(cachefiles.KEY_FILE_ENV, str(tmp_path / "state" / "cache.key"))
    cachefiles.machine_key.cache_clear()
    yield
    cachefiles.machine_key.cache_clear()


def _forged(payload: bytes, key: bytes) -> bytes:
    """An entry in the current format, authenticated with a key of the forger's choosing."""
    mac = hmac.new(key, payload, hashlib.sha256).digest()
    return b"gpupolicy-cache-2\n" + struct.pack(">Q32s", len(payload), mac) + payload


def test_the_key_is_made_once_private_and_outside_the_cache(tmp_path: Path) -> None:
    key = cachefiles.machine_key()
    assert key is not None and len(key) == cachefiles.KEY_BYTES
    assert (cachefiles.key_file().stat().st_mode & 0o777) == 0o600
    cachefiles.machine_key.cache_clear()
    assert cachefiles.machine_key() == key


def test_an_entry_this_machine_wrote_reads_back(tmp_path: Path) -> None:
    entry = tmp_path / "cache" / "e"
    cachefiles.write_value(entry, {"quota": 16})
    assert cachefiles.read_value(entry) == {"quota": 16}


@pytest.mark.parametrize("forger_key", [b"", b"\0" * 32, b"guessed"])
def test_an_entry_shipped_in_a_pull_request_is_never_trusted(tmp_path: Path, forger_key: bytes) -> None:
    """Cache keys are hashes of public content, so a forged entry can sit at the right name; it must carry
    the MAC of a key only this machine has. (Before: a sha256 header anyone can compute; a forged memo made a
    quota of 600 on a 16-GPU pool print ok.)"""
    import marshal

    entry = tmp_path / "forged"
    entry.write_bytes(_forged(marshal.dumps({"quota": 600}), forger_key))
    assert cachefiles.read_value(entry) is None


def test_an_entry_in_the_old_unauthenticated_format_is_ignored(tmp_path: Path) -> None:
    payload = b"kind: ClusterQueue\n"
    entry = tmp_path / "old"
    entry.write_bytes(
        b"gpupolicy-cache-1\n"
        + struct.pack(">Q32s", len(payload), hashlib.sha256(payload).digest())
        + payload
    )
    assert cachefiles.read_text(entry) is None


def test_an_entry_linked_to_dev_zero_is_refused_at_once(tmp_path: Path) -> None:
    entry = tmp_path / "zero"
    entry.symlink_to("/dev/zero")
    started = time.monotonic()
    assert cachefiles.read_bytes(entry) is None
    assert time.monotonic() - started < 1


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_an_entry_that_is_a_fifo_does_not_block(tmp_path: Path) -> None:
    entry = tmp_path / "fifo"
    os.mkfifo(entry)
    assert cachefiles.read_bytes(entry) is None


def test_an_entry_over_the_limit_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    entry = tmp_path / "big"
    cachefiles.write_bytes(entry, b"x" * 4096)
    monkeypatch.setattr(cachefiles, "MAX_ENTRY_BYTES", 1024)
    assert cachefiles.read_bytes(entry) is None


def test_a_toolkit_change_anywhere_changes_every_salt(tmp_path: Path) -> None:
    """The kept graph's salt omitted kustomize.py: a fix of the graph reader stayed silent on a warm cache."""
    package = tmp_path / "gpupolicy"
    shutil.copytree(PACKAGE_DIR, package, ignore=shutil.ignore_patterns("__pycache__"))
    before = cachefiles.source_digest(package)
    # wherever the package keeps it
    reader = package / Path(kustomize.__file__).resolve().relative_to(PACKAGE_DIR)
    reader.write_text(reader.read_text() + "\n# a fix\n")
    assert cachefiles.source_digest(package) != before


def test_a_cache_folder_inside_the_repository_is_not_used(tmp_path: Path, monkeypatch, capsys) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    monkeypatch.setenv(cachestore.CACHE_DIR_ENV, str(repo / ".gpupolicy-cache"))
    store = cachestore.CacheStore.for_repository(repo)
    assert not store.enabled
    assert "inside the repository" in capsys.readouterr().err


def test_a_committed_symlink_cache_folder_is_not_used_nor_pruned_through(tmp_path: Path, monkeypatch) -> None:
    """A pull request committed `.gpupolicy-cache` as a symlink: validate wrote 215 files through it and
    `cache --prune` deleted the target's files."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me")
    old = time.time() - 90 * 86400
    os.utime(victim / "precious.txt", (old, old))
    link = tmp_path / "elsewhere-cache"
    link.symlink_to(victim)
    monkeypatch.setenv(cachestore.CACHE_DIR_ENV, str(link))
    assert not cachestore.CacheStore.for_repository(tmp_path / "repo").enabled
    with pytest.raises(ToolError, match="symlink"):
        cachestore.CacheStore().prune(14)
    with pytest.raises(ToolError, match="symlink"):
        cachestore.CacheStore().clear()
    assert (victim / "precious.txt").read_text() == "keep me"


def test_a_cache_folder_outside_the_repository_is_used(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(cachestore.CACHE_DIR_ENV, str(tmp_path / "cache"))
    (tmp_path / "repo").mkdir()
    assert cachestore.CacheStore.for_repository(tmp_path / "repo").enabled
