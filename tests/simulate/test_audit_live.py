"""`gpupolicy audit --context`: the Kubernetes Python client against a local stand-in for the API server that
serves the recorded snapshot (paged, as a real server pages with `limit` and `continue`). A live audit must
report exactly what an audit of the same objects as files reports, and every failure must be a one-line
error with exit 2."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

pytest.importorskip("kubernetes")

from support import fleet_repo  # noqa: E402

# The tests' own rich fleet (tests/fixtures/fleet), not whatever fleet this repository holds (decision 0085).
REPO = fleet_repo()

from gpupolicy.audit import live as audit_live  # noqa: E402
from gpupolicy.cli import main  # noqa: E402

FIXTURE = Path(__file__).parent / "fixtures" / "snapshot-test-us"
NOW = "2025-06-01T12:00:00Z"
ROUTES = {
    "/api/v1/nodes": "nodes.json",
    "/api/v1/pods": "pods.json",
    "/apis/kueue.x-k8s.io/v1beta1/workloads": "workloads.json",
    "/apis/kueue.x-k8s.io/v1beta1/clusterqueues": "clusterqueues.json",
}


class FakeApiServer(ThreadingHTTPServer):
    """Serves the fixture's lists page by page; `refuse` maps a path to an HTTP status to answer instead."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.refuse: dict[str, int] = {}
        self.requests: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: FakeApiServer

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class names it so
        pass

    def do_GET(self) -> None:  # noqa: N802 - the base class names it so
        parts = urlsplit(self.path)
        self.server.requests.append(self.path)
        if parts.path in self.server.refuse:
            status = self.server.refuse[parts.path]
            return self._send(
                status, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": status}
            )
        if parts.path == "/metrics":
            return self._send(200, (FIXTURE / "dcgm.prom").read_text(), "text/plain; version=0.0.4")
        if parts.path not in ROUTES:
            return self._send(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404})
        items = json.loads((FIXTURE / ROUTES[parts.path]).read_text())["items"]
        query = parse_qs(parts.query)
        start = int(query.get("continue", ["0"])[0])
        limit = int(query.get("limit", [str(len(items))])[0])
        page = items[start : start + limit]
        more = start + limit < len(items)
        self._send(
            200,
            {
                "kind": "List",
                "apiVersion": "v1",
                "items": page,
                "metadata": {"continue": str(start + limit) if more else ""},
            },
        )

    def _send(self, status: int, body: object, content_type: str = "application/json") -> None:
        data = (body if isinstance(body, str) else json.dumps(body)).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture()
def api() -> Iterator[FakeApiServer]:
    server = FakeApiServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture()
def kubeconfig(tmp_path: Path, api: FakeApiServer) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        json.dumps(
            {  # JSON is YAML: the client reads it as any kubeconfig
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "test-us",
                "clusters": [
                    {"name": "fake", "cluster": {"server": api.url}},
                    {"name": "closed", "cluster": {"server": "http://127.0.0.1:9"}},
                ],
                "users": [{"name": "viewer", "user": {"token": "not-a-secret"}}],
                "contexts": [
                    {"name": "test-us", "context": {"cluster": "fake", "user": "viewer"}},
                    {"name": "unreachable", "context": {"cluster": "closed", "user": "viewer"}},
                ],
            }
        )
    )
    return path


def _audit(capsys, *args: str) -> tuple[int, dict | None, str]:
    code = main(
        ["audit", "--repo", str(REPO), "--cluster", "test-us", "--now", NOW, "--format", "json", *args]
    )
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out.strip() else None, captured.err


def test_live_audit_reports_what_the_snapshot_reports(capsys, monkeypatch, api, kubeconfig) -> None:
    monkeypatch.setattr(audit_live, "PAGE_SIZE", 2)  # several pages per list
    expected_code, expected, _ = _audit(capsys, "--snapshot", str(FIXTURE))
    code, live, err = _audit(
        capsys, "--context", "test-us", "--kubeconfig", str(kubeconfig), "--dcgm-url", f"{api.url}/metrics"
    )
    assert (code, live) == (expected_code, expected), err
    assert expected["idle_gpus"] and expected["pending"] and expected["issues"]  # every part was compared
    assert any("continue=2" in request for request in api.requests), "the client did not page"


def test_saved_snapshot_audits_the_same(capsys, tmp_path, api, kubeconfig) -> None:
    saved = tmp_path / "saved"
    code, live, _ = _audit(
        capsys,
        "--context",
        "test-us",
        "--kubeconfig",
        str(kubeconfig),
        "--dcgm-url",
        f"{api.url}/metrics",
        "--save-snapshot",
        str(saved),
    )
    assert sorted(p.name for p in saved.iterdir()) == sorted(p.name for p in FIXTURE.iterdir())
    assert _audit(capsys, "--snapshot", str(saved))[:2] == (code, live)


def test_without_kueue_the_audit_goes_on(capsys, api, kubeconfig) -> None:
    api.refuse = {
        "/apis/kueue.x-k8s.io/v1beta1/workloads": 404,
        "/apis/kueue.x-k8s.io/v1beta1/clusterqueues": 404,
    }
    code, live, err = _audit(capsys, "--context", "test-us", "--kubeconfig", str(kubeconfig))
    assert code == 1 and live["pending"] == [] and live["gpus_by_queue"], err


def test_forbidden_names_the_role_to_ask_for(capsys, api, kubeconfig) -> None:
    api.refuse = {"/api/v1/pods": 403}
    code, live, err = _audit(capsys, "--context", "test-us", "--kubeconfig", str(kubeconfig))
    assert code == 2 and live is None
    assert "cannot list pods (context 'test-us'): HTTP 403" in err and "gpu-metrics-viewer" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ("no-such-context", "cannot use kubeconfig"),
        ("unreachable", "cannot list nodes (context 'unreachable')"),
    ],
)
def test_bad_context_exits_2_with_one_line(capsys, kubeconfig, context, message) -> None:
    code, live, err = _audit(capsys, "--context", context, "--kubeconfig", str(kubeconfig))
    assert code == 2 and live is None and message in err
    assert len(err.strip().splitlines()) == 1, err


def test_unreachable_dcgm_url_exits_2(capsys, api, kubeconfig) -> None:
    code, _, err = _audit(
        capsys,
        "--context",
        "test-us",
        "--kubeconfig",
        str(kubeconfig),
        "--dcgm-url",
        "http://127.0.0.1:9/metrics",
    )
    assert code == 2 and "cannot scrape http://127.0.0.1:9/metrics" in err


def test_context_options_are_refused_with_a_snapshot(capsys) -> None:
    code, _, err = _audit(capsys, "--snapshot", str(FIXTURE), "--dcgm-url", "http://x/metrics")
    assert code == 2 and "go with --context" in err
