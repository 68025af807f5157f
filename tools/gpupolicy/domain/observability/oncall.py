"""Who answers an alert, how it escalates, and which dashboard panel shows it: the facts each runbook opens
with (decision 0031).

- The owner of an alert is the owner of its PrometheusRule: the label `gpupolicy.io/owner` on the object that
  defines the alerts, so the fact lives with them (and Alertmanager can route on it).
- Each owner's contact and escalation, and the Grafana that serves `policies/observability/dashboards`, are
  site
  settings next to `site_url`: `extra.oncall` in mkdocs.yml (`siteconfig.read_settings`), since they are the
  organisation's facts, not the cluster's.
- The dashboard panel of an alert is the panel whose queries share the most metrics with the alert's
  expression
  (`observability.metric_names`); its link opens that panel alone (`viewPanel`) with the dashboard's variables
  set from the alert's labels where the alert has them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from ...infra import repopath, siteconfig
from ...infra.yamlload import mapping
from . import Alert, dashboard_panels, metric_names, panel_exprs

OWNER_LABEL = "gpupolicy.io/owner"
SECTION = ("extra", "oncall")
# The alert label that carries a dashboard variable's value, where the names differ (dcgm-exporter's
# hostname).
VARIABLE_LABELS = {"node": ("node", "hostname"), "gpu": ("gpu",), "cluster_queue": ("cluster_queue",)}


@dataclass(frozen=True)
class Owner:
    name: str
    contact: str
    escalation: tuple[str, ...]


@dataclass(frozen=True)
class OnCall:
    grafana_url: str = ""
    owners: dict[str, Owner] = field(default_factory=dict)
    problems: tuple[str, ...] = ()  # what is wrong with the settings, for OBS007


def read_oncall(reader: repopath.Reader) -> OnCall:
    return oncall_of(*siteconfig.read_settings(reader))


def oncall_of(data: dict | None, problem: str) -> OnCall:
    """The on-call settings from mkdocs.yml as read once (`siteconfig.read_settings`)."""
    if data is None:
        return OnCall(problems=(problem,))
    section = mapping(mapping(data.get(SECTION[0])).get(SECTION[1]))
    problems = []
    grafana = section.get("grafana_url")
    if not (
        isinstance(grafana, str) and urlsplit(grafana).scheme in ("http", "https") and grafana.endswith("/")
    ):
        problems.append(
            f"{siteconfig.SITE_CONFIG} extra.oncall.grafana_url is not an absolute http(s) URL ending in /"
        )
        grafana = ""
    owners = {}
    for name, entry in mapping(section.get("owners")).items():
        entry = mapping(entry)
        contact = entry.get("contact")
        steps = entry.get("escalation")
        if not (isinstance(contact, str) and contact.strip()):
            problems.append(f"owner {name} has no contact")
        if not (isinstance(steps, list) and steps and all(isinstance(s, str) and s.strip() for s in steps)):
            problems.append(f"owner {name} has no escalation (a list of steps)")
            steps = []
        owners[str(name)] = Owner(str(name), str(contact or ""), tuple(steps))
    return OnCall(str(grafana or ""), owners, tuple(problems))


@dataclass(frozen=True)
class Panel:
    dashboard: str  # title
    uid: str
    panel_id: int
    title: str
    variables: tuple[str, ...]
    metrics: frozenset[str]


def panels(dashboards: list[dict]) -> list[Panel]:
    found = []
    for data in dashboards:
        variables = tuple(
            str(v.get("name"))
            for v in mapping(data.get("templating")).get("list") or []
            if isinstance(v, dict) and v.get("type") == "query"
        )
        for _path, panel in dashboard_panels(data.get("panels")):
            metrics = frozenset(m for _index, expr in panel_exprs(panel) for m in metric_names(expr))
            if metrics and isinstance(panel.get("id"), int) and isinstance(data.get("uid"), str):
                found.append(
                    Panel(
                        str(data.get("title", data["uid"])),
                        data["uid"],
                        panel["id"],
                        str(panel.get("title", "")),
                        variables,
                        metrics,
                    )
                )
    return found


def panel_of(alert: Alert, candidates: list[Panel]) -> Panel | None:
    """The panel sharing the most metrics with the alert's expression (the first such, in dashboard order)."""
    wanted = set(metric_names(alert.expr))
    best = max(candidates, key=lambda p: len(wanted & p.metrics), default=None)
    return best if best is not None and wanted & best.metrics else None


def panel_link(grafana_url: str, panel: Panel, alert: Alert) -> tuple[str, list[str]]:
    """The panel's URL with each variable the alert can fill as `<label>`, and those labels."""
    filled = []
    query = f"viewPanel={panel.panel_id}"
    for variable in panel.variables:
        label = next(
            (name for name in VARIABLE_LABELS.get(variable, (variable,)) if _alert_has(alert, name)), None
        )
        if label:
            query += f"&var-{variable}=<{label}>"
            filled.append(label)
    return f"{grafana_url}d/{panel.uid}/?{query}", filled


def _alert_has(alert: Alert, label: str) -> bool:
    """Whether the alert's series carry the label: its annotations template it (`{{ $labels.node }}`)."""
    return any(f"$labels.{label}" in text for text in alert.annotations.values())
