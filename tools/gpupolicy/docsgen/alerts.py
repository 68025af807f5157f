"""The alert catalog (every alert, its severity and runbook) and the metrics those alerts read."""

from __future__ import annotations

from ..domain import observability
from . import Context, table


def pages(context: Context) -> dict[str, str]:
    alerts: dict[str, observability.Alert] = {}
    clusters_of: dict[str, set[str]] = {}
    for cluster in context.fleet.clusters.values():
        for alert in observability.alerts_of_cluster(cluster):
            alerts.setdefault(alert.name, alert)
            clusters_of.setdefault(alert.name, set()).add(cluster.name)
    text = context.header("Alert catalog", {*_rule_sources(context), observability.RUNBOOK_DIR})
    text += (
        "*critical* pages the on-call engineer, *warning* opens a ticket, *info* is not routed. Each "
        "alert links to its runbook.\n\n"
    )
    rows = []
    for name, alert in sorted(alerts.items(), key=lambda item: (item[1].group, item[0])):
        page = observability.runbook_page_for_url(context.fleet.site_url, alert.runbook_url)
        runbook = f"[runbook](../{page.removeprefix('docs/')})" if page else "-"
        rows.append(
            [
                f"`{name}`",
                alert.group,
                alert.severity,
                alert.for_ or "-",
                alert.summary,
                runbook,
                ", ".join(sorted(clusters_of[name])),
            ]
        )
    text += (
        table(["alert", "group", "severity", "for", "summary", "runbook", "clusters"], rows)
        if rows
        else "No alerts.\n"
    )
    return {"alerts.md": text, "metrics.md": _metrics(context, alerts)}


def _metrics(context: Context, alerts: dict[str, observability.Alert]) -> str:
    used: dict[str, set[str]] = {}
    for name, alert in alerts.items():
        for metric in observability.metric_names(alert.expr):
            used.setdefault(metric, set()).add(name)
    dcgm = None
    for cluster in context.fleet.clusters.values():
        dcgm = dcgm or observability.dcgm_config_of(cluster)
    text = context.header("Metrics the alerts read", {*_rule_sources(context), *_dcgm_sources(context)})
    text += (
        "What each metric means and what is normal: see the hand-written [metric "
        "catalog](../operations/metric-catalog.md).\n\n"
    )
    rows = []
    for metric in sorted(used):
        counter = dcgm.get(metric) if dcgm else None
        source = "DCGM exporter" if observability.is_dcgm_metric(metric) else _source(metric)
        enabled = ("enabled" if counter else "not enabled") if observability.is_dcgm_metric(metric) else "-"
        rows.append(
            [
                f"`{metric}`",
                source,
                counter.prom_type if counter else "-",
                enabled,
                ", ".join(f"`{a}`" for a in sorted(used[metric])),
            ]
        )
    text += table(["metric", "source", "type", "in dcgm-metrics.csv", "alerts"], rows) if rows else "None.\n"
    return text


def _source(metric: str) -> str:
    for prefix, source in (
        ("kueue_", "Kueue"),
        ("kube_", "kube-state-metrics"),
        ("node_", "node exporter"),
        ("gpu_operator_", "GPU Operator"),
        ("up", "Prometheus"),
    ):
        if metric.startswith(prefix):
            return source
    return "other"


def _rule_sources(context: Context) -> set[str]:
    """The files the alerts come from (their PrometheusRule objects)."""
    return context.sources_of(
        obj
        for cluster in context.fleet.clusters.values()
        for obj in cluster.objects
        if obj.kind == "PrometheusRule"
    )


def _dcgm_sources(context: Context) -> set[str]:
    """The files of the DCGM exporter's counter list (the generated ConfigMap and its source)."""
    return context.sources_of(
        obj for obj in map(observability.dcgm_configmap, context.fleet.clusters.values()) if obj is not None
    )
