"""An object's origin annotation names a file outside the repository, or one that is not a readable file.

## Why it matters
The toolkit maps each rendered object back to its source file through kustomize's
`config.kubernetes.io/origin` annotation. That is an ordinary annotation: a `commonAnnotations` line or a
patch in an overlay can set it to anything, and kustomize keeps the value it finds. Pointed at `/etc/passwd`,
at a file in another checkout or at `/dev/zero`, it would make the toolkit read files it has no business
reading, show their lines in findings, or hang. The toolkit refuses such paths (it never opens them) and
points the objects' findings at the overlay's kustomization instead; this finding says why.

## Bad example
```yaml
# clusters/prod-a/kustomization.yaml
buildMetadata: [originAnnotations]
commonAnnotations:
  config.kubernetes.io/origin: "path: /etc/passwd"
```

## Fix
Do not set `config.kubernetes.io/origin` yourself: `buildMetadata: [originAnnotations]` makes kustomize
record the real source file of every object.
"""

from collections.abc import Iterator

from ..domain.kustomization import ORIGIN_ANNOTATION, overlay_file
from ..findings import Finding, Severity
from ..infra import repopath
from ..model import Fleet, K8sObject

ID = "KUST009"
SEVERITY = Severity.ERROR
SUMMARY = "An origin annotation names a file outside the repository"
HINT = "do not set config.kubernetes.io/origin; buildMetadata: [originAnnotations] records the real source"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        refused: dict[str, tuple[str, list[K8sObject]]] = {}  # annotation value -> (why, objects)
        for obj in cluster.objects:
            reason = _refusal(fleet, obj)
            if reason:
                value = _annotation(obj)
                refused.setdefault(value, (reason, []))[1].append(obj)
        overlay = overlay_file(fleet.root, cluster.name)
        for value, (reason, objects) in sorted(refused.items()):
            shown = " ".join(value.split())[:200]
            yield Finding(
                ID,
                SEVERITY,
                f"{len(objects)} object(s) (first: {objects[0].ref()}) carry the "
                f"origin annotation {shown!r}: {reason}; their findings point at this overlay",
                overlay,
                _line(fleet, overlay),
                cluster=cluster.name,
                hint=HINT,
            )


def _annotation(obj: K8sObject) -> str:
    annotations = (obj.body.get("metadata") or {}).get("annotations")
    value = annotations.get(ORIGIN_ANNOTATION) if isinstance(annotations, dict) else None
    return value if isinstance(value, str) else ""


def _refusal(fleet: Fleet, obj: K8sObject) -> str:
    """Why the boundary refuses the file the object's origin annotation names ("" when it does not): refused
    as a path when the object was built, or (inside the repository) not a regular file we may read."""
    if obj.origin_refused or not obj.origin:
        return obj.origin_refused
    return fleet.memo(("origin-refusal", obj.origin), lambda: _file_refusal(fleet.root, obj.origin))


def _file_refusal(root: str, rel: str) -> str:
    try:
        repopath.regular_file(root, rel)
    except repopath.Refused as refusal:
        return str(refusal)
    return ""


def _line(fleet: Fleet, overlay: str) -> int:
    """The overlay's `commonAnnotations` origin line when it sets one there, else its first line."""
    if not overlay:
        return 0
    return fleet.locate_file(overlay, "commonAnnotations", ORIGIN_ANNOTATION).line
