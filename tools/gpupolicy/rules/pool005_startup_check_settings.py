"""The GPU startup check's settings table, in a cluster that ships the check, does not say what pool.yaml
says.

## Why it matters
Every team GPU pod runs `gpu-startup-check` first (decision 0051). The check reads its pool's settings from
`pools.conf` in ConfigMap `gpu-startup-check`, which the Kustomize component `policies/startup-check`
generates into each team namespace. `pool.yaml` `spec.startupCheck` is where a pool's settings are declared; a
table that lags behind it applies other thresholds, retries or `skip` than the pull request shows, silently. A
team namespace without the ConfigMap is worse: its GPU pods cannot mount the check's volume and never start.
And two pools with the same GPU product and sharing family (MIG or not) cannot be told apart on the node, in
whichever clusters they are (the table is the fleet's): the check applies the first matching line's settings
to both. A pool whose GPU model the catalog does not know is left to POOL001: its product word would be a
guess.

## Bad example
```yaml
# pools/us-h100-train/pool.yaml
spec:
  startupCheck:
    retries: 5          # policies/startup-check/pools.conf still says 3
```

## Fix
Rewrite the pool's line of `policies/startup-check/pools.conf` (`gpupolicy.domain.startupcheck.table_lines`
writes the table), include `../../startup-check` in every team kustomization, and give pools the check cannot
tell apart the same `startupCheck` settings.
"""

from collections.abc import Iterator

from ..domain.startupcheck import COLUMNS, CONFIGMAP_NAME, line_family, read_table, table_fields
from ..findings import Finding, Severity, at
from ..model import Cluster, Fleet, K8sObject, Pool
from .mig_common import model_of

ID = "POOL005"
SEVERITY = Severity.ERROR
SUMMARY = "The GPU startup check's settings table agrees with pool.yaml and is in every team namespace"
TABLE_KEY = "pools.conf"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        tables = {o.namespace: o for o in cluster.of_kind("ConfigMap") if o.name == CONFIGMAP_NAME}
        if not tables:
            continue  # the cluster does not ship the check
        yield from _missing_in_team_namespaces(fleet, cluster, tables)
        table = _table(min(tables.values(), key=lambda o: o.namespace))  # one component: one table for all
        # A pool of a model the catalog does not know has no product word to compare (POOL001 names the
        # model); guessing one would send the user to pools.conf instead of to the typo.
        known = [pool for pool in cluster.pools if model_of(pool) is not None]
        yield from _disagreements(fleet, cluster, known, table)
        yield from _indistinguishable(fleet, cluster, known, table)


def _missing_in_team_namespaces(fleet: Fleet, cluster: Cluster, tables: dict) -> Iterator[Finding]:
    for namespace in sorted(cluster.namespaces.values(), key=lambda n: n.name):
        if namespace.team and namespace.name not in tables:
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster.name,
                message=f"team namespace {namespace.name} has no ConfigMap {CONFIGMAP_NAME}: its "
                "GPU pods "
                "cannot mount the startup check and never start",
                hint="include ../../startup-check in the team's kustomization (components:)",
                **at(fleet.locate(namespace.obj, "metadata", "name")),
            )


def _table(configmap: K8sObject) -> dict[str, tuple[str, ...]]:
    data = configmap.body.get("data") if isinstance(configmap.body.get("data"), dict) else {}
    return read_table(str(data.get(TABLE_KEY, "")))


def _disagreements(
    fleet: Fleet, cluster: Cluster, pools: list[Pool], table: dict[str, tuple[str, ...]]
) -> Iterator[Finding]:
    for pool in pools:
        expected = table_fields(pool)
        shipped = table.get(pool.name)
        if shipped == expected:
            continue
        said = "has no line for it" if shipped is None else f"says {_differences(shipped, expected)}"
        yield Finding(
            rule=ID,
            severity=SEVERITY,
            cluster=cluster.name,
            message=f"pool {pool.name}: {TABLE_KEY} of ConfigMap {CONFIGMAP_NAME} {said}; the "
            "startup "
            "check applies the table, not pool.yaml",
            hint=f"write the line `{'  '.join(expected)}` in policies/startup-check/{TABLE_KEY}",
            **at(_settings_place(fleet, pool)),
        )


def _indistinguishable(
    fleet: Fleet, cluster: Cluster, pools: list[Pool], table: dict[str, tuple[str, ...]]
) -> Iterator[Finding]:
    """A pool whose devices can match another line of the table (same product, same MIG-or-not) with other
    settings: the table is the same in every cluster, so the other pool may live in any cluster."""
    for pool in sorted(pools, key=lambda p: p.name):
        expected = table_fields(pool)
        family = line_family(expected)
        other = next(
            (
                line
                for name, line in sorted(table.items())
                if name != pool.name
                and len(line) == len(COLUMNS)
                and line_family(line) == family
                and line[1:] != expected[1:]
            ),
            None,
        )
        if other is None:
            continue
        yield Finding(
            rule=ID,
            severity=SEVERITY,
            cluster=cluster.name,
            message=f"pools {pool.name} and {other[0]} both have {family[0]} GPUs"
            f"{' in MIG mode' if family[1] else ''} but different startup-check settings "
            f"or sharing ({_differences(other, expected)}); on the node the check cannot tell them "
            f"apart and may apply {other[0]}'s line to {pool.name}'s devices",
            hint=f"give {pool.name} and {other[0]} the same startupCheck settings",
            **at(_settings_place(fleet, pool)),
        )


def _settings_place(fleet: Fleet, pool: Pool):
    return fleet.locate_file(pool.path, "spec", "startupCheck")


def _differences(shipped: tuple[str, ...], expected: tuple[str, ...]) -> str:
    """`retries 3 (pool.yaml: 5)` for each column that differs (a short line differs in every missing
    column)."""
    padded = shipped + ("(none)",) * (len(expected) - len(shipped))
    return ", ".join(
        f"{name} {have} (pool.yaml: {want})"
        for name, have, want in zip(COLUMNS[1:], padded[1:], expected[1:], strict=False)
        if have != want
    )
