"""A candidate written into the repository's files, and checked by every rule on a temporary copy first.

What changes, in step, for each knob:
- the ClusterQueue's GPU `nominalQuota`/`borrowingLimit`/`lendingLimit` on the flavor, and the same field on its
  cpu and memory at the flavor's per-device ratio (from its nominal quotas, else from a limit both set), so Kueue
  never stops at cpu before the GPUs the quota promises (WL006); `spec.cohortName` for a cohort knob;
- the "N of M, borrow up to N, lend at most N" of the queue file's header comment;
- each team namespace's ResourceQuota (`requests.nvidia.com/...`), raised to what its queues can now admit (CAP015)
  or lowered with them where it was exactly that before.
Files are edited round-trip (comments, quoting and layout kept) with `upgrade promote`'s Editor; everything is
written through the transactional writer, to the copy and, with --apply, to the repository.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path

from ..commands.upgrade import Editor
from ..errors import ToolError
from ..findings import Severity
from ..model import Cluster, Fleet
from ..quantity import QuantityError, parse_quantity
from ..quotas import admissible, is_gpu_resource
from ..rules.cap_common import namespace_labels, queues_selecting
from ..transaction import write_files
from .space import BORROW, COHORT, LEND, NOMINAL, Knob, changes

FIELD = {BORROW: "borrowingLimit", LEND: "lendingLimit", NOMINAL: "nominalQuota"}
_COPY_IGNORED = shutil.ignore_patterns(".git", ".venv", "artifacts", "site", "node_modules", "__pycache__")
GI = Decimal(2**30)


class CandidateEditor(Editor):
    def apply(self, fleet: Fleet, cluster: Cluster, knob_list: list[Knob], params: Mapping[str, int | str]) -> None:
        for knob, value in changes(knob_list, params):
            cq = cluster.cluster_queues[knob.queue]
            source = _source(fleet, cq.obj, ("spec", "cohortName") if knob.kind == COHORT else ("spec",))
            spec = self._document(source, "ClusterQueue", cq.name)["spec"]
            if knob.kind == COHORT:
                spec["cohortName"] = str(value)
                continue
            self._set_limit(spec, knob, int(value))
            self.comment_edits.setdefault(source, []).append((knob, int(value)))

    def _set_limit(self, spec, knob: Knob, value: int) -> None:
        key = FIELD[knob.kind]
        for group in spec.get("resourceGroups") or ():
            for flavor in group.get("flavors") or ():
                if flavor.get("name") != knob.flavor:
                    continue
                resources = {r.get("name"): r for r in flavor.get("resources") or ()}
                gpu = resources[knob.resource]
                for name in ("cpu", "memory"):
                    if name in resources:
                        _set_in_step(resources[name], gpu, key, value)
                _set_value(gpu, key, value)

    def set_namespace_quotas(self, fleet: Fleet, before: Cluster, after: Cluster) -> None:
        """Each team ResourceQuota's GPU keys follow what the namespace's queues can admit (CAP015), edited in
        the file that sets the value (the cluster's team-quotas.yaml patch, else the base)."""
        old, new = _admitted(before), _admitted(after)
        for quota in after.namespace_quotas:
            for key, amount in new.get(quota.namespace, {}).items():
                if key not in quota.hard:
                    continue
                source = _source(fleet, quota.obj, ("spec", "hard", key))
                hard = self._document(source, "ResourceQuota", quota.name, quota.namespace)["spec"]["hard"]
                if key not in hard:
                    continue
                try:
                    current = parse_quantity(hard[key])
                except QuantityError:
                    continue
                if current < amount or current == old.get(quota.namespace, {}).get(key):
                    _set_value(hard, key, str(int(amount)))

    def _document(self, rel: str, kind: str, name: str, namespace: str = "") -> object:
        for document in self._load(rel).documents:
            metadata = (document or {}).get("metadata") or {} if isinstance(document, dict) else {}
            if document.get("kind") == kind and metadata.get("name") == name and \
                    (not namespace or metadata.get("namespace") == namespace):
                return document
        raise ToolError(f"{rel}: no {kind} named {name} to edit (is it made by a kustomize patch?)")

    comment_edits: dict[str, list[tuple[Knob, int]]]

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.comment_edits = {}

    def rendered(self) -> dict[str, str]:
        texts = super().rendered()
        for rel, edits in self.comment_edits.items():
            for knob, value in edits:
                texts[rel] = _comment_with(texts[rel], knob, value)
        return texts


def _source(fleet: Fleet, obj, path: tuple[str, ...]) -> str:
    """The repo-relative file that sets `path` of the object (an overlay patch, or the object's own file)."""
    location = fleet.locate(obj, *path)
    return location.path if location is not None and location.path else obj.origin


def _set_value(mapping, key: str, value) -> None:
    old = mapping.get(key)
    mapping[key] = type(old)(value) if isinstance(old, str) and type(old) is not str else value


def _set_in_step(resource, gpu, key: str, devices: int) -> None:
    """cpu or memory `key` at the flavor's ratio per GPU device (from its nominal quotas, else from the first
    limit both set); left alone when no ratio is known."""
    for pair in dict.fromkeys(("nominalQuota", key, "borrowingLimit", "lendingLimit")):
        try:
            per_device = parse_quantity(resource.get(pair, 0)) / Decimal(gpu.get(pair) or 0)
        except (QuantityError, ArithmeticError):
            continue
        amount = per_device * devices
        if resource.get("name") == "memory" and amount % GI == 0:
            _set_value(resource, key, f"{int(amount / GI)}Gi")
        else:
            _set_value(resource, key, int(amount) if amount == int(amount) else str(amount))
        return


def _comment_with(text: str, knob: Knob, value: int) -> str:
    """The header line `#   <flavor> (...): <resource> N of M, borrow up to B, lend at most L.` with the new value."""
    if knob.kind == NOMINAL:
        nominal = re.compile(rf"^(#\s+{re.escape(knob.flavor)} \([^)]*\): \S+ )\d+( of \d+)", re.M)
        return nominal.sub(lambda m: f"{m.group(1)}{value}{m.group(2)}", text, count=1)
    phrase = "borrow up to" if knob.kind == BORROW else "lend at most"
    line = re.compile(rf"^(#\s+{re.escape(knob.flavor)} \(.*?\d+ of \d+)((?:, [a-z ]+ \d+)*)(\..*)$", re.M)

    def replace(match: re.Match) -> str:
        clauses = [c for c in match.group(2).split(", ") if c]
        clauses = [c for c in clauses if not c.startswith(phrase)] + [f"{phrase} {value}"]
        clauses.sort(key=lambda c: 0 if c.startswith("borrow") else 1)
        return match.group(1) + "".join(f", {c}" for c in clauses) + match.group(3)
    return line.sub(replace, text, count=1)


def _admitted(cluster: Cluster) -> dict[str, dict[str, Decimal]]:
    """namespace -> `requests.<GPU resource>` -> what its queues can admit (the sum CAP015 checks)."""
    result: dict[str, dict[str, Decimal]] = {}
    for name in cluster.namespaces:
        for queue in queues_selecting(cluster, namespace_labels(cluster, name) or {}):
            for resource, amount in admissible(cluster, queue).items():
                if is_gpu_resource(resource) and amount > 0:
                    key = f"requests.{resource}"
                    result.setdefault(name, {})[key] = result.get(name, {}).get(key, Decimal(0)) + Decimal(amount)
    return result


def copy_repository(root: Path, into: Path) -> Path:
    """The repository's content (not .git, .venv or artifacts) copied; symlinks stay links, so the copy's trust
    boundary refuses the same paths the repository's does."""
    target = into / "repo"
    shutil.copytree(root, target, symlinks=True, ignore=_COPY_IGNORED)
    return target


def repository_errors(root: Path) -> set[str]:
    """The error findings the repository has before any edit (a candidate is judged on the ones it adds)."""
    from ..pipeline import run

    return _errors(run(root, use_cache=False).findings)


def _errors(findings) -> set[str]:
    return {f"{f.rule} {f.path}: {f.message}" for f in findings if f.severity == Severity.ERROR}


def edited_files(root: Path, cluster_name: str, knob_list: list[Knob], params: Mapping[str, int | str],
                 known: set[str] = frozenset()) -> tuple[dict[str, str], list[str]]:
    """(repo-relative path -> new text, error findings the edit adds) for the candidate: applied to a temporary
    copy of the repository, the copy re-loaded to set the namespace quotas, then validated with every rule;
    `known` are the repository's own errors (repository_errors), which no candidate is blamed for."""
    from ..pipeline import load_fleet, run

    with tempfile.TemporaryDirectory(prefix="gpupolicy-recommend-") as tmp:
        copy = copy_repository(root, Path(tmp))
        before_fleet = load_fleet(copy, [cluster_name], use_cache=False)
        before = before_fleet.clusters[cluster_name]
        editor = CandidateEditor(copy)
        editor.apply(before_fleet, before, knob_list, params)
        _write(copy, editor.rendered())
        after_fleet: Fleet = load_fleet(copy, [cluster_name], use_cache=False)
        editor.set_namespace_quotas(after_fleet, before, after_fleet.clusters[cluster_name])
        texts = {rel: text for rel, text in editor.rendered().items() if text != editor.files[rel].original}
        _write(copy, texts)
        errors = sorted(_errors(run(copy, use_cache=False).findings) - known)
    return texts, errors


def _write(copy: Path, texts: Mapping[str, str]) -> None:
    write_files({copy / rel: text for rel, text in texts.items()})


def apply_to_repository(root: Path, texts: Mapping[str, str]) -> None:
    """Write the candidate's files in place, all or none, each resolved through the trust boundary."""
    editor = Editor(root)
    targets = {}
    for rel, text in texts.items():
        targets[editor._load(rel).real_path] = text
    write_files(targets)
