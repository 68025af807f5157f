"""An alert has no owner with an escalation path, or its runbook does not open with its on-call block.

## Why it matters
At 3 a.m. the runbook is the first page the on-call engineer reads. It must say who owns the alert, whom to
escalate to, and where the dashboard panel for the alert's labels is (decision 0031). The owner is the
`gpupolicy.io/owner` label of the PrometheusRule that defines the alert; the owners' contact and escalation
steps, and the Grafana URL, are site settings (`extra.oncall` in mkdocs.yml); `gpupolicy docs` writes each
alert's block to `docs/generated/runbooks/<Alert>.txt`, which the runbook includes. The rule runs only in a
repository with a runbook site (mkdocs.yml `site_url`).

## Bad example
```yaml
kind: PrometheusRule
metadata:
  name: gpu-alerts
  labels: {role: alert-rules}          # no gpupolicy.io/owner: nobody owns these alerts
```
```markdown
# GPUFallenOffBus
Severity: **critical**                 <- no `--8<-- "GPUFallenOffBus.txt"`: no owner, escalation or dashboard
```

## Fix
Label the PrometheusRule `gpupolicy.io/owner: <owner>`, declare the owner under `extra.oncall.owners` in
mkdocs.yml with a `contact` and a list of `escalation` steps, set `extra.oncall.grafana_url`, and put
`--8<-- "<Alert>.txt"` under the runbook's title.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..domain import observability
from ..domain.observability import oncall
from ..findings import Finding, Location, Severity, at
from ..model import Fleet

ID = "OBS007"
SEVERITY = Severity.ERROR
SUMMARY = "An alert has no owner with an escalation path, or its runbook lacks its on-call block"


def check(fleet: Fleet) -> Iterator[Finding]:
    alerts = {
        a.name: a for cluster in fleet.clusters.values() for a in observability.alerts_of_cluster(cluster)
    }
    if not alerts or not fleet.site_url:
        return
    settings = fleet.oncall or oncall.OnCall()
    for problem in settings.problems:
        yield Finding(
            rule=ID,
            severity=SEVERITY,
            message=f"on-call settings: {problem}",
            hint="see extra.oncall in mkdocs.yml (decision 0031)",
            path="mkdocs.yml",
        )
    reported: set[str] = set()
    for alert in sorted(alerts.values(), key=lambda a: a.name):
        yield from _owner(fleet, settings, alert, reported)
        yield from _block(fleet, alert)


def _owner(
    fleet: Fleet, settings: oncall.OnCall, alert: observability.Alert, reported: set[str]
) -> Iterator[Finding]:
    obj = alert.obj
    if obj is None or obj.origin in reported:
        return
    owner = obj.labels.get(oncall.OWNER_LABEL, "")
    if owner in settings.owners:
        return
    reported.add(obj.origin)
    what = (
        f"names owner {owner}, which extra.oncall.owners does not declare"
        if owner
        else f"has no {oncall.OWNER_LABEL} label"
    )
    yield Finding(
        rule=ID,
        severity=SEVERITY,
        cluster=obj.cluster,
        message=f"PrometheusRule {obj.name} (alerts such as {alert.name}) {what}: its runbooks "
        "cannot say "
        "who answers them or how to escalate",
        hint=f"label it {oncall.OWNER_LABEL}: <owner> and declare the owner in mkdocs.yml extra.oncall",
        **at(fleet.locate(obj, "metadata", "labels")),
    )


def _block(fleet: Fleet, alert: observability.Alert) -> Iterator[Finding]:
    page = f"{observability.RUNBOOK_DIR}/{alert.name}.md"
    text = fleet.runbooks.texts.get(page)
    include = f'--8<-- "{alert.name}.txt"'
    if text is not None and include not in text:
        yield Finding(
            rule=ID,
            severity=SEVERITY,
            message=f"runbook {page} does not include its on-call block ({include}): it shows no "
            "owner, "
            "escalation or dashboard link",
            hint=f"add the line {include} under the page's title",
            **at(Location(page, 1)),
        )
