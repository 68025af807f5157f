"""A snapshot read from a live cluster through the official Kubernetes Python client (`audit --context`).

It reads what `load_snapshot` reads from files, as the API server returns it (the raw JSON, so a live audit
and an audit of `kubectl get -o json` output see the same fields): nodes and pods of every namespace, paged;
Kueue Workloads and ClusterQueues when Kueue is installed (a 404 means it is not, and the audit goes on
without them); and, with `--dcgm-url`, one scrape of a DCGM exporter's or Prometheus' `/federate` text output.
It only lists; the RBAC it needs is the read-only `gpu-metrics-viewer` ClusterRole of policies/access. Every
failure (no kubeconfig, unknown context, refused connection, 401/403) becomes an AuditError that says what to
fix.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from . import AuditError, Snapshot, parse_prometheus_text

PAGE_SIZE = 500
TIMEOUT_SECONDS = 30
KUEUE = ("kueue.x-k8s.io", "v1beta1")


def load_live(context: str | None, kubeconfig: str | None = None, dcgm_url: str | None = None) -> Snapshot:
    core, custom = _apis(context, kubeconfig)
    where = f"context {context!r}" if context else "the current context"
    return Snapshot(
        nodes=_list_all(core.list_node, f"nodes ({where})"),
        pods=_list_all(core.list_pod_for_all_namespaces, f"pods ({where})"),
        workloads=_list_kueue(custom, "workloads", where),
        cluster_queues=_list_kueue(custom, "clusterqueues", where),
        dcgm=_scrape(dcgm_url) if dcgm_url else None,
    )


def save_snapshot(snapshot: Snapshot, directory: Path) -> None:
    """Write a live snapshot in the layout `--snapshot` reads, so it can be audited again or kept as a
    fixture."""
    directory.mkdir(parents=True, exist_ok=True)
    lists = {
        "nodes.json": snapshot.nodes,
        "pods.json": snapshot.pods,
        "workloads.json": snapshot.workloads,
        "clusterqueues.json": snapshot.cluster_queues,
    }
    for name, items in lists.items():
        if items is not None:
            (directory / name).write_text(
                json.dumps({"kind": "List", "apiVersion": "v1", "items": items}, indent=1) + "\n",
                encoding="utf-8",
            )
    if snapshot.dcgm is not None:
        (directory / "dcgm.prom").write_text(
            "".join(f"{name}{_labels(labels)} {value:g}\n" for name, labels, value in snapshot.dcgm),
            encoding="utf-8",
        )


def _labels(labels: dict[str, str]) -> str:
    """A sample's labels in the text format, `{a="x",b="y"}` (values escaped as the format requires)."""
    if not labels:
        return ""
    return "{" + ",".join(f'{key}="{_escape(value)}"' for key, value in labels.items()) + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _apis(context: str | None, kubeconfig: str | None):
    try:
        from kubernetes import client, config
        from kubernetes.config.config_exception import ConfigException
    except ImportError:
        raise AuditError(
            "--context needs the `kubernetes` Python package (pip install 'gpupolicy[live]'); "
            "or take a snapshot with kubectl and use --snapshot"
        ) from None
    try:
        api_client = config.new_client_from_config(
            config_file=kubeconfig, context=context, persist_config=False
        )
    except (ConfigException, OSError, ValueError) as exc:
        raise AuditError(f"cannot use kubeconfig{f' {kubeconfig}' if kubeconfig else ''}: {exc}") from None
    api_client.configuration.retries = 0  # a refused connection is reported at once, not after retries
    return client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)


def _list_all(list_page: Callable, what: str, **kwargs) -> list[dict]:
    """Every item of a list call, page by page (`limit` and `continue`), as the API server's JSON."""
    items: list[dict] = []
    token = None
    while True:
        page = _call(list_page, what, limit=PAGE_SIZE, _continue=token, **kwargs)
        items.extend(item for item in page.get("items") or [] if isinstance(item, dict))
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return items


def _list_kueue(custom, plural: str, where: str) -> list[dict] | None:
    try:
        return _list_all(
            custom.list_cluster_custom_object,
            f"{plural}.kueue.x-k8s.io ({where})",
            group=KUEUE[0],
            version=KUEUE[1],
            plural=plural,
        )
    except _NotFound:
        return None  # Kueue is not installed: audit nodes and pods only


class _NotFound(Exception):
    pass


def _call(list_page: Callable, what: str, **kwargs) -> dict:
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    try:
        response = list_page(_preload_content=False, _request_timeout=TIMEOUT_SECONDS, **kwargs)
        return json.loads(response.data)
    except ApiException as exc:
        if exc.status == 404:
            raise _NotFound(what) from None
        hint = (
            (
                " (RBAC: the audit needs get/list; the gpu-metrics-viewer ClusterRole in policies/access "
                "grants it)"
            )
            if exc.status in (401, 403)
            else ""
        )
        raise AuditError(f"cannot list {what}: HTTP {exc.status} {exc.reason}{hint}") from None
    except HTTPError as exc:
        raise AuditError(f"cannot list {what}: {_reason(exc)}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise AuditError(f"cannot list {what}: the API server's answer is not JSON ({exc})") from None


def _reason(exc: Exception) -> str:
    reason = getattr(exc, "reason", None)
    return str(reason or exc).split(": ", 1)[-1]


def _scrape(url: str) -> list[tuple[str, dict[str, str], float]]:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS) as response:  # noqa: S310 - the user's URL
            text = response.read().decode("utf-8")
    except (urllib.error.URLError, OSError, ValueError, UnicodeDecodeError) as exc:
        raise AuditError(f"cannot scrape {url}: {_reason(exc)}") from None
    return parse_prometheus_text(text, url)
