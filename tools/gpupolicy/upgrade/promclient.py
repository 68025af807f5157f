"""A small, defensive client for the Prometheus HTTP API (`/api/v1/query_range`, `/api/v1/rules`).

The URL comes from the user and the answer from a server we do not control, so every call is bounded: one
deadline for the whole exchange, connect, headers and body (a server that trickles bytes, even header bytes,
cannot stretch it: the exchange runs in a worker thread that is cut off at the deadline), a cap on the body
size, no redirects (a redirect would carry the bearer token to another host), and a strict check of the
answer's shape before anything reads it. Every failure is a `PrometheusError` that says which server and why,
never a hang, a traceback or a memory blowup. The token comes from an environment variable or a file, never
from a flag (flags end up in shell history and `ps`). See
docs/decisions/0035-rollout-gates-from-prometheus.md.
"""

from __future__ import annotations

import http.client
import json
import math
import os
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ..errors import ToolError
from ..infra.inputs import read_given

TOKEN_ENV = "GPUPOLICY_PROMETHEUS_TOKEN"
DEFAULT_TIMEOUT = 30.0  # seconds for one whole request, connect to last byte
DEFAULT_MAX_BYTES = 32 * 1024 * 1024  # a week of one-minute samples for a few hundred series fits easily
MAX_TOKEN_BYTES = 16 * 1024
MAX_TIMESTAMP = 253_402_300_799  # 9999-12-31T23:59:59Z, the last second `datetime` can hold
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
            raw = read_given(token_file, MAX_TOKEN_BYTES)
        except ToolError as exc:
            raise ToolError(f"--prometheus-token-file {exc}") from None
        token = raw.decode("utf-8", "replace").strip()
        if not token:
            raise ToolError(f"--prometheus-token-file {token_file}: empty")
        return token
    return os.environ.get(TOKEN_ENV, "").strip() or None


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001, ANN201 (urllib's signature)
        raise urllib.error.HTTPError(req.full_url, code, f"redirect to {newurl} refused", headers, fp)


class _Connections:
    """The HTTP(S) connections one exchange opens, so the deadline can shut their sockets: the worker thread
    blocked in a read then gets an error and ends, instead of lingering on a server that drips bytes."""

    def __init__(self) -> None:
        self.opened: list[http.client.HTTPConnection] = []

    def factory(self, cls: type[http.client.HTTPConnection]):  # noqa: ANN201 (http.client's constructor)
        def make(host: str, **kwargs: object) -> http.client.HTTPConnection:
            connection = cls(host, **kwargs)
            self.opened.append(connection)
            return connection

        return make

    def abort(self) -> None:
        for connection in self.opened:
            if connection.sock is not None:
                try:
                    connection.sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            connection.close()


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, connections: _Connections) -> None:
        super().__init__()
        self.connections = connections

    def http_open(self, req):  # noqa: ANN001, ANN201 (urllib's signature)
        return self.do_open(self.connections.factory(http.client.HTTPConnection), req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, connections: _Connections) -> None:
        super().__init__()
        self.connections = connections

    def https_open(self, req):  # noqa: ANN001, ANN201 (urllib's signature)
        return self.do_open(self.connections.factory(http.client.HTTPSConnection), req, context=self._context)


class Prometheus:
    def __init__(
        self,
        url: str,
        token: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ToolError(f"--prometheus {url!r}: not an http(s) URL")
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.max_bytes = max_bytes

    # --- the two calls the gates need -------------------------------------------------------------------

    def query_range(self, expr: str, start: datetime, end: datetime, step: float) -> list[Series]:
        params = {
            "query": expr,
            "start": f"{start.timestamp():.3f}",
            "end": f"{end.timestamp():.3f}",
            "step": f"{step:g}",
        }
        data = self._get("/api/v1/query_range", params)
        if (
            not isinstance(data, dict)
            or data.get("resultType") != "matrix"
            or not isinstance(data.get("result"), list)
        ):
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
            names |= {
                rule["name"]
                for rule in rules
                if isinstance(rule, dict)
                and isinstance(rule.get("name"), str)
                and rule.get("type", "alerting") == "alerting"
            }
        return names

    # --- plumbing ----------------------------------------------------------------------------------------

    def _get(self, path: str, params: dict[str, str]) -> object:
        request = urllib.request.Request(
            f"{self.url}{path}?{urllib.parse.urlencode(params)}", headers={"Accept": "application/json"}
        )
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        body = self._fetch(request, path)
        try:
            answer = json.loads(body, parse_constant=_refuse_constant)
        except (ValueError, RecursionError) as exc:  # deep nesting makes the decoder recurse
            raise self._bad(f"{path} answered with something that is not JSON ({str(exc)[:80]})") from None
        if not isinstance(answer, dict) or answer.get("status") != "success":
            error = answer.get("error") if isinstance(answer, dict) else None
            raise PrometheusError(
                f"Prometheus {self.url}{path}: query failed: {str(error)[:300] or 'no status'}"
            )
        return answer.get("data")

    def _fetch(self, request: urllib.request.Request, path: str) -> bytes:
        """The body, within one deadline for connect, headers and body. http.client's socket timeout is per
        read, so a server that sends a header byte every few seconds would keep the exchange alive for hours:
        the exchange runs in a daemon thread, and at the deadline its sockets are shut and it is abandoned."""
        deadline = time.monotonic() + self.timeout
        where = f"Prometheus {self.url}{path}"
        connections = _Connections()
        outcome: dict[str, object] = {}
        worker = threading.Thread(
            target=self._exchange,
            args=(request, connections, deadline, where, outcome),
            name="prometheus-exchange",
            daemon=True,
        )
        worker.start()
        worker.join(self.timeout)
        if worker.is_alive():
            connections.abort()
            raise PrometheusError(f"{where}: no complete answer within {self.timeout:g}s")
        if "error" in outcome:
            raise outcome["error"]  # type: ignore[misc]  # a PrometheusError made in the worker
        return outcome["body"]  # type: ignore[return-value]

    def _exchange(
        self,
        request: urllib.request.Request,
        connections: _Connections,
        deadline: float,
        where: str,
        outcome: dict[str, object],
    ) -> None:
        opener = urllib.request.build_opener(
            _NoRedirects(), _HTTPHandler(connections), _HTTPSHandler(connections)
        )
        try:
            with opener.open(request, timeout=self.timeout) as response:
                outcome["body"] = self._read_bounded(response, deadline, where)
        except PrometheusError as exc:
            outcome["error"] = exc
        except urllib.error.HTTPError as exc:
            detail = _peek(exc)
            outcome["error"] = PrometheusError(f"{where}: HTTP {exc.code} {exc.reason}{detail}")
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            reason = getattr(exc, "reason", exc)
            outcome["error"] = PrometheusError(f"{where}: cannot connect or read: {reason}")

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
                raise PrometheusError(
                    f"{where}: the answer is larger than {self.max_bytes} bytes; narrow "
                    "the "
                    "query (fewer pools) or raise the limit"
                )
            chunks.append(chunk)

    def _bad(self, why: str) -> PrometheusError:
        return PrometheusError(f"Prometheus {self.url}: unexpected answer: {why}")

    def _series(self, item: object) -> Series:
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("metric"), dict)
            or not isinstance(item.get("values"), list)
        ):
            raise self._bad("a series without metric labels or values")
        labels = item["metric"]
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
            raise self._bad("a series label that is not a string")
        samples = []
        for point in item["values"]:
            if not (
                isinstance(point, list)
                and len(point) == 2
                and isinstance(point[0], int | float)
                and isinstance(point[1], str)
            ):
                raise self._bad(f"a sample that is not [time, \"value\"]: {str(point)[:60]}")
            try:
                value = float(point[1])
            except ValueError:
                raise self._bad(f"a sample value that is not a number: {point[1][:40]!r}") from None
            moment = float(point[0])
            if not (math.isfinite(moment) and 0 <= moment <= MAX_TIMESTAMP):  # 1e999 parses as inf
                raise self._bad(
                    f"a sample time that is not a finite Unix time before year 10000: {str(point[0])[:40]}"
                )
            samples.append((moment, value))
        return Series(dict(labels), tuple(samples))


def _refuse_constant(name: str) -> float:
    """JSON has no NaN or Infinity; Python's decoder accepts them unless told not to."""
    raise ValueError(f"{name} is not JSON")


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
