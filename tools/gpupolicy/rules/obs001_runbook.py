"""An alert's `runbook_url` does not lead to a runbook page with Meaning, Impact, Diagnosis and Mitigation.

## Why it matters
The on-call engineer opens the runbook from the alert. A missing link, a link to a page that does not exist,
or a page without the four sections (prometheus-operator/runbooks template) leaves them guessing at 3 a.m. The
site's public URL is one setting, `site_url` in mkdocs.yml; runbook URLs are
`<site_url>runbooks/<AlertName>/`, rendered from `docs/runbooks/<AlertName>.md`, and every alert's
`runbook_url` must agree with the setting (so do the SARIF report's help links, which the toolkit derives from
it). Without a usable `site_url` the links cannot be checked: that is a finding on mkdocs.yml.

## Bad example
```yaml
- alert: GPUFallenOffBus
  expr: DCGM_FI_DEV_XID_ERRORS == 79
  annotations:
    runbook_url: https://wiki.example.com/gpu-problems   # not on the runbook site, no page in docs/runbooks
```

## Fix
Link `<site_url>runbooks/GPUFallenOffBus/` (with mkdocs.yml's `site_url`) and write
`docs/runbooks/GPUFallenOffBus.md` with `## Meaning`, `## Impact`, `## Diagnosis` and `## Mitigation`
sections. When the site moves, change `site_url` and every `runbook_url` in the same pull request.
"""

from collections.abc import Iterator
from pathlib import Path

from ..domain.observability import (
    RUNBOOK_SECTIONS,
    Alert,
    alerts_of_cluster,
    locate,
    parse_runbook,
    runbook_page_for_url,
    runbook_url,
)
from ..findings import Finding, Severity, at
from ..infra.siteconfig import SETTING, SITE_CONFIG, runbook_base
from ..model import Fleet, Pages

ID = "OBS001"
SEVERITY = Severity.ERROR
SUMMARY = "Alert runbook_url must lead to a docs/runbooks page with the four runbook sections"


def check(fleet: Fleet) -> Iterator[Finding]:
    alerts = [(cluster, alert) for cluster in fleet.clusters.values() for alert in alerts_of_cluster(cluster)]
    if alerts and not fleet.site_url:
        yield Finding(
            rule=ID,
            severity=SEVERITY,
            path=SITE_CONFIG,
            line=1,
            message=f"{fleet.site_url_problem}: the runbook site's public URL, which every alert's "
            "runbook_url must start with",
            hint=f"set {SETTING}: https://<your runbook site>/ in {SITE_CONFIG}",
        )
        return
    for cluster, alert in alerts:
        problem = _problem(fleet.runbooks, fleet.site_url, alert)
        if problem is None:
            continue
        message, hint = problem
        where = locate(fleet, alert.obj, *alert.path, "annotations", "runbook_url")
        yield Finding(
            rule=ID, severity=SEVERITY, message=message, cluster=cluster.name, hint=hint, **at(where)
        )


def _problem(runbooks: Pages, site_url: str, alert: Alert) -> tuple[str, str] | None:
    expected = runbook_url(site_url, alert.name)
    url = alert.runbook_url.strip()
    if not url:
        return f"alert {alert.name} has no runbook_url annotation", f"add runbook_url: {expected}"
    page = runbook_page_for_url(site_url, url)
    if page is None:
        return (
            f"alert {alert.name}: runbook_url {url} is not a page of the runbook site "
            f"({runbook_base(site_url)}, from {SETTING} in {SITE_CONFIG})",
            f"use {expected}",
        )
    if Path(page).stem != alert.name:
        return (
            f"alert {alert.name}: runbook_url points at the page of {Path(page).stem}",
            f"every alert has its own page: use {expected}",
        )
    if page in runbooks.unreadable:  # refused by the trust boundary (a symlink out, a FIFO), or not UTF-8
        reason = runbooks.unreadable[page]
        return f"alert {alert.name}: cannot read runbook page {page} ({reason})", (
            "save it as a UTF-8 file in docs/"
        )
    if page not in runbooks.texts:
        return f"alert {alert.name}: runbook page {page} does not exist", f"write {page}"
    missing = parse_runbook(runbooks.texts[page]).missing_sections()
    if missing:
        return (
            f"alert {alert.name}: runbook page {page} lacks section(s) {', '.join(missing)}",
            "a runbook has " + ", ".join(f"## {name}" for name in RUNBOOK_SECTIONS),
        )
    return None
