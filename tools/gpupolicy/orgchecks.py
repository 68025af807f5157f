"""An organization's declarative checks: YAML documents under `policies/checks/`, evaluated with CEL.

```yaml
apiVersion: gpupolicy/v1 kind: Check id: ACME-NET001                    # the organization's prefix: no
built-in ID has a dash, so none can clash severity: warning summary: GPU workloads in production carry a
cost-center label match: {kinds: [Deployment, Job], namespaceLabels: {matchLabels: {gpupolicy.io/team-kind:
research}}} expression: "cluster.environment != 'prod' || (has(object.metadata.labels) && 'cost-center' in
object.metadata.labels)" message: no cost-center label on a production GPU workload hint: add
metadata.labels.cost-center
```

`match` selects rendered objects by kind, API group, namespace, labels and their namespace's labels; the
expression is true when the object is fine and sees three read-only variables: `object` (the rendered object),
`namespaceLabels` (its namespace's labels; {} when cluster-scoped or the namespace is not rendered) and
`cluster` (the cluster's facts and pool names, `cluster_view`). A finding is placed at the object's source
line, as a built-in rule's is. The CEL engine is the one admission uses (`cel.py`, decision 0013).

Each check becomes a `rules.Rule`, so the pipeline runs it like a built-in rule (a crash is INTERNAL),
`gpupolicy rules` lists it, and gpupolicy.yaml and exceptions can name it. A document that breaks the schema
(`schemas/repo/check.yaml`), an expression that does not compile, an ID already taken, or an expression that
fails on an object is CFG002 at its line. Decision 0042 has the reasons. The checks are guardrail files: with
a base revision they are read from the base, and the head's versions are data (`guardrails`, decision 0062).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .domain import cel
from .findings import Finding, Location, Severity, at
from .infra import repopath
from .infra.schema.check import validate_repo_file
from .infra.yamlload import Document, parse_source
from .model import Cluster, Fleet, K8sObject
from .model.selectors import label_selector_matches
from .rules import Rule
from .rules import cfg002_invalid_org_rule as cfg002

CHECKS_DIR = "policies/checks"
KIND = "Check"
YAML_SUFFIXES = (".yaml", ".yml")
HINT = "see docs/operations/org-rules.md; `gpupolicy rules ID` shows a check as the toolkit read it"


@dataclass(frozen=True)
class Check:
    id: str
    severity: Severity
    summary: str
    description: str
    match: dict
    expression: str
    program: Any = field(repr=False, compare=False)
    message: str
    hint: str
    source: Location  # the document
    expression_line: int

    def as_rule(self) -> Rule:
        return Rule(
            id=self.id,
            severity=self.severity,
            summary=self.summary,
            doc=self.doc,
            stage="rules",
            check=self.findings,
            module=str(self.source),
        )

    @property
    def doc(self) -> str:
        return (
            (f"{self.description.strip()}\n\n" if self.description.strip() else "")
            + f"Declarative check `{self.source}`: objects matching `{self.match}` must satisfy\n\n"
            f"```cel\n{self.expression}\n```"
        )

    def matches(self, obj: K8sObject, namespace_labels: dict[str, str]) -> bool:
        match = self.match
        return (
            obj.kind in match.get("kinds", [obj.kind])
            and obj.group in match.get("apiGroups", [obj.group])
            and obj.namespace in match.get("namespaces", [obj.namespace])
            and label_selector_matches(match.get("labels", {}), obj.labels)
            and label_selector_matches(match.get("namespaceLabels", {}), namespace_labels)
        )

    def findings(self, fleet: Fleet) -> Iterator[Finding]:
        for name, cluster in sorted(fleet.clusters.items()):
            view = cluster_view(cluster)
            for obj in cluster.objects:
                labels = namespace_labels(cluster, obj)
                if self.matches(obj, labels):
                    yield from self._verdict(
                        fleet, obj, {"object": obj.body, "namespaceLabels": labels, "cluster": view}, name
                    )

    def _verdict(self, fleet: Fleet, obj: K8sObject, variables: dict, cluster: str) -> Iterator[Finding]:
        try:
            holds = cel.check_holds(self.program, variables)
        except cel.EvaluationError as exc:  # the check decided nothing for this object: say so where it is
            yield cfg002.finding(
                f"check {self.id}: the expression failed on {obj.ref()}: {exc}",
                self.source.path,
                self.expression_line,
                cluster=cluster,
                hint="guard optional fields with has(); the expression must return a bool",
            )
            return
        if not holds:
            yield Finding(
                self.id,
                self.severity,
                f"{self.message} ({obj.ref()})",
                **at(fleet.locate(obj) or Location(obj.origin)),
                cluster=cluster,
                hint=self.hint,
            )


def cluster_view(cluster: Cluster) -> dict[str, Any]:
    """What an expression may read about the cluster: its facts (cluster.yaml) and its pools' names."""
    facts = cluster.facts
    return {
        "name": facts.name,
        "environment": facts.environment,
        "region": facts.region,
        "zones": list(facts.zones),
        "kubernetesVersion": facts.kubernetes_version,
        "gpuOperatorVersion": facts.gpu_operator_version,
        "syncEngine": facts.sync_engine,
        "pools": sorted(pool.name for pool in cluster.pools),
    }


def namespace_labels(cluster: Cluster, obj: K8sObject) -> dict[str, str]:
    namespace = cluster.namespaces.get(obj.namespace) if obj.namespace else None
    return dict(namespace.labels) if namespace is not None else {}


@dataclass
class CheckSet:
    checks: list[Check] = field(default_factory=list)
    problems: list[Finding] = field(default_factory=list)  # CFG002, at the document's line

    @property
    def rules(self) -> dict[str, Rule]:
        return {check.id: check.as_rule() for check in self.checks}


def from_documents(documents: dict[str, list[Document]], taken: set[str]) -> CheckSet:
    """The checks of the loaded documents under CHECKS_DIR; `taken`, the rule IDs already registered."""
    found = CheckSet()
    taken = set(taken)
    for path in sorted(p for p in documents if p.startswith(CHECKS_DIR + "/")):
        for doc in documents[path]:
            check = _check(doc, taken, found.problems)
            if check is not None:
                taken.add(check.id)
                found.checks.append(check)
    return found


def of_fleet(fleet: Fleet, taken: set[str]) -> CheckSet:
    """The fleet's checks, once per run: `from_documents` over the loaded documents, or the base's files when
    the
    run has a base revision (`guardrails.base_of`)."""
    from .configure import guardrails

    base = guardrails.base_of(fleet)
    if base is not None:
        return fleet.memo("orgchecks", lambda: read_from(base, taken))
    return fleet.memo("orgchecks", lambda: from_documents(_by_path(fleet.documents), taken))


def read(root: str, taken: set[str]) -> CheckSet:
    """The checks of the repository at `root`, read through the trust boundary (for `gpupolicy rules`)."""
    from .configure import guardrails

    return read_from(guardrails.WorkingTree(repopath.Reader(root)), taken)


def read_from(source: Any, taken: set[str]) -> CheckSet:
    """The checks of a `guardrails.Source` (the working tree, or a base revision)."""
    from .errors import ToolError

    documents: dict[str, list[Document]] = {}
    problems: list[Finding] = []
    try:
        files = source.files(CHECKS_DIR)
    except ToolError as exc:
        return CheckSet(problems=[cfg002.finding(f"cannot list the checks: {exc}", CHECKS_DIR, 0)])
    for rel in files:
        try:
            raw = source.read(rel)
        except repopath.Refused as exc:
            problems.append(cfg002.finding(f"cannot read the check: {exc}", rel, 1))
            continue
        loaded = parse_source(raw or b"", rel)
        documents[rel] = loaded.documents
        problems.extend(loaded.findings)
    found = from_documents(documents, taken)
    found.problems[:0] = problems
    return found


def _by_path(documents: list[Document]) -> dict[str, list[Document]]:
    grouped: dict[str, list[Document]] = {}
    for doc in documents:
        grouped.setdefault(doc.path, []).append(doc)
    return grouped


def _check(doc: Document, taken: set[str], problems: list[Finding]) -> Check | None:
    if doc.data is None:
        return None
    errors = validate_repo_file("check", doc.data)
    for error in errors:
        problems.append(
            cfg002.finding(f"check: {error.message}", doc.path, doc.line_of(error.path), hint=HINT)
        )
    if errors:
        return None
    data = doc.data
    if data["id"] in taken:
        problems.append(
            cfg002.finding(
                f"check {data['id']}: the ID is already a rule",
                doc.path,
                doc.line_of(("id",)),
                hint="give each check its own ID",
            )
        )
        return None
    program, problem = cel.compile_expression(data["expression"], ("expression",))
    if problem is not None:
        problems.append(
            cfg002.finding(
                f"check {data['id']}: the expression {problem.message}"
                if problem.unsupported
                else f"check {data['id']}: the expression does not compile: {problem.message}",
                doc.path,
                doc.line_of(("expression",)),
                hint=HINT,
            )
        )
        return None
    return Check(
        id=data["id"],
        severity=Severity(data["severity"]),
        summary=data["summary"],
        description=data.get("description", ""),
        match=data["match"],
        expression=data["expression"],
        program=program,
        message=data["message"],
        hint=data.get("hint", ""),
        source=Location(doc.path, doc.line),
        expression_line=doc.line_of(("expression",)),
    )
