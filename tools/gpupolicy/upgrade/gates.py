"""Rollout gates from real metrics: a plan stage's rollback criteria evaluated against Prometheus.

Each criterion is one PromQL expression whose result series are the *offenders* (a firing alert, a GPU that
reported an XID, a failed pod, a node without exporter data ...) on the stage's nodes, asked over the stage's
soak with `query_range`. At every step the offenders are counted; the first step with more than the criterion
allows is the breach, reported with that sample's time, labels and value. Each criterion also has an evidence
query: when Prometheus has none of the series it depends on, the verdict is "no data", which never passes.

The stage's nodes are the nodes whose `gpupolicy.io/pool` label names one of the stage's pools, as
kube-state-metrics exports it in `kube_node_labels` (the label must be on its allowlist:
policies/observability/alerts/gpu-nodes.yaml). Other series join them on `node`: kube-state-metrics names the
node so, and the DCGM exporter's ServiceMonitor copies the node name into `node`
(policies/observability/servicemonitors/dcgm-exporter.yaml). See
docs/decisions/0035-rollout-gates-from-prometheus.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from ..domain.gpu_operator import OPERATOR_NAMESPACE
from ..errors import ToolError
from ..model import POOL_LABEL, Fleet
from .plans import Plan, Stage, format_duration, format_timestamp, stage_units
from .promclient import Prometheus, Series, step_for

HOLDS, BREACHED, NO_DATA = "holds", "breached", "no data"
DRIVER_UPGRADE_STATE_LABEL = "nvidia.com/gpu-driver-upgrade-state"
# the upgrade controller's failed state (gpu-operator upgrade state machine)
UPGRADE_FAILED = "upgrade-failed"
UPGRADE_DONE = "upgrade-done"  # its final state: the node runs the new driver and is uncordoned
# dcgm-exporter turns every counter of type `label` into a label of every series, named by the field
# (NVIDIA/dcgm-exporter internal/pkg/collector/gpu_collector.go, `counter.IsLabel()` -> labels[FieldName]);
# policies/gpu-operator/dcgm-metrics.csv enables DCGM_FI_DRIVER_VERSION so.
DRIVER_VERSION_LABEL = "DCGM_FI_DRIVER_VERSION"
# kube-state-metrics names a pod's extended resource requests with `_` for every `.`, `/` and `-`
# (kube_pod_container_resource_requests{resource="nvidia_com_gpu"}): whole GPUs, MIG slices, shared GPUs.
GPU_REQUEST_RESOURCES = "nvidia_com_gpu.*|nvidia_com_mig_.+"
XID_METRIC = "DCGM_FI_DEV_XID_ERRORS"  # the value of the last XID a GPU reported (a gauge, not a count)
FALLEN_OFF_BUS_XID = 79
# XIDs a user's own program causes (graphics engine exception, MMU fault, stopped by the app, preemptive
# cleanup): the job owner's problem, not the driver's; the GPUXidError alert leaves them out for the same
# reason (policies/observability/alerts/gpu-accelerators.yaml, NVIDIA's XID catalog).
APPLICATION_XIDS = (13, 31, 43, 45)
_POOL_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def ksm_label(key: str) -> str:
    """A node label key as kube-state-metrics exports it in kube_node_labels: `label_` and the key with every
    character outside [a-zA-Z0-9_] turned into `_` (the spelling the repository's alerts already use)."""
    return "label_" + re.sub(r"[^a-zA-Z0-9_]", "_", key)


POOL_SERIES_LABEL = ksm_label(POOL_LABEL)


@dataclass(frozen=True)
class Criterion:
    name: str
    offenders: str  # PromQL: one series per offender on the stage's nodes
    allowed: int  # offenders tolerated at once
    evidence: str | None  # PromQL: any series means the data the criterion needs is there; None: never
    missing: str  # what "no data" means for this criterion, in words
    at_end: bool = False  # a state the soak must END in (judged at the last step), not one it may never enter


@dataclass(frozen=True)
class Verdict:
    criterion: Criterion
    state: str  # holds | breached | no data
    detail: str = ""  # the breaching sample, or why there is no data

    def line(self) -> str:
        mark = {HOLDS: "holds", BREACHED: "BREACHED", NO_DATA: "NO DATA"}[self.state]
        return f"{mark:<9} {self.criterion.name}" + (f": {self.detail}" if self.detail else "")


@dataclass(frozen=True)
class Evaluation:
    stage: Stage
    pools: tuple[str, ...]
    start: datetime
    end: datetime
    server: str
    verdicts: tuple[Verdict, ...]

    @property
    def breached(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.state == BREACHED]

    @property
    def without_data(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.state == NO_DATA]

    @property
    def passes(self) -> bool:
        return all(v.state == HOLDS for v in self.verdicts)

    def heading(self) -> str:
        return (
            f"rollback criteria of stage {self.stage.name} over {format_timestamp(self.start)} .. "
            f"{format_timestamp(self.end)} ({format_duration(self.end - self.start)}), pools "
            f"{', '.join(self.pools)}, from {self.server}:"
        )

    def blockers(self) -> list[str]:
        return [
            f"rollback criterion {v.state}: {v.criterion.name}" + (f" ({v.detail})" if v.detail else "")
            for v in self.verdicts
            if v.state != HOLDS
        ]


# --- the stage's nodes and its criteria --------------------------------------------------------------------


def stage_pools(fleet: Fleet, plan: Plan, stage: Stage) -> tuple[str, ...]:
    """The pools whose nodes a stage upgrades: its driver units, or every pool of its operator clusters."""
    names: list[str] = []
    for unit in stage_units(fleet, plan, stage):
        pools = [unit.pool] if unit.pool is not None else fleet.clusters[unit.cluster].pools
        names += [pool.name for pool in pools if pool.name not in names]
    for name in names:
        if not _POOL_NAME.match(name):  # pool names go into a PromQL regex
            raise ToolError(f"pool name {name!r} is not a DNS label; cannot select its nodes in PromQL")
    return tuple(names)


def stage_nodes(pools: tuple[str, ...], extra: str = "") -> str:
    """PromQL: one series per node of the given pools, labelled `node`."""
    return f'max by (node) (kube_node_labels{{{POOL_SERIES_LABEL}=~"{"|".join(pools)}"{extra}}})'


def criteria(plan: Plan, pools: tuple[str, ...], alert_rules: set[str]) -> list[Criterion]:
    """The plan's criteria (silent alerts, XID and pod budgets) and the ones every driver stage has."""
    nodes = stage_nodes(pools)
    on_nodes = f"and on (node) {nodes}"
    inventory = f"kube_node_labels{{{POOL_SERIES_LABEL}=~\"{'|'.join(pools)}\"}}"
    no_nodes = f"no kube_node_labels series with {POOL_SERIES_LABEL} in {', '.join(pools)}"
    xid_evidence = f"{XID_METRIC} {on_nodes}"
    no_xid = f"no {XID_METRIC} series from the stage's nodes"
    found: list[Criterion] = []
    for alert in plan.criteria.silent_alerts:
        found.append(_alert_criterion(alert, nodes, inventory, alert in alert_rules, no_nodes))
    if plan.criteria.max_xid_errors is not None:
        application = " or ".join(f"{XID_METRIC} == {xid}" for xid in APPLICATION_XIDS)
        found.append(
            Criterion(
                f"at most {plan.criteria.max_xid_errors} GPU(s) reporting an XID error",
                f"(({XID_METRIC} > 0) unless ({application})) {on_nodes}",
                plan.criteria.max_xid_errors,
                xid_evidence,
                no_xid,
            )
        )
    found.append(
        Criterion(
            "no GPU fallen off the bus (XID 79)",
            f"({XID_METRIC} == {FALLEN_OFF_BUS_XID}) {on_nodes}",
            0,
            xid_evidence,
            no_xid,
        )
    )
    found += _upgrade_state_criteria(pools, plan.component == "driver")
    if plan.component == "driver":
        found.append(_version_criterion(plan.to_version, nodes))
    if plan.criteria.max_failed_pods is not None:
        found.append(_failed_pods_criterion(plan, nodes))
    found.append(
        Criterion(
            "the DCGM exporter reports from every node of the stage",
            f"{nodes} unless on (node) {XID_METRIC}",
            0,
            inventory,
            no_nodes,
        )
    )
    return found


def _upgrade_state_criteria(pools: tuple[str, ...], driver: bool) -> list[Criterion]:
    """No node in upgrade-failed during the soak, and (driver plans) every node upgrade-done at its end. Both
    need kube-state-metrics to export the state label (its --metric-labels-allowlist): without one series
    carrying it, "no node failed" would hold silently, so the evidence is the label itself."""
    state_key = ksm_label(DRIVER_UPGRADE_STATE_LABEL)
    exported = stage_nodes(pools, f',{state_key}!=""')
    missing = (
        f"no kube_node_labels series of the stage's nodes carries {state_key}: kube-state-metrics "
        f"does not export the node label {DRIVER_UPGRADE_STATE_LABEL} (add it to --metric-labels-allowlist)"
    )
    found = [
        Criterion(
            f"no node in driver upgrade state {UPGRADE_FAILED}",
            stage_nodes(pools, f',{state_key}="{UPGRADE_FAILED}"'),
            0,
            exported,
            missing,
        )
    ]
    if driver:
        found.append(
            Criterion(
                f"every node of the stage ends the soak in driver upgrade state {UPGRADE_DONE}",
                stage_nodes(pools, f',{state_key}!="{UPGRADE_DONE}"'),
                0,
                exported,
                missing,
                at_end=True,
            )
        )
    return found


def _version_criterion(version: str, nodes: str) -> Criterion:
    """Every stage node's exporter reports the plan's target driver at the end of the soak: a rollout stuck on
    the old driver soaks "healthy" otherwise. Offenders: stage nodes with no series of that version."""
    if not re.fullmatch(r"v?[0-9]+(\.[0-9]+)*", version):  # the schema's version pattern; it goes into PromQL
        raise ToolError(f"driver version {version!r} is not a version; cannot ask Prometheus for it")
    running = f'{XID_METRIC}{{{DRIVER_VERSION_LABEL}="{version}"}}'
    reported = f'{XID_METRIC}{{{DRIVER_VERSION_LABEL}!=""}} and on (node) {nodes}'
    return Criterion(
        f"every node of the stage runs driver {version} at the end of the soak",
        f"{nodes} unless on (node) {running}",
        0,
        reported,
        f"no {XID_METRIC} series labelled {DRIVER_VERSION_LABEL} from the stage's nodes (the "
        "exporter's counters must enable it as a label)",
        at_end=True,
    )


def _failed_pods_criterion(plan: Plan, nodes: str) -> Criterion:
    """GPU pods that FAILED on the stage's nodes within the plan's window (default: one evaluation step).
    Pending is no failure: the operator's validators and every startup-check init container are Pending
    through any driver restart. The operator's own namespace is left out: its pods are judged by the
    upgrade-state criteria."""
    gpu_pods = (
        f'max by (namespace, pod, node) (kube_pod_container_resource_requests{{resource=~'
        f'"{GPU_REQUEST_RESOURCES}",namespace!="{OPERATOR_NAMESPACE}"}} > 0)'
    )
    failed = (
        f'(kube_pod_status_phase{{phase="Failed"}} == 1) * on (namespace, pod) group_left (node) '
        f'({gpu_pods} '
        f"and on (node) {nodes})"
    )
    window = plan.criteria.window
    if window is not None:  # a pod counts for `window` after it failed: "at most N within any window"
        failed = f"max_over_time(({failed})[{int(window.total_seconds())}s:1m])"
    span = f" within any {format_duration(window)}" if window is not None else ""
    return Criterion(
        f"at most {plan.criteria.max_failed_pods} GPU pod(s) failed on the stage's nodes{span}",
        failed,
        plan.criteria.max_failed_pods,
        "kube_pod_status_phase",
        "no kube_pod_status_phase series (kube-state-metrics pod metrics)",
    )


def _alert_criterion(alert: str, nodes: str, inventory: str, evaluated: bool, no_nodes: str) -> Criterion:
    """ALERTS series of the alert that fired on a stage node (by `node`, or by the exporter's `hostname`), or
    that name no node at all (a cluster-level alert counts against every stage: it cannot be placed)."""
    firing = f'ALERTS{{alertname="{alert}",alertstate="firing"}}'
    by_hostname = f'label_replace({nodes}, "hostname", "$1", "node", "(.*)")'
    offenders = (
        f'({firing} and on (node) {nodes}) or ({firing} and on (hostname) {by_hostname}) '
        f'or ALERTS{{alertname="{alert}",alertstate="firing",node="",hostname=""}}'
    )
    if not evaluated:  # silence from a rule no one evaluates proves nothing
        return Criterion(
            f"alert {alert} stays silent",
            offenders,
            0,
            None,
            f"the server does not evaluate an alerting rule {alert} (GET /api/v1/rules)",
        )
    return Criterion(f"alert {alert} stays silent", offenders, 0, inventory, no_nodes)


# --- evaluation --------------------------------------------------------------------------------------------


def soak_window(stage: Stage, now: datetime) -> tuple[datetime, datetime] | None:
    """From the stage's start to its completion (or now); None before it started."""
    if stage.started is None or stage.started >= now:
        return None
    return stage.started, min(stage.completed or now, now)


def evaluate(client: Prometheus, fleet: Fleet, plan: Plan, stage: Stage, now: datetime) -> Evaluation | None:
    """The verdict of every criterion over the stage's soak so far; None when the stage has not started."""
    window = soak_window(stage, now)
    if window is None:
        return None
    start, end = window
    pools = stage_pools(fleet, plan, stage)
    step = step_for((end - start).total_seconds())
    alert_rules = client.alert_names() if plan.criteria.silent_alerts else set()

    def ask(expr: str) -> list[Series]:
        return client.query_range(expr, start, end, step)

    verdicts = tuple(judge(criterion, ask) for criterion in criteria(plan, pools, alert_rules))
    return Evaluation(stage, pools, start, end, client.url, verdicts)


def judge(criterion: Criterion, ask: Callable[[str], list[Series]]) -> Verdict:
    if criterion.evidence is None or not ask(criterion.evidence):
        return Verdict(criterion, NO_DATA, criterion.missing)
    offenders = ask(criterion.offenders)
    if criterion.at_end:
        offenders = at_last_step(offenders, ask(criterion.evidence))
    breach = first_breach(offenders, criterion.allowed)
    if breach is None:
        return Verdict(criterion, HOLDS)
    moment, series, value, count = breach
    labels = ", ".join(f'{k}="{v}"' for k, v in sorted(series.labels.items()))
    return Verdict(
        criterion,
        BREACHED,
        f"first at {format_timestamp(datetime.fromtimestamp(moment, UTC))}: "
        f"{{{labels}}} = {_number(value)} ({count} at once, "
        f"{criterion.allowed} allowed)",
    )


def first_breach(offenders: list[Series], allowed: int) -> tuple[float, Series, float, int] | None:
    """The first step at which more than `allowed` offenders have a sample: (time, one of them, its value,
    how many), or None."""
    at: dict[float, list[tuple[Series, float]]] = {}
    for series in offenders:
        for moment, value in series.samples:
            at.setdefault(moment, []).append((series, value))
    for moment in sorted(at):
        present = at[moment]
        if len(present) > allowed:
            series, value = min(present, key=lambda item: sorted(item[0].labels.items()))
            return moment, series, value, len(present)
    return None


def at_last_step(offenders: list[Series], evidence: list[Series]) -> list[Series]:
    """Only the offenders' samples at the last moment the evidence has data (the end of the soak)."""
    last = max((moment for series in evidence for moment, _ in series.samples), default=None)
    kept = [
        Series(series.labels, tuple((m, v) for m, v in series.samples if m == last)) for series in offenders
    ]
    return [series for series in kept if series.samples]


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() else f"{value:g}"
