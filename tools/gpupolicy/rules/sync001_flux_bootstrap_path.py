"""A Flux cluster is bootstrapped at its whole overlay folder although the overlay is synced in stages.

## Why it matters
`flux bootstrap` takes `--path`, "path relative to the repository root, when specified the cluster sync will
be scoped to this path" (fluxcd/flux2 `cmd/flux/bootstrap_git.go`). On every run it writes
`<path>/flux-system/gotk-components.yaml` (`pkg/manifestgen/install`) and **overwrites**
`<path>/flux-system/gotk-sync.yaml` (`pkg/bootstrap/bootstrap_plain_git.go`, `ReconcileSyncConfig`:
`fs.WriteFile(...)` with what `pkg/manifestgen/sync/sync.go` `Generate` returns): a GitRepository
`flux-system` and **one** Kustomization `flux-system` with `path: ./<path>`, `prune: true`. It keeps an
existing `<path>/flux-system/kustomization.yaml` (`pkg/manifestgen/kustomization`), and refuses to change the
path of a `flux-system` Kustomization already in the cluster (`pkg/bootstrap/bootstrap.go`,
`kustomizationPathDiffers`).

This repository syncs each overlay `clusters/<name>` in two stages (decision 0010): Kustomization
`<name>-operators` (the HelmReleases that install the CRDs, `wait: true`), then `<name>` (`dependsOn` it),
both over `./clusters/<name>`, split by the label `gpupolicy.io/sync-stage`. Bootstrapped with
`--path=clusters/<name>`, the Kustomization `flux-system` applies the whole overlay in one go as well: Flux
dry-runs every object before applying any, the NVIDIADriver and Kueue objects cannot be dry-run before their
CRDs exist, and the first sync of a new cluster deadlocks; on a running cluster every object gets a second
owner. A hand-kept `gotk-sync.yaml` in `clusters/<name>/flux-system/` does not help: the next `flux bootstrap`
(an upgrade) rewrites it.

This rule looks at every Flux cluster (`cluster.yaml` `syncEngine: flux`) whose overlay is split into stages
(a Flux Kustomization under `clusters/<name>/` with `dependsOn` or a `gpupolicy.io/sync-stage` selector, or a
rendered object with that label) and reports:
- a `flux-system/gotk-sync.yaml` directly under `clusters/<name>/`, where only `--path=clusters/<name>` puts
  it;
- a Kustomization `flux-system` whose `path` is `./clusters/<name>`.

## Bad example
```yaml
# clusters/prod-us/flux-system/gotk-sync.yaml: the folder of `flux bootstrap --path=clusters/prod-us`
kind: Kustomization
metadata: {name: flux-system, namespace: flux-system}
spec:
  path: ./clusters/prod-us
```

## Fix
Bootstrap at a folder that holds only Flux's entry, `clusters/<name>/flux` (docs/operations/sync.md, decision
0028): `flux/flux-system/` (bootstrap's files) and `flux/stages.yaml` (the two stage Kustomizations over
`./clusters/<name>`), and `flux bootstrap git --url=... --branch=main --path=clusters/<name>/flux`. The
overlay does not include `flux/`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..findings import Finding, Severity
from ..model import Fleet

ID = "SYNC001"
SEVERITY = Severity.ERROR
SUMMARY = (
    "A Flux cluster's bootstrap path is its whole overlay folder although the overlay is synced in stages"
)

STAGE_LABEL = "gpupolicy.io/sync-stage"
BOOTSTRAP_NAME = "flux-system"
SYNC_FILE = "flux-system/gotk-sync.yaml"
# The folder the documentation and decision 0028 bootstrap each Flux cluster at.
ENTRY_FOLDER = "flux"


def _is_flux_kustomization(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and data.get("kind") == "Kustomization"
        and str(data.get("apiVersion", "")).startswith("kustomize.toolkit.fluxcd.io/")
    )


def _normalise(path: Any) -> str:
    text = str(path or "").strip()
    if len(text) > 2:
        text = text.rstrip("/")
    return "./" + text.removeprefix("./")


def _mentions_stage_label(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_mentions_stage_label(k) or _mentions_stage_label(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_mentions_stage_label(v) for v in value)
    return isinstance(value, str) and STAGE_LABEL in value


def _is_split(fleet: Fleet, name: str, docs: list) -> bool:
    for doc in docs:
        spec = doc.data.get("spec") if _is_flux_kustomization(doc.data) else None
        if isinstance(spec, dict) and (spec.get("dependsOn") or _mentions_stage_label(spec.get("patches"))):
            return True
    cluster = fleet.clusters.get(name)
    for obj in cluster.objects if cluster else ():
        labels = ((obj.body or {}).get("metadata") or {}).get("labels") or {}
        if isinstance(labels, dict) and STAGE_LABEL in labels:
            return True
    return False


def check(fleet: Fleet) -> Iterator[Finding]:
    for name, cluster in sorted(fleet.clusters.items()):
        if cluster.facts.sync_engine != "flux":
            continue
        folder = f"clusters/{name}"
        docs = [d for d in fleet.documents if d.path.startswith(folder + "/") and isinstance(d.data, dict)]
        if not _is_split(fleet, name, docs):
            continue
        hint = (
            f"bootstrap at {folder}/{ENTRY_FOLDER} (only flux-system/ and the stage Kustomizations), "
            f"`flux bootstrap git --url=... --branch=main --path={folder}/{ENTRY_FOLDER}`; see "
            "docs/operations/sync.md"
        )
        in_overlay_sync_file = [d for d in docs if d.path == f"{folder}/{SYNC_FILE}"]
        if in_overlay_sync_file:
            first = next(
                (d for d in in_overlay_sync_file if _is_flux_kustomization(d.data)), in_overlay_sync_file[0]
            )
            yield Finding(
                ID,
                SEVERITY,
                f"{first.path} is where `flux bootstrap --path={folder}` writes its sync manifest: "
                f"bootstrap rewrites this file as one Kustomization {BOOTSTRAP_NAME} over "
                f"./{folder}, "
                "applying the operators stage and what depends on it together (a dry-run deadlock "
                "on a new cluster, two owners on a running one)",
                first.path,
                _line(first),
                name,
                hint,
            )
        for doc in docs:
            if doc.path == f"{folder}/{SYNC_FILE}" or not _is_flux_kustomization(doc.data):
                continue
            spec = doc.data.get("spec")
            if (
                (doc.data.get("metadata") or {}).get("name") == BOOTSTRAP_NAME
                and isinstance(spec, dict)
                and _normalise(spec.get("path")) == f"./{folder}"
            ):
                yield Finding(
                    ID,
                    SEVERITY,
                    f"the bootstrap Kustomization {BOOTSTRAP_NAME} applies ./{folder}, the whole "
                    f"overlay of {name}, which is synced in stages: it applies the operators stage and what "
                    "depends on it together (a dry-run deadlock on a new cluster, two owners on a "
                    "running one)",
                    doc.path,
                    doc.line_of(("spec", "path")),
                    name,
                    hint,
                )


def _line(doc: Any) -> int:
    """The `spec.path` line of the file's first Flux Kustomization (what bootstrap replaces), else the
    document."""
    if _is_flux_kustomization(doc.data):
        return doc.line_of(("spec", "path"))
    return doc.line


def in_entry_folder(rel: str) -> bool:
    """True for a file of a cluster's Flux bootstrap folder, clusters/<name>/flux/...: applied by Flux's own
    Kustomization flux-system, never by a cluster overlay (so not a KUST005 finding)."""
    parts = rel.split("/")
    return len(parts) > 3 and parts[0] == "clusters" and parts[2] == ENTRY_FOLDER
