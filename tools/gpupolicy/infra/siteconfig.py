"""The runbook site's public URL: one setting, `site_url` in mkdocs.yml (MkDocs needs it there anyway).

Everything that links to the site derives from it: the runbook URL of every alert (`runbook_url` annotations
must start with `<site_url>runbooks/`; OBS001 checks that they agree), and the SARIF report's
`informationUri` and each rule's `helpUri` (`<site_url>generated/rules/<ID>/`). mkdocs.yml is content: it is
read through the trust boundary, and its Python tags (`!!python/name:` for Mermaid fences) are read as
nothing, never executed.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

import yaml

from . import repopath

SITE_CONFIG = "mkdocs.yml"
SETTING = "site_url"
RUNBOOKS_PATH = "runbooks/"
RULES_PATH = "generated/rules/"


class _SettingsLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """Safe loading (PyYAML's C parser when it has one) that reads any `!!python/...` tag as null instead of
    refusing the whole file."""


_SettingsLoader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)


def read_settings(reader: repopath.Reader) -> tuple[dict | None, str]:
    """mkdocs.yml as data, or None and why it could not be read."""
    if not os.path.lexists(os.path.join(reader.real_root, SITE_CONFIG)):
        return None, f"there is no {SITE_CONFIG}"
    try:
        data = yaml.load(reader.read(SITE_CONFIG), Loader=_SettingsLoader)  # noqa: S506 - a SafeLoader
    except repopath.Refused as exc:  # a symlink out of the repository, a FIFO, a huge file
        return None, f"{SITE_CONFIG}: {exc}"
    except (yaml.YAMLError, RecursionError) as exc:  # RecursionError: nesting deeper than Python's stack
        return None, f"{SITE_CONFIG} is not YAML ({(str(exc).splitlines() or [type(exc).__name__])[0]})"
    return (data if isinstance(data, dict) else {}), ""


def read_site_url(reader: repopath.Reader) -> tuple[str, str]:
    """(site_url, "") or ("", why it is not usable). A usable one is an absolute http(s) URL ending in `/`."""
    return site_url_of(*read_settings(reader))


def site_url_of(data: dict | None, problem: str) -> tuple[str, str]:
    """`read_site_url` on settings already read (`read_settings`)."""
    if data is None:
        return "", problem
    value = data.get(SETTING)
    if not isinstance(value, str) or not value:
        return "", f"{SITE_CONFIG} sets no {SETTING}"
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc or not value.endswith("/"):
        return "", f"{SITE_CONFIG} {SETTING} {value!r} is not an absolute http(s) URL ending in /"
    return value, ""


def runbook_base(site_url: str) -> str:
    return f"{site_url}{RUNBOOKS_PATH}"


def rule_page(site_url: str, rule_id: str) -> str:
    return f"{site_url}{RULES_PATH}{rule_id}/"
