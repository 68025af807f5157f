"""A check that crashed is an error finding, never a line on stderr only.

When a rule or a pipeline stage raises, the run goes on (one bug must not hide every other finding), but the
crash becomes an `INTERNAL` finding that names the check and, where the traceback shows it, the object the
check was looking at. Every output format counts it, the text summary is never "ok", and the run exits 2.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator
from types import TracebackType
from typing import Any, TypeVar

from .findings import Finding, Location, Severity

INTERNAL = "INTERNAL"
DEBUG_ENV = "GPUPOLICY_DEBUG"
HINT = (
    "this is a bug in gpupolicy, not in the repository: please report it with this message "
    f"(run with {DEBUG_ENV}=1 for the traceback); the check did not run, so its findings are missing"
)
MESSAGE_LIMIT = 300
T = TypeVar("T")


def crashes(findings: Iterable[Finding]) -> list[Finding]:
    """The INTERNAL findings among `findings`: checks that crashed, so the run did not do its whole job."""
    return [f for f in findings if f.rule == INTERNAL]


def debugging() -> bool:
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")


def describe(exc: BaseException) -> str:
    """`ExcType: message` on one line, cut short: an exception may carry a whole document in its text."""
    text = " ".join(str(exc).split())
    if len(text) > MESSAGE_LIMIT:
        text = text[: MESSAGE_LIMIT - 3] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def crash_finding(
    check: str,
    exc: BaseException,
    fleet: Any = None,
    subject: str = "",
    location: Location | None = None,
    cluster: str = "",
) -> Finding:
    """The INTERNAL finding for `check` ("rule CAP001", "stage model") raising `exc`. Without an explicit
    subject, the object is looked up in the traceback: the innermost frame holding a model object."""
    if not subject:
        try:
            subject, found_location, found_cluster = _subject_from(exc.__traceback__, fleet)
        except Exception:  # noqa: BLE001 - reporting a crash must not crash: the finding goes without a subject
            subject, found_location, found_cluster = "", None, ""
        location = location or found_location
        cluster = cluster or found_cluster
    if debugging():
        traceback.print_exception(exc, file=sys.stderr)
    checking = f" while checking {subject}" if subject else ""
    return Finding(
        INTERNAL,
        Severity.ERROR,
        f"{check} crashed: {describe(exc)}{checking}",
        location.path if location else "",
        location.line if location else 0,
        cluster,
        HINT,
    )


def guarded(
    findings: list[Finding],
    check: str,
    call: Callable[..., T],
    *args: Any,
    default: Any = None,
    subject: str = "",
    location: Location | None = None,
    cluster: str = "",
) -> T:
    """`call(*args)`, or `default` plus an INTERNAL finding in `findings` when it raises."""
    try:
        return call(*args)
    except Exception as exc:  # noqa: BLE001 - any bug in a check becomes a finding, not a traceback
        findings.append(crash_finding(check, exc, subject=subject, location=location, cluster=cluster))
        return default


# --- what was being checked ------------------------------------------------------------------------------


def _subject_from(tb: TracebackType | None, fleet: Any) -> tuple[str, Location | None, str]:
    """(description, location, cluster) of the innermost model object a frame of the crash was working on."""
    cluster = ""
    for frame_locals in _frames_innermost_first(tb):
        for value in frame_locals.values():
            found = _describe_value(value, fleet)
            if found is not None:
                return found
            cluster = cluster or _cluster_name(value)
    return (f"cluster {cluster}", None, cluster) if cluster else ("", None, "")


def _frames_innermost_first(tb: TracebackType | None) -> Iterator[dict]:
    """Locals of the frames between the guard that caught the exception and where it was raised."""
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame.f_locals)
        tb = tb.tb_next
    return reversed(frames)


def _describe_value(value: Any, fleet: Any) -> tuple[str, Location | None, str] | None:
    from .model import ConfigEntry, K8sObject, Pool

    obj = value if isinstance(value, K8sObject) else getattr(value, "obj", None)
    if isinstance(obj, K8sObject):
        location = _locate(fleet, obj) or (Location(obj.origin, 0) if obj.origin else None)
        return obj.ref(), location, obj.cluster
    if isinstance(value, Pool):
        return f"pool {value.name}", Location(value.path, 1), ""
    if isinstance(value, ConfigEntry):
        return f"ConfigMap {value.configmap} key {value.key}", value.source, ""
    return None


def _locate(fleet: Any, obj: Any) -> Location | None:
    try:
        return fleet.locate(obj) if fleet is not None else None
    except Exception:  # noqa: BLE001 - the locator is best effort here; the crash itself is the finding
        return None


def _cluster_name(value: Any) -> str:
    from .model import Cluster

    return value.name if isinstance(value, Cluster) else ""
