"""A DCGM violation counter is converted, or described, with the wrong time unit.

## Why it matters
DCGM's violation fields count the time a GPU was held back, in **nanoseconds**: NVIDIA/DCGM tag `v4.6.0`
(the DCGM of dcgm-exporter 4.6.0-4.8.3, which GPU Operator v26.7.0 pins), `dcgmlib/dcgm_fields.h` lines
828-836: "Power Violation time in ns" (`DCGM_FI_DEV_POWER_VIOLATION`, 240), "Thermal Violation time in ns"
(241), "Sync Boost Violation time in ns" (242); and dcgm-exporter tag `4.5.3-4.8.2` (and `main`),
`etc/default-counters.csv` and `etc/dcp-metrics-included.csv` lines 30-35: "Throttling duration due to power /
thermal / sync-boost / board limit constraints / low utilization / reliability constraints (in ns)". The
exporter reports the field as is, so `rate(counter[5m])` is nanoseconds of throttling per second:
`/ 1e9` gives the share of each second the GPU was throttled (0-1, Grafana unit `percentunit`) or seconds per
second. `/ 1e6` (microseconds) shows 1000 times too much, `/ 1e3` a million times.

| counter | unit | source |
|---|---|---|
| `DCGM_FI_DEV_POWER_VIOLATION` | ns | dcgm_fields.h (240); default-counters.csv line 30 |
| `DCGM_FI_DEV_THERMAL_VIOLATION` | ns | dcgm_fields.h (241); default-counters.csv line 31 |
| `DCGM_FI_DEV_SYNC_BOOST_VIOLATION` | ns | dcgm_fields.h (242); default-counters.csv line 32 |
| `DCGM_FI_DEV_BOARD_LIMIT_VIOLATION` | ns | default-counters.csv line 33 |
| `DCGM_FI_DEV_LOW_UTIL_VIOLATION` | ns | default-counters.csv line 34 |
| `DCGM_FI_DEV_RELIABILITY_VIOLATION` | ns | default-counters.csv line 35 |

This rule reports a dashboard target or alert expression that reads one of these counters and divides (or
multiplies) it by a power of ten other than 1e9 to make seconds (`/ 1e6`, `/ 1000000`, `* 1e-6`, `/ 1e3`), and
a line of the dcgm-metrics counters file whose help text states a unit other than ns for one of them (`(in
us)`, `microseconds`, `ms`).

## Bad example
```json
"expr": "rate(DCGM_FI_DEV_POWER_VIOLATION[5m]) / 1e6"
```
```csv
DCGM_FI_DEV_POWER_VIOLATION, counter, Throttling duration due to power constraints (in us).
```

## Fix
`rate(DCGM_FI_DEV_POWER_VIOLATION[5m]) / 1e9` (unit `percentunit`), and `(in ns)` in the help text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

from ..domain.observability import (
    DCGM_CSV_KEY,
    alerts_of_cluster,
    dashboard_location,
    dashboard_queries,
    dashboards_of,
    dcgm_config_of,
    dcgm_configmap,
    generated_file,
    locate,
    metric_names,
)
from ..findings import Finding, Location, Severity, at
from ..model import Cluster, Fleet

ID = "WL010"
SEVERITY = Severity.ERROR
SUMMARY = "A DCGM violation counter (nanoseconds) is converted or described with another time unit"

# Counter -> unit (table and sources in the docstring).
COUNTER_UNITS: dict[str, str] = {
    "DCGM_FI_DEV_POWER_VIOLATION": "ns",
    "DCGM_FI_DEV_THERMAL_VIOLATION": "ns",
    "DCGM_FI_DEV_SYNC_BOOST_VIOLATION": "ns",
    "DCGM_FI_DEV_BOARD_LIMIT_VIOLATION": "ns",
    "DCGM_FI_DEV_LOW_UTIL_VIOLATION": "ns",
    "DCGM_FI_DEV_RELIABILITY_VIOLATION": "ns",
}
TO_SECONDS = {"ns": 1e9}

# `/ 1e6`, `/1000000`, `* 1e-6`, `/ 1000`: an operator and a number that is a power of ten.
_SCALE = re.compile(r"([*/])\s*(\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)(?![\w.])")
# A time unit in a help text: `(in us)`, `in microseconds`, `(ms)`, `nanoseconds`.
_HELP_UNIT = re.compile(
    r"\b(?:in\s+)?(ns|nanoseconds?|us|µs|usec|microseconds?|ms|msec|milliseconds?|s|sec|"
    r"seconds?)\b(?=\s*[).,;]|\s*$)",
    re.I,
)
_UNIT_NAMES = {
    "ns": "ns",
    "nanosecond": "ns",
    "nanoseconds": "ns",
    "us": "us",
    "µs": "us",
    "usec": "us",
    "microsecond": "us",
    "microseconds": "us",
    "ms": "ms",
    "msec": "ms",
    "millisecond": "ms",
    "milliseconds": "ms",
    "s": "s",
    "sec": "s",
    "second": "s",
    "seconds": "s",
}


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        yield from _check_csv(fleet, cluster)
        for alert in alerts_of_cluster(cluster):
            problem = wrong_conversion(alert.expr)
            if problem:
                yield Finding(
                    rule=ID,
                    severity=SEVERITY,
                    cluster=cluster.name,
                    **at(locate(fleet, alert.obj, *alert.path, "expr")),
                    message=f"alert {alert.name}: {problem}",
                    hint=_HINT,
                )
        for dashboard in dashboards_of(cluster):
            for query in dashboard_queries(dashboard.data) if dashboard.data is not None else []:
                problem = wrong_conversion(query.expr)
                if problem:
                    yield Finding(
                        rule=ID,
                        severity=SEVERITY,
                        cluster=cluster.name,
                        **at(dashboard_location(fleet, dashboard.obj, dashboard.key, query.path)),
                        message=f"dashboard {dashboard.key}, panel {query.panel!r}: {problem}",
                        hint=_HINT,
                    )


_HINT = (
    "divide the rate by 1e9 (share of each second, unit percentunit); DCGM violation counters are nanoseconds"
)


def wrong_conversion(expr: str) -> str:
    """Why an expression converts a violation counter with a factor other than 1e9, or ''."""
    counters = [m for m in metric_names(expr) if m in COUNTER_UNITS]
    if not counters:
        return ""
    for operator, number in _SCALE.findall(expr):
        factor = float(number)
        if operator == "*" and factor:
            factor = 1 / factor
        if not _is_power_of_ten(factor) or factor == 1:
            continue
        expected = TO_SECONDS[COUNTER_UNITS[counters[0]]]
        if abs(factor - expected) / expected > 1e-9:
            return (
                f"converts {counters[0]} (counted in {COUNTER_UNITS[counters[0]]}) to seconds with "
                f"{operator} {number}, a factor of {factor:g} instead of {expected:g}"
            )
    return ""


def _is_power_of_ten(value: float) -> bool:
    if value <= 0:
        return False
    exponent = round(math.log10(value))
    return exponent != 0 and abs(value - 10.0**exponent) <= 1e-9 * 10.0**exponent


def _check_csv(fleet: Fleet, cluster: Cluster) -> Iterator[Finding]:
    config = dcgm_config_of(cluster)
    if config is None:
        return
    obj = dcgm_configmap(cluster)
    source = generated_file(fleet, obj, DCGM_CSV_KEY) if obj else None
    for counter in config.counters:
        unit = COUNTER_UNITS.get(counter.field)
        stated = help_unit(counter.help)
        if unit is None or stated is None or stated == unit:
            continue
        where = Location(source, counter.line) if source else locate(fleet, obj, "data", DCGM_CSV_KEY)
        yield Finding(
            rule=ID,
            severity=SEVERITY,
            cluster=cluster.name,
            **at(where),
            message=f"{DCGM_CSV_KEY} line {counter.line}: the help text of {counter.field} says "
            f"{stated}, but DCGM counts it in {unit}",
            hint=f"write '(in {unit})': the help text is what Prometheus and Grafana show as the unit",
        )


def help_unit(text: str) -> str | None:
    """The time unit a help text states (`ns`, `us`, `ms`, `s`), or None."""
    match = _HELP_UNIT.search(text)
    return _UNIT_NAMES.get(match.group(1).lower()) if match else None
