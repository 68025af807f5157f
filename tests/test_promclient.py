"""The Prometheus client against hostile or broken servers: every failure is a clear PrometheusError within
its deadline and size limit, never a hang, a traceback or a memory blowup; the token goes only where asked."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from gpupolicy.errors import ToolError
from gpupolicy.upgrade import promclient
from gpupolicy.upgrade.promclient import Prometheus, PrometheusError

START, END = datetime(2026, 11, 10, tzinfo=UTC), datetime(2026, 11, 11, tzinfo=UTC)
MATRIX = {
    "status": "success",
    "data": {
        "resultType": "matrix",
        "result": [{"metric": {"node": "n1"}, "values": [[1762732800, "1"], [1762732860, "NaN"]]}],
    },
}


def _send(
    handler: BaseHTTPRequestHandler, code: int, body: bytes, headers: dict[str, str] | None = None
) -> None:
    handler.send_response(code)
    for key, value in (headers or {"Content-Type": "application/json"}).items():
        handler.send_header(key, value)
    handler.end_headers()
    handler.wfile.write(body)


@pytest.fixture()
def server() -> Iterator[Callable[[Callable[[BaseHTTPRequestHandler], None]], str]]:
    """Serve one behaviour on 127.0.0.1; the fixture stops the server afterwards."""
    started: list[ThreadingHTTPServer] = []

    def start(behaviour: Callable[[BaseHTTPRequestHandler], None]) -> str:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                try:
                    behaviour(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up, as it should

            def log_message(self, *args: object) -> None:
                pass

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = True
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        started.append(httpd)
        return f"http://127.0.0.1:{httpd.server_address[1]}"

    yield start
    for httpd in started:
        httpd.shutdown()
        httpd.server_close()


def _ask(url: str, **limits: float) -> list[promclient.Series]:
    return Prometheus(
        url, timeout=limits.get("timeout", 2.0), max_bytes=int(limits.get("max_bytes", 1 << 20))
    ).query_range("up", START, END, 60)


def test_a_matrix_is_read_with_its_labels_and_values(server) -> None:
    url = server(lambda h: _send(h, 200, json.dumps(MATRIX).encode()))
    [series] = _ask(url)
    assert series.labels == {"node": "n1"} and series.samples[0] == (1762732800.0, 1.0)


def test_a_server_that_trickles_bytes_hits_the_deadline(server) -> None:
    def trickle(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.end_headers()
        for _ in range(200):  # 10 s of one byte every 50 ms
            handler.wfile.write(b" ")
            handler.wfile.flush()
            time.sleep(0.05)

    began = time.monotonic()
    with pytest.raises(PrometheusError, match="no complete answer within 0.5s"):
        _ask(server(trickle), timeout=0.5)
    assert time.monotonic() - began < 5


def test_a_silent_server_times_out(server) -> None:
    url = server(lambda h: time.sleep(3))
    with pytest.raises(
        PrometheusError, match="cannot connect or read: timed out|no complete answer within 0.3s"
    ):
        _ask(url, timeout=0.3)


def test_a_server_that_drips_header_bytes_hits_the_same_deadline(server) -> None:
    """Before the deadline covered headers, each byte reset the per-read socket timeout: this ran for the full
    drip (here 20 s; a real server can drip for hours)."""

    def drip_headers(handler: BaseHTTPRequestHandler) -> None:
        handler.wfile.write(b"HTTP/1.1 200 OK\r\n")
        handler.wfile.flush()
        for _ in range(200):  # 20 s of one header byte every 100 ms
            handler.wfile.write(b"X")
            handler.wfile.flush()
            time.sleep(0.1)

    began = time.monotonic()
    with pytest.raises(PrometheusError, match="no complete answer within 0.5s"):
        _ask(server(drip_headers), timeout=0.5)
    assert time.monotonic() - began < 2


def test_an_oversized_answer_is_cut_off(server) -> None:
    def flood(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.end_headers()
        for _ in range(64):  # 64 MiB if nobody stops reading
            handler.wfile.write(b"[" * (1 << 20))

    with pytest.raises(PrometheusError, match="larger than 1048576 bytes"):
        _ask(server(flood))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"<html>login</html>", "not JSON"),
        (
            b"[" * 200_000 + b"]" * 200_000,
            "not JSON",
        ),  # nesting deep enough to exhaust the decoder's recursion
        (b'{"status": "success", "data": {"resultType": "vector", "result": []}}', "did not return a matrix"),
        (
            b'{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {}, "values": '
            b'[[1, 2]]}]}}',
            "not \\[time, \"value\"\\]",
        ),
        (
            b'{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {"a": 1}, '
            b'"values": []}]}}',
            "label that is not a string",
        ),
        (
            b'{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {}, "values": '
            b'[[1, "x"]]}]}}',
            "not a number",
        ),
        (
            b'{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {}, "values": '
            b'[[1e999, "1"]]}]}}',
            "sample time that is not a finite Unix time",
        ),
        (
            b'{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {}, "values": '
            b'[[1e300, "1"]]}]}}',
            "sample time that is not a finite Unix time",
        ),
        (
            b'{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {}, "values": '
            b'[[NaN, "1"]]}]}}',
            "not JSON",
        ),
    ],
)
def test_malformed_answers_are_refused(server, body: bytes, message: str) -> None:
    url = server(lambda h: _send(h, 200, body))
    with pytest.raises(PrometheusError, match=message):
        _ask(url)


def test_a_query_error_carries_the_servers_message(server) -> None:
    error = {"status": "error", "errorType": "bad_data", "error": "parse error at char 3"}
    url = server(lambda h: _send(h, 400, json.dumps(error).encode()))
    with pytest.raises(PrometheusError, match="HTTP 400 .*parse error at char 3"):
        _ask(url)


def test_redirects_are_refused_so_the_token_stays_home(server) -> None:
    seen: list[str | None] = []
    elsewhere = server(lambda h: (seen.append(h.headers.get("Authorization")), _send(h, 200, b"{}")))
    url = server(lambda h: _send(h, 302, b"", {"Location": f"{elsewhere}/api/v1/query_range"}))
    with pytest.raises(PrometheusError, match="HTTP 302 .*redirect .* refused"):
        Prometheus(url, token="s3cret", timeout=2).query_range(
            "up", START, END, 60
        )  # pragma: allowlist secret
    assert seen == []


def test_the_token_is_sent_as_a_bearer_header(server) -> None:
    seen: list[str | None] = []
    url = server(
        lambda h: (seen.append(h.headers.get("Authorization")), _send(h, 200, json.dumps(MATRIX).encode()))
    )
    Prometheus(url, token="s3cret", timeout=2).query_range("up", START, END, 60)  # pragma: allowlist secret
    assert seen == ["Bearer s3cret"]


def test_nothing_listening_is_a_clear_error() -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(PrometheusError, match="cannot connect"):
        _ask(f"http://127.0.0.1:{port}")


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com", "localhost:9090", "http://"])
def test_only_http_urls_are_accepted(url: str) -> None:
    with pytest.raises(ToolError, match="not an http"):
        Prometheus(url)


def test_token_comes_from_the_file_or_the_environment(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(promclient.TOKEN_ENV, "from-env")
    assert promclient.read_token(None) == "from-env"
    token_file = tmp_path / "token"
    token_file.write_text("from-file\n")
    assert promclient.read_token(token_file) == "from-file"
    token_file.write_text("")
    with pytest.raises(ToolError, match="empty"):
        promclient.read_token(token_file)
    token_file.write_bytes(b"x" * (promclient.MAX_TOKEN_BYTES + 1))
    with pytest.raises(ToolError, match="larger than"):
        promclient.read_token(token_file)
    with pytest.raises(ToolError, match="No such file"):
        promclient.read_token(tmp_path / "absent")
    monkeypatch.delenv(promclient.TOKEN_ENV)
    assert promclient.read_token(None) is None


def test_alert_names_lists_only_alerting_rules(server) -> None:
    rules = {
        "status": "success",
        "data": {
            "groups": [
                {
                    "name": "g",
                    "rules": [
                        {"name": "GPUFallenOffBus", "type": "alerting"},
                        {"name": "job:up:sum", "type": "recording"},
                    ],
                }
            ]
        },
    }
    url = server(lambda h: _send(h, 200, json.dumps(rules).encode()))
    assert Prometheus(url, timeout=2).alert_names() == {"GPUFallenOffBus"}


def test_step_keeps_a_week_under_the_point_limit() -> None:
    week = 7 * 24 * 3600
    assert promclient.step_for(3600) == 60
    assert week / promclient.step_for(week) <= promclient.MAX_POINTS
    assert (30 * 24 * 3600) / promclient.step_for(30 * 24 * 3600) <= promclient.MAX_POINTS
