"""Admission verdicts kept between runs (decision 0055).

Evaluating the clusters' admission policies with CEL is most of what a warm `validate` does above starting
Python (WL012's matrix, WL011, SEC009 and SEC003 review a few hundred requests). A verdict depends only on the
chain's policies and bindings (in their order), the request, and the code that evaluates them: `cel.py` and
the modules it calls, and the CEL engine. So a run keeps, per chain, the verdict of every request it
reviewed, keyed by a digest of exactly that, and the next run answers a request it has a verdict for without
evaluating anything.

A key is a digest of canonical JSON (sorted keys). A value JSON cannot hold exactly (a key that is not a
string, a tuple, a timestamp, NaN) makes the request or the chain uncacheable, never a key that two
different values share: such a request is evaluated every run. Entries are read and written through
`cachefiles` (length and digest), are plain values, refused over `MAX_ENTRY_BYTES` and believed only in the
exact shape written; anything else is ignored and the verdicts computed again. Each entry holds the verdicts
of the requests the last run reviewed for that chain, so it never grows beyond one run's requests.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from .. import __version__
from ..infra.cache import files as cachefiles
from . import cel

MAX_ENTRY_BYTES = 16 * 1024 * 1024
# What a verdict depends on besides the chain and the request: the code that evaluates it.


class KeptReviews:
    """The verdicts of earlier runs, by chain, and those of this run, to keep for the next.

    `store` is the run's `CacheStore`; `save()` writes the chains this run reviewed a request of that the
    kept entry did not answer."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self._kept: dict[str, dict[str, list]] = {}  # chain key -> request key -> verdict, as read
        self._seen: dict[str, dict[str, list]] = {}  # chain key -> request key -> verdict, this run
        self._missed: set[str] = set()  # chains with a verdict computed this run

    def chain_key(self, bodies: list) -> str | None:
        """The key of a chain made of these policy and binding bodies, in order; None when not cacheable."""
        text = _canonical([_salt(), bodies])
        return None if text is None else hashlib.sha256(text.encode()).hexdigest()

    def review(self, chain_key: str, request: cel.Request, compute: Callable[[], list]) -> list:
        """The chain's violations for `request`: kept, or computed by `compute` (and kept by `save`)."""
        request_key = _request_key(request)
        if request_key is None:
            return compute()
        kept = self._kept_entry(chain_key).get(request_key)
        verdict = kept if kept is not None else compute()
        if kept is None:
            self._missed.add(chain_key)
        self._seen.setdefault(chain_key, {})[request_key] = verdict
        return list(verdict)

    def save(self) -> None:
        for chain_key in sorted(self._missed):
            entry = {key: [_frozen(v) for v in verdict] for key, verdict in self._seen[chain_key].items()}
            self._store.keep_reviews(chain_key, entry, MAX_ENTRY_BYTES)
        self._missed.clear()

    def _kept_entry(self, chain_key: str) -> dict[str, list]:
        if chain_key not in self._kept:
            self._kept[chain_key] = _thawed(self._store.read_reviews(chain_key, MAX_ENTRY_BYTES))
        return self._kept[chain_key]


@cache
def _salt() -> str:
    """The toolkit's version, the code of the modules that evaluate a policy, and the CEL engine's build."""
    digest = hashlib.sha256(f"{__version__} {sys.version_info[:2]} {marshal.version}".encode())
    digest.update(cachefiles.toolkit_digest().encode())  # the evaluating modules and everything they call
    engine = Path(getattr(getattr(cel._cel, "cel", None), "__file__", "") or "")  # the compiled extension
    try:
        info = engine.stat()
        digest.update(f"{engine}:{info.st_size}:{info.st_mtime_ns}".encode())
    except OSError:
        digest.update(b"engine unknown")
    return digest.hexdigest()


def _request_key(request: cel.Request) -> str | None:
    text = _canonical(
        [
            request.object,
            request.namespace,
            request.operation,
            request.sub_resource,
            request.old_object,
            request.username,
            list(request.groups),
        ]
    )
    return None if text is None else hashlib.sha256(text.encode()).hexdigest()


def _canonical(value: Any) -> str | None:
    """Sorted-key JSON of `value` when it reads back as `value`, else None. JSON tells `1`, `1.0` and `true`
    apart in the text itself; reading it back catches what the text would merge: a key that is not a string
    (`{1: x}` and `{"1": x}`) and a tuple."""
    try:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
        return text if json.loads(text) == value else None
    except (TypeError, ValueError, RecursionError):
        return None


def _frozen(violation: cel.Violation) -> tuple:
    return (
        violation.policy,
        violation.binding,
        violation.message,
        tuple(violation.actions),
        violation.validation,
    )


def _thawed(entry: object) -> dict[str, list]:
    """A kept entry's verdicts as `Violation`s; {} when the entry is not exactly what `save` writes."""
    if not isinstance(entry, dict):
        return {}
    verdicts: dict[str, list] = {}
    for key, frozen in entry.items():
        if not isinstance(key, str) or not isinstance(frozen, list):
            return {}
        violations = [_violation(item) for item in frozen]
        if any(v is None for v in violations):
            return {}
        verdicts[key] = violations
    return verdicts


def _violation(item: object) -> cel.Violation | None:
    if not (isinstance(item, tuple) and len(item) == 5):
        return None
    policy, binding, message, actions, validation = item
    if not (
        all(isinstance(text, str) for text in (policy, binding, message))
        and isinstance(actions, tuple)
        and all(isinstance(action, str) for action in actions)
        and (validation is None or type(validation) is int)
    ):
        return None
    return cel.Violation(policy, binding, message, actions, validation)
