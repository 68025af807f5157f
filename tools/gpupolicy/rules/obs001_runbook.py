"""An alert's `runbook_url` does not lead to a runbook page with Meaning, Impact, Diagnosis and Mitigation.

## Why it matters
The on-call engineer opens the runbook from the alert. A missing link, a link to a page that does not exist, or
a page without the four sections (prometheus-operator/runbooks template) leaves them guessing at 3 a.m. Runbook
URLs are `https://gpu-platform.example.com/runbooks/<AlertName>/`, rendered from `docs/runbooks/<AlertName>.md`
(the base URL is `RUNBOOK_BASE_URL` in `gpupolicy.observability`).

## Bad example
```yaml
- alert: GPUFallenOffBus
  expr: DCGM_FI_DEV_XID_ERRORS == 79
  annotations:
    runbook_url: https://wiki.example.com/gpu-problems   # not on the runbook site, no page in docs/runbooks
```

## Fix
Link `https://gpu-platform.example.com/runbooks/GPUFallenOffBus/` and write `docs/runbooks/GPUFallenOffBus.md`
with `## Meaning`, `## Impact`, `## Diagnosis` and `## Mitigation` sections.
"""

from collections.abc import Iterator
from pathlib import Path

from ..findings import Finding, Severity, at
from ..model import Fleet, Pages
from ..observability import (
    RUNBOOK_BASE_URL,
    RUNBOOK_SECTIONS,
    Alert,
    alerts_of_cluster,
    locate,
    parse_runbook,
    runbook_page_for_url,
    runbook_url,
)

ID = "OBS001"
SEVERITY = Severity.ERROR
SUMMARY = "Alert runbook_url must lead to a docs/runbooks page with the four runbook sections"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for alert in alerts_of_cluster(cluster):
            problem = _problem(fleet.runbooks, alert)
            if problem is None:
                continue
            message, hint = problem
            where = locate(fleet, alert.obj, *alert.path, "annotations", "runbook_url")
            yield Finding(rule=ID, severity=SEVERITY, message=message, cluster=cluster.name, hint=hint, **at(where))


def _problem(runbooks: Pages, alert: Alert) -> tuple[str, str] | None:
    expected = runbook_url(alert.name)
    url = alert.runbook_url.strip()
    if not url:
        return f"alert {alert.name} has no runbook_url annotation", f"add runbook_url: {expected}"
    page = runbook_page_for_url(url)
    if page is None:
        return (f"alert {alert.name}: runbook_url {url} is not a page of the runbook site ({RUNBOOK_BASE_URL})",
                f"use {expected}")
    if Path(page).stem != alert.name:
        return (f"alert {alert.name}: runbook_url points at the page of {Path(page).stem}",
                f"every alert has its own page: use {expected}")
    if page in runbooks.unreadable:  # refused by the trust boundary (a symlink out, a FIFO), or not UTF-8
        reason = runbooks.unreadable[page]
        return f"alert {alert.name}: cannot read runbook page {page} ({reason})", "save it as a UTF-8 file in docs/"
    if page not in runbooks.texts:
        return f"alert {alert.name}: runbook page {page} does not exist", f"write {page}"
    missing = parse_runbook(runbooks.texts[page]).missing_sections()
    if missing:
        return (f"alert {alert.name}: runbook page {page} lacks section(s) {', '.join(missing)}",
                "a runbook has " + ", ".join(f"## {name}" for name in RUNBOOK_SECTIONS))
    return None
