"""`gpupolicy upgrade status|promote|rollback`: follow and move a staged rollout plan (policies/upgrades/).

status [PLAN]    stage by stage: pools and their versions, soak remaining, what blocks the next step.
promote PLAN     put the next stage's pools on the target version (NVIDIADriver spec.version, or the cluster's
                 gpuOperatorVersion) and record the stage start in the plan; after the last stage, record it
                 complete. Refuses (exit 1) while the current stage has not soaked, while an UPG rule fails,
                 or when the git working tree is dirty. Prints the change as a diff, ready to commit.
rollback PLAN    put the last promoted stage's pools back on the rollback target and remove its record.
watch PLAN       re-evaluate the current stage's rollback criteria against Prometheus every --every minutes;
                 exit 1 on the first breach (a CI job or CronJob), 0 once the stage has soaked cleanly.

With --prometheus URL, status, promote and watch evaluate the current stage's rollback criteria over its soak
(`query_range` on the stage's nodes): each holds, is breached (first breaching sample) or has no data. promote
refuses on a breach or on no data; status recommends the rollback command. The bearer token comes from
$GPUPOLICY_PROMETHEUS_TOKEN or --prometheus-token-file, never from a flag.

Edits go through ruamel.yaml's round-trip mode, so comments, quoting and layout of the touched files stay as
they were; a promote followed by a rollback restores every file byte for byte.
A check that crashed (an INTERNAL finding) leaves the verdict incomplete: promote and rollback refuse to edit
and status reports it, all with exit 2.
Exit codes: 0 done, 1 refused (the reason is printed), 2 the tool could not run or a check crashed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ruamel.yaml.scalarstring import DoubleQuotedScalarString

from .. import pipeline
from ..editing import Editor, same_style
from ..errors import ToolError
from ..findings import Finding, Severity
from ..infra import gitrev, repopath
from ..internal import DEBUG_ENV, crashes
from ..model import Fleet, K8sObject
from ..pipeline.build import origin_path
from ..upgrade import approvals, gates, promclient
from ..upgrade import plans as upgrades
from ..upgrade.plans import Plan, PlanSet, Stage, Unit
from . import COMMANDS, FORMAT_HELP, number_in

NAME = "upgrade"
HELP = COMMANDS[NAME]  # one home for the help text: the table `--help` reads
RECORD_KEYS = ("started", "approvedBy", "promotedBy", "completed")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="upgrade_action", metavar="ACTION")
    actions.required = True
    raw = argparse.RawDescriptionHelpFormatter
    status = actions.add_parser(
        "status",
        help="stage by stage state of a plan (all plans without PLAN)",
        description=__doc__,
        formatter_class=raw,
    )
    status.add_argument("plan", nargs="?", metavar="PLAN", help="plan name or file")
    status.add_argument("--format", choices=("text", "json"), default="text", help=FORMAT_HELP)
    promote = actions.add_parser(
        "promote",
        help="edit the next stage's pools to the target version",
        description=__doc__,
        formatter_class=raw,
    )
    promote.add_argument("plan", metavar="PLAN", help="plan name or file")
    promote.add_argument(
        "--approver",
        metavar="NAME",
        help="optional cross-check: the stage approver (person or group) expected among the "
        "verified signers; approvals themselves are SSH signatures on HEAD and on "
        "approve/PLAN/STAGE/* tags, verified against policies/upgrades/approvers.yaml",
    )
    promote.add_argument(
        "--base",
        metavar="REV",
        default="HEAD",
        help="the trusted revision whose policies/upgrades/approvers.yaml is the keyring "
        "(default: the committed HEAD, never the working tree)",
    )
    rollback = actions.add_parser(
        "rollback",
        help="return the last promoted stage to the rollback target",
        description=__doc__,
        formatter_class=raw,
    )
    rollback.add_argument("plan", metavar="PLAN", help="plan name or file")
    watch = actions.add_parser(
        "watch",
        help="re-evaluate the rollback criteria during a soak; exit 1 on breach",
        description=__doc__,
        formatter_class=raw,
    )
    watch.add_argument("plan", metavar="PLAN", help="plan name or file")
    watch.add_argument(
        "--every",
        metavar="MIN",
        type=_every,
        default=15.0,
        help="minutes between evaluations (default 15)",
    )
    watch.add_argument(
        "--rounds",
        metavar="N",
        type=_rounds,
        default=0,
        help="stop after N evaluations (default: until the stage has soaked or a breach; with --now, one: "
        "a fixed instant never soaks further)",
    )
    for command in (status, promote, watch):
        command.add_argument(
            "--prometheus",
            metavar="URL",
            required=command is watch,
            help="evaluate the rollback criteria against this Prometheus (HTTP API)",
        )
        command.add_argument(
            "--prometheus-token-file",
            metavar="FILE",
            type=Path,
            help=f"bearer token file (default: ${promclient.TOKEN_ENV} if set)",
        )
    for command in (status, promote, rollback, watch):
        # Also after the action (`upgrade promote PLAN --repo DIR`); SUPPRESS keeps `upgrade --repo DIR ...`
        # working.
        command.add_argument("--repo", type=Path, default=argparse.SUPPRESS, help="policy repository root")
        command.add_argument(
            "--now",
            metavar="TIME",
            type=_parse_now,
            help="the current time, UTC (2026-12-01T10:00:00Z or 2026-12-01); default: the clock",
        )
    for command in (promote, rollback):
        command.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")


WEEK_MINUTES = 7 * 24 * 60
_every = number_in(
    float, "a number of minutes", lambda value: 0 < value <= WEEK_MINUTES, "--every is more than 0 and at "
    f"most {WEEK_MINUTES} minutes (a week)"
)  # fmt: skip
_rounds = number_in(
    int, "a whole number of evaluations", lambda value: value >= 1, "--rounds takes 1 or more"
)


def _parse_now(text: str) -> datetime:
    try:
        if len(text) == 10:
            return datetime.fromisoformat(text).replace(tzinfo=UTC)
        return upgrades.parse_timestamp(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    now = args.now or upgrades.now_utc()
    result = pipeline.run(args.repo)
    plans = upgrades.plans_of(result.fleet)
    if args.upgrade_action == "status":
        return _status(args, result.fleet, plans, result.findings, now)
    plan = _find_plan(plans, args.plan)
    if args.upgrade_action == "watch":
        return _watch(args, result.fleet, plans, plan)
    _require_complete(args.upgrade_action, plan, result.findings)
    if args.upgrade_action == "promote":
        return _promote(args, result.fleet, plans, plan, result.findings, now)
    return _rollback(args, result.fleet, plan, result.findings)


def _find_plan(plans: PlanSet, wanted: str) -> Plan:
    plan = plans.plan(wanted)
    if plan is None:
        broken = [p for p in plans.problems if wanted in p.location.path]
        if broken:
            raise ToolError(f"plan {wanted} is not valid: {broken[0].location}: {broken[0].message}")
        names = ", ".join(p.name for p in plans.plans) or "none"
        raise ToolError(f"no rollout plan {wanted!r} under {upgrades.PLAN_DIR}/ (plans: {names})")
    return plan


def _crashed_checks(findings: list[Finding]) -> list[str]:
    """The checks that crashed ("rule CAP001", "stage model"): their findings, and any blocker, are
    missing."""
    return sorted({f.message.split(" crashed", 1)[0] for f in crashes(findings)})


def _incomplete(findings: list[Finding]) -> str:
    crashed = _crashed_checks(findings)
    if not crashed:
        return ""
    return (
        f"the verdict is incomplete: {len(crashed)} check(s) crashed ({', '.join(crashed)}), so what "
        f"they would block is unknown (a gpupolicy bug: please report; {DEBUG_ENV}=1 prints the traceback)"
    )


def _require_complete(action: str, plan: Plan, findings: list[Finding]) -> None:
    """promote and rollback edit the fleet on the rules' word: never while a rule could not give it."""
    reason = _incomplete(findings)
    if reason:
        raise ToolError(f"upgrade {action} {plan.name}: refused: {reason}")


def _refuse(action: str, plan: Plan, reasons: list[str]) -> int:
    print(f"gpupolicy upgrade {action} {plan.name}: refused", file=sys.stderr)
    for reason in reasons:
        print(f"  - {reason}", file=sys.stderr)
    return 1


# --- status
# --------------------------------------------------------------------------------------------------


def _status(
    args: argparse.Namespace, fleet: Fleet, plans: PlanSet, findings: list[Finding], now: datetime
) -> int:
    chosen = [_find_plan(plans, args.plan)] if args.plan else plans.plans
    for problem in plans.problems:
        print(f"warning: {problem.location}: {problem.message}", file=sys.stderr)
    if not chosen:
        print(f"no rollout plans under {upgrades.PLAN_DIR}/")
        return 0
    dirty = gitrev.dirty_reason(Path(args.repo))
    incomplete = _incomplete(findings)
    client = _client(args)
    verdicts = {plan.name: _gate(client, fleet, plan, now) for plan in chosen}
    if args.format == "json":
        print(
            json.dumps(
                [
                    _plan_json(fleet, plans, plan, findings, now, dirty, verdicts[plan.name])
                    for plan in chosen
                ],
                indent=2,
            )
        )
    else:
        print(
            "\n\n".join(
                _plan_text(fleet, plans, plan, findings, now, dirty, verdicts[plan.name]) for plan in chosen
            )
        )
    if incomplete:  # stdout alone would read as a full verdict
        print(f"gpupolicy upgrade status: {incomplete}", file=sys.stderr)
        return 2
    return 0


def _client(args: argparse.Namespace) -> promclient.Prometheus | None:
    if not getattr(args, "prometheus", None):
        return None
    return promclient.Prometheus(args.prometheus, promclient.read_token(args.prometheus_token_file))


def _gate(
    client: promclient.Prometheus | None, fleet: Fleet, plan: Plan, now: datetime
) -> gates.Evaluation | None:
    """The current stage's rollback criteria over its soak so far (None without a server or a stage in
    soak)."""
    stage = plan.current_stage()
    if client is None or stage is None or stage.completed:
        return None
    return gates.evaluate(client, fleet, plan, stage, now)


def _gate_lines(gate: gates.Evaluation | None, indent: str = "  ") -> list[str]:
    if gate is None:
        return []
    return [indent + gate.heading()] + [f"{indent}  {verdict.line()}" for verdict in gate.verdicts]


def _plan_text(
    fleet: Fleet,
    plans: PlanSet,
    plan: Plan,
    findings: list[Finding],
    now: datetime,
    dirty: str | None,
    gate: gates.Evaluation | None = None,
) -> str:
    lines = [
        f"{plan.name} ({plan.path}): {plan.component} {plan.from_version} -> {plan.to_version}, "
        f"rollback to {plan.rollback_target}   [at {upgrades.format_timestamp(now)}]"
    ]
    statuses = upgrades.stage_status(fleet, plans, plan, now)
    width = max((len(u.unit.label) for s in statuses for u in s.units), default=10)
    for number, status in enumerate(statuses, 1):
        lines.append(_stage_line(number, status))
        moments = {m.pool.name: m for m in upgrades.drain_moments(fleet, plan, status.stage)}
        for unit in status.units:
            mark = "ok" if unit.agrees else f"EXPECTED {unit.expected}"
            line = f"      {unit.unit.label:<{width}}  {unit.version or '?':<11} {unit.gpus:>4} GPUs  {mark}"
            moment = moments.get(unit.unit.pool_name)
            if moment is not None and not status.stage.completed:
                line += f"   worst drain: {moment.describe()}"
            lines.append(line)
    lines.append("  rollback criteria: " + "; ".join(plan.criteria.describe()))
    lines += _gate_lines(gate)
    step = _next_step(plans, plan, findings, now, dirty, gate)
    lines += ["  next step: " + step[0]] + [f"    {line}" for line in step[1:]]
    return "\n".join(lines)


def _stage_line(number: int, status: upgrades.StageStatus) -> str:
    stage = status.stage
    head = f"  {number}. {stage.name} [{stage.phase}] {stage.state.upper()}"
    required = upgrades.format_duration(status.soak_required)
    if stage.completed:
        detail = (
            f"started {upgrades.format_timestamp(stage.started)}, completed "
            f"{upgrades.format_timestamp(stage.completed)}, soaked "
            f"{upgrades.format_duration(status.soak_elapsed)} (minimum {required})"
        )
    elif stage.started:
        detail = (
            f"since {upgrades.format_timestamp(stage.started)}: soaked "
            f"{upgrades.format_duration(status.soak_elapsed)} of {required}, "
            f"{upgrades.format_duration(status.soak_remaining)} to go"
        )
    else:
        detail = f"planned {stage.planned}, soak {required}, approvers {', '.join(stage.approvers)}"
    approved = f", approved by {stage.approved_by}" if stage.approved_by else ""
    approved += f", promoted by {stage.promoted_by}" if stage.promoted_by else ""
    return f"{head} - {detail}{approved}; {status.gpus} GPUs"


def _next_step(
    plans: PlanSet,
    plan: Plan,
    findings: list[Finding],
    now: datetime,
    dirty: str | None,
    gate: gates.Evaluation | None = None,
) -> list[str]:
    if gate is not None and gate.breached:
        return [f"roll back stage {gate.stage.name}: `{_rollback_command(plan)}`"] + [
            f"- {verdict.criterion.name}: {verdict.detail}" for verdict in gate.breached
        ]
    blockers = _promote_blockers(plans, plan, findings, now, gate)
    if dirty:
        blockers.append(dirty)
    nxt = plan.next_stage()
    if nxt is None and plan.finished:
        return ["none: every stage is done"]
    action = f"promote stage {nxt.name}" if nxt else f"record stage {plan.current_stage().name} complete"
    command = f"gpupolicy upgrade promote {plan.name}"
    if not blockers:
        return [f"{action}: ready (`{command}`)"]
    return [f"{action}: blocked"] + [f"- {b}" for b in blockers]


def _rollback_command(plan: Plan) -> str:
    return f"gpupolicy upgrade rollback {plan.name}"


def _plan_json(
    fleet: Fleet,
    plans: PlanSet,
    plan: Plan,
    findings: list[Finding],
    now: datetime,
    dirty: str | None,
    gate: gates.Evaluation | None = None,
) -> dict:
    stages = []
    for status in upgrades.stage_status(fleet, plans, plan, now):
        stage = status.stage
        stages.append(
            {
                "name": stage.name,
                "phase": stage.phase,
                "state": stage.state,
                "planned": str(stage.planned),
                "started": _iso(stage.started),
                "completed": _iso(stage.completed),
                "approvedBy": stage.approved_by,
                "promotedBy": stage.promoted_by or None,
                "soakRequired": upgrades.format_duration(status.soak_required),
                "soakRemaining": upgrades.format_duration(status.soak_remaining)
                if status.soak_remaining is not None
                else None,
                "units": [
                    {"unit": u.unit.label, "version": u.version, "expected": u.expected, "gpus": u.gpus}
                    for u in status.units
                ],
            }
        )
    blockers = _promote_blockers(plans, plan, findings, now, gate) + ([dirty] if dirty else [])
    answer = {
        "plan": plan.name,
        "path": plan.path,
        "component": plan.component,
        "from": plan.from_version,
        "to": plan.to_version,
        "stages": stages,
        "blockers": blockers,
    }
    if gate is not None:
        answer["criteria"] = [
            {"criterion": v.criterion.name, "state": v.state, "detail": v.detail} for v in gate.verdicts
        ]
        answer["recommend"] = _rollback_command(plan) if gate.breached else None
    return answer


def _iso(moment: datetime | None) -> str | None:
    return upgrades.format_timestamp(moment) if moment else None


# --- promote
# -------------------------------------------------------------------------------------------------


def _promote_blockers(
    plans: PlanSet, plan: Plan, findings: list[Finding], now: datetime, gate: gates.Evaluation | None = None
) -> list[str]:
    incomplete = _incomplete(findings)
    blockers = [incomplete] if incomplete else []
    soak = upgrades.soak_blocker(plans, plan, now)
    if soak:
        blockers.append(soak)
    if gate is not None:
        blockers += gate.blockers()
    failing = _upg_errors(findings)
    if failing:
        blockers.append(
            f"{len(failing)} UPG rule finding(s): "
            + "; ".join(f"{f.rule} {f.place} {f.message}" for f in failing[:5])
            + (" ..." if len(failing) > 5 else "")
        )
    return blockers


def _upg_errors(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.rule.startswith("UPG") and f.severity is Severity.ERROR]


def _promote(
    args: argparse.Namespace, fleet: Fleet, plans: PlanSet, plan: Plan, findings: list[Finding], now: datetime
) -> int:
    if plan.finished:
        return _refuse("promote", plan, ["every stage is done; nothing to promote"])
    gate = _gate(_client(args), fleet, plan, now)
    for line in _gate_lines(gate, indent=""):
        print(line, file=sys.stderr)
    reasons = _promote_blockers(plans, plan, findings, now, gate)
    if plan.current_stage() is not None and not args.prometheus:
        reasons.append(
            f"stage {plan.current_stage().name} has run: its rollback criteria must be evaluated "
            "against Prometheus before the rollout moves on (--prometheus URL); soak time alone "
            "proves nothing"
        )
    dirty = gitrev.dirty_reason(Path(args.repo))
    if dirty:
        reasons.append(dirty)
    stage = plan.next_stage()
    approval = _approval(args, plan, stage) if stage is not None else None
    if approval is not None:
        reasons += approval.reasons
    if reasons:
        return _refuse("promote", plan, reasons)
    editor = PlanEditor(Path(args.repo))
    stamp = upgrades.format_timestamp(now)
    current = plan.current_stage()
    if stage is None:  # the last stage has soaked: close the plan
        editor.set_record(plan, current, {"completed": stamp})
        summary = f"stage {current.name} recorded complete: the plan is finished"
    else:
        for unit in upgrades.stage_units(fleet, plan, stage):
            editor.set_version(fleet, plan, unit, plan.to_version)
        if current is not None and not current.completed:
            editor.set_record(plan, current, {"completed": stamp})
        record = {"started": stamp, "approvedBy": approval.approver}
        if approval.promoter and approval.promoter != approval.approver:
            record["promotedBy"] = approval.promoter
        editor.set_record(plan, stage, record)
        summary = f"stage {stage.name} promoted to {plan.to_version}, approved by {approval.approver}" + (
            f" (promoted by {approval.promoter})" if "promotedBy" in record else ""
        )
    return _finish(editor, args, plan, summary, "promote")


def _approval(args: argparse.Namespace, plan: Plan, stage: Stage) -> approvals.Decision:
    """The stage's approver from the SSH signatures on the promoting commit (HEAD), verified against the
    keyring
    of the trusted revision."""
    root = Path(args.repo)
    keyring, why = approvals.trusted_approvers(root, args.base)
    if keyring is None:
        return approvals.Decision(None, None, (why,))
    evidence = approvals.head_evidence(root, keyring, plan.name, stage.name)
    return approvals.decide(keyring, stage, evidence, args.approver)


# --- watch
# ---------------------------------------------------------------------------------------------------


def _started_in_the_future(plan: Plan, now: datetime) -> str | None:
    stage = plan.current_stage()
    if stage is None or stage.started is None or stage.started <= now:
        return None
    return (
        f"stage {stage.name} is recorded as started in the future "
        f"({upgrades.format_timestamp(stage.started)})"
    )


def _watch(args: argparse.Namespace, fleet: Fleet, plans: PlanSet, plan: Plan) -> int:
    """Evaluate every --every minutes; 1 on the first breach, or when the last round had no data."""
    client = _client(args)
    future = _started_in_the_future(plan, args.now or upgrades.now_utc())
    if future:
        print(
            f"gpupolicy upgrade watch {plan.name}: {future}; a soak that has not begun cannot be watched, "
            "and "
            "the record is wrong (UPG016)",
            file=sys.stderr,
        )
        return 2
    rounds = 0
    # a fixed --now never moves: evaluating it again cannot end the soak, so once unless --rounds says more
    limit = args.rounds or (1 if args.now else 0)
    while True:
        now = args.now or upgrades.now_utc()
        gate = _gate(client, fleet, plan, now)
        if gate is None:
            print(f"gpupolicy upgrade watch {plan.name}: no stage is soaking; nothing to watch")
            return 0
        print(f"[{upgrades.format_timestamp(now)}] " + "\n".join(_gate_lines(gate, indent="")), flush=True)
        if gate.breached:
            print(f"breach: roll back stage {gate.stage.name}: {_rollback_command(plan)}", flush=True)
            return 1
        rounds += 1
        soaked = upgrades.soak_blocker(plans, plan, now) is None
        if soaked or (limit and rounds >= limit):
            if gate.without_data:
                print(f"the gate cannot pass: {len(gate.without_data)} criterion(s) without data", flush=True)
                return 1
            print(
                "every criterion holds" + (f"; stage {gate.stage.name} has soaked" if soaked else ""),
                flush=True,
            )
            return 0
        time.sleep(args.every * 60)


# --- rollback
# ------------------------------------------------------------------------------------------------


def _rollback(args: argparse.Namespace, fleet: Fleet, plan: Plan, findings: list[Finding]) -> int:
    stage = plan.current_stage()
    if stage is None:
        return _refuse("rollback", plan, ["no stage has been promoted; nothing to roll back"])
    dirty = gitrev.dirty_reason(Path(args.repo))
    if dirty:
        return _refuse("rollback", plan, [dirty])
    for finding in _upg_errors(findings):  # rollback is the emergency path: report, do not refuse
        print(f"warning: {finding.rule} {finding.place} {finding.message}", file=sys.stderr)
    editor = PlanEditor(Path(args.repo))
    for unit in upgrades.stage_units(fleet, plan, stage):
        editor.set_version(fleet, plan, unit, plan.rollback_target)
    editor.remove_record(plan, stage, RECORD_KEYS)
    previous = plan.stages[stage.index - 1] if stage.index > 0 else None
    if previous is not None and previous.completed and previous.completed == stage.started:
        editor.remove_record(plan, previous, ("completed",))  # written by the same promote
    return _finish(
        editor, args, plan, f"stage {stage.name} rolled back to {plan.rollback_target}", "rollback"
    )


def _finish(editor: PlanEditor, args: argparse.Namespace, plan: Plan, summary: str, action: str) -> int:
    diff = editor.diff()
    print(diff, end="")
    if args.dry_run:
        print(f"# dry run: {summary}; nothing written")
        return 0
    editor.write()
    from .. import docsgen  # imported here: it reads the whole toolkit, and only a written promote needs it

    changed = [*editor.changed(), *docsgen.refresh(args.repo)]  # the pages the plan's state appears in
    print(
        f"# {summary}; {len(changed)} file(s) changed. Commit it:\n"
        f"#   git commit -m \"upgrade {action} {plan.name}: {summary}\" -- {' '.join(changed)}"
    )
    return 0


def _driver_source(obj: K8sObject) -> str:
    """The repo-relative file an NVIDIADriver's origin annotation names; refused (ToolError) when it names
    none, or one outside the repository: promote must not write where an annotation says."""
    metadata = obj.body.get("metadata")
    try:
        source = origin_path(metadata if isinstance(metadata, dict) else {}, f"clusters/{obj.cluster}")
    except repopath.Refused as refusal:
        raise ToolError(
            f"NVIDIADriver {obj.name} (cluster {obj.cluster}): its origin annotation is refused: "
            f"{refusal}; refusing to edit"
        ) from None
    if not source:
        raise ToolError(f"NVIDIADriver {obj.name} has no source file (originAnnotations missing)")
    return source


class PlanEditor(Editor):
    """The edits `upgrade promote` and `rollback` make: a stage's version on its units, and its record."""

    def set_version(self, fleet: Fleet, plan: Plan, unit: Unit, version: str) -> None:
        cluster = fleet.clusters[unit.cluster]
        if plan.component == "gpu-operator":
            spec = self._document(cluster.facts.path, "Cluster", cluster.name)["spec"]
            spec["gpuOperatorVersion"] = same_style(spec.get("gpuOperatorVersion"), version)
            self._set_chart_pin(cluster, version)
            return
        for driver in upgrades.drivers_of_pool(cluster, unit.pool):
            source = _driver_source(driver.obj)
            spec = self._document(source, "NVIDIADriver", driver.name)["spec"]
            spec["version"] = same_style(spec.get("version"), version)

    def _set_chart_pin(self, cluster: Any, version: str) -> None:
        """The cluster's chart pin (a JSON patch on its HelmRelease/Application) follows gpuOperatorVersion,
        so
        what Argo CD / Flux installs changes with the stage (UPG014 keeps the two equal)."""
        installs = upgrades.chart_installs(cluster)
        if not installs:
            return  # nothing in the repository installs the chart on this cluster: cluster.yaml is the record
        pin = upgrades.chart_pin_path(cluster)
        try:
            operations = self._load(pin).documents
        except ToolError as exc:
            raise ToolError(
                f"cluster {cluster.name} installs the GPU Operator chart "
                f"({installs[0].obj.ref()}) but its per-cluster pin cannot be edited: {exc}; add {pin} (a "
                f"JSON patch on {installs[0].patch_path}) to roll the chart out per cluster"
            ) from None
        patches = operations[0] if len(operations) == 1 and isinstance(operations[0], list) else None
        for install in installs:
            matching = [
                op
                for op in patches or ()
                if isinstance(op, dict)
                and op.get("path") == install.patch_path
                and op.get("op") in ("replace", "add")
            ]
            if not matching:
                raise ToolError(
                    f"{pin}: no replace operation on {install.patch_path} ({install.obj.ref()}); "
                    "the chart version cannot be pinned per cluster"
                )
            for op in matching:
                op["value"] = same_style(op.get("value"), version)

    def _stage(self, plan: Plan, stage: Stage) -> Any:
        document = self._document(plan.path, upgrades.PLAN_KIND, plan.name)
        return document["spec"]["stages"][stage.index]

    def set_record(self, plan: Plan, stage: Stage, values: dict[str, str]) -> None:
        """Write record keys into the stage, before `select` (so comments after the stage stay in place)."""
        mapping = self._stage(plan, stage)
        for key, value in values.items():
            quoted = DoubleQuotedScalarString(value) if key not in ("approvedBy", "promotedBy") else value
            if key in mapping:
                mapping[key] = quoted
                continue
            keys = list(mapping.keys())
            position = keys.index("select") if "select" in keys else len(keys)
            mapping.insert(position, key, quoted)

    def remove_record(self, plan: Plan, stage: Stage, keys: tuple[str, ...]) -> None:
        mapping = self._stage(plan, stage)
        for key in keys:
            if key in mapping:
                del mapping[key]
