"""The files of an imported cluster: clusters/<name>/, pools/<name>/ per pool, policies/teams/<ns>/ per team
namespace, imports/<name>/migration-plan.yaml. Pool and team files come from `gpupolicy new`'s generators
(scaffold.pool.pool_files, scaffold.team.team_files); the cluster overlay follows the repository's first
cluster (its shared-policy entries, sync folder and operator chart patch), with this cluster's teams, queues
and pools in place of that cluster's. What the cluster does not say is a `# QUESTION(import): ...` line next
to a placeholder value, listed in imports/<name>/questions.yaml: rule IMP001 reports each entry until it is
answered."""

from __future__ import annotations

import io
import json
import re
from collections import Counter
from pathlib import Path

from ruamel.yaml import YAML

from ..domain import catalog, startupcheck
from ..domain.kustomization import SYNC_ENGINES
from ..errors import ToolError
from ..infra import repopath
from ..scaffold import pool as pool_scaffold
from ..scaffold import team as team_scaffold
from .inventory import DNS_LABEL, Inventory, PoolGroup, meta
from .plan import TIER_LABEL, Step, plan_yaml

MARK = "QUESTION(import):"
WORKLOAD_LABEL = "gpupolicy.io/workload"
TEAM_LABEL = "gpupolicy.io/team"
GPU_QUOTA = re.compile(r"^requests\.nvidia\.com/")


def question(text: str, indent: str = "") -> str:
    return f"{indent}# {MARK} {text}\n"


def files(
    root: Path, cluster: str, inventory: Inventory, pools: list[PoolGroup], steps: list[Step], operator: str
) -> tuple[dict[str, str], list[str]]:
    """Repo-relative path -> text, and the questions written (one line each, for the summary)."""
    out: dict[str, str] = {}
    renames = {p.flavor: p.name for p in pools if p.flavor}
    for pool in pools:
        out.update(pool_files(cluster, pool))
    teams = team_namespaces(inventory)
    for namespace, queues in sorted(teams.items()):
        if not (root / "policies/teams" / namespace).exists():
            out.update(team_files(namespace, queues, inventory))
    out.update(cluster_files(root, cluster, inventory, pools, sorted(teams), renames, operator))
    out[f"imports/{cluster}/migration-plan.yaml"] = plan_yaml(cluster, steps)
    for rel in out:
        if (root / rel).exists():
            raise ToolError(f"{rel} exists already; import writes a cluster the repository does not have")
    out[POOLS_CONF] = pools_conf(root, pools)
    found = [
        (rel, number, line.split(MARK, 1)[1].strip())
        for rel, text in sorted(out.items())
        for number, line in enumerate(text.splitlines(), 1)
        if MARK in line
    ]
    out[f"imports/{cluster}/questions.yaml"] = questions_yaml(cluster, found)
    return out, [f"{rel}: {text}" for rel, _line, text in found]


def questions_yaml(cluster: str, found: list[tuple[str, int, str]]) -> str:
    """The open questions, one entry each: what IMP001 reports (the comments in the files point at them; a
    rule reading every file again for its comments would break validate's read-once rule)."""
    lines = [
        f"# Open questions of the import of {cluster} (gpupolicy import). Answer each in its file, "
        "delete the",
        "# `# QUESTION(import):` line there and its entry here; `gpupolicy validate` reports each "
        "entry (IMP001).",
    ]
    lines += ["questions:" if found else "questions: []"]
    for rel, number, text in found:
        lines += [f"  - path: {rel}", f"    line: {number}", f"    question: {json.dumps(text)}"]
    return "\n".join(lines) + "\n"


# --- pools
# -----------------------------------------------------------------------------------------------------


def pool_files(cluster: str, pool: PoolGroup) -> dict[str, str]:
    node = pool.first
    if not node.model:
        raise ToolError(
            f"nodes {', '.join(n.name for n in pool.nodes)}: GPU product {node.product!r} is "
            "not in the "
            "catalog (tools/gpupolicy/domain/catalog.py); add it there first"
        )
    asks = list(pool.questions)
    access = str(pool.values["access"])
    if not access:
        asks.append(
            "the labels do not say how GPUs are shared (no nvidia.com/gpu.sharing-strategy, replicas "
            "or mig.config): accessMode exclusive is a placeholder"
        )
        access = "exclusive"
    zones = Counter(n.zone or "unknown" for n in pool.nodes)
    if "unknown" in zones:
        asks.append(
            f"{zones['unknown']} node(s) carry no {'topology.kubernetes.io/zone'} label: name their zone"
        )
    if not node.cpu or not node.memory_gi:
        asks.append(
            "the node's cpu or memory capacity is not in the snapshot: node cpu/memory are placeholders"
        )
    layout = str(pool.values["mig.config"]) if access == "mig" else ""
    if access == "mig":
        asks.append(
            f"MIG layout {layout}: the snapshot holds no mig-parted config; add the layout's slices "
            "to the "
            "cluster's config (MIG004 names it while it is missing)"
        )
    if access == "mig" and pool.values["mig.strategy"] == "single":
        asks.append(
            "MIG strategy single: GFD's nvidia.com/gpu.count counts MIG devices, so perNode is a "
            "placeholder; give the GPUs per node"
        )
    driver = str(pool.values["driver"])
    if not driver:
        asks.append(
            "GFD reports no driver version (nvidia.com/cuda.driver.*): nvidiadriver.yaml's version "
            "is a placeholder"
        )
    taints = {(t.get("key"), t.get("value"), t.get("effect")) for n in pool.nodes for t in n.taints}
    standard = tuple(pool_scaffold.TAINT.values())
    if taints - {standard}:
        asks.append(
            "the nodes carry taints the repository's pools do not ("
            + ", ".join(f"{k}={v}:{e}" for k, v, e in sorted(taints - {standard}, key=str))
            + "): keep them (add to nodeLabels/taints) or drop them when the nodes return"
        )
    request = pool_scaffold.PoolRequest(
        name=pool.name,
        cluster=cluster,
        gpu=node.model,
        per_node=node.count,
        zones=dict(sorted(zones.items())),
        access=access,
        node_cpu=node.cpu or 1,
        node_memory=f"{node.memory_gi or 1}Gi",
        replicas=int(pool.values["replicas"]) if access == "time-sliced" else 1,
        layout=layout,
        description=f"{node.model} {access} pool of {cluster}, imported from {len(pool.nodes)} node(s).",
    )
    texts = pool_scaffold.pool_files(request, catalog.gpu(node.model), driver or "0.0.0")
    header = "".join(question(a) for a in asks)
    rel = f"pools/{pool.name}/pool.yaml"
    texts[rel] = texts[rel].replace("Written by `gpupolicy new pool`", "Written by `gpupolicy import`", 1)
    texts[rel] = texts[rel].replace("apiVersion: gpupolicy/v1\n", header + "apiVersion: gpupolicy/v1\n", 1)
    if access == "mig":
        texts[rel] = texts[rel].replace(
            "    strategy: mixed\n", f"    strategy: {pool.values['mig.strategy'] or 'mixed'}\n"
        )
    return texts


POOLS_CONF = "policies/startup-check/pools.conf"  # the one existing file import edits


def pools_conf(root: Path, pools: list[PoolGroup]) -> str:
    """The startup check's table with a line per imported pool (POOL005), the line `gpupolicy new pool`
    writes: the check's defaults, sharePercent of a time-sliced GPU's replicas."""
    try:
        text = repopath.Reader(root).read(POOLS_CONF).decode("utf-8")
    except (repopath.Refused, UnicodeDecodeError) as exc:
        raise ToolError(
            f"{POOLS_CONF}: cannot be read ({exc}); the imported pools need their lines there"
        ) from None
    rows = {}
    for pool in pools:
        access = str(pool.values["access"]) or "exclusive"
        replicas = int(pool.values["replicas"]) if access == "time-sliced" else 1
        rows[pool.name] = (
            pool.name,
            access,
            startupcheck.product(pool.first.model),
            "false",
            "3",
            "5",
            "5",
            str(100 // replicas) if access == "time-sliced" else "0",
        )
    try:
        return startupcheck.table_with(text, rows)
    except ValueError as exc:
        raise ToolError(f"{POOLS_CONF}: cannot be rewritten ({exc}); edit it by hand") from None


# --- teams
# -----------------------------------------------------------------------------------------------------


def team_namespaces(inventory: Inventory) -> dict[str, dict[str, str]]:
    """Namespaces with a GPU ResourceQuota or a LocalQueue: namespace -> {LocalQueue: its ClusterQueue}."""
    found: dict[str, dict[str, str]] = {}
    for quota in inventory.resource_quotas:
        hard = (quota.get("spec") or {}).get("hard") or {}
        if any(GPU_QUOTA.match(str(k)) for k in hard) and DNS_LABEL.match(meta(quota).get("namespace", "")):
            found.setdefault(meta(quota)["namespace"], {})
    for queue in inventory.local_queues:
        namespace = meta(queue).get("namespace", "")
        if DNS_LABEL.match(namespace):
            found.setdefault(namespace, {})[meta(queue).get("name", "")] = str(
                (queue.get("spec") or {}).get("clusterQueue", "")
            )
    return found


def _queue(inventory: Inventory, name: str) -> dict:
    return next((q for q in inventory.snapshot.cluster_queues or () if meta(q).get("name") == name), {})


def team_files(namespace: str, queues: dict[str, str], inventory: Inventory) -> dict[str, str]:
    labels = {}
    for cq in queues.values():
        labels.update(meta(_queue(inventory, cq)).get("labels") or {})
    tier, workload = labels.get(TIER_LABEL, ""), labels.get(WORKLOAD_LABEL, "")
    resources = sorted(
        {
            k.removeprefix("requests.")
            for q in inventory.resource_quotas
            if meta(q).get("namespace") == namespace
            for k in ((q.get("spec") or {}).get("hard") or {})
            if GPU_QUOTA.match(str(k))
        }
        | {"nvidia.com/gpu"}
    )
    request = team_scaffold.TeamRequest(
        name=namespace,
        clusters=(),
        tier=tier or "batch",
        workload=workload or "batch",
        queues=tuple(sorted(queues)) or ("batch",),
    )
    texts = {
        rel: text.replace("(gpupolicy new team)", "(gpupolicy import)")
        for rel, text in team_scaffold.team_files(request, resources).items()
    }
    base = f"policies/teams/{namespace}"
    asks = []
    if not tier:
        asks.append(
            f"which tier is team {namespace} (production, training, batch, experiment)? its queues say none"
        )
    if not workload:
        asks.append(f"what does team {namespace} run (training, inference, notebook, batch)?")
    texts[f"{base}/namespace.yaml"] = "".join(question(a) for a in asks) + texts[f"{base}/namespace.yaml"]
    texts[f"{base}/rolebindings.yaml"] = (
        question(
            f"who owns namespace {namespace}? the groups "
            f"gpu-team-{namespace}"
            "* are placeholders for the identity provider's"
        )
        + texts[f"{base}/rolebindings.yaml"]
    )
    text = texts[f"{base}/localqueues.yaml"]
    for local, cq in queues.items():  # the LocalQueues point at the ClusterQueues they point at today
        text = text.replace(
            f"  name: {local}\n  namespace: {namespace}\nspec:\n  clusterQueue: {namespace}\n",
            f"  name: {local}\n  namespace: {namespace}\nspec:\n  clusterQueue: {cq or namespace}\n",
        )
    texts[f"{base}/localqueues.yaml"] = text
    return texts


# --- the cluster
# -----------------------------------------------------------------------------------------------


def _template(root: Path) -> tuple[str, str]:
    """The name and overlay text of the repository's first cluster, the model of the new one's overlay."""
    folder = root / "clusters"
    for path in sorted(folder.glob("*/kustomization.yaml")) if folder.is_dir() else ():
        if (path.parent / "cluster.yaml").is_file():
            return path.parent.name, path.read_text(encoding="utf-8")
    raise ToolError("the repository has no cluster to model the imported one's overlay on (clusters/*/)")


def cluster_files(
    root: Path,
    cluster: str,
    inventory: Inventory,
    pools: list[PoolGroup],
    teams: list[str],
    renames: dict[str, str],
    operator: str,
) -> dict[str, str]:
    like, overlay = _template(root)
    base = f"clusters/{cluster}"
    kept = [
        line
        for line in overlay.splitlines(keepends=True)
        if not line.strip().startswith(("- ../../policies/teams/", "- ../../pools/"))
    ]
    text = "".join(kept).replace(f"Entry overlay of {like}", f"Entry overlay of {cluster}")
    text = _after(
        text, "  - queues\n", "".join(f"  - ../../policies/teams/{t}\n" for t in teams), before=True
    )
    text = _after(text, "components:\n", "".join(f"  - ../../pools/{p.name}\n" for p in pools))
    out = {f"{base}/kustomization.yaml": text}
    for extra in ("gpu-operator-values.yaml", "gpu-operator-chart.yaml"):
        source = root / "clusters" / like / extra
        if source.is_file():
            out[f"{base}/{extra}"] = source.read_text(encoding="utf-8")
    values = f"{base}/gpu-operator-values.yaml"
    if values in out:
        out[values] = (
            question(
                f"GPU Operator values copied from cluster {like}: compare them with the "
                "cluster's "
                "ClusterPolicy (kubectl get clusterpolicy -o yaml)"
            )
            + out[values]
        )
    chart = f"{base}/gpu-operator-chart.yaml"
    if chart in out:
        if operator:
            out[chart] = re.sub(r"value: v\S+", f"value: {operator}", out[chart])
        else:
            out[chart] = (
                question("no gpu-operator pod in the snapshot: which chart version runs?") + out[chart]
            )
    # the model's sync-engine entry (its overlay lists it), whichever engine that is: an Argo CD model's
    # `- argocd` entry without the folder would not render
    engine = next((name for name in SYNC_ENGINES if (root / "clusters" / like / name).is_dir()), "flux")
    entry = root / "clusters" / like / engine
    for path in sorted(entry.rglob("*")):
        if path.is_file():
            rel = path.relative_to(root / "clusters" / like).as_posix()
            out[f"{base}/{rel}"] = path.read_text(encoding="utf-8").replace(like, cluster)
    out[f"{base}/cluster.yaml"] = cluster_yaml(cluster, pools, operator, engine)
    out[f"{base}/team-quotas.yaml"] = team_quotas(inventory, teams)
    out.update(queue_files(base, inventory, renames, teams))
    return out


def _after(text: str, anchor: str, insert: str, before: bool = False) -> str:
    if anchor not in text:
        raise ToolError(
            f"the model cluster's overlay has no `{anchor.strip()}` entry to place the imported ones by"
        )
    return text.replace(anchor, insert + anchor if before else anchor + insert, 1)


def cluster_yaml(cluster: str, pools: list[PoolGroup], operator: str, engine: str = "flux") -> str:
    nodes = [n for p in pools for n in p.nodes]
    regions = sorted({n.region for n in nodes if n.region})
    zones = sorted({n.zone or "unknown" for n in nodes})
    kubelets = Counter(re.sub(r"^v(\d+\.\d+).*", r"\1", n.kubelet) for n in nodes if n.kubelet).most_common()
    asks = [question("production, staging or test? the cluster does not say; `test` is a placeholder")]
    if len(regions) != 1:
        asks.append(
            question(f"the nodes name {len(regions)} regions ({', '.join(regions) or 'none'}): which one?")
        )
    if not operator:
        asks.append(question("no gpu-operator pod in the snapshot: which GPU Operator version runs?"))
    asks.append(
        question(f"which sync engine applies this overlay (flux, argocd)? `{engine}` is a placeholder")
    )
    return (
        "".join(asks)
        + f"""\
apiVersion: gpupolicy/v1
kind: Cluster
metadata:
  name: {cluster}
  description: "Imported by gpupolicy import from a snapshot of {len(nodes)} GPU node(s)."
spec:
  environment: test
  region: {regions[0] if regions else 'unknown'}
  zones: [{', '.join(zones)}]
  kubernetesVersion: "{kubelets[0][0] if kubelets else '1.33'}"
  gpuOperatorVersion: {operator or 'v26.7.0'}
  syncEngine: {engine}
"""
    )


def team_quotas(inventory: Inventory, teams: list[str]) -> str:
    docs = []
    for quota in sorted(inventory.resource_quotas, key=lambda q: meta(q).get("namespace", "")):
        namespace = meta(quota).get("namespace", "")
        hard = {
            k: v for k, v in ((quota.get("spec") or {}).get("hard") or {}).items() if GPU_QUOTA.match(str(k))
        }
        if namespace in teams and hard:
            rows = "".join(f'    {k}: "{v}"\n' for k, v in sorted(hard.items()))
            docs.append(
                f"# {namespace}: the GPU quota the namespace has today (ResourceQuota "
                f"{meta(quota).get('name')}).\napiVersion: v1\nkind: ResourceQuota\nmetadata:\n  "
                f"name: gpu\n  namespace: {namespace}\nspec:\n  hard:\n{rows}"
            )
    return "---\n".join(docs) or "[]\n"


def queue_files(base: str, inventory: Inventory, renames: dict[str, str], teams: list[str]) -> dict[str, str]:
    out, entries = {}, []
    for cohort in sorted(inventory.cohorts, key=lambda c: meta(c).get("name", "")):
        name = meta(cohort)["name"]
        out[f"{base}/queues/cohort-{name}.yaml"] = _dump(_clean(cohort, "Cohort"))
        entries.append(f"cohort-{name}.yaml")
    for queue in sorted(inventory.snapshot.cluster_queues or (), key=lambda q: meta(q).get("name", "")):
        name = meta(queue)["name"]
        body = _clean(queue, "ClusterQueue")
        asks = []
        for group in body["spec"].get("resourceGroups") or ():
            for flavor in group.get("flavors") or ():
                if flavor.get("name") in renames:
                    flavor["name"] = renames[flavor["name"]]
        labels = body["metadata"].setdefault("labels", {})
        selected = (body["spec"].get("namespaceSelector") or {}).get("matchLabels") or {}
        owners = [
            t
            for t in teams
            if any(
                meta(lq).get("namespace") == t and (lq.get("spec") or {}).get("clusterQueue") == name
                for lq in inventory.local_queues
            )
        ]
        if len(owners) == 1:
            labels.setdefault(TEAM_LABEL, owners[0])
            if not selected:
                body["spec"]["namespaceSelector"] = {"matchLabels": {TEAM_LABEL: owners[0]}}
        else:
            asks.append(
                f"which team owns ClusterQueue {name}? LocalQueues of {len(owners)} namespaces point at it"
            )
        if TIER_LABEL not in labels:
            asks.append(
                f"which tier is ClusterQueue {name}? counted as production in the migration plan; "
                "set the gpupolicy.io/tier label"
            )
        out[f"{base}/queues/{name}.yaml"] = "".join(question(a) for a in asks) + _dump(body)
        entries.append(f"{name}.yaml")
    classes = [c for c in inventory.priority_classes if not meta(c).get("name", "").startswith("system-")]
    if classes:
        out[f"{base}/queues/priorityclasses.yaml"] = question(
            "these PriorityClasses run in the cluster today: map them onto the fleet's ladder "
            "(policies/scheduling) or keep them here"
        ) + "---\n".join(
            _dump(_clean(c, "PriorityClass")) for c in sorted(classes, key=lambda c: meta(c)["name"])
        )
        entries.append("priorityclasses.yaml")
    out[f"{base}/queues/kustomization.yaml"] = (
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: "
        "Kustomization\nresources:\n" + "".join(f"  - {e}\n" for e in entries)
    )
    return out


KEEP_META = ("name", "namespace", "labels")


def _clean(obj: dict, kind: str) -> dict:
    """The object as a manifest: no status, no server-set metadata, Kueue's served version as v1beta2."""
    body = {
        "apiVersion": obj.get("apiVersion", ""),
        "kind": kind,
        "metadata": {k: v for k, v in meta(obj).items() if k in KEEP_META},
    }
    if body["apiVersion"].startswith("kueue.x-k8s.io/"):
        body["apiVersion"] = "kueue.x-k8s.io/v1beta2"
    body["metadata"]["labels"] = {
        k: v
        for k, v in (body["metadata"].get("labels") or {}).items()
        if not k.startswith("kustomize.toolkit.fluxcd.io/")
    }
    if not body["metadata"]["labels"]:
        del body["metadata"]["labels"]
    for key, value in obj.items():
        if key not in ("apiVersion", "kind", "metadata", "status"):
            body[key] = value
    return body


def _dump(body: dict) -> str:
    stream = io.StringIO()
    writer = YAML(typ="rt")
    writer.indent(mapping=2, sequence=4, offset=2)
    writer.width = 4096
    writer.dump(team_scaffold._ordered(body), stream)
    return stream.getvalue()
