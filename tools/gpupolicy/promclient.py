"""A small, defensive client for the Prometheus HTTP API (`/api/v1/query_range`, `/api/v1/rules`).

The URL comes from the user and the answer from a server we do not control, so every call is bounded: one
deadline for the whole exchange (a server that trickles bytes cannot stretch it), a cap on the body size, no
redirects (a redirect would carry the bearer token to another host), and a strict check of the answer's shape
before anything reads it. Every failure is a `PrometheusError` that says which server and why, never a hang,
a traceback or a memory blowup. The token comes from an environment variable or a file, never from a flag
(flags end up in shell history and `ps`). See docs/decisions/0035-rollout-gates-from-prometheus.md.
"""

from __future__ import annotations

import json
import math
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from .errors import ToolError

TOKEN_ENV = "GPUPOLICY_PROMETHEUS_TOKEN"
DEFAULT_TIMEOUT = 30.0  # seconds for one whole request, connect to last byte
DEFAULT_MAX_BYTES = 32 * 1024 * 1024  # a week of one-minute samples for a few hundred series fits easily
MAX_TOKEN_BYTES = 16 * 1024
MAX_POINTS = 11_000  # Prometheus refuses a query_range of more points per series (web/api/v1/api.go)
_CHUNK = 64 * 1024


class PrometheusError(ToolError):
    """The server could not be asked or its answer cannot be used (exit 2: no verdict)."""


@dataclass(frozen=True)
class Series:
    labels: dict[str, str]
    samples: tuple[tuple[float, float], ...]  # (unix seconds, value), in time order


def read_token(token_file: Path | None) -> str | None:
    """The bearer token: from `--prometheus-token-file` when given, else from $GPUPOLICY_PROMETHEUS_TOKEN."""
    if token_file is not None:
        try:
            with open(token_file, "rb") as handle:
                raw = handle.read(MAX_TOKEN_BYTES + 1)
        except OSError as exc:
            raise ToolError(f"--prometheus-token-file {token_file}: {exc.strerror or exc}") from None
        if len(raw) > MAX_TOKEN_BYTES:
            raise ToolError(f"--prometheus-token-file {token_file}: larger than {MAX_TOKEN_BYTES} bytes")
        token = raw.decode("utf-8", "replace").strip()
        if not token:
            raise ToolError(f"--prometheus-token-file {token_file}: empty")
        return token
    return os.environ.get(TOKEN_ENV, "").strip() or None


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001, ANN201 (urllib's signature)
        raise urllib.error.HTTPError(req.full_url, code, f"redirect to {newurl} refused", headers, fp)


class Prometheus:
    def __init__(self, url: str, token: str | None = None, timeout: float = DEFAULT_TIMEOUT,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ToolError(f"--prometheus {url!r}: not an http(s) URL")
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.max_bytes = max_bytes
        self._opener = urllib.request.build_opener(_NoRedirects())

    # --- the two calls the gates need -------------------------------------------------------------------

    def query_range(self, expr: str, start: datetime, end: datetime, step: float) -> list[Series]:
        params = {"query": expr, "start": f"{start.timestamp():.3f}", "end": f"{end.timestamp():.3f}",
                  "step": f"{step:g}"}
        data = self._get("/api/v1/query_range", params)
        if not isinstance(data, dict) or data.get("resultType") != "matrix" or not isinstance(data.get("result"), list):
            raise self._bad("query_range did not return a matrix")
        return [self._series(item) for item in data["result"]]

    def alert_names(self) -> set[str]:
        """The alerting rules the server evaluates (a silent alert that no one evaluates proves nothing)."""
        data = self._get("/api/v1/rules", {"type": "alert"})
        groups = data.get("groups") if isinstance(data, dict) else None
        if not isinstance(groups, list):
            raise self._bad("rules did not return a list of groups")
        names = set()
        for group in groups:
            rules = group.get("rules") if isinstance(group, dict) else None
            if not isinstance(rules, list):
                raise self._bad("a rule group has no list of rules")
            names |= {rule["name"] for rule in rules if isinstance(rule, dict) and isinstance(rule.get("name"), str)
                      and rule.get("type", "alerting") == "alerting"}
        return names

    # --- plumbing ----------------------------------------------------------------------------------------

    def _get(self, path: str, params: dict[str, str]) -> object:
        request = urllib.request.Request(f"{self.url}{path}?{urllib.parse.urlencode(params)}",
                                         headers={"Accept": "application/json"})
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        body = self._fetch(request, path)
        try:
            answer = json.loads(body)
        except (ValueError, RecursionError) as exc:  # deep nesting makes the decoder recurse
            raise self._bad(f"{path} answered with something that is not JSON ({str(exc)[:80]})") from None
        if not isinstance(answer, dict) or answer.get("status") != "success":
            error = answer.get("error") if isinstance(answer, dict) else None
            raise PrometheusError(f"Prometheus {self.url}{path}: query failed: {str(error)[:300] or 'no status'}")
        return answer.get("data")

    def _fetch(self, request: urllib.request.Request, path: str) -> bytes:
        deadline = time.monotonic() + self.timeout
        where = f"Prometheus {self.url}{path}"
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                return self._read_bounded(response, deadline, where)
        except urllib.error.HTTPError as exc:
            detail = _peek(exc)
            raise PrometheusError(f"{where}: HTTP {exc.code} {exc.reason}{detail}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise PrometheusError(f"{where}: cannot connect or read: {reason}") from None

    def _read_bounded(self, response, deadline: float, where: str) -> bytes:  # noqa: ANN001 (http.client)
        chunks: list[bytes] = []
        size = 0
        while True:
            if time.monotonic() > deadline:
                raise PrometheusError(f"{where}: no complete answer within {self.timeout:g}s")
            chunk = response.read1(_CHUNK) if hasattr(response, "read1") else response.read(_CHUNK)
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > self.max_bytes:
                raise PrometheusError(f"{where}: the answer is larger than {self.max_bytes} bytes; narrow the "
                                      "query (fewer pools) or raise the limit")
            chunks.append(chunk)

    def _bad(self, why: str) -> PrometheusError:
        return PrometheusError(f"Prometheus {self.url}: unexpected answer: {why}")

    def _series(self, item: object) -> Series:
        if not isinstance(item, dict) or not isinstance(item.get("metric"), dict) or \
                not isinstance(item.get("values"), list):
            raise self._bad("a series without metric labels or values")
        labels = item["metric"]
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
            raise self._bad("a series label that is not a string")
        samples = []
        for point in item["values"]:
            if not (isinstance(point, list) and len(point) == 2 and isinstance(point[0], int | float)
                    and isinstance(point[1], str)):
                raise self._bad(f"a sample that is not [time, \"value\"]: {str(point)[:60]}")
            try:
                value = float(point[1])
            except ValueError:
                raise self._bad(f"a sample value that is not a number: {point[1][:40]!r}") from None
            samples.append((float(point[0]), value))
        return Series(dict(labels), tuple(samples))


def _peek(exc: urllib.error.HTTPError) -> str:
    """A short, bounded excerpt of an error body (Prometheus puts the PromQL error there)."""
    try:
        text = exc.read(300).decode("utf-8", "replace") if exc.fp else ""
    except OSError:
        return ""
    try:
        text = str(json.loads(text).get("error", text))
    except (ValueError, AttributeError, RecursionError):
        pass
    return f": {text.strip()[:300]}" if text.strip() else ""


def step_for(seconds: float) -> float:
    """A query_range step that keeps one series under Prometheus' point limit, and no finer than a minute
    (the lookback of 5m then still sees every scrape of a 30s-1m interval)."""
    return float(max(60, math.ceil(seconds / (MAX_POINTS - 1))))
