"""The peers `bench/run.py` compares `gpupolicy validate` with, on exactly the same objects.

- **command against command** (the figure to quote): the `kubernetes-validate --strict` command on a file of
  rendered core objects (the only ones it can check: it has no schemas for custom resources), against the
  `gpupolicy validate` command on a one-cluster repository whose overlay renders that same file. Both start an
  interpreter, read and parse the objects and validate them; ours also runs its fleet rules. kubectl does not
  run in the timed runs of ours (the render cache is warm: kubernetes-validate renders nothing either), every
  other cache of ours is cold (its parse cache is deleted before each run).
- **kept validators**: what a competent hand-written validator does with the same `jsonschema` library
  kubernetes-validate uses: one validator per kind, built once, on the same objects, in process; against our
  `SchemaSet` (jsonschema-rs) on the same objects, in process, compilation included on both sides.
Each is measured `REPEATS` times in a row; ratios are medians over medians, with the min and max of the
per-repeat ratios.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from gpupolicy.infra.schema import check as schema

PEER_KUBERNETES_VERSION = "1.33.0"
OUR_KUBERNETES_VERSION = "1.33"
REPEATS = 3
ORIGIN_ANNOTATION = "config.kubernetes.io/origin"  # kustomize adds it again when it renders the sample
SAMPLE_CLUSTER = "sample"


def spread(values: list[float], digits: int = 3) -> dict:
    """min / median / max of repeated measurements, and every one of them."""
    return {
        "min": round(min(values), digits),
        "median": round(statistics.median(values), digits),
        "max": round(max(values), digits),
        "runs": [round(v, digits) for v in values],
    }


def ratio_spread(theirs: list[float], ours: list[float], digits: int = 1) -> dict:
    """Their time over ours: the median over the median, and the lowest and highest of the per-repeat
    ratios."""
    per_repeat = [t / max(o, 1e-9) for t, o in zip(theirs, ours, strict=True)]
    return {
        "min": round(min(per_repeat), digits),
        "median": round(statistics.median(theirs) / max(statistics.median(ours), 1e-9), digits),
        "max": round(max(per_repeat), digits),
    }


def timed(action: Callable[[], object], repeats: int = REPEATS) -> tuple[list[float], object]:
    """Wall seconds of each of `repeats` runs of `action`, and the last run's result."""
    seconds, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = action()
        seconds.append(time.perf_counter() - start)
    return seconds, result


# --- the objects both sides get
# ------------------------------------------------------------------------------


def peer_checkable(bodies: list[dict]) -> list[dict]:
    """The objects kubernetes-validate has a strict schema for (the core kinds): the same file lookup it
    makes."""
    folder = schema.core_schema_dir(PEER_KUBERNETES_VERSION)
    known: dict[tuple[str, str], bool] = {}
    kept = []
    for body in bodies:
        key = (str(body.get("apiVersion")), str(body.get("kind")))
        if key not in known:
            known[key] = schema.is_core_group(key[0]) and (folder / schema.core_file_name(*key)).is_file()
        if known[key]:
            kept.append(body)
    return kept


def distinct_sample(bodies: list[dict], size: int, seed: int = 7) -> list[dict]:
    """A seeded sample of at most `size` objects with distinct identities, without the origin annotation
    kustomize writes again. kustomize refuses two objects of one identity, and the fleet's clusters share most
    names (the shared policy is the same object in every cluster), so the sample is one of each: renamed
    copies
    would make an unreal cluster (six copies of every admission policy, each evaluated for every team)."""
    import random

    by_identity: dict[tuple, dict] = {}
    for body in bodies:
        metadata = body.get("metadata") or {}
        identity = (body.get("apiVersion"), body.get("kind"), metadata.get("namespace"), metadata.get("name"))
        by_identity.setdefault(identity, body)
    unique = [by_identity[key] for key in sorted(by_identity, key=repr)]
    chosen = random.Random(seed).sample(unique, size) if len(unique) > size else unique
    return [_without_origin(body) for body in chosen]


def _without_origin(body: dict) -> dict:
    copy = dict(body)
    metadata = dict(copy.get("metadata") or {})
    annotations = {k: v for k, v in (metadata.get("annotations") or {}).items() if k != ORIGIN_ANNOTATION}
    if annotations:
        metadata["annotations"] = annotations
    else:
        metadata.pop("annotations", None)
    copy["metadata"] = metadata
    return copy


def write_sample_repository(root: Path, fleet: Path, objects: list[dict]) -> Path:
    """A one-cluster repository whose overlay renders exactly `objects` (its cluster facts are those of the
    fleet's first cluster); returns the objects file, which kubernetes-validate reads as it is."""
    first = sorted(path for path in (fleet / "clusters").iterdir() if (path / "cluster.yaml").is_file())[0]
    cluster = root / "clusters" / SAMPLE_CLUSTER
    cluster.mkdir(parents=True)
    facts = yaml.safe_load((first / "cluster.yaml").read_text())
    facts["metadata"]["name"] = SAMPLE_CLUSTER
    (cluster / "cluster.yaml").write_text(yaml.safe_dump(facts, sort_keys=False))
    (cluster / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nbuildMetadata:\n  - "
        "originAnnotations\nresources:\n  - objects.yaml\n"
    )
    objects_file = cluster / "objects.yaml"
    objects_file.write_text(yaml.safe_dump_all(objects, sort_keys=False))
    shutil.copyfile(fleet / "mkdocs.yml", root / "mkdocs.yml")
    return objects_file


# --- command against command
# ---------------------------------------------------------------------------------


def command_against_command(
    root: Path, objects_file: Path, objects: int, cache_dir: Path, repeats: int = REPEATS
) -> dict:
    theirs_command = [
        sys.executable,
        "-m",
        "kubernetes_validate",
        "--strict",
        "-k",
        PEER_KUBERNETES_VERSION,
        "--quiet",
        str(objects_file),
    ]
    ours_command = [sys.executable, "-m", "gpupolicy", "validate", "--repo", str(root), "--format", "json"]
    environment = {**_environment(), "GPUPOLICY_CACHE_DIR": str(cache_dir)}
    warm_up = subprocess.run(ours_command, capture_output=True, text=True, env=environment, check=False)
    rendered = json.loads(warm_up.stdout or "{}").get("summary", {}).get("objects")

    def ours() -> subprocess.CompletedProcess:
        shutil.rmtree(cache_dir / "parsed", ignore_errors=True)  # only the render stays warm
        return subprocess.run(ours_command, capture_output=True, text=True, env=environment, check=False)

    theirs_seconds, their_run = timed(
        lambda: subprocess.run(theirs_command, capture_output=True, text=True, check=False), repeats
    )
    ours_seconds, our_run = timed(ours, repeats)
    # For context: a second run as a user gets it, every cache warm (not the headline).
    warm_seconds, _ = timed(
        lambda: subprocess.run(ours_command, capture_output=True, env=environment, check=False), repeats
    )
    return {
        "objects": objects,
        "ours_rendered_objects": rendered,
        "kubernetes_validate_seconds": spread(theirs_seconds),
        "ours_seconds": spread(ours_seconds),
        "ours_warm_seconds": spread(warm_seconds),
        "ratio_warm_caches": ratio_spread(theirs_seconds, warm_seconds),
        "kubernetes_validate_exit": their_run.returncode,
        "ours_exit": our_run.returncode,
        "kubernetes_validate_ms_per_object": round(1000 * statistics.median(theirs_seconds) / objects, 3),
        "ours_ms_per_object": round(1000 * statistics.median(ours_seconds) / objects, 3),
        "ratio": ratio_spread(theirs_seconds, ours_seconds),
    }


def _environment() -> dict:
    import os

    return {key: value for key, value in os.environ.items() if key != "GPUPOLICY_DEBUG"}


# --- in process: kept jsonschema validators against ours
# -------------------------------------------------------


def kept_validators(sample: list[dict], repeats: int = REPEATS) -> dict:
    """The `jsonschema` library with one validator per kind kept (kubernetes-validate builds one per object),
    against our SchemaSet, on the same objects, each built fresh per repeat (compilation included)."""
    theirs_seconds, their_invalid = timed(lambda: _jsonschema_kept(sample), repeats)
    ours_seconds, our_errors = timed(lambda: _ours_in_process(sample), repeats)
    return {
        "objects": len(sample),
        "jsonschema_seconds": spread(theirs_seconds, 4),
        "ours_seconds": spread(ours_seconds, 4),
        "jsonschema_invalid": their_invalid,
        "ours_invalid": our_errors,
        "jsonschema_ms_per_object": round(1000 * statistics.median(theirs_seconds) / max(len(sample), 1), 4),
        "ours_ms_per_object": round(1000 * statistics.median(ours_seconds) / max(len(sample), 1), 4),
        "ratio": ratio_spread(theirs_seconds, ours_seconds),
    }


def _jsonschema_kept(sample: list[dict]) -> int:
    import jsonschema
    from referencing import Registry, Resource

    folder = schema.core_schema_dir(PEER_KUBERNETES_VERSION)
    definitions = Resource.from_contents(json.loads((folder / "_definitions.json").read_text()))
    validators: dict[tuple[str, str], jsonschema.Validator] = {}
    invalid = 0
    for body in sample:
        key = (str(body["apiVersion"]), str(body["kind"]))
        if key not in validators:
            contents = json.loads((folder / schema.core_file_name(*key)).read_text())
            registry = definitions @ (Resource.from_contents(contents) @ Registry())
            validators[key] = jsonschema.Draft202012Validator(contents, registry=registry)
        invalid += not validators[key].is_valid(body)
    return invalid


def _ours_in_process(sample: list[dict]) -> int:
    schemas = schema.SchemaSet()
    return sum(bool(schemas.validate(body, OUR_KUBERNETES_VERSION)) for body in sample)


# --- fixed costs: small repositories and the command line
# ------------------------------------------------------

IMPORT_FLOOR = "import gpupolicy.commands.validate, gpupolicy.rules as r; r.all_rules()"


def fixed_costs(repository: Path, cache_dir: Path, repeats: int = 5) -> dict:
    """A warm `gpupolicy validate` of `repository` (this one) against its floor: a process that starts and
    imports everything a validate run imports (the rules included), which no warm run avoids without a
    resident process; and `gpupolicy --help` against `yamllint --version`, the other linter a pre-commit hook
    starts."""
    environment = {**_environment(), "GPUPOLICY_CACHE_DIR": str(cache_dir)}
    validate = [sys.executable, "-m", "gpupolicy", "validate", "--repo", str(repository)]
    subprocess.run(validate, capture_output=True, env=environment, check=False)  # warm the caches

    def command(argv: list[str]) -> Callable[[], object]:
        return lambda: subprocess.run(argv, capture_output=True, env=environment, check=False)

    warm, _ = timed(command(validate), repeats)
    floor, _ = timed(command([sys.executable, "-c", IMPORT_FLOOR]), repeats)
    help_seconds, _ = timed(command([sys.executable, "-m", "gpupolicy", "--help"]), repeats)
    yamllint, _ = timed(command([str(Path(sys.executable).parent / "yamllint"), "--version"]), repeats)
    return {
        "warm_validate_seconds": spread(warm),
        "floor_seconds": spread(floor),
        "warm_over_floor": ratio_spread(warm, floor, 2),
        "help_seconds": spread(help_seconds),
        "yamllint_version_seconds": spread(yamllint),
        "help_over_yamllint": ratio_spread(help_seconds, yamllint, 2),
    }
