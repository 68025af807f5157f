"""The on-call block each runbook opens with (decision 0031): the alert's owner and escalation, and a link to
the dashboard panel that shows it with the alert's labels filled in. Written to
docs/generated/runbooks/<Alert>.txt; every runbook includes its block with `--8<-- "<Alert>.txt"`
(pymdownx.snippets, see mkdocs.yml), and OBS007
fails when one does not."""

from __future__ import annotations

from ..domain import observability
from ..domain.observability import oncall
from . import Context

FOLDER = "runbooks"


def pages(context: Context) -> dict[str, str]:
    fleet = context.fleet
    settings = fleet.oncall or oncall.OnCall()
    alerts: dict[str, observability.Alert] = {}
    candidates: dict[str, oncall.Panel] = {}
    for cluster in fleet.clusters.values():
        for alert in observability.alerts_of_cluster(cluster):
            alerts.setdefault(alert.name, alert)
        for dashboard in observability.dashboards_of(cluster):
            for panel in oncall.panels([dashboard.data] if dashboard.data else []):
                candidates.setdefault(f"{panel.uid}/{panel.panel_id}", panel)
    return {
        f"{FOLDER}/{name}.txt": block(settings, alert, list(candidates.values()))
        for name, alert in sorted(alerts.items())
    }


def block(settings: oncall.OnCall, alert: observability.Alert, candidates: list[oncall.Panel]) -> str:
    owner_name = (alert.obj.labels if alert.obj is not None else {}).get(oncall.OWNER_LABEL, "")
    owner = settings.owners.get(owner_name)
    lines = ['!!! abstract "On call"', ""]
    if owner is None:
        lines.append(
            f"    **Owner:** not set (label `{oncall.OWNER_LABEL}` on the alert's PrometheusRule, OBS007)."
        )
    else:
        lines.append(f"    **Owner:** `{owner.name}`, {owner.contact}.")
        lines += ["", "    **Escalation:**", ""]
        lines += [f"    {index}. {step}" for index, step in enumerate(owner.escalation, 1)]
    lines.append("")
    panel = oncall.panel_of(alert, candidates)
    if panel is None or not settings.grafana_url:
        why = (
            "no panel shows its metrics"
            if panel is None
            else ("no Grafana URL is set (mkdocs.yml extra.oncall)")
        )
        lines.append(f"    **Dashboard:** none ({why}).")
    else:
        url, labels = oncall.panel_link(settings.grafana_url, panel, alert)
        fill = (
            f" Replace {', '.join(f'`<{label}>`' for label in labels)} with the alert's labels."
            if labels
            else ""
        )
        lines.append(f"    **Dashboard:** [{panel.dashboard} › {panel.title}]({url}).{fill}")
    return "\n".join(lines) + "\n"
