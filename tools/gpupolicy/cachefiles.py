"""Reading and writing the files of the toolkit's caches (renders, strict-load results, kept graphs).

Parallel runs share a cache, so every write goes through the transactional writer (a temporary file that
replaces the entry at once); a cache that cannot be written, or an entry that cannot be read, only costs time.
Every entry starts with a header carrying the payload's length and sha256 digest, and every read checks both:
a truncated or corrupted entry (a full disk, a crash mid-write on a file system without atomic renames, a
stray edit) reads as missing, so the caller computes the value again instead of trusting it. Structured
entries are `marshal` data: plain values, nothing that runs code when read.
"""

from __future__ import annotations

import hashlib
import marshal
import struct
from pathlib import Path

from . import transaction
from .errors import ToolError

_MAGIC = b"gpupolicy-cache-1\n"
_HEADER = struct.Struct(">Q32s")  # payload length, sha256 of the payload


def write_bytes(entry: Path, data: bytes) -> None:
    header = _MAGIC + _HEADER.pack(len(data), hashlib.sha256(data).digest())
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
    try:
        raw = Path(entry).read_bytes()
    except OSError:
        return None
    start = len(_MAGIC) + _HEADER.size
    if len(raw) < start or not raw.startswith(_MAGIC):
        return None
    length, digest = _HEADER.unpack_from(raw, len(_MAGIC))
    payload = memoryview(raw)[start:]
    if len(payload) != length or hashlib.sha256(payload).digest() != digest:
        return None
    return payload


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
