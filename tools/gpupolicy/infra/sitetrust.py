"""What of mkdocs.yml loads Python, and whether it is the toolkit's own (decision 0061).

MkDocs imports code named by its config: each `hooks:` entry is a Python file it executes
(mkdocs/config/config_options.py, class Hooks: `importlib.util.spec_from_file_location` then
`spec.loader.exec_module`), each `plugins:` name an installed entry point, each `markdown_extensions:` name a
module, and each `!!python/name:` tag an import. A pull request that adds any of these would run its own code
during `make docs` and the site test. Only the toolkit's own hook, the plugins and extensions below and the
one Python tag the Mermaid fences need are allowed; SEC011 reports anything else, and `python -m
gpupolicy.infra.sitetrust` (run by `make docs` and tests/test_site.py before mkdocs) refuses to build such a
site.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from . import repopath
from .siteconfig import SITE_CONFIG

ALLOWED_HOOKS = frozenset({"tools/gpupolicy/docsgen/site_hooks.py"})
ALLOWED_PLUGINS = frozenset(
    {
        "search",
        "tags",
        "offline",
        "privacy",
        "material/search",
        "material/tags",
        "material/offline",
        "material/privacy",
    }
)
ALLOWED_EXTENSIONS = frozenset(
    {
        "abbr",
        "admonition",
        "attr_list",
        "def_list",
        "footnotes",
        "md_in_html",
        "meta",
        "tables",
        "toc",
        "pymdownx.details",
        "pymdownx.snippets",
        "pymdownx.superfences",
        "pymdownx.highlight",
        "pymdownx.inlinehilite",
        "pymdownx.tabbed",
        "pymdownx.tasklist",
        "pymdownx.emoji",
    }
)
ALLOWED_PYTHON_TAGS = frozenset({"name:pymdownx.superfences.fence_code_format"})


class _TagRecorder(yaml.SafeLoader):
    """Safe loading that records every `!!python/...` tag (and reads it as its text, never importing it)."""

    python_tags: list[str]


def _record(loader: _TagRecorder, suffix: str, node: yaml.Node) -> str:
    loader.python_tags.append(suffix)
    return f"!!python/{suffix}"


_TagRecorder.add_multi_constructor("tag:yaml.org,2002:python/", _record)


def _names(entries: object) -> list[str]:
    """The names of a `plugins:` or `markdown_extensions:` list (plain names or one-key mappings)."""
    if isinstance(entries, dict):
        return [str(key) for key in entries]
    if not isinstance(entries, list):
        return []
    return [str(next(iter(item), "")) if isinstance(item, dict) else str(item) for item in entries]


def problems_of(text: bytes | str) -> list[str]:
    """Every entry of mkdocs.yml that would load Python other than the toolkit's own; [] when none."""
    loader = _TagRecorder(text)
    loader.python_tags = []
    try:
        data = loader.get_single_data()
    except (yaml.YAMLError, RecursionError) as exc:
        return [f"{SITE_CONFIG} is not YAML ({(str(exc).splitlines() or [type(exc).__name__])[0]})"]
    finally:
        loader.dispose()
    data = data if isinstance(data, dict) else {}
    hooks = data.get("hooks") or []
    found = [
        f"hook {hook!r} is not the toolkit's own ({', '.join(sorted(ALLOWED_HOOKS))}): mkdocs would "
        "execute it"
        for hook in (hooks if isinstance(hooks, list) else [hooks])
        if str(hook) not in ALLOWED_HOOKS
    ]
    found += [
        f"plugin {name!r} is not one the toolkit allows: mkdocs would import its code"
        for name in _names(data.get("plugins"))
        if name not in ALLOWED_PLUGINS
    ]
    found += [
        f"markdown extension {name!r} is not one the toolkit allows: mkdocs would import it"
        for name in _names(data.get("markdown_extensions"))
        if name not in ALLOWED_EXTENSIONS
    ]
    found += [
        f"Python tag !!python/{tag} is not one the toolkit allows: loading the config would import it"
        for tag in loader.python_tags
        if tag not in ALLOWED_PYTHON_TAGS
    ]
    return found


def repository_problems(root: str | Path) -> list[str]:
    """`problems_of` the repository's mkdocs.yml, read through the trust boundary; [] when there is none."""
    reader = repopath.Reader(root)
    try:
        return problems_of(reader.read(SITE_CONFIG))
    except FileNotFoundError:
        return []
    except repopath.Refused as exc:
        return [f"{SITE_CONFIG}: {exc}"]


def main(argv: list[str]) -> int:
    """`python -m gpupolicy.infra.sitetrust [REPO]`: exit 1 (and say why) when building the site would run
    code that
    is not the toolkit's."""
    root = Path(argv[0] if argv else ".")
    found = repository_problems(root)
    for problem in found:
        print(f"{SITE_CONFIG}: refused: {problem}", file=sys.stderr)
    if found:
        print(
            "the site is not built: its config would run code other than the toolkit's (decision 0061)",
            file=sys.stderr,
        )
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
