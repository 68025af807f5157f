"""The workload path of every example under docs/examples/ on every cluster, and the team x workload matrix:
what `gpupolicy explain` prints, as pages the on-call engineer can open next to a pending pod."""

from __future__ import annotations

from pathlib import PurePosixPath

from .. import workpath
from ..domain.workloads import workloads
from ..workpath import matrix
from . import Context, table


def pages(context: Context) -> dict[str, str]:
    fleet = context.fleet
    examples = [w for w in workloads(fleet) if w.cluster is None]
    generated: dict[str, str] = {}
    index_rows = []
    for example in examples:
        stem = PurePosixPath(example.path).stem
        paths = [
            workpath.trace(fleet, cluster, example.body, workpath.example_locator(example.document))
            for cluster in fleet.clusters.values()
            if example.namespace in cluster.namespaces
        ]
        generated[f"examples/{stem}.md"] = _example_page(context, example, paths)
        index_rows.append(
            [
                f"[{example.ref()}]({stem}.md)",
                f"[`{example.path}`](../../examples/{PurePosixPath(example.path).name})",
                "<br>".join(f"{p.cluster}: {_verdict(p)}" for p in paths) or "no cluster has its namespace",
            ]
        )
    index = context.header("Example workloads: where each lands")
    index += (
        "Each example under `docs/examples/` traced through every cluster that has its namespace: "
        "admission, LimitRange defaulting, the namespace ResourceQuota, Kueue's queues and flavor "
        "assignment, admission of the pods Kueue starts, node fit, the GPU Operator on the pool, the "
        "container runtime. Rule WL011 fails when one does not land; `gpupolicy explain FILE` prints the "
        "same for any manifest. The [workload matrix](../workload-matrix.md) does the same for six everyday "
        "workloads of every team.\n\n"
    )
    index += table(["workload", "file", "per cluster"], index_rows) if index_rows else "No examples.\n"
    generated["examples/index.md"] = index
    generated["workload-matrix.md"] = _matrix_page(context)
    return generated


def _verdict(path: workpath.WorkloadPath) -> str:
    problem, _where = workpath.misplaced(path)
    return f"**does not land**: {problem}" if problem else path.summary()


def _example_page(context: Context, example, paths: list[workpath.WorkloadPath]) -> str:
    name = PurePosixPath(example.path).name
    text = context.header(f"Path of {example.ref()}")
    text += (
        f"Source: [`{example.path}`](../../examples/{name}). Reproduce with "
        f"`gpupolicy explain {example.path} --cluster <name>`.\n\n"
    )
    for path in paths:
        text += f"## {path.cluster}\n\n{_verdict(path)}\n\n"
        rows = [["workload", s.stage, _mark(s), s.text, _where(s)] for s in path.steps]
        for pod_set in path.pod_sets:
            rows += [
                [f"{pod_set.name} (x{pod_set.count})", s.stage, _mark(s), s.text, _where(s)]
                for s in pod_set.steps
            ]
        text += table(["pod set", "step", "", "what happens", "decided by"], rows) + "\n"
    return text


def _mark(step: workpath.Step) -> str:
    return "ok" if step.ok else "**blocked**"


def _where(step: workpath.Step) -> str:
    return f"`{step.where}`" if step.where and step.where.path else ""


def _matrix_page(context: Context) -> str:
    text = context.header("Workload matrix: team x workload x cluster")
    text += (
        "Six workloads every team runs, traced through each cluster for each team namespace (rule "
        "WL012). A cell names the pool each pod set lands on (CPU nodes for pod sets without GPUs), *not "
        "offered* when the team's queue has no quota for the GPU resource it asks for, or the step that "
        "blocks it. The workloads are small (one GPU, one MIG slice, one time-slice replica) so that quota "
        "size never decides a cell.\n\n"
    )
    cases = matrix.cases(context.fleet)
    for cluster in context.fleet.clusters:
        rows = []
        for team in sorted({c.team for c in cases if c.cluster == cluster}):
            by_kind = {c.kind: c for c in cases if c.cluster == cluster and c.team == team}
            rows.append([team] + [_cell(by_kind.get(kind)) for kind in matrix.KINDS])
        text += f"## {cluster}\n\n" + table(["team", *matrix.KINDS], rows) + "\n"
    return text


def _cell(case: matrix.Case | None) -> str:
    if case is None:
        return ""
    if case.problem:
        return f"**{case.outcome}** (`{case.where}`)" if case.where else f"**{case.outcome}**"
    return "*not offered*" if case.path is None else case.outcome.replace("; ", " + ")
