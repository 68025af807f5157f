"""Who reviews a path: the repository's CODEOWNERS file, as the forge reads it.

GitHub looks for the file in `.github/`, the root and `docs/`, in that order, and uses the first it finds
(docs.github.com, "About code owners", "CODEOWNERS file location"); GitLab looks in the root, `docs/` and
`.gitlab/` (docs.gitlab.com, "Code Owners", "Set up Code Owners"). The toolkit ships `docs/CODEOWNERS`, the
one place both read; every location is a guardrail file (`guardrails.py`), so a pull request that adds another
one to re-route reviews gets a finding like any other guardrail change.

The syntax read here is the part both forges share: `pattern owner...` per line, `#` comments, the last
matching pattern wins (GitHub: "the last matching pattern takes the most precedence"); a pattern starting with
`/` is anchored at the root, one without a `/` (or only a trailing one) matches at any depth, a trailing `/`
names a folder and everything below it, `*` is any name part within a folder and `**` any folders. GitLab's
`[Section]` headers are read as comments (their entries still count).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

LOCATIONS = (".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS", ".gitlab/CODEOWNERS")
MAX_ENTRIES = 5000  # GitHub refuses CODEOWNERS files over 3 MB; this many lines is far beyond any real one


@dataclass(frozen=True)
class Entry:
    pattern: str
    owners: tuple[str, ...]
    line: int


@dataclass(frozen=True)
class CodeOwners:
    path: str  # where it was read ('' when the repository has none)
    entries: tuple[Entry, ...] = ()

    def owners_of(self, path: str) -> tuple[str, ...]:
        """The owners the last matching entry names for the repository-relative `path` (none: nobody)."""
        for entry in reversed(self.entries):
            if _pattern(entry.pattern).fullmatch(path):
                return entry.owners
        return ()


def parse(text: str, path: str) -> CodeOwners:
    entries = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith(("#", "[", "^[")):
            continue
        pattern, *owners = line.split()
        entries.append(Entry(pattern, tuple(owners), number))
        if len(entries) >= MAX_ENTRIES:
            break
    return CodeOwners(path, tuple(entries))


def owner_names(owner: str) -> set[str]:
    """How an exception's `owner` may name a CODEOWNERS owner: `@org/team`, `org/team`, or `team`; `@user` or
    `user`; an e-mail address as written. Compared without case, as both forges compare handles."""
    bare = owner.strip().lstrip("@").lower()
    return {bare, bare.split("/", 1)[1]} if "/" in bare else {bare}


def matches(owner: str, owners: tuple[str, ...]) -> bool:
    wanted = owner.strip().lstrip("@").lower()
    return bool(wanted) and any(wanted in owner_names(listed) for listed in owners)


@cache
def _pattern(pattern: str) -> re.Pattern[str]:
    anchored = pattern.startswith("/") or "/" in pattern.rstrip("/")
    folder = pattern.endswith("/")
    body = pattern.strip("/")
    parts = re.split(r"(\*\*/|/\*\*|\*\*|\*|\?)", body)
    table = {"**/": "(?:.*/)?", "/**": "(?:/.*)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}
    regex = "".join(table.get(part, re.escape(part)) for part in parts)
    prefix = "" if anchored else "(?:.*/)?"
    # a name matches the file itself or, when it is a folder, everything below it
    suffix = "/.*" if folder else "(?:/.*)?"
    return re.compile(prefix + regex + suffix)
