"""The update procedure page: every rollout plan under policies/upgrades/ as a timeline, its stages with the
pools and GPU counts they take, the worst moment of each pool's drain, the rollback criteria and the exact
commands. The hand-written procedure (docs/operations/update-procedure.md) links here.

The page shows the plan's record (started/completed), not the clock: regenerating it later gives the same
page.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ..domain import catalog
from ..model import Fleet
from ..upgrade import plans as upgrades
from ..upgrade.plans import Plan, PlanSet
from . import Context, table

PAGE = "upgrades.md"


def pages(context: Context) -> dict[str, str]:
    plans = upgrades.plans_of(context.fleet)
    text = context.header("Upgrade plans")
    text += (
        "Generated from the rollout plans in `policies/upgrades/`. The procedure that uses this page is "
        "[the update procedure](../operations/update-procedure.md); the plan file is the record of each "
        "rollout (`started` / `completed` per stage), written by `gpupolicy upgrade promote`.\n\n"
    )
    text += _requirements(plans)
    text += _running(context.fleet)
    if not plans.plans:
        return {PAGE: text + "No rollout plan is open.\n"}
    for plan in plans.plans:
        text += _plan_section(context.fleet, plans, plan)
        text += _runbooks(context, plan)
    return {PAGE: text}


def _requirements(plans: PlanSet) -> str:
    source = f"`{plans.requirements.path}`" if plans.requirements.path else "the built-in defaults"
    soak = ", ".join(
        f"{phase} {upgrades.format_duration(plans.minimum_soak(phase))}" for phase in upgrades.PHASES
    )
    text = f"Minimum soak per phase ({source}): {soak}.\n\n"
    if plans.requirements.cuda:
        rows = [
            [need.team, need.version, catalog_minimum(need.version), need.reason]
            for need in plans.requirements.cuda
        ]
        text += "CUDA versions the teams need from the driver:\n\n"
        text += table(["team", "CUDA", "minimum driver", "why"], rows) + "\n"
    return text


def _running(fleet: Fleet) -> str:
    """Both kinds of rollout, as the clusters stand: the operator chart each installs and the drivers its
    pools run."""
    rows = []
    for name, cluster in sorted(fleet.clusters.items()):
        installs = upgrades.chart_installs(cluster)
        pinned = (
            f"`{upgrades.chart_pin_path(cluster)}` on {', '.join(i.obj.ref() for i in installs)}"
            if installs
            else "not installed from this repository"
        )
        drivers = sorted(
            {
                d.version
                for pool in cluster.pools
                for d in upgrades.drivers_of_pool(cluster, pool)
                if d.version
            }
        )
        rows.append(
            [
                name,
                cluster.facts.environment,
                cluster.facts.kubernetes_version,
                f"`{cluster.facts.gpu_operator_version}`",
                pinned,
                ", ".join(f"`{v}`" for v in drivers),
            ]
        )
    text = (
        "## What each cluster runs\n\nA driver plan moves NVIDIADriver `spec.version` pool by pool; a "
        "gpu-operator plan moves the chart per cluster (`gpuOperatorVersion` in cluster.yaml and the "
        "cluster's chart pin, kept equal by UPG014).\n\n"
    )
    return (
        text
        + table(
            [
                "cluster",
                "environment",
                "Kubernetes",
                "GPU Operator",
                "chart pinned by",
                "drivers on its pools",
            ],
            rows,
        )
        + "\n"
    )


def catalog_minimum(cuda: str) -> str:
    return catalog.min_driver_for_cuda(cuda) or "unknown"


def _plan_section(fleet: Fleet, plans: PlanSet, plan: Plan) -> str:
    what = (
        "NVIDIA driver (NVIDIADriver `spec.version` per pool)"
        if plan.component == "driver"
        else (
            "GPU Operator chart per cluster (cluster.yaml `gpuOperatorVersion` and its chart pin "
            f"`clusters/<name>/{upgrades.CHART_PIN_FILE}`)"
        )
    )
    text = f"## {plan.name}\n\n"
    if plan.description:
        text += plan.description + "\n\n"
    text += (
        f"- **What**: {what}, `{plan.from_version}` → `{plan.to_version}`\n"
        f"- **File**: `{plan.path}`\n"
        f"- **Rollback target**: `{plan.rollback_target}`\n"
        f"- **State**: {_state(plan)}\n\n"
    )
    text += "### Timeline\n\n" + _gantt(plans, plan) + "\n"
    text += "### Stages\n\n" + _stages(fleet, plans, plan)
    text += (
        "### Rollback criteria\n\nRoll the current stage back when any of these is broken during its "
        "soak:\n\n"
    )
    text += "".join(f"- {line}\n" for line in plan.criteria.describe()) + "\n"
    text += "### Commands\n\n" + _commands(plan)
    return text


def _runbooks(context: Context, plan: Plan) -> str:
    """Links to the runbook of every rollback alert that has one (docs/runbooks/<alert>.md)."""
    links = [
        f"[{name}](../runbooks/{name}.md)"
        for name in plan.criteria.silent_alerts
        if (context.root / "docs" / "runbooks" / f"{name}.md").is_file()
    ]
    return f"Runbooks of the rollback alerts: {', '.join(links)}.\n\n" if links else ""


def _state(plan: Plan) -> str:
    if plan.finished:
        return "finished"
    current = plan.current_stage()
    if current is None:
        return "not started"
    return f"stage {current.name} {current.state}"


def _gantt(plans: PlanSet, plan: Plan) -> str:
    """A Mermaid gantt chart: recorded dates where the record has them, planned dates and soak otherwise."""
    lines = [
        "```mermaid",
        "gantt",
        f"    title {plan.name}",
        "    dateFormat YYYY-MM-DD",
        "    axisFormat %m-%d",
    ]
    for stage in plan.stages:
        lines.append(f"    section {stage.name} ({stage.phase})")
        soak = plans.effective_soak(stage)
        days = max(1, -(-int(soak.total_seconds()) // 86400))
        if stage.started:
            status = "done" if stage.completed else "active"
            start = stage.started.date()
            end = (stage.completed or _soak_end(stage.started, soak)).date()
            length = max((end - start).days, 1)
            lines.append(
                f"    {_label(stage, 'rollout and soak')} :{status}, {stage.name}, {start}, {length}d"
            )
        else:
            lines.append(f"    {_label(stage, 'planned, soak')} :{stage.name}, {stage.planned}, {days}d")
    lines.append("```")
    return "\n".join(lines) + "\n"


def _soak_end(started: datetime, soak: timedelta) -> datetime:
    return started + soak


def _label(stage: upgrades.Stage, what: str) -> str:
    return f"{stage.name} {what}".replace(":", " ").replace(";", " ")


def _stages(fleet: Fleet, plans: PlanSet, plan: Plan) -> str:
    text = ""
    statuses = upgrades.stage_status(fleet, plans, plan, _frozen_now(plan))
    for number, status in enumerate(statuses, 1):
        stage = status.stage
        record = []
        if stage.started:
            record.append(f"started {upgrades.format_timestamp(stage.started)}")
        if stage.approved_by:
            record.append(f"approved by {stage.approved_by}")
        if stage.completed:
            record.append(f"completed {upgrades.format_timestamp(stage.completed)}")
        text += (
            f"**{number}. {stage.name}** — phase `{stage.phase}`, {stage.state}; planned "
            f"{stage.planned}, minimum soak {upgrades.format_duration(status.soak_required)}, approvers "
            f"{', '.join(stage.approvers)}"
            + (" (two people: not the promoter)" if stage.two_person else "")
            + (f"; {', '.join(record)}" if record else "")
            + "."
        )
        text += f" {stage.description}\n\n" if stage.description else "\n\n"
        moments = {(m.cluster, m.pool.name): m for m in upgrades.drain_moments(fleet, plan, stage)}
        rows = []
        for unit in status.units:
            moment = moments.get((unit.unit.cluster, unit.unit.pool_name))
            rows.append(
                [
                    unit.unit.cluster,
                    unit.unit.pool_name or "(whole cluster)",
                    unit.unit.pool.gpu_model if unit.unit.pool else "",
                    unit.gpus,
                    f"`{unit.version or '?'}`",
                    _drain_cell(moment),
                ]
            )
        total = sum(u.gpus for u in status.units)
        text += table(["cluster", "pool", "GPU", "GPUs", "version now", "worst moment of the drain"], rows)
        text += f"\n{total} GPUs in this stage.\n\n"
    return text


def _frozen_now(plan: Plan) -> datetime:
    """A clock-free 'now' for the page: the latest recorded time (soak columns then describe the record)."""
    moments = [m for s in plan.stages for m in (s.started, s.completed) if m]
    return max(moments) if moments else datetime(2000, 1, 1, tzinfo=UTC)


def _drain_cell(moment: upgrades.DrainMoment | None) -> str:
    if moment is None:
        return ""
    text = moment.describe() + f" ({moment.policy_source})"
    if moment.shortfalls:
        text += " — **production short**"
    return text


def _commands(plan: Plan) -> str:
    return (
        f"```shell\n"
        f"# where the rollout stands, the rollback criteria against Prometheus, what blocks the next "
        f"step\ngpupolicy upgrade status {plan.name} --prometheus <url>\n"
        f"# during a soak (CI job or CronJob): exit 1 on the first breached criterion\n"
        f"gpupolicy upgrade watch {plan.name} --prometheus <url> --every 15\n"
        f"# in CI on the reviewed merge, after the stage has soaked and its criteria held: the approvers "
        f"are\n# the SSH signatures on HEAD and its approve/{plan.name}/<stage>/* tags "
        f"(policies/upgrades/approvers.yaml)\ngpupolicy upgrade promote {plan.name} --prometheus <url>\n"
        f"git commit -m \"upgrade promote {plan.name}\" -- {plan.path} <the files the diff names>\n"
        f"# when a rollback criterion is broken: return the last promoted stage to "
        f"{plan.rollback_target}\ngpupolicy upgrade rollback {plan.name}\n"
        f"git commit -m \"upgrade rollback {plan.name}\" -- {plan.path} <the files the diff names>\n"
        f"```\n\n"
    )
