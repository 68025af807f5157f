"""Facts of kustomize's files that every layer reads: the names a kustomization file may have, the annotation
that records a rendered object's source file, and which file is a cluster's overlay.

Moved here unchanged from kustomize.py and build.py (issue 30), so rules and docs read them without importing
the render and model stages.
"""

from __future__ import annotations

from ..infra import repopath

KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
ORIGIN_ANNOTATION = "config.kubernetes.io/origin"


def overlay_file(root: str, cluster: str) -> str:
    """The repo-relative kustomization file of a cluster's overlay ("" when it has none)."""
    for name in KUSTOMIZATION_NAMES:
        rel = f"clusters/{cluster}/{name}"
        try:
            repopath.regular_file(root, rel)
        except repopath.Refused:
            continue
        return rel
    return ""
