"""The mig-parted config does not follow mig-parted's format.

## Why it matters
The MIG manager parses the whole mig-parted file (`version: v1`, `mig-configs: {name: [entry, ...]}`) before
it applies any layout, and mig-parted rejects unknown fields, a missing `devices` or `mig-enabled`, counts
that are not whole numbers, profile names outside its grammar (`1g.10gb`, `1g.10gb+me`, `1c.2g.20gb`), a
layout whose counts are all zero, and an entry with `mig-enabled: false` that still lists `mig-devices`. One
bad entry in one layout that no pool uses still fails every node's reconfiguration in every cluster that
renders the file, and the nodes stay in `nvidia.com/mig.config.state=failed`. Format facts: NVIDIA/mig-parted
`api/spec/v1`.

## Bad example
```yaml
version: v1
mig-configs:
  all-1g.10gb:
    - devices: all
      mig-enable: true        # the field is mig-enabled
      mig-devices:
        "1g.10gb": 7
```

## Fix
Correct the field the finding names; `gpupolicy mig check FILE` checks a file on its own.
"""

from collections.abc import Iterator

import yaml

from ..domain import mig
from ..findings import Finding, Location, Severity, at
from ..model import Cluster, ConfigEntry, Fleet, K8sObject
from .mig_common import is_config_file, mig_configmap_name

ID = "MIG009"
SEVERITY = Severity.ERROR
SUMMARY = "mig-parted config does not follow mig-parted's format"


HINT = "mig-parted rejects the whole file; `gpupolicy mig check FILE` checks it alone"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for path, entries in _by_source(cluster).items():
            for problem, location in _problems(fleet, path, entries):
                yield Finding(
                    rule=ID,
                    severity=SEVERITY,
                    cluster=cluster.name,
                    message=problem.message,
                    hint=HINT,
                    **at(location),
                )
        if not cluster.mig_configs:
            yield from _without_layouts(fleet, cluster)


def _without_layouts(fleet: Fleet, cluster: Cluster) -> Iterator[Finding]:
    """A mig-parted ConfigMap from which no layout could be read: its config.yaml is not a mig-parted
    document."""
    configmap = _mig_configmap(cluster)
    if configmap is None:
        return  # no ConfigMap at all: MIG004 and MIG006 say what that breaks
    text = (configmap.body.get("data") or {}).get("config.yaml")
    try:
        data = yaml.safe_load(text) if isinstance(text, str) else None
    except yaml.YAMLError as error:
        problems = [mig.Problem("error", "schema", f"config.yaml is not YAML: {error}")]
    else:
        problems = (
            mig.parse_config(data)[1]
            if text is not None
            else [
                mig.Problem(
                    "error",
                    "schema",
                    "the ConfigMap has no key config.yaml, the only key the MIG manager reads",
                )
            ]
        )
    for problem in problems:
        yield Finding(
            rule=ID,
            severity=SEVERITY,
            cluster=cluster.name,
            message=f"ConfigMap {configmap.namespace}/{configmap.name}: {problem.message}",
            hint=HINT,
            **at(fleet.locate(configmap) or Location(configmap.origin, 0)),
        )


def _mig_configmap(cluster: Cluster) -> K8sObject | None:
    name = mig_configmap_name(cluster)
    return next(
        (
            obj
            for obj in cluster.objects
            if obj.kind == "ConfigMap" and obj.name == name and obj.namespace in ("gpu-operator", "")
        ),
        None,
    )


def _by_source(cluster: Cluster) -> dict[str, dict[str, ConfigEntry]]:
    files: dict[str, dict[str, ConfigEntry]] = {}
    for name, entry in cluster.mig_configs.items():
        files.setdefault(entry.source.path, {})[name] = entry
    return files


def _problems(
    fleet: Fleet, path: str, entries: dict[str, ConfigEntry]
) -> Iterator[tuple[mig.Problem, Location]]:
    """Schema problems of the file, each with its line: exact in a generator file, the layout's line when the
    config is written inline in a ConfigMap."""
    direct = is_config_file(fleet, path)
    if direct:
        data = fleet.locator.docs(path)[0].data
    else:
        data = {"version": "v1", "mig-configs": {name: entry.data for name, entry in entries.items()}}
    config, problems = mig.parse_config(data)
    for problem in problems + _disabled_with_devices(config):
        yield problem, fleet.locate_file(path, *problem.path) if direct else _layout_line(entries, problem)


def _layout_line(entries: dict[str, ConfigEntry], problem: mig.Problem) -> Location:
    entry = entries.get(problem.layout) or next(iter(entries.values()))
    return entry.source


def _disabled_with_devices(config: mig.MigConfig | None) -> list[mig.Problem]:
    found = []
    for name, layout in config.layouts.items() if config else ():
        for entry in layout:
            if not entry.mig_enabled and entry.mig_devices:
                found.append(
                    mig.Problem(
                        "error",
                        "disabled-with-devices",
                        f"{name}[{entry.index}]: mig-enabled is false but mig-devices lists "
                        f"{', '.join(entry.mig_devices)}; mig-parted rejects this",
                        ("mig-configs", name, entry.index, "mig-devices"),
                        name,
                    )
                )
    return found
