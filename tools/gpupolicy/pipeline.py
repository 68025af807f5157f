"""The toolkit's one-way pipeline: discover -> load (while kubectl renders) -> render -> parse -> schema -> model
-> rules. Timings name those stages; `render` is the wait for kubectl after the sources have loaded.

`run()` returns everything a command needs (fleet, findings, timings); it never writes to the repository.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from . import graphcache, kustomize, parsecache, repopath
from .build import SourceIndex, build_cluster, facts_from, object_from, pool_from
from .errors import ToolError
from .findings import Finding, Location, Severity
from .internal import DEBUG_ENV, INTERNAL, crash_finding, guarded
from .model import ClusterFacts, Fleet, K8sObject, Pool
from .schema import SchemaSet, validate_repo_file
from .yamlload import MAX_FILE_BYTES, Document

SCANNED_DIRS = ("clusters", "pools", "policies", "docs")
YAML_SUFFIXES = (".yaml", ".yml")
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
    cached_renders: int = 0

    @property
    def internal(self) -> list[Finding]:
        """INTERNAL findings: checks that crashed, so the run did not do its whole job (exit 2)."""
        return [f for f in self.findings if f.rule == INTERNAL]

    @property
    def crashes(self) -> list[str]:
        return [f.message for f in self.internal]

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


def find_repo_root(start: Path) -> Path:
    """The nearest directory at or above `start` that has clusters/ or pools/ (the policy repository)."""
    start = start.resolve()
    for candidate in (start, *start.parents):
        if (candidate / "clusters").is_dir() or (candidate / "pools").is_dir():
            return candidate
    raise ToolError(f"{start} is not inside a policy repository (no clusters/ or pools/ above it); "
                    "pass --repo DIR")


def cluster_names(root: Path) -> list[str]:
    return kustomize.cluster_folders(root)


# --- discovery and strict loading -------------------------------------------------------------------------

def source_files(root: Path, only: Iterable[str] | None = None) -> tuple[list[str], list[Finding]]:
    """Repo-relative YAML files under the scanned folders; symlinks out of the repository are findings.
    With `only` (a run over some clusters) just those paths are looked at: walking a fleet's whole tree
    cost more than validating one cluster."""
    files: list[str] = []
    findings: list[Finding] = []
    real_root = root.resolve()
    candidates = _walk(root) if only is None else sorted(p for p in only if p.split("/", 1)[0] in SCANNED_DIRS)
    for rel in candidates:
        full = root / rel
        if full.is_symlink() and not _symlink_inside(full, rel, real_root, findings):
            continue
        if rel.endswith(YAML_SUFFIXES) and full.is_file():
            files.append(rel)
    return files, findings


def _walk(root: Path) -> Iterator[str]:
    """Every file under the scanned folders (and every symlinked folder), repo-relative, in a stable order."""
    prefix = len(str(root)) + 1
    for top in SCANNED_DIRS:
        for directory, subdirs, names in os.walk(root / top):
            subdirs[:] = sorted(d for d in subdirs if not d.startswith("."))
            for name in sorted(names) + [d for d in subdirs if os.path.islink(os.path.join(directory, d))]:
                yield os.path.join(directory, name)[prefix:].replace(os.sep, "/")


def _symlink_inside(full: Path, rel: str, real_root: Path, findings: list[Finding]) -> bool:
    """Whether a symlink resolves inside the repository; a finding when it does not."""
    target = _resolved(full)
    if target is None:
        findings.append(Finding("YAML008", Severity.ERROR, f"symlink cannot be resolved (a loop: {os.readlink(full)})",
                                rel, 1, hint="replace the symlink with the file itself"))
        return False
    if not target.is_relative_to(real_root):
        findings.append(Finding("YAML008", Severity.ERROR, f"symlink points outside the repository ({os.readlink(full)})",
                                rel, 1, hint="copy the file into the repository instead"))
        return False
    return True


def _resolved(path: Path) -> Path | None:
    """The symlink-free path, or None for a symlink loop."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):  # Python 3.11 raises RuntimeError on a loop
        return None


def load_sources(root: Path, files: Iterable[str], parse_cache: parsecache.ParseCache | None = None
                 ) -> tuple[dict[str, list[Document]], list[Finding]]:
    documents: dict[str, list[Document]] = {}
    findings: list[Finding] = []
    reader = repopath.Reader(root)
    for rel in files:
        try:
            raw = reader.read(rel)
        except repopath.Refused as refusal:
            findings.append(_refused_source(root, rel, refusal))
            continue
        except OSError as exc:
            findings.append(Finding("YAML001", Severity.ERROR, f"cannot read file: {exc.strerror}", rel, 0))
            continue
        loaded = parsecache.load_bytes(parse_cache, raw, rel)
        documents[rel] = loaded.documents
        findings.extend(loaded.findings)
    return documents, findings


def _refused_source(root: Path, rel: str, refusal: repopath.Refused) -> Finding:
    """The finding for a source file the trust boundary will not read: an oversized one keeps the loader's
    YAML004 (so it reads the same whether the boundary or the loader saw the size first), anything else
    (a FIFO, a device, a symlink out of the repository) is YAML001 with the boundary's reason."""
    size = _inside_size(root, rel)
    if size is not None and size > MAX_FILE_BYTES:
        return Finding("YAML004", Severity.ERROR, f"file is {size:,} bytes, over the {MAX_FILE_BYTES:,}-byte limit",
                       rel, 1, hint="split it, or keep generated data out of the policy repository")
    return Finding("YAML001", Severity.ERROR, f"cannot read file: {refusal}", rel, 0)


def _inside_size(root: Path, rel: str) -> int | None:
    """The size of `rel` when it is a regular file inside the repository, else None; never opens it."""
    try:
        return os.stat(repopath.regular_file(root, rel, limit=None)).st_size
    except (repopath.Refused, OSError):
        return None


def _check_repo_file(documents: dict[str, list[Document]], rel: str, kind: str, schema: str,
                     findings: list[Finding]) -> Document | None:
    """Validate a pool.yaml / cluster.yaml document; return it only when it is valid."""
    if rel not in documents:
        findings.append(Finding("SCHEMA005", Severity.ERROR, f"{kind.lower()} declaration missing", rel, 0,
                                hint=f"create {rel} (apiVersion: {REPO_API_VERSION}, kind: {kind})"))
        return None
    docs = documents[rel]
    if not docs:
        if not any(f.path == rel for f in findings):  # else the loader already reported why
            findings.append(Finding("SCHEMA005", Severity.ERROR, f"{kind.lower()} declaration is empty", rel, 1,
                                    hint=f"write the {kind} document (apiVersion: {REPO_API_VERSION}, kind: {kind})"))
        return None
    doc = docs[0]
    errors = guarded(findings, "stage schema", validate_repo_file, schema, doc.data, subject=rel,
                     location=Location(rel, doc.line))
    if errors is None:
        return None
    for error in errors:
        findings.append(Finding("SCHEMA005", Severity.ERROR, f"{kind}: {error.message}", rel,
                                doc.line_of(error.path)))
    return None if errors else doc


# --- the run -------------------------------------------------------------------------------------------------

def run(root: Path, clusters: list[str] | None = None, use_cache: bool = True, rules: bool = True,
        progress: Callable | None = None, crd_schemas: dict | None = None) -> RunResult:
    timings: dict[str, float] = {}
    clock = _Clock(timings)
    root = root.resolve()
    all_clusters = cluster_names(root)
    if clusters:
        unknown = sorted(set(clusters) - set(all_clusters))
        if unknown:
            raise ToolError(f"no such cluster: {', '.join(unknown)} (clusters: {', '.join(all_clusters) or 'none'})")
    selected = all_clusters if clusters is None else clusters  # [] selects none (incremental runs)
    # A run over some clusters (sharding, --changed-since) reads only what those clusters depend on; the
    # whole-repository checks (files no overlay includes, pools no cluster includes) belong to full runs.
    whole = set(selected) == set(all_clusters)
    parse_cache = kustomize.parse_cache(use_cache)
    graph = graphcache.build_graph(root, [f"clusters/{name}" for name in (all_clusters if whole else selected)],
                                   parse_cache)
    pool_dirs = _pool_dirs(root, None if whole else graph, selected)
    files, findings = source_files(root, None if whole else _inputs_of(graph, selected, pool_dirs))
    findings.extend(graph.findings)
    blocked = {f.path for f in graph.findings}
    # An overlay whose kustomization did not load has no graph node; one that names a refused path is blocked.
    renderable = [name for name in selected if f"clusters/{name}" in graph.overlays
                  and not graph.closure(f"clusters/{name}") & blocked]
    clock.lap("discover")

    # kubectl renders in the background while the sources load strictly and the schemas compile; an overlay
    # with an input the loader refuses is cancelled (and not rendered at all if it had not started).
    rendering = kustomize.RenderJob(root, [f"clusters/{n}" for n in renderable], graph, use_cache,
                                    progress=progress)
    try:
        documents, load_findings = load_sources(root, files, parse_cache)
        load_findings = kustomize.accept_json6902_lists(load_findings, graph)  # a JSON6902 patch is a YAML list
        findings.extend(load_findings)
        broken_inputs = {f.path for f in load_findings if f.severity is Severity.ERROR}
        broken = [name for name in renderable if graph.closure(f"clusters/{name}") & broken_inputs]
        rendering.cancel(f"clusters/{name}" for name in broken)
        renderable = [name for name in renderable if name not in broken]
        clock.lap("load")

        facts = {name: _facts(root, name, documents, findings) for name in selected}
        schemas = SchemaSet(crd_schemas if crd_schemas is not None else _crd_schemas(root))
        _prepare(schemas, documents, {f.kubernetes_version for f in facts.values()}, rules)
    except BaseException:
        rendering.abandon()
        raise
    rendered = rendering.results()
    clock.lap("render")

    result = RunResult(fleet=Fleet(root=str(root)), rendered_clusters=renderable, timings=timings)
    result.cached_renders = sum(1 for r in rendered.values() if r.cached)
    index = SourceIndex(str(root), documents)
    fleet = result.fleet
    fleet.locator = index
    fleet.documents = [doc for docs in documents.values() for doc in docs]

    pool_docs = _pools(pool_dirs, documents, findings)
    fleet.pools = {pool.name: pool for pool in pool_docs.values()}
    fleet.invalid_pools = {Path(d).name for d in pool_dirs} - {Path(rel).parent.name for rel in pool_docs}
    objects_by_cluster: dict[str, list[K8sObject]] = {}
    for name in renderable:
        output = rendered[f"clusters/{name}"]
        kfile = graph.overlays[f"clusters/{name}"].file
        if output.error:
            # at the file and line that cause the failure, not at the overlay's first line
            findings.append(kustomize.render_failure(graph, f"clusters/{name}", output, name))
            continue
        if not graph.overlays[f"clusters/{name}"].origin_annotations:
            findings.append(Finding("KUST006", Severity.WARNING, "overlay does not set buildMetadata: "
                                    "[originAnnotations]; findings cannot name source files", kfile, 1, cluster=name))
        bodies = parsecache.load_rendered(parse_cache, f"{root}:clusters/{name}", output.text)
        objects_by_cluster[name] = guarded(findings, "stage parse", _objects_from, bodies, name, kfile, default=[],
                                           subject=f"the rendered objects of cluster {name}",
                                           location=Location(kfile, 1), cluster=name)
        # kubectl applies a patch whose target matches nothing without a word
        findings.extend(kustomize.unmatched_patches(graph, f"clusters/{name}", objects_by_cluster[name], name))
    result.objects = sum(len(objs) for objs in objects_by_cluster.values())
    clock.lap("parse")

    schema_findings = _schema_stage(objects_by_cluster, facts, schemas, fleet, graph, documents, files)
    findings.extend(schema_findings)
    clock.lap("schema")

    generated = {name: {(k.configmap, k.key): k.source for k in graph.generated_keys(f"clusters/{name}")}
                 for name in objects_by_cluster}
    for name, objects in objects_by_cluster.items():
        directories = set(graph.directories(f"clusters/{name}"))
        pools = [pool for rel, pool in pool_docs.items() if str(Path(rel).parent) in directories]
        cluster = guarded(findings, "stage model", build_cluster, facts[name], objects, pools, generated[name],
                          _gpu_model, index.docs, location=Location(facts[name].path, 1), cluster=name)
        if cluster is not None:  # a cluster whose model crashed is left out (its INTERNAL finding says so)
            fleet.clusters[name] = cluster
    _attach_pool_clusters(fleet)
    findings.extend(guarded(findings, "stage schema (GPU Operator values)", _values_findings, fleet, schemas,
                            generated, index, default=[]))
    clock.lap("model")

    if rules:
        findings.extend(_run_rules(fleet))
    clock.lap("rules")
    result.findings = _dedupe(findings)
    return result


def _objects_from(bodies: list, cluster: str, kustomization: str) -> list[K8sObject]:
    """The rendered objects; one whose origin annotation is refused points at the overlay's `kustomization`."""
    return [object_from(body, f"clusters/{cluster}", cluster, kustomization=kustomization)
            for body in bodies if isinstance(body, dict)]


def _prepare(schemas: SchemaSet, documents: dict[str, list[Document]], versions: set[str], rules: bool) -> None:
    """Work that does not need the rendered objects, done while kubectl renders them: compile the validators
    of the kinds the source files declare, for each cluster's Kubernetes version, and import the rules."""
    kinds = {(str(d.data["apiVersion"]), str(d.data["kind"])) for docs in documents.values() for d in docs
             if isinstance(d.data, dict) and _is_manifest(d.data)}
    for version in versions:
        for api_version, kind in kinds:
            schemas.has_schema(api_version, kind, version)
    if rules:
        from .rules import all_rules

        all_rules()


def load_fleet(root: Path, clusters: list[str] | None = None, use_cache: bool = True) -> Fleet:
    """The fleet model alone (for generators, the simulator and tests). A stage that crashed leaves the model
    incomplete (a cluster or pool missing): a ToolError (exit 2), never pages or replays built on part of it."""
    result = run(Path(root), clusters=clusters, use_cache=use_cache, rules=False)
    if result.internal:
        first = result.internal[0]
        raise ToolError(f"internal error: {first.message} ({first.path or 'repository'}); the fleet model is "
                        f"incomplete, so nothing was built from it (please report; {DEBUG_ENV}=1 prints the "
                        "traceback)")
    return result.fleet


def _crd_schemas(root: Path) -> dict:
    """Carried CRD schemas, overridden by any the repository imported with `gpupolicy schemas import`."""
    from . import crd

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
    from . import catalog

    try:
        return catalog.gpu(model_key)
    except KeyError:
        return None


def _pool_dirs(root: Path, graph: kustomize.Graph | None, clusters: list[str]) -> list[str]:
    """Repo-relative pool folders: every one under pools/, or (given a graph) those the clusters include."""
    if graph is None:
        base = root / "pools"
        return [f"pools/{d.name}" for d in sorted(base.iterdir()) if d.is_dir()] if base.is_dir() else []
    included = {d for name in clusters for d in graph.directories(f"clusters/{name}")}
    return sorted(d for d in included if d.startswith("pools/"))


def _inputs_of(graph: kustomize.Graph, clusters: list[str], pool_dirs: list[str]) -> set[str]:
    """The source files a run over some clusters needs: their overlays' inputs and their declarations."""
    needed = {f for name in clusters for f in graph.closure(f"clusters/{name}")}
    needed |= {f"clusters/{name}/cluster.yaml" for name in clusters}
    needed |= {f"{d}/pool.yaml" for d in pool_dirs}
    return needed


def _pools(pool_dirs: list[str], documents: dict[str, list[Document]], findings: list[Finding]) -> dict[str, Pool]:
    pools: dict[str, Pool] = {}
    for directory in pool_dirs:
        rel = f"{directory}/pool.yaml"
        doc = _check_repo_file(documents, rel, "Pool", "pool", findings)
        pool = None if doc is None else guarded(findings, "stage model", pool_from, doc, subject=rel,
                                                  location=Location(rel, doc.line))
        if pool is not None:
            pools[rel] = pool
    return pools


def _facts(root: Path, name: str, documents: dict[str, list[Document]], findings: list[Finding]) -> ClusterFacts:
    rel = f"clusters/{name}/cluster.yaml"
    doc = _check_repo_file(documents, rel, "Cluster", "cluster", findings)
    empty = ClusterFacts(name=name, path=rel, environment="", region="", zones=(),
                         kubernetes_version=DEFAULT_KUBERNETES_VERSION, gpu_operator_version="", sync_engine="")
    if doc is None:
        return empty
    return guarded(findings, "stage model", facts_from, doc, default=empty, subject=rel,
                   location=Location(rel, doc.line))


def _attach_pool_clusters(fleet: Fleet) -> None:
    for cluster in fleet.clusters.values():
        for pool in cluster.pools:
            known = fleet.pools.get(pool.name)
            merged = tuple(sorted({*(known.clusters if known else ()), cluster.name}))
            fleet.pools[pool.name] = pool.__class__(**{**pool.__dict__, "clusters": merged})


def _schema_stage(objects_by_cluster: dict[str, list[K8sObject]], facts: dict[str, ClusterFacts],
                  schemas: SchemaSet, fleet: Fleet, graph: kustomize.Graph,
                  documents: dict[str, list[Document]], files: list[str]) -> list[Finding]:
    findings: list[Finding] = []
    for name, objects in objects_by_cluster.items():
        version = facts[name].kubernetes_version
        for obj in objects:
            findings.extend(_validate_guarded(obj, version, schemas, fleet, name, findings))
    # Manifests no overlay includes are still validated, so a broken file is never silent.
    inputs = graph.input_files()
    patches = graph.patch_files()
    version = max((f.kubernetes_version for f in facts.values()), default=DEFAULT_KUBERNETES_VERSION)
    for rel in files:
        if rel in patches or Path(rel).name in kustomize.KUSTOMIZATION_NAMES:
            continue
        for doc in documents.get(rel, []):
            if rel in inputs or not isinstance(doc.data, dict) or doc.data.get("apiVersion") == REPO_API_VERSION:
                continue
            if not _is_manifest(doc.data):
                if "apiVersion" in doc.data or "kind" in doc.data:
                    findings.append(Finding("SCHEMA004", Severity.ERROR, "document has no apiVersion or kind",
                                            rel, doc.line))
                continue
            if rel.split("/")[0] in ("clusters", "pools", "policies"):
                findings.append(Finding("KUST005", Severity.WARNING, f"{doc.data['kind']} "
                                        f"{(doc.data.get('metadata') or {}).get('name', '')} is included by no "
                                        "cluster overlay", rel, doc.line,
                                        hint="add it to a kustomization, or delete it"))
            obj = object_from(doc.data, "", "")
            obj = K8sObject(obj.api_version, obj.kind, obj.name, obj.namespace, doc.data, rel, "")
            findings.extend(_validate_guarded(obj, version, schemas, fleet, "", findings))
    return findings


def _validate_guarded(obj: K8sObject, version: str, schemas: SchemaSet, fleet: Fleet, cluster: str,
                      findings: list[Finding]) -> list[Finding]:
    """`_validate_object`, or an INTERNAL finding in `findings` when it raises (described only then: this
    runs once per object of the fleet)."""
    try:
        return _validate_object(obj, version, schemas, fleet, cluster)
    except Exception as exc:  # noqa: BLE001 - a crash validating one object is a finding, not a traceback
        findings.append(crash_finding("stage schema", exc, subject=obj.ref(), location=Location(obj.origin, 0),
                                      cluster=cluster))
        return []


def _values_findings(fleet: Fleet, schemas: SchemaSet, generated: dict[str, dict], index: SourceIndex) -> list[Finding]:
    """Validate the ClusterPolicy that the GPU Operator chart would make from the values files, and point
    each error at the values file (the last layer that sets the field) rather than at a synthesized object."""
    from .build import VALUES_CONFIGMAP

    findings: list[Finding] = []
    for name, cluster in fleet.clusters.items():
        policy = cluster.cluster_policy
        if policy is None or policy in cluster.objects:
            continue
        layers = [source for (configmap, _key), source in sorted(generated[name].items())
                  if configmap == VALUES_CONFIGMAP]
        for error in schemas.validate(policy.body, cluster.facts.kubernetes_version) or []:
            values_path = tuple(error.path[1:]) if error.path[:1] == ("spec",) else tuple(error.path)
            location = _deepest_layer(index, layers, values_path) or Location(policy.origin, 0)
            findings.append(Finding("SCHEMA002", Severity.ERROR, f"GPU Operator values: {error.message}",
                                    location.path, location.line, name,
                                    "the chart copies this section into the ClusterPolicy"))
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
    return isinstance(data, dict) and isinstance(data.get("apiVersion"), str) and isinstance(data.get("kind"), str)


def _validate_object(obj: K8sObject, version: str, schemas: SchemaSet, fleet: Fleet, cluster: str) -> list[Finding]:
    if not obj.api_version or not obj.kind:
        location = fleet.locate(obj) or Location(obj.origin, 0)
        return [Finding("SCHEMA004", Severity.ERROR, "object has no apiVersion or kind", location.path,
                        location.line, cluster)]
    errors = schemas.validate(obj.body, version)
    if errors is None:
        location = fleet.locate(obj, "kind") or Location(obj.origin, 0)
        return [Finding("SCHEMA003", Severity.WARNING, f"no schema for {obj.api_version} {obj.kind}: it is not "
                        "validated", location.path, location.line, cluster,
                        "import its CRD with `gpupolicy schemas import`")]
    rule = "SCHEMA001" if "." not in obj.group or obj.group.endswith(".k8s.io") else "SCHEMA002"
    found = []
    for error in errors:
        location = fleet.locate(obj, *error.path) or Location(obj.origin, 0)
        found.append(Finding(rule, Severity.ERROR, f"{obj.ref()}: {error.message}", location.path, location.line,
                             cluster))
    return found


def _run_rules(fleet: Fleet) -> list[Finding]:
    from .rules import all_rules

    findings: list[Finding] = []
    for rule in all_rules().values():
        if rule.stage == "rules" and rule.check is not None:
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


def _dedupe(findings: list[Finding]) -> list[Finding]:
    """The same source line rendered into several clusters is one finding, naming every cluster."""
    merged: dict[tuple, Finding] = {}
    for finding in findings:
        key = (finding.rule, finding.path, finding.line, finding.message)
        if key in merged:
            first = merged[key]
            clusters = sorted({*first.cluster.split(","), *finding.cluster.split(",")} - {""})
            merged[key] = Finding(first.rule, first.severity, first.message, first.path, first.line,
                                  ",".join(clusters), first.hint)
        else:
            merged[key] = finding
    return sorted(merged.values(), key=Finding.sort_key)
