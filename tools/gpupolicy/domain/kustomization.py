"""Facts of kustomize's files that every layer reads: the names a kustomization file may have, the annotation
that records a rendered object's source file, and which file is a cluster's overlay.

Moved here unchanged from kustomize.py and build.py (issue 30), so rules and docs read them without importing
the render and model stages.
"""

from __future__ import annotations

from ..infra import repopath

KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
ORIGIN_ANNOTATION = "config.kubernetes.io/origin"
# The sync engines a cluster may declare (cluster.yaml spec.syncEngine, schemas/repo/cluster.yaml) and the
# shared folder that holds each engine's operator installs, policies/sync/<engine>/: a cluster includes its
# own.
SYNC_ENGINES = ("flux", "argocd")
SYNC_DIR = "policies/sync"


def for_an_unused_sync_engine(rel: str, engines_in_use: set[str]) -> bool:
    """Whether repo-relative `rel` is under the folder of a sync engine no cluster declares: a fork that runs
    only Flux keeps the Argo CD folder for later, and it is no overlay's input by design."""
    folder, _, rest = rel.partition(f"{SYNC_DIR}/")
    engine = rest.split("/", 1)[0]
    return folder == "" and "/" in rest and engine in SYNC_ENGINES and engine not in engines_in_use


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
