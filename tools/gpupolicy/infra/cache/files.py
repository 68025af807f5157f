"""Reading and writing the files of the toolkit's caches (renders, strict-load results, kept graphs).

Parallel runs share a cache, so every write goes through the transactional writer (a temporary file that
replaces the entry at once); a cache that cannot be written, or an entry that cannot be read, only costs time.
Every entry starts with a header carrying the payload's length and an HMAC-SHA256 of it under this machine's
cache key, and every read checks both: a truncated or corrupted entry (a full disk, a crash mid-write on a
file system without atomic renames, a stray edit) reads as missing, and so does an entry this machine did not
write. Cache keys are hashes of content anyone can compute, so without the MAC a pull request could ship an
entry under the key of a file it does not even change (decision 0064). The key is 32 random bytes created on
first use, mode 0600, outside every repository (`key_file`). Reads are bounded: an entry is opened without
following a symlink, must be a regular file and at most `MAX_ENTRY_BYTES` long. Structured entries are
`marshal` data: plain values, nothing that runs code when read.
"""

from __future__ import annotations

import hashlib
import hmac
import marshal
import os
import stat
import struct
from functools import cache
from pathlib import Path

from ... import PACKAGE_DIR
from ...errors import ToolError
from .. import transaction

_MAGIC = b"gpupolicy-cache-2\n"
_HEADER = struct.Struct(">Q32s")  # payload length, HMAC-SHA256 of the payload under the machine's key
KEY_FILE_ENV = "GPUPOLICY_CACHE_KEY_FILE"
KEY_BYTES = 32
MAX_ENTRY_BYTES = 512 * 1024 * 1024  # the largest render of a 1,000-cluster fleet is ~40 MB; more is not ours
_OPEN_FLAGS = (
    os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
)


def key_file() -> Path:
    """Where this machine's cache key lives: `$GPUPOLICY_CACHE_KEY_FILE`, else the XDG state folder."""
    explicit = os.environ.get(KEY_FILE_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "gpupolicy" / "cache.key"


@cache
def machine_key() -> bytes | None:
    """This machine's cache key, created on first use; None when it can be neither read nor made (then nothing
    is cached: an entry that cannot be authenticated is never trusted)."""
    path = key_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(descriptor, "wb") as sink:
            sink.write(os.urandom(KEY_BYTES))
    except FileExistsError:
        pass
    except OSError:
        return None
    key = _bounded_read(path, KEY_BYTES)
    return key if key is not None and len(key) == KEY_BYTES else None


@cache
def toolkit_digest() -> str:
    """A digest of every module of the installed toolkit: part of every cache salt, so a fixed rule, loader or
    kustomize reader is never answered from a cache its old code wrote."""
    return source_digest(PACKAGE_DIR)


def source_digest(package: Path) -> str:
    """sha256 over the names and contents of every module and carried schema or data file under `package`
    (a fixed CRD schema changes a verdict as surely as a fixed rule)."""
    digest = hashlib.sha256()
    for module in sorted(
        p for p in package.rglob("*") if p.suffix in (".py", ".yaml", ".json") and p.is_file()
    ):
        digest.update(module.relative_to(package).as_posix().encode() + b"\0" + module.read_bytes())
    return digest.hexdigest()


def _mac(key: bytes, data: bytes | memoryview) -> bytes:
    return hmac.new(key, data, hashlib.sha256).digest()


def write_bytes(entry: Path, data: bytes) -> None:
    key = machine_key()
    if key is None:
        return
    header = _MAGIC + _HEADER.pack(len(data), _mac(key, data))
    try:
        transaction.write_files({entry: header + data}, durable=False)  # the header verifies it on read
    except (ToolError, OSError):
        pass  # the next run computes it again


def read_bytes(entry: Path) -> bytes | None:
    """The payload `write_bytes` kept, verified (length and digest); None when missing, unreadable, from an
    older format, truncated or corrupted."""
    payload = _verified(entry)
    return None if payload is None else bytes(payload)


def read_text(entry: Path) -> str | None:
    """A verified entry as UTF-8 text (a rendered overlay); None as for `read_bytes`."""
    payload = _verified(entry)
    if payload is None:
        return None
    try:
        return str(payload, "utf-8")
    except UnicodeDecodeError:
        return None


def _verified(entry: Path) -> memoryview | None:
    """The payload as a view into the entry's bytes (a warm run reads ~150 MB of entries on a large fleet:
    no copy of it), or None when it does not verify."""
    key = machine_key()
    raw = _bounded_read(Path(entry), MAX_ENTRY_BYTES) if key is not None else None
    start = len(_MAGIC) + _HEADER.size
    if raw is None or len(raw) < start or not raw.startswith(_MAGIC):
        return None
    length, mac = _HEADER.unpack_from(raw, len(_MAGIC))
    payload = memoryview(raw)[start:]
    if len(payload) != length or not hmac.compare_digest(_mac(key, payload), mac):
        return None
    return payload


def _bounded_read(path: Path, max_bytes: int) -> bytes | None:
    """A regular file's bytes, never through a symlink and never more than `max_bytes` (a link to /dev/zero or
    a FIFO is refused before a byte is read); None otherwise."""
    try:
        descriptor = os.open(path, _OPEN_FLAGS)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as source:
        info = os.fstat(source.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            return None
        data = source.read(max_bytes + 1)
    return data if len(data) <= max_bytes else None


def write_value(entry: Path, value: object) -> None:
    """Keep `value` (a value marshal cannot hold is simply not kept)."""
    try:
        data = marshal.dumps(value)
    except ValueError:
        return
    write_bytes(entry, data)


def read_value(entry: Path) -> object | None:
    """What `write_value` kept; None when there is no entry or it does not verify."""
    payload = _verified(entry)
    if payload is None:
        return None
    try:
        return marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return None
