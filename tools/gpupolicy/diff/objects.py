"""Every rendered object a change adds, removes or changes, per cluster, with a unified YAML diff of each
change.

The semantic sections of `gpupolicy diff` say what a change means; this list says what reaches the cluster, so
nothing Argo CD or Flux would apply is missing from the review (a label, a namespace quota, a field no section
models). Objects are matched by API group, kind, namespace and name. Before comparing, the annotations
kustomize adds to record an object's source (`buildMetadata: [originAnnotations]`) are dropped: they name
files, and a moved file is not a change to the cluster. Secret values never reach the output: each is replaced
by a digest, so a changed value still shows as a changed line (a PR comment is no place for credentials).
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from ..model import Fleet, K8sObject
from ..pipeline.build import ORIGIN_ANNOTATION

# kustomize's build annotations: the origin (buildMetadata originAnnotations) and the transformer trail
# (buildMetadata transformerAnnotations), both about the source files, not the object the cluster gets.
BUILD_ANNOTATIONS = (ORIGIN_ANNOTATION, "alpha.config.kubernetes.io/transformations")
SECRET_FIELDS = ("data", "stringData")
# A diff longer than this is cut (the rest counted): one generated dashboard must not bury the review.
MAX_DIFF_LINES = 300


@dataclass(frozen=True)
class ObjectChange:
    cluster: str
    ref: str  # "Kind namespace/name" (with the API group when it has one)
    change: str  # added | removed | changed
    source: str  # the file the object comes from (the head's, or the base's for a removed object)
    diff: tuple[str, ...] = ()  # unified diff lines of a changed object
    cut: int = 0  # diff lines left out past MAX_DIFF_LINES

    def as_dict(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "object": self.ref,
            "change": self.change,
            "source": self.source,
            "diff": list(self.diff),
            "linesLeftOut": self.cut,
        }


@dataclass
class ClusterObjects:
    cluster: str
    changes: list[ObjectChange] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {
            kind: sum(1 for c in self.changes if c.change == kind) for kind in ("added", "removed", "changed")
        }

    def summary(self) -> str:
        return ", ".join(f"{count} {kind}" for kind, count in self.counts().items())


def compare_objects(base: Fleet, head: Fleet) -> list[ClusterObjects]:
    """Per cluster of either side (in name order), the objects that differ; clusters without a difference are
    left out."""
    result = []
    for name in sorted(base.clusters.keys() | head.clusters.keys()):
        old = _by_identity(base.clusters[name].objects if name in base.clusters else [])
        new = _by_identity(head.clusters[name].objects if name in head.clusters else [])
        changes = [_change(name, old.get(key), new.get(key)) for key in sorted(old.keys() | new.keys())]
        changes = [c for c in changes if c is not None]
        if changes:
            result.append(ClusterObjects(name, changes))
    return result


def _by_identity(objects: list[K8sObject]) -> dict[tuple[str, str, str, str], K8sObject]:
    return {(obj.group, obj.kind, obj.namespace, obj.name): obj for obj in objects}


def _ref(obj: K8sObject) -> str:
    kind = f"{obj.kind}.{obj.group}" if obj.group else obj.kind
    return f"{kind} {obj.namespace + '/' if obj.namespace else ''}{obj.name}"


def _change(cluster: str, old: K8sObject | None, new: K8sObject | None) -> ObjectChange | None:
    if old is None and new is not None:
        return ObjectChange(cluster, _ref(new), "added", new.origin)
    if new is None and old is not None:
        return ObjectChange(cluster, _ref(old), "removed", old.origin)
    assert old is not None and new is not None
    before, after = as_yaml(old), as_yaml(new)
    if before == after:
        return None
    lines = list(
        difflib.unified_diff(before.splitlines(), after.splitlines(), "base", "head", lineterm="", n=3)
    )
    return ObjectChange(
        cluster,
        _ref(new),
        "changed",
        new.origin,
        tuple(lines[:MAX_DIFF_LINES]),
        max(0, len(lines) - MAX_DIFF_LINES),
    )


def as_yaml(obj: K8sObject) -> str:
    """The object as the cluster gets it, in a stable text: keys sorted, build annotations dropped, Secret
    values replaced by their digest, multi-line strings as literal blocks (so a diff shows the changed
    line)."""
    body = copy.deepcopy(obj.body)
    metadata = body.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("annotations"), dict):
        for name in BUILD_ANNOTATIONS:
            metadata["annotations"].pop(name, None)
        if not metadata["annotations"]:
            del metadata["annotations"]
    if obj.kind == "Secret" and not obj.group:
        for name in SECRET_FIELDS:
            if isinstance(body.get(name), dict):
                body[name] = {key: _digest(value) for key, value in body[name].items()}
    return yaml.dump(
        body, Dumper=_Dumper, sort_keys=True, default_flow_style=False, allow_unicode=True, width=120
    )


def _digest(value: Any) -> str:
    return f"<hidden, sha256 {hashlib.sha256(str(value).encode()).hexdigest()[:12]}>"


class _Dumper(yaml.SafeDumper):
    """SafeDumper that writes multi-line strings as literal blocks."""


def _literal(dumper: yaml.SafeDumper, text: str) -> yaml.Node:
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_Dumper.add_representer(str, _literal)


def fence(lines: list[str] | tuple[str, ...]) -> str:
    """A Markdown code fence longer than any backtick run in `lines`, so content cannot close it early."""
    longest = max((len(run) for line in lines for run in re.findall("`+", line)), default=0)
    return "`" * max(3, longest + 1)
