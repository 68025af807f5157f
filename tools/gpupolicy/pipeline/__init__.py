"""The toolkit's one-way pipeline: discover -> load (while kubectl renders) -> render -> parse -> schema ->
model
-> rules. Timings name those stages; `render` is the wait for kubectl after the sources have loaded.

`run()` returns everything a command needs (fleet, findings, timings); it never writes to the repository.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import orgchecks
from ..configure import guardrails, repoconfig, rootcause
from ..domain import keptreviews, kueue_configuration, kustomization, queue_header, waivers
from ..errors import ToolError
from ..findings import Finding, Location, Severity
from ..infra import repopath
from ..infra.cache.store import CacheStore
from ..infra.schema.check import SchemaSet, validate_repo_file
from ..infra.yamlload import Document
from ..internal import DEBUG_ENV, INTERNAL, crash_finding, crashes, guarded
from ..model import ClusterFacts, Fleet, K8sObject, Pool
from ..rules import exc003_unused_exception as exc003
from ..rules import kust005_unused as kust005
from ..rules import kust006_no_origin as kust006
from ..rules import schema001_core as schema001
from ..rules import schema002_crd as schema002
from ..rules import schema003_no_schema as schema003
from ..rules import schema004_not_object as schema004
from ..rules import schema005_repo_files as schema005
from ..rules import sync001_flux_bootstrap_path as sync001
from .build import SourceIndex, build_cluster, facts_from, object_from, pool_from
from .render import kustomize, patchsources
from .sources import (
    SCANNED_DIRS,
    YAML_SUFFIXES,
    Sources,
    cluster_names,
    clusters_of,
    discover,
    load,
    load_sources,
)

__all__ = ["SCANNED_DIRS", "YAML_SUFFIXES", "RunResult", "cluster_names", "load_fleet", "load_sources", "run"]

REPO_API_VERSION = "gpupolicy/v1"
DEFAULT_KUBERNETES_VERSION = "1.33"
IMPORTED_SCHEMAS = "policies/crd-schemas"


@dataclass
class RunResult:
    fleet: Fleet
    findings: list[Finding] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    objects: int = 0
    rendered_clusters: list[str] = field(default_factory=list)
    unrendered_clusters: list[str] = field(default_factory=list)  # selected, but an input did not load
    cached_renders: int = 0
    waived: list = field(default_factory=list)  # waivers.Waived: findings a reviewed exception accepts
    causes: dict[Finding, Finding] = field(default_factory=dict)  # derived finding -> its cause (rootcause)
    # EXC003 of a run over some clusters: exceptions that accepted nothing in it. Not findings (another
    # cluster may use them); a shard's report carries them and `report merge` reports those no shard used.
    unused_exceptions: list[Finding] = field(default_factory=list)
    proposed: list[Finding] = field(default_factory=list)  # Fleet.proposed: for `report merge` to agree on
    disabled: int = 0  # findings gpupolicy.yaml disables (repoconfig)
    rerated: int = 0  # findings whose severity gpupolicy.yaml overrides
    # validate --shard: the block its JSON report carries for `report merge` (shards)
    shard: dict | None = None

    @property
    def internal(self) -> list[Finding]:
        """INTERNAL findings: checks that crashed, so the run did not do its whole job (exit 2)."""
        return crashes(self.findings)

    @property
    def crashes(self) -> list[str]:
        return [f.message for f in self.internal]

    @property
    def stage_times(self) -> str:
        """The timings as `-v` prints them: "discover 0.017s, load 0.104s, ..."."""
        return ", ".join(f"{stage} {seconds:.3f}s" for stage, seconds in self.timings.items())

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.severity is Severity.ERROR)

    @property
    def warnings(self) -> int:
        return sum(1 for f in self.findings if f.severity is Severity.WARNING)


class _Clock:
    def __init__(self, timings: dict[str, float]) -> None:
        self.timings = timings
        self.started = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.timings[stage] = self.timings.get(stage, 0.0) + (now - self.started)
        self.started = now


def _check_repo_file(
    documents: dict[str, list[Document]], rel: str, kind: str, schema: str, findings: list[Finding]
) -> Document | None:
    """Validate a pool.yaml / cluster.yaml document; return it only when it is valid."""
    if rel not in documents:
        findings.append(
            schema005.finding(
                f"{kind.lower()} declaration missing",
                rel,
                0,
                hint=f"create {rel} (apiVersion: {REPO_API_VERSION}, kind: {kind})",
            )
        )
        return None
    docs = documents[rel]
    if not docs:
        if not any(f.path == rel for f in findings):  # else the loader already reported why
            findings.append(
                schema005.finding(
                    f"{kind.lower()} declaration is empty",
                    rel,
                    1,
                    hint=f"write the {kind} document (apiVersion: {REPO_API_VERSION}, kind: {kind})",
                )
            )
        return None
    doc = docs[0]
    errors = guarded(
        findings,
        "stage schema",
        validate_repo_file,
        schema,
        doc.data,
        subject=rel,
        location=Location(rel, doc.line),
    )
    if errors is None:
        return None
    for error in errors:
        findings.append(schema005.finding(f"{kind}: {error.message}", rel, doc.line_of(error.path)))
    return None if errors else doc


# --- the run
# -------------------------------------------------------------------------------------------------


def run(
    root: Path,
    clusters: list[str] | None = None,
    use_cache: bool = True,
    rules: bool = True,
    progress: Callable | None = None,
    crd_schemas: dict | None = None,
    graph: kustomize.Graph | None = None,
    store: CacheStore | None = None,
    reader: repopath.Reader | None = None,
    fleet_level: bool = False,
    fleet_checks: bool = True,
    guardrail_base: guardrails.FromBase | None = None,
    pages: Callable[[Path, Fleet], dict[str, str]] | None = None,
) -> RunResult:
    """Validate the repository at `root`: `clusters` None is every cluster, else the (non-empty) list named.
    `graph`: the kustomize graph of every cluster when the caller has read it already (--changed-since does,
    to select the clusters), so it is not read twice; `reader`, the boundary that read it (and keeps what it
    read). `store`: the command's cache store (built once per run); without one, the run builds its own as
    `use_cache` says. `fleet_level`: a run over some clusters also reads what no cluster includes (the first
    shard of `validate --shard`, see `sources.discover`); `fleet_checks` False (the other shards) skips the
    rules about the whole fleet (FLEET_LEVEL), which the first shard runs. `guardrail_base`: the revision
    whose guardrail configuration applies (`validate --base`, `diff`); the head's is then data, and each
    change to it is CFG003 (`guardrails`, decision 0062). `pages`: how the committed generated pages differ
    from what the generators write for this fleet (`docsgen.page_drift`, which sits above
    the pipeline); asked only of a run over every cluster, for DOC005."""
    timings: dict[str, float] = {}
    clock = _Clock(timings)
    # the repository is opened once: every stage reads through this reader, the one holder of the root
    reader = reader or repopath.Reader(root.resolve())
    root = reader.root
    all_clusters = clusters_of(reader)
    store = store or CacheStore.for_repository(root, enabled=use_cache)
    sources = discover(reader, all_clusters, _selected(all_clusters, clusters), store, graph, fleet_level)
    findings = list(sources.findings)
    renderable = _renderable(sources)
    clock.lap("discover")

    # kubectl renders in the background while the sources load strictly and the rules import; an overlay
    # with an input the loader refuses is cancelled (and not rendered at all if it had not started).
    rendering = kustomize.RenderJob(
        sources.reader, [f"clusters/{n}" for n in renderable], sources.graph, store, progress=progress
    )
    try:
        load_findings = load(sources, store)
        findings.extend(load_findings)
        broken = _broken(sources, renderable, load_findings)
        rendering.cancel(f"clusters/{name}" for name in broken)
        renderable = [name for name in renderable if name not in broken]
        clock.lap("load")

        facts = {name: _facts(name, sources.documents, findings) for name in sources.selected}
        schemas = SchemaSet(crd_schemas if crd_schemas is not None else _crd_schemas(root), store)
        _prepare(rules)
    except BaseException:
        rendering.abandon()
        raise
    rendered = rendering.results()
    # the queue files' header comments (DOC006) are read from the loader's read, not a second one
    headers = sources.reader.kept_containing(queue_header.MARKER.encode())
    sources.reader.forget_contents()
    clock.lap("render")

    index = SourceIndex(sources.reader, sources.documents, sources.edit_documents, headers)
    objects_by_cluster = _parse_stage(sources, renderable, rendered, store, index, findings)
    generated = {
        name: {(k.configmap, k.key): k.source for k in sources.graph.generated_keys(f"clusters/{name}")}
        for name in objects_by_cluster
    }
    index.generated = generated
    index.setters = {
        name: guarded(
            findings,
            "stage parse (overlay edits)",
            patchsources.setters,
            sources.graph,
            f"clusters/{name}",
            index.edit_docs,
            default=[],
            cluster=name,
        )
        for name in objects_by_cluster
    }
    clock.lap("parse")

    findings.extend(_schema_stage(objects_by_cluster, facts, schemas, index, sources))
    clock.lap("schema")

    fleet = _assemble_fleet(sources, facts, objects_by_cluster, generated, index, findings)
    if sources.whole or fleet_level:  # the graph covers every cluster (see sources.discover)
        fleet.pool_includers = sources.pool_membership(sources.all_clusters)
    fleet.fleet_checks = fleet_checks
    fleet.admission_reviews = keptreviews.KeptReviews(store) if store.enabled else None
    findings.extend(
        guarded(
            findings,
            "stage schema (GPU Operator values)",
            _values_findings,
            fleet,
            schemas,
            generated,
            index,
            default=[],
        )
    )
    clock.lap("model")

    waived: list[waivers.Waived] = []
    unused: list[Finding] = []
    configured = repoconfig.Applied(findings)
    # Pages are compared only with a model built without errors: from a fleet missing a broken pool every page
    # that names the pool would read as stale, and the broken file is already reported, once, as itself.
    if (
        pages is not None
        and sources.whole
        and rules
        and not any(f.severity is Severity.ERROR for f in findings)
    ):
        fleet.page_drift = guarded(findings, "stage generated pages", pages, root, fleet, default=None)
    if rules:
        # before any rule reads it
        guardrails.attach(fleet, guardrail_base or guardrails.WorkingTree(sources.reader))
        org_rules = _org_rules(fleet, findings)
        findings.extend(_run_rules(fleet, org_rules))
        if fleet.admission_reviews is not None:
            fleet.admission_reviews.save()
        configured = _apply_config(guardrails.source_of(fleet), findings, org_rules)
        if guardrail_base is not None:
            configured.findings.extend(_guardrail_changes(fleet, guardrail_base, sources.reader))
        findings, waived, unused = _apply_exceptions(fleet, configured.findings)
        if sources.whole:
            findings, unused = findings + unused, []
    reported = dedupe(_with_base_context(findings, index))
    causes = (
        guarded(reported, "stage root causes", rootcause.link, fleet, reported, default={}) if rules else {}
    )
    clock.lap("rules")
    return RunResult(
        fleet=fleet,
        findings=reported,
        timings=timings,
        objects=sum(len(objs) for objs in objects_by_cluster.values()),
        rendered_clusters=renderable,
        unrendered_clusters=sorted(broken),
        cached_renders=sum(1 for r in rendered.values() if r.cached),
        waived=_dedupe_waived(waived),
        causes=causes,
        disabled=configured.disabled,
        rerated=configured.rerated,
        unused_exceptions=dedupe(unused),
        proposed=dedupe(fleet.proposed),
    )


def _org_rules(fleet: Fleet, findings: list[Finding]) -> dict:
    """The repository's declarative checks as rules (their problems, CFG002, go to `findings`), and the
    installed plugins' problems: a plugin that broke the contract is CFG002, one that did not import is
    INTERNAL (its
    checks did not run, so the run is incomplete)."""
    from ..rules import all_rules, plugins
    from ..rules import cfg002_invalid_org_rule as cfg002

    installed = plugins()
    findings.extend(
        cfg002.finding(problem, "", 0, hint="fix or uninstall the plugin package")
        for problem in installed.problems
    )
    findings.extend(
        Finding(
            INTERNAL,
            Severity.ERROR,
            problem,
            hint="the plugin package's rules did not run: fix its installation, or uninstall it",
        )
        for problem in installed.broken
    )
    checks = guarded(
        findings,
        "stage organization checks",
        orgchecks.of_fleet,
        fleet,
        set(all_rules()),
        default=orgchecks.CheckSet(),
        subject=orgchecks.CHECKS_DIR,
    )
    findings.extend(checks.problems)
    return checks.rules


def _apply_config(source: guardrails.Source, findings: list[Finding], org_rules: dict) -> repoconfig.Applied:
    """The findings as gpupolicy.yaml (from the guardrail source) configures them (disabled ones dropped,
    severities overridden)."""
    from ..rules import all_rules

    known = {rule_id: rule.severity for rule_id, rule in {**all_rules(), **org_rules}.items()}
    config = guarded(
        findings,
        "stage configuration",
        repoconfig.read,
        source,
        known,
        default=None,
        subject=repoconfig.CONFIG_FILE,
        location=Location(repoconfig.CONFIG_FILE, 1),
    )
    if config is None:  # the crash is an INTERNAL finding among `findings`; nothing is configured
        return repoconfig.Applied(findings)
    return repoconfig.apply(config, findings)


def _guardrail_changes(fleet: Fleet, base: guardrails.FromBase, reader: repopath.Reader) -> list[Finding]:
    """CFG003: each guardrail file the head changes, and each exception annotation the base does not have."""
    found: list[Finding] = []
    owners = guardrails.owners_of(fleet)
    found.extend(
        guarded(
            found,
            "stage configuration (guardrail changes)",
            guardrails.changes,
            base,
            guardrails.WorkingTree(reader),
            owners,
            default=[],
            subject="the guardrail files",
        )
    )
    pending = guarded(found, "stage exceptions", lambda: waivers.waivers_of(fleet).pending, default=[])
    found.extend(
        guardrails.inline_change(base, w.rule, owners, w.source.path, w.source.line) for w in pending
    )
    if any(f.path == repoconfig.CONFIG_FILE for f in found):
        found.extend(
            guarded(
                found,
                "stage configuration (the change's version)",
                _head_config_problems,
                fleet,
                reader,
                default=[],
                subject=repoconfig.CONFIG_FILE,
            )
        )
    return found


def _head_config_problems(fleet: Fleet, reader: repopath.Reader) -> list[Finding]:
    """The CFG001 problems of the change's own gpupolicy.yaml (checked against the rules the change's side
    knows,
    its declarative checks included), so its author sees them before the merge applies it."""
    from ..rules import all_rules

    documents: dict[str, list[Document]] = {}
    for doc in fleet.documents:
        documents.setdefault(doc.path, []).append(doc)
    known = {**all_rules(), **orgchecks.from_documents(documents, set(all_rules())).rules}
    config = repoconfig.read(
        guardrails.WorkingTree(reader), {rule_id: rule.severity for rule_id, rule in known.items()}
    )
    return [
        replace(f, message=f"{f.message} (in this change's version, applied once merged)")
        for f in config.problems
    ]


def _apply_exceptions(fleet: Fleet, findings: list[Finding]) -> tuple[list[Finding], list, list[Finding]]:
    """The findings no reviewed exception accepts, the accepted ones, and EXC003 for the exceptions that
    accepted
    nothing (a finding only in a run over every cluster: a partial run does not see every finding)."""
    outcome = guarded(
        findings,
        "stage exceptions",
        waivers.apply,
        fleet,
        findings,
        default=None,
        subject=waivers.EXCEPTIONS_FILE,
        location=Location(waivers.EXCEPTIONS_FILE, 1),
    )
    if outcome is None:  # the crash is an INTERNAL finding among `findings`; nothing was waived
        return findings, [], []
    return outcome.kept, outcome.waived, [exc003.finding(waiver) for waiver in outcome.unused]


def _selected(all_clusters: list[str], clusters: list[str] | None) -> list[str]:
    """The clusters the run validates: None is every cluster of the repository; a list names some of them. An
    empty list would validate nothing, so it is refused (a caller with nothing to validate does not run)."""
    if clusters is None:
        return all_clusters
    if not clusters:
        raise ValueError("an empty cluster selection validates nothing: pass None for every cluster")
    unknown = sorted(set(clusters) - set(all_clusters))
    if unknown:
        raise ToolError(
            f"no such cluster: {', '.join(unknown)} (clusters: {', '.join(all_clusters) or 'none'})"
        )
    return clusters


def _renderable(sources: Sources) -> list[str]:
    """The selected clusters kubectl can render: an overlay whose kustomization did not load has no graph
    node;
    one that names a refused path is blocked."""
    blocked = {f.path for f in sources.graph.findings}
    return [
        name
        for name in sources.selected
        if f"clusters/{name}" in sources.graph.overlays and not sources.closure(name) & blocked
    ]


def _broken(sources: Sources, renderable: list[str], load_findings: list[Finding]) -> list[str]:
    """The renderable clusters with an input the strict loader refused: kubectl must not spend time on
    them."""
    broken_inputs = {f.path for f in load_findings if f.severity is Severity.ERROR}
    return [name for name in renderable if sources.closure(name) & broken_inputs]


def _parse_stage(
    sources: Sources,
    renderable: list[str],
    rendered: dict,
    store: CacheStore,
    index: SourceIndex,
    findings: list[Finding],
) -> dict[str, list[K8sObject]]:
    """Each rendered cluster's objects (kubectl's failures become findings at the file that causes them)."""
    graph = sources.graph
    objects_by_cluster: dict[str, list[K8sObject]] = {}
    for name in renderable:
        overlay = f"clusters/{name}"
        output = rendered[overlay]
        kfile = graph.overlays[overlay].file
        if output.error:
            # at the file and line that cause the failure, not at the overlay's first line
            findings.append(kustomize.render_failure(graph, overlay, output, name, index.docs))
            continue
        if not graph.overlays[overlay].origin_annotations:
            findings.append(
                kust006.finding(
                    "overlay does not set buildMetadata: "
                    "[originAnnotations]; findings cannot name source files",
                    kfile,
                    1,
                    cluster=name,
                )
            )
        bodies = store.load_rendered(f"{sources.root}:{overlay}", output.text)
        objects_by_cluster[name] = guarded(
            findings,
            "stage parse",
            _objects_from,
            bodies,
            name,
            kfile,
            default=[],
            subject=f"the rendered objects of cluster {name}",
            location=Location(kfile, 1),
            cluster=name,
        )
    # kubectl applies a patch whose target matches nothing without a word
    findings.extend(kustomize.unmatched_patches(graph, objects_by_cluster, index.docs))
    return objects_by_cluster


def _assemble_fleet(
    sources: Sources,
    facts: dict[str, ClusterFacts],
    objects_by_cluster: dict[str, list[K8sObject]],
    generated: dict[str, dict],
    index: SourceIndex,
    findings: list[Finding],
) -> Fleet:
    """The finished model: the repository's clusters, the pools with the clusters that include them (on every
    copy: a cluster's copy differs only in capacity, which its MIG layouts decide), and the pages rules
    read."""
    membership = sources.pool_membership(objects_by_cluster)
    declared = {
        rel: replace(pool, clusters=membership.get(str(Path(rel).parent), ()))
        for rel, pool in _pools(sources.pool_dirs, sources.documents, findings).items()
    }
    fleet = Fleet(
        root=str(sources.root),
        locator=index,
        documents=[doc for docs in sources.documents.values() for doc in docs],
        repository_clusters=tuple(sources.all_clusters),
        runbooks=sources.runbooks,
        site_url=sources.site_url[0],
        site_url_problem=sources.site_url[1],
        oncall=sources.oncall,
        decision_log=sources.decision_log,
        affected_paths=sources.affected_paths,
    )
    fleet.pools = {pool.name: pool for pool in declared.values()}
    fleet.invalid_pools = {Path(d).name for d in sources.pool_dirs} - {
        Path(rel).parent.name for rel in declared
    }
    configuration, _ = kueue_configuration.read(fleet.documents)
    for name, objects in objects_by_cluster.items():
        directories = set(sources.graph.directories(f"clusters/{name}"))
        pools = [pool for rel, pool in declared.items() if str(Path(rel).parent) in directories]
        cluster = guarded(
            findings,
            "stage model",
            build_cluster,
            facts[name],
            objects,
            pools,
            generated[name],
            _gpu_model,
            index.docs,
            location=Location(facts[name].path, 1),
            cluster=name,
        )
        if cluster is None:  # a cluster whose model crashed is left out (its INTERNAL finding says so)
            continue
        cluster.kueue_configuration = configuration
        fleet.clusters[name] = cluster
        fleet.pools.update({pool.name: pool for pool in cluster.pools})  # with the capacity of the last one
    return fleet


def _objects_from(bodies: list, cluster: str, kustomization: str) -> list[K8sObject]:
    """The rendered objects; one whose origin annotation is refused points at the overlay's
    `kustomization`."""
    return [
        object_from(body, f"clusters/{cluster}", cluster, kustomization=kustomization)
        for body in bodies
        if isinstance(body, dict)
    ]


def _prepare(rules: bool) -> None:
    """Work that does not need the rendered objects, done while kubectl renders them: import the rules. The
    validators are compiled in the schema stage, for the kinds rendered (from prepared schemas: ms each)."""
    if rules:
        from ..rules import all_rules

        all_rules()


def load_fleet(root: Path, clusters: list[str] | None = None, use_cache: bool = True) -> Fleet:
    """The fleet model alone (for generators, the simulator and tests). A stage that crashed leaves the model
    incomplete (a cluster or pool missing): a ToolError (exit 2), never pages or replays built on part of
    it."""
    result = run(Path(root), clusters=clusters, use_cache=use_cache, rules=False)
    if result.internal:
        first = result.internal[0]
        raise ToolError(
            f"internal error: {first.message} ({first.path or 'repository'}); the fleet model is "
            f"incomplete, so nothing was built from it (please report; {DEBUG_ENV}=1 prints the "
            "traceback)"
        )
    return result.fleet


def _crd_schemas(root: Path) -> dict:
    """Carried CRD schemas, overridden by any the repository imported with `gpupolicy schemas import`."""
    from ..infra.schema import crd

    schemas = dict(crd.carried_schemas())
    imported = root / IMPORTED_SCHEMAS
    if imported.is_dir():
        try:
            schemas.update(crd.load_schema_dir(imported, root))
        except crd.CRDError as exc:
            raise ToolError(f"{IMPORTED_SCHEMAS}: {exc}") from exc
    return schemas


def _gpu_model(model_key: str):
    """The catalog entry of a pool's GPU, or None for a model the catalog does not know (POOL001 says so)."""
    from ..domain import catalog

    try:
        return catalog.gpu(model_key)
    except KeyError:
        return None


def _pools(
    pool_dirs: list[str], documents: dict[str, list[Document]], findings: list[Finding]
) -> dict[str, Pool]:
    pools: dict[str, Pool] = {}
    for directory in pool_dirs:
        rel = f"{directory}/pool.yaml"
        doc = _check_repo_file(documents, rel, "Pool", "pool", findings)
        pool = (
            None
            if doc is None
            else guarded(
                findings, "stage model", pool_from, doc, subject=rel, location=Location(rel, doc.line)
            )
        )
        if pool is not None:
            pools[rel] = pool
    return pools


def _facts(name: str, documents: dict[str, list[Document]], findings: list[Finding]) -> ClusterFacts:
    rel = f"clusters/{name}/cluster.yaml"
    doc = _check_repo_file(documents, rel, "Cluster", "cluster", findings)
    empty = ClusterFacts(
        name=name,
        path=rel,
        environment="",
        region="",
        zones=(),
        kubernetes_version=DEFAULT_KUBERNETES_VERSION,
        gpu_operator_version="",
        sync_engine="",
    )
    if doc is None:
        return empty
    return guarded(
        findings, "stage model", facts_from, doc, default=empty, subject=rel, location=Location(rel, doc.line)
    )


def _schema_stage(
    objects_by_cluster: dict[str, list[K8sObject]],
    facts: dict[str, ClusterFacts],
    schemas: SchemaSet,
    index: SourceIndex,
    sources: Sources,
) -> list[Finding]:
    findings: list[Finding] = []
    for name, objects in objects_by_cluster.items():
        version = facts[name].kubernetes_version
        for obj in objects:
            findings.extend(_validate_guarded(obj, version, schemas, index, name, findings))
    # Manifests no overlay includes are still validated, so a broken file is never silent.
    documents = sources.documents
    inputs = sources.graph.input_files()
    patches = sources.graph.patch_files()
    version = max((f.kubernetes_version for f in facts.values()), default=DEFAULT_KUBERNETES_VERSION)
    engines = {f.sync_engine for f in facts.values()}
    for rel in sources.files:
        if rel in patches or Path(rel).name in kustomize.KUSTOMIZATION_NAMES:
            continue
        for doc in documents.get(rel, []):
            if (
                rel in inputs
                or not isinstance(doc.data, dict)
                or doc.data.get("apiVersion") == REPO_API_VERSION
            ):
                continue
            if not _is_manifest(doc.data):
                if "apiVersion" in doc.data or "kind" in doc.data:
                    findings.append(schema004.finding("document has no apiVersion or kind", rel, doc.line))
                continue
            # A cluster's Flux bootstrap folder is applied by Flux's own Kustomization, not by an overlay.
            if _should_be_included(rel, engines):
                findings.append(
                    kust005.finding(
                        f"{doc.data['kind']} "
                        f"{(doc.data.get('metadata') or {}).get('name', '')} is "
                        "included by no "
                        "cluster overlay",
                        rel,
                        doc.line,
                        hint="add it to a kustomization, or delete it",
                    )
                )
            # a loose file is its own origin
            obj = replace(object_from(doc.data, "", ""), origin=rel, origin_refused="")
            findings.extend(_validate_guarded(obj, version, schemas, index, "", findings))
    return findings


def _should_be_included(rel: str, engines: set[str]) -> bool:
    """Whether a manifest no overlay includes should be (KUST005). Not a cluster's Flux bootstrap folder,
    which
    Flux's own Kustomization applies, nor the install folder of a sync engine no cluster declares."""
    return (
        rel.split("/")[0] in ("clusters", "pools", "policies")
        and not sync001.in_entry_folder(rel)
        and not kustomization.for_an_unused_sync_engine(rel, engines)
    )


def _validate_guarded(
    obj: K8sObject,
    version: str,
    schemas: SchemaSet,
    index: SourceIndex,
    cluster: str,
    findings: list[Finding],
) -> list[Finding]:
    """`_validate_object`, or an INTERNAL finding in `findings` when it raises (described only then: this
    runs once per object of the fleet)."""
    try:
        return _validate_object(obj, version, schemas, index, cluster)
    except Exception as exc:  # noqa: BLE001 - a crash validating one object is a finding, not a traceback
        findings.append(
            crash_finding(
                "stage schema", exc, subject=obj.ref(), location=Location(obj.origin, 0), cluster=cluster
            )
        )
        return []


def _values_findings(
    fleet: Fleet, schemas: SchemaSet, generated: dict[str, dict], index: SourceIndex
) -> list[Finding]:
    """Validate the ClusterPolicy that the GPU Operator chart would make from the values files, and point
    each error at the values file (the last layer that sets the field) rather than at a synthesized object."""
    from .build import VALUES_CONFIGMAP

    findings: list[Finding] = []
    for name, cluster in fleet.clusters.items():
        policy = cluster.cluster_policy
        if policy is None or policy in cluster.objects:
            continue
        layers = [
            source
            for (configmap, _key), source in sorted(generated[name].items())
            if configmap == VALUES_CONFIGMAP
        ]
        for error in schemas.validate(policy.body, cluster.facts.kubernetes_version) or []:
            values_path = tuple(error.path[1:]) if error.path[:1] == ("spec",) else tuple(error.path)
            location = _deepest_layer(index, layers, values_path) or Location(policy.origin, 0)
            findings.append(
                schema002.finding(
                    f"GPU Operator values: {error.message}",
                    location.path,
                    location.line,
                    cluster=name,
                    hint="the chart copies this section into the ClusterPolicy",
                )
            )
    return findings


def _deepest_layer(index: SourceIndex, layers: list[str], path: tuple) -> Location | None:
    best: tuple[int, Location] | None = None
    for layer in reversed(layers):
        for doc in index.docs(layer)[:1]:
            depth = next((d for d in range(len(path), 0, -1) if path[:d] in doc.lines), 0)
            if best is None or depth > best[0]:
                best = (depth, Location(layer, doc.line_of(path)))
    return best[1] if best else None


def _is_manifest(data: object) -> bool:
    return (
        isinstance(data, dict)
        and isinstance(data.get("apiVersion"), str)
        and isinstance(data.get("kind"), str)
    )


def _validate_object(
    obj: K8sObject, version: str, schemas: SchemaSet, index: SourceIndex, cluster: str
) -> list[Finding]:
    if not obj.api_version or not obj.kind:
        location = index.locate(obj, ())
        return [
            schema004.finding(
                "object has no apiVersion or kind", location.path, location.line, cluster=cluster
            )
        ]
    errors = schemas.validate(obj.body, version)
    if errors is None:
        location = index.locate(obj, ("kind",))
        return [
            schema003.finding(
                f"no schema for {obj.api_version} {obj.kind}: it is not validated",
                location.path,
                location.line,
                cluster=cluster,
                hint="import its CRD with `gpupolicy schemas import`",
            )
        ]
    rule = schema001 if "." not in obj.group or obj.group.endswith(".k8s.io") else schema002
    found = []
    for error in errors:
        location = index.locate(obj, tuple(error.path))
        found.append(
            rule.finding(f"{obj.ref()}: {error.message}", location.path, location.line, cluster=cluster)
        )
    return found


def _run_rules(fleet: Fleet, org_rules: dict) -> list[Finding]:
    """Every rule's findings: built-in, installed plugins', then the repository's declarative checks."""
    from ..rules import all_rules

    findings: list[Finding] = []
    for rule in [*all_rules().values(), *org_rules.values()]:
        if rule.stage == "rules" and rule.check is not None and (fleet.fleet_checks or not rule.fleet_level):
            findings.extend(_run_rule(rule, fleet))
    return findings


def _run_rule(rule, fleet: Fleet) -> list[Finding]:
    """The rule's findings; when it raises, those it reported so far plus an INTERNAL finding (a rule bug
    must not hide the other rules' findings, nor pass as "ok")."""
    found: list[Finding] = []
    try:
        for finding in rule.check(fleet):
            found.append(finding)
    except Exception as exc:  # noqa: BLE001 - any bug in a rule becomes a finding
        found.append(crash_finding(f"rule {rule.id}", exc, fleet))
    return found


def _with_base_context(findings: list[Finding], index: SourceIndex) -> list[Finding]:
    """A finding the locator sent to an overlay edit names the base it overrides, as context."""
    return [
        replace(
            f, message=f"{f.message} (set by this overlay edit; the base is {index.bases[(f.path, f.line)]})"
        )
        if (f.path, f.line) in index.bases
        else f
        for f in findings
    ]


def _dedupe_waived(waived: list) -> list:
    """`dedupe` for accepted findings: one entry per finding and exception, naming every cluster."""
    by_waiver: dict[int, list] = {}
    for item in waived:
        by_waiver.setdefault(id(item.waiver), []).append(item)
    merged = [
        waivers.Waived(finding, items[0].waiver)
        for items in by_waiver.values()
        for finding in dedupe([i.finding for i in items])
    ]
    return sorted(merged, key=lambda item: item.finding.sort_key())


def dedupe(findings: list[Finding]) -> list[Finding]:
    """The same source line rendered into several clusters is one finding, naming every cluster."""
    merged: dict[tuple, Finding] = {}
    for finding in findings:
        key = (finding.rule, finding.path, finding.line, finding.message)
        if key in merged:
            first = merged[key]
            clusters = sorted({*first.cluster.split(","), *finding.cluster.split(",")} - {""})
            merged[key] = Finding(
                first.rule,
                first.severity,
                first.message,
                first.path,
                first.line,
                ",".join(clusters),
                first.hint,
            )
        else:
            merged[key] = finding
    return sorted(merged.values(), key=Finding.sort_key)
