"""MkDocs hooks of the runbook site (mkdocs.yml `hooks:`): what makes it work offline and keeps it legible.

- The Mermaid library goes into the build (`assets/javascripts/mermaid.min.js`), taken from the npm package
  `mermaid` that `make system-tools` unpacks; the theme override (`site_theme/main.html`) loads it before
  Material's bundle, which then never fetches it from its CDN (decision 0039). A build without the file
  fails and says how to get it: a site whose diagrams are raw text is not one to publish.
- The navigation groups the rule pages by category (CAP, MIG, WL ...), each group a collapsed section, instead
  of one list of a hundred rules.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

MERMAID_ASSET = "assets/javascripts/mermaid.min.js"
MERMAID_ENV = "MERMAID_JS"  # a mermaid.min.js anywhere else
MERMAID_LOCATIONS = (  # where `make system-tools` (.ci/system-tools) leaves the npm package's file
    Path.home() / ".cache" / "gpupolicy" / "mermaid" / "package" / "dist" / "mermaid.min.js",
    Path("/usr/local/share/gpupolicy/mermaid.min.js"),
)
RULES_FOLDER = "generated/rules/"
_RULE_PAGE = re.compile(r"([A-Z]+)\d+\.md")


def mermaid_js() -> Path | None:
    """The Mermaid library on this machine, or None."""
    explicit = [Path(os.environ[MERMAID_ENV])] if os.environ.get(MERMAID_ENV) else []
    return next((path for path in [*explicit, *MERMAID_LOCATIONS] if path.is_file()), None)


def on_post_build(config, **_) -> None:
    from mkdocs.exceptions import PluginError

    source = mermaid_js()
    if source is None:
        raise PluginError(
            "mermaid.min.js is not on this machine, and without it every diagram of the site "
            "is "
            "raw text: run `make system-tools` (npm package mermaid), or set "
            f"{MERMAID_ENV}=FILE"
        )
    target = Path(config.site_dir) / MERMAID_ASSET
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)


def on_nav(nav, config, files, **_):
    """The rules section: one collapsed sub-section per rule category, the index page first."""
    from mkdocs.structure.nav import Section

    for section in _sections(nav.items):
        pages = [item for item in section.children if _rule_category(item)]
        if len(pages) < 2:
            continue
        groups: dict[str, list] = {}
        for page in pages:
            groups.setdefault(_rule_category(page), []).append(page)
        others = [item for item in section.children if not _rule_category(item)]
        section.children = others + [
            Section(category, members) for category, members in sorted(groups.items())
        ]
        for child in section.children:
            child.parent = section
            for member in getattr(child, "children", None) or []:
                member.parent = child
    return nav


def _sections(items) -> list:
    found = []
    for item in items:
        if getattr(item, "children", None) is not None:
            found.append(item)
            found += _sections(item.children)
    return found


def _rule_category(item) -> str:
    """`CAP` for the page generated/rules/CAP001.md, '' for anything else."""
    path = getattr(getattr(item, "file", None), "src_uri", "") or ""
    if not path.startswith(RULES_FOLDER):
        return ""
    match = _RULE_PAGE.fullmatch(path[len(RULES_FOLDER) :])
    return match.group(1) if match else ""
