"""`gpupolicy new identity`: a fork's own runbook site, git repository and code-owner organization in place
of the ones it inherited, everywhere they are written, in one change.

The values replaced are read from the repository, never assumed: the site is mkdocs.yml's `site_url` (every
alert's `runbook_url` and the examples' runbook links start with it, OBS001); the git repository is the one
the clusters sync from (Flux GitRepository `spec.url`, Argo CD `repoURL` of a git source with a `path`, and
the AppProject's `sourceRepos` entry for it); the organization is the one CODEOWNERS names (`@org/team`).
Helm chart repositories and other organizations' URLs are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from ..errors import ToolError
from ..infra import repopath, siteconfig
from .common import Workspace

# Where the replaced values are written: manifests, the examples teams copy, the site settings, code owners.
SCANNED_DIRS = ("clusters", "pools", "policies", "docs/examples")
SCANNED_FILES = (
    siteconfig.SITE_CONFIG,
    "docs/CODEOWNERS",
    "CODEOWNERS",
    ".github/CODEOWNERS",
    ".gitlab/CODEOWNERS",
)
CODEOWNERS_FILES = SCANNED_FILES[1:]
TEXT_SUFFIXES = (".yaml", ".yml", ".md")
# no space, quote or '#': safe as a plain YAML value
URL_CHARACTERS = re.compile(r"^[A-Za-z0-9._~:/?&=%+@-]+$")
ORG_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?$")  # a GitHub organization name
OWNER = re.compile(r"@([A-Za-z0-9][A-Za-z0-9-]*)/")


@dataclass(frozen=True)
class IdentityRequest:
    site_url: str = ""
    git_url: str = ""
    org: str = ""


def steps(request: IdentityRequest):
    _check(request)

    def run(workspace: Workspace) -> None:
        replacements = _replacements(workspace, request)
        texts = dict(_edited(workspace.copy, replacements))
        if not texts:
            raise ToolError("nothing to change: the repository already uses these values")
        workspace.write(texts)
        workspace.notes += [f"{old} -> {new}" for old, new in replacements]

    return run


def _check(request: IdentityRequest) -> None:
    if not (request.site_url or request.git_url or request.org):
        raise ToolError("give at least one of --site-url, --git-url, --org")
    if request.site_url:
        parts = urlsplit(request.site_url)
        if (
            parts.scheme not in ("http", "https")
            or not parts.netloc
            or not request.site_url.endswith("/")
            or not URL_CHARACTERS.match(request.site_url)
        ):
            raise ToolError(
                f"--site-url {request.site_url!r}: an absolute http(s) URL ending in / "
                "(e.g. https://gpu.acme.io/)"
            )
    if request.git_url and not URL_CHARACTERS.match(request.git_url):
        raise ToolError(f"--git-url {request.git_url!r}: a repository URL without spaces, quotes or '#'")
    if request.org and not ORG_NAME.match(request.org):
        raise ToolError(f"--org {request.org!r}: an organization name (letters, digits and '-')")


def _replacements(workspace: Workspace, request: IdentityRequest) -> list[tuple[str, str]]:
    found = []
    if request.site_url:
        old, problem = siteconfig.site_url_of(*siteconfig.read_settings(repopath.Reader(workspace.copy)))
        if not old:
            raise ToolError(f"--site-url: cannot read the current one ({problem})")
        found.append((old, request.site_url))
    if request.git_url:
        found.append((_one("git repository the clusters sync from", _sync_urls(workspace)), request.git_url))
    if request.org:
        found.append(
            (f"@{_one('code-owner organization', _owner_orgs(workspace.copy))}/", f"@{request.org}/")
        )
    return [(old, new) for old, new in found if old != new]


def _one(what: str, values: set[str]) -> str:
    if len(values) != 1:
        listed = ", ".join(sorted(values)) or "none"
        raise ToolError(f"expected one {what}, found {len(values)} ({listed}): edit those files by hand")
    return values.pop()


def _sync_urls(workspace: Workspace) -> set[str]:
    """The git URLs the sync engines read this repository from."""
    urls: set[str] = set()
    for document in workspace.fleet().documents:
        data = _mapping(document.data)
        spec = _mapping(data.get("spec"))
        if data.get("kind") == "GitRepository" and isinstance(spec.get("url"), str):
            urls.add(spec["url"])
        elif data.get("kind") == "ApplicationSet":  # its Applications' sources are in the template
            urls.update(_argo_git_sources(_mapping(_mapping(spec.get("template")).get("spec"))))
        else:
            urls.update(_argo_git_sources(spec))
    return urls


def _argo_git_sources(spec: dict) -> Iterator[str]:
    """repoURL of each Argo CD git source (one with a `path`; a Helm chart source has `chart` instead)."""
    sources = spec.get("sources") if isinstance(spec.get("sources"), list) else []
    for source in [spec.get("source"), *sources]:
        if isinstance(source, dict) and "path" in source and isinstance(source.get("repoURL"), str):
            yield source["repoURL"]


def _mapping(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _owner_orgs(copy: Path) -> set[str]:
    orgs: set[str] = set()
    for rel in CODEOWNERS_FILES:
        text = _text(copy, rel)
        for line in (text or "").splitlines():
            if not line.lstrip().startswith("#"):
                orgs.update(OWNER.findall(line))
    return orgs


def _edited(copy: Path, replacements: list[tuple[str, str]]) -> Iterator[tuple[str, str]]:
    for rel in _files(copy):
        text = _text(copy, rel)
        if text is None:
            continue
        new = text
        for old, replacement in replacements:
            new = new.replace(old, replacement)
        if new != text:
            yield rel, new


def _files(copy: Path) -> Iterable[str]:
    reader = repopath.Reader(copy)
    yield from (rel for rel in reader.walk(SCANNED_DIRS) if rel.endswith(TEXT_SUFFIXES))
    yield from (rel for rel in SCANNED_FILES if reader.isfile(rel))


def _text(copy: Path, rel: str) -> str | None:
    """The file's text through the trust boundary; None when it is not a readable text file of the
    repository."""
    try:
        return repopath.read_file(copy, rel).decode("utf-8")
    except (repopath.Refused, OSError, UnicodeDecodeError):
        return None
