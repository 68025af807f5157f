"""The trust boundary: every path that comes from content is resolved here, or refused.

A pull request is untrusted input, and paths reach the toolkit through content: kustomize's
`config.kubernetes.io/origin` annotation (an ordinary annotation that a patch or a `commonAnnotations` line
can set to anything), the source file of an object `upgrade promote` edits, the group, version and kind of a
CRD that `schemas import` turns into file names, the member names of a trace archive. Such a path is used only
after this module has resolved it (symlinks followed, `..` collapsed) inside the repository root (or the named
output folder), found a regular file there (never a FIFO, a device or a folder: reading those hangs or never
ends) and found it no bigger than the strict loader's limit. Anything else raises `Refused`, whose message
says why; callers turn it into a finding or a ToolError and never open the path.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from .yamlload import MAX_FILE_BYTES

# longer than any path a repository needs; the OS limit (4096) is an error, not a refusal
MAX_PATH_CHARS = 1024
_UNSAFE_CHARACTERS = re.compile(r"[\x00-\x1f\\]")  # control characters and backslashes
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


class Refused(ValueError):
    """A content-derived path the toolkit will not open; the message says why (fit for a finding)."""


def normalize(base: str, text: str) -> str:
    """The repo-relative POSIX path that `text` names, read relative to the repo-relative folder `base`,
    with `.` and `..` collapsed on the text alone. Refused: empty, absolute, a URL, a NUL or other control
    character, too long, or above the repository root."""
    if not isinstance(text, str) or not text.strip():
        raise Refused("the path is empty")
    if len(text) > MAX_PATH_CHARS:
        raise Refused(f"the path is longer than {MAX_PATH_CHARS} characters")
    if _UNSAFE_CHARACTERS.search(text):
        raise Refused(f"{_shown(text)} contains a control character or a backslash")
    if "://" in text:
        raise Refused(f"{_shown(text)} is a URL, not a file of this repository")
    if text.startswith("/"):
        raise Refused(f"{_shown(text)} is an absolute path outside the repository")
    parts: list[str] = []
    for part in (f"{base}/{text}" if base else text).split("/"):
        if part == "..":
            if not parts:
                raise Refused(f"{_shown(text)} points outside the repository")
            parts.pop()
        elif part not in (".", ""):
            parts.append(part)
    if not parts:
        raise Refused(f"{_shown(text)} names the repository root, not a file")
    return "/".join(parts)


class Reader:
    """The boundary's checks for one run over one repository. Each folder's real path is resolved once (a
    fleet's thousands of files share a few hundred folders, and a realpath per file was most of the cost of
    reading them), and each file is read once: its bytes are kept for every later `read` and `digest` (the
    render cache key hashes the files the loader parses, and shared files once per cluster). Make one per
    run: what it remembers is only true while the tree does not change."""

    def __init__(self, root: str | Path) -> None:
        self.real_root = os.path.realpath(root)
        self._folders: dict[str, str] = {}
        self._digests: dict[str, bytes] = {}
        self._contents: dict[str, bytes] = {}  # files of at most MAX_FILE_BYTES, as read
        self._reading = threading.Lock()  # render threads hash what the loader reads: read each file once

    @property
    def root(self) -> Path:
        """The repository's real root. A run's stages take the reader, never a root of their own: the one
        place
        that knows where the repository is also holds its boundary."""
        return Path(self.real_root)

    # Listing: names, not contents. Each name found is still read through `read`, which applies the boundary.

    def listdir(self, rel: str) -> list[str]:
        """The names in repo-relative folder `rel`; OSError when it is missing or not a folder."""
        return os.listdir(os.path.join(self.real_root, rel))

    def lexists(self, rel: str) -> bool:
        return os.path.lexists(os.path.join(self.real_root, rel))

    def isdir(self, rel: str) -> bool:
        return os.path.isdir(os.path.join(self.real_root, rel))

    def isfile(self, rel: str) -> bool:
        return os.path.isfile(os.path.join(self.real_root, rel))

    def is_symlink(self, rel: str) -> bool:
        return os.path.islink(os.path.join(self.real_root, rel))

    def walk(self, tops: Iterable[str]) -> Iterator[str]:
        """Every file under the repo-relative folders `tops` (and every symlinked folder), repo-relative, in a
        stable order; hidden folders are skipped."""
        prefix = len(self.real_root) + 1
        for top in tops:
            for directory, subdirs, names in os.walk(os.path.join(self.real_root, top)):
                subdirs[:] = sorted(d for d in subdirs if not d.startswith("."))
                for name in sorted(names) + [
                    d for d in subdirs if os.path.islink(os.path.join(directory, d))
                ]:
                    yield os.path.join(directory, name)[prefix:].replace(os.sep, "/")

    def _resolved(self, rel: str) -> tuple[str, os.stat_result | None]:
        """(real path, its lstat when that is already the file's own stat: no symlink at the end)."""
        folder, name = os.path.split(normalize("", rel))
        try:
            real = os.path.join(self._real_folder(folder), name)
            info: os.stat_result | None = os.lstat(real)
        except FileNotFoundError:
            info = None
        except (OSError, ValueError) as exc:  # ValueError: an embedded NUL reached lstat
            raise Refused(f"{_shown(rel)} cannot be resolved: {exc}") from None
        if info is not None and stat.S_ISLNK(info.st_mode):
            real, info = os.path.realpath(real), None
        if not _is_within(self.real_root, real):
            raise Refused(f"{_shown(rel)} resolves outside the repository")
        return real, info

    def _real_folder(self, folder: str) -> str:
        known = self._folders.get(folder)
        if known is None:
            known = self._folders[folder] = os.path.realpath(os.path.join(self.real_root, folder))
        return known

    def regular_file(self, rel: str, limit: int | None = MAX_FILE_BYTES) -> str:
        """`resolve`, and the file is a regular file of at most `limit` bytes (None: any size)."""
        real, info = self._resolved(rel)
        try:
            info = info or os.stat(real)
        except OSError as exc:
            raise Refused(f"{_shown(rel)} cannot be read: {exc.strerror}") from None
        _check_regular(rel, info, limit)
        return real

    def read(self, rel: str, limit: int = MAX_FILE_BYTES) -> bytes:
        """The bytes of repo-relative `rel`, checked as `regular_file` says."""
        data = self._contents.get(rel)
        if data is None:
            with self._reading:
                data = self._contents.get(rel)
                if data is None:
                    data = self._read_once(rel, limit)
        if len(data) > limit:
            raise Refused(f"{_shown(rel)} is {len(data):,} bytes, over the {limit:,}-byte limit")
        return data

    def _read_once(self, rel: str, limit: int) -> bytes:
        with self._opened(rel, limit) as handle:
            data = handle.read(limit + 1)
        if len(data) > limit:
            raise Refused(f"{_shown(rel)} is over the {limit:,}-byte limit")
        if len(data) <= MAX_FILE_BYTES:
            self._contents[rel] = data
        return data

    def kept_containing(self, needle: bytes) -> dict[str, str]:
        """The UTF-8 text of every file read so far whose bytes contain `needle`: what a rule about comments
        needs after `forget_contents`, without a second read of the file."""
        with self._reading:
            found = {rel: data for rel, data in self._contents.items() if needle in data}
        texts = {}
        for rel, data in found.items():
            try:
                texts[rel] = data.decode("utf-8")
            except UnicodeDecodeError:
                continue
        return texts

    def forget_contents(self) -> None:
        """Drop the bytes kept so far (digests stay): once the sources are loaded and the render keys taken,
        nothing reads a whole source again, and on a large fleet they are tens of MB held to the end."""
        with self._reading:
            self._contents.clear()

    def digest(self, rel: str) -> bytes:
        """sha256 of repo-relative `rel` of any size (a configuration version hashes big files too); the same
        containment and regular-file checks as `read`. A file the loader may parse is read whole and kept."""
        known = self._digests.get(rel)
        if known is None:
            try:
                data = self.read(rel)
            except Refused:  # too big to keep (or refused: then reading it in chunks says why)
                known = self._digests[rel] = self._chunked_digest(rel)
            else:
                known = self._digests[rel] = hashlib.sha256(data).digest()
        return known

    def _chunked_digest(self, rel: str) -> bytes:
        digest = hashlib.sha256()
        with self._opened(rel, None) as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
        return digest.digest()

    @contextlib.contextmanager
    def _opened(self, rel: str, limit: int | None) -> Iterator[BinaryIO]:
        """`rel` opened for reading after `regular_file`'s checks. The check is repeated on the open
        descriptor (opened without blocking), so a file swapped for a FIFO after the check cannot hang us."""
        real = self.regular_file(rel, limit)
        try:
            descriptor = os.open(real, _READ_FLAGS | getattr(os, "O_NOFOLLOW", 0))
        except OSError as exc:
            raise Refused(f"{_shown(rel)} cannot be read: {exc.strerror}") from None
        with os.fdopen(descriptor, "rb") as handle:
            _check_regular(rel, os.fstat(handle.fileno()), limit)
            yield handle


# One-off checks (a single file, outside a run's loop): the same rules through a fresh Reader.


def regular_file(root: str | Path, rel: str, limit: int | None = MAX_FILE_BYTES) -> str:
    return Reader(root).regular_file(rel, limit)


def read_file(root: str | Path, rel: str, limit: int = MAX_FILE_BYTES) -> bytes:
    return Reader(root).read(rel, limit)


def file_digest(root: str | Path, rel: str) -> bytes:
    return Reader(root).digest(rel)


def output_path(out_dir: str | Path, *names: str) -> Path:
    """`out_dir/names[0]/.../names[-1]` for names that come from content: each must be one plain file name
    (no `/`, no `..`, nothing hidden), and the result must stay inside the real `out_dir` even where a folder
    on the way is a symlink."""
    for name in names:
        check_name(name)
    real_out = os.path.realpath(out_dir)
    target = os.path.join(real_out, *names)
    if not _is_within(real_out, os.path.realpath(target)):
        raise Refused(f"{'/'.join(names)!r} would be written outside {out_dir}")
    return Path(target)


def check_name(name: str) -> str:
    """One plain file or folder name: no separator, not `.` or `..`, not hidden, printable, not too long."""
    if not isinstance(name, str) or not name or name in (".", "..") or name.startswith("."):
        raise Refused(f"{_shown(name)} is not a usable file name")
    if "/" in name or "\\" in name or any(ord(char) < 32 for char in name) or len(name) > 255:
        raise Refused(f"{_shown(name)} is not a usable file name")
    return name


def output_folder(repo: str | Path, given: Path | None, default: str) -> tuple[Path | None, str]:
    """A command's output folder: `given` as is (the user's own choice), else `default` inside the repository,
    refused (None and the reason) when it resolves outside: an `artifacts` symlink is content, and must not
    redirect writes."""
    if given is not None:
        return given, ""
    out = Path(repo) / default
    if not within(repo, out):
        return None, f"{default} resolves outside the repository; pass --out DIR to write elsewhere"
    return out, ""


def within(root: str | Path, path: str | Path) -> bool:
    """Whether the real `path` lies inside the real `root` (for callers that only need to know)."""
    return _is_within(os.path.realpath(root), os.path.realpath(path))


def special_file_reason(mode: int) -> str | None:
    """Why a file of this st_mode must not be read (a FIFO blocks, a device never ends), or None."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    for test, what in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return f"is {what}, not a regular file"
    return "is not a regular file"


def _check_regular(rel: str, info: os.stat_result, limit: int | None) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise Refused(f"{_shown(rel)} is a folder, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise Refused(f"{_shown(rel)} {special_file_reason(info.st_mode)}")
    if limit is not None and info.st_size > limit:
        raise Refused(f"{_shown(rel)} is {info.st_size:,} bytes, over the {limit:,}-byte limit")


def _is_within(real_root: str, real: str) -> bool:
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def _shown(text: object) -> str:
    """A path for a message: quoted, control characters escaped, long ones cut."""
    shown = repr(text)
    return shown if len(shown) <= 120 else shown[:117] + "..."
