""" "How nodes join a pool": one page per pool with the exact labels and taints its nodes must carry, in the
forms they are applied in — kubelet flags, a Karpenter `NodePool`, a Cluster API `MachineDeployment` with its
`KubeadmConfigTemplate` — generated from pool.yaml, so a node provisioned from them is what the ResourceFlavor
selects and what the GPU Operator's components tolerate.

API versions: Karpenter `karpenter.sh/v1` (NodePool: `spec.template.metadata.labels`, `spec.template.spec`
`taints`, `requirements`, `nodeClassRef{group,kind,name}`; kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go,
nodeclaim.go); Cluster API `cluster.x-k8s.io/v1beta1` MachineDeployment and
`bootstrap.cluster.x-k8s.io/v1beta1` KubeadmConfigTemplate (labels and taints through kubeadm's
`joinConfiguration.nodeRegistration`: `kubeletExtraArgs.node-labels` and `taints`, because Cluster API copies
to the Node only labels of its own
domains; kubernetes-sigs/cluster-api docs/book "Metadata propagation")."""

from __future__ import annotations

import yaml

from ..model import Cluster, Pool, Taint, is_discovered_label
from . import Context, table

PAGES_FOLDER = "pools"
KARPENTER_API = "karpenter.sh/v1"
CAPI_API = "cluster.x-k8s.io/v1beta1"
KUBEADM_BOOTSTRAP_API = "bootstrap.cluster.x-k8s.io/v1beta1"
ZONE_LABEL = "topology.kubernetes.io/zone"  # well-known label; Karpenter and Cluster API place nodes by it


def pages(context: Context) -> dict[str, str]:
    clusters = {
        pool.name: [context.fleet.clusters[c] for c in pool.clusters if c in context.fleet.clusters]
        for pool in context.fleet.pools.values()
    }
    return {
        f"{PAGES_FOLDER}/{pool.name}.md": _page(context, pool, clusters[pool.name])
        for pool in context.fleet.pools.values()
    }


def provisioned_labels(pool: Pool) -> dict[str, str]:
    """The labels the node's provisioning sets: every declared label that discovery does not write itself."""
    return {key: value for key, value in pool.node_labels.items() if not is_discovered_label(key)}


def kubelet_flags(pool: Pool) -> list[str]:
    labels = ",".join(f"{key}={value}" for key, value in provisioned_labels(pool).items())
    flags = [f"--node-labels={labels}"] if labels else []
    if pool.taints:
        flags.append("--register-with-taints=" + ",".join(_taint_flag(taint) for taint in pool.taints))
    return flags


def _taint_flag(taint: Taint) -> str:
    return f"{taint.key}={taint.value}:{taint.effect}" if taint.value else f"{taint.key}:{taint.effect}"


def _taints(pool: Pool) -> list[dict[str, str]]:
    return [
        {"key": t.key, **({"value": t.value} if t.value else {}), "effect": t.effect} for t in pool.taints
    ]


def karpenter_node_pool(pool: Pool) -> dict:
    return {
        "apiVersion": KARPENTER_API,
        "kind": "NodePool",
        "metadata": {"name": pool.name},
        "spec": {
            "template": {
                "metadata": {"labels": provisioned_labels(pool)},
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": pool.name},
                    "requirements": [{"key": ZONE_LABEL, "operator": "In", "values": sorted(pool.zones)}],
                    "taints": _taints(pool),
                },
            },
            "limits": {"nvidia.com/gpu": pool.gpus},  # never more GPUs than pool.yaml declares
        },
    }


def cluster_api_objects(pool: Pool, cluster: str) -> list[dict]:
    """A KubeadmConfigTemplate with the labels and taints, and one MachineDeployment per zone."""
    name = f"{cluster}-{pool.name}"
    labels = ",".join(f"{key}={value}" for key, value in provisioned_labels(pool).items())
    bootstrap = {
        "apiVersion": KUBEADM_BOOTSTRAP_API,
        "kind": "KubeadmConfigTemplate",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "joinConfiguration": {
                        "nodeRegistration": {
                            "kubeletExtraArgs": {"node-labels": labels} if labels else {},
                            "taints": _taints(pool),
                        }
                    }
                }
            }
        },
    }
    deployments = [
        {
            "apiVersion": CAPI_API,
            "kind": "MachineDeployment",
            "metadata": {"name": f"{name}-{zone}"},
            "spec": {
                "clusterName": cluster,
                "replicas": nodes,
                "selector": {"matchLabels": {}},
                "template": {
                    "spec": {
                        "clusterName": cluster,
                        "failureDomain": zone,
                        "bootstrap": {
                            "configRef": {
                                "apiVersion": KUBEADM_BOOTSTRAP_API,
                                "kind": "KubeadmConfigTemplate",
                                "name": name,
                            }
                        },
                        "infrastructureRef": {
                            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
                            "kind": "AWSMachineTemplate",
                            "name": name,
                        },
                    }
                },
            },
        }
        for zone, nodes in sorted(pool.zones.items())
    ]
    return [bootstrap, *deployments]


def _yaml(*documents: dict) -> str:
    return "---\n".join(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False) for doc in documents)


def _page(context: Context, pool: Pool, clusters: list[Cluster]) -> str:
    text = context.header(f"How nodes join pool {pool.name}")
    where = ", ".join(f"[{c.name}](../clusters/{c.name}.md)" for c in clusters) or "no cluster yet"
    text += (
        f"{pool.nodes} node(s) of {pool.gpus_per_node} [{pool.gpu_model}](../gpus.md) in "
        f"{', '.join(f'{zone} ({n})' for zone, n in pool.zones.items())}; access mode "
        f"{pool.access_mode}; cluster(s): {where}. Declared in `{pool.path}`.\n\n"
    )
    text += "## Labels and taints\n\nWhat the node's provisioning must set:\n\n"
    rows = [[f"`{key}`", f"`{value}`", "label"] for key, value in provisioned_labels(pool).items()]
    rows += [
        [f"`{t.key}`", f"`{t.value}`" if t.value else "", f"taint, effect `{t.effect}`"] for t in pool.taints
    ]
    text += table(["key", "value", "as"], rows)
    discovered = {k: v for k, v in pool.node_labels.items() if is_discovered_label(k)}
    if discovered:
        text += (
            "\nWhat GPU Feature Discovery sets by itself once the GPU Operator runs on the node (do not "
            "set these; check that they come out as declared, the flavor selects on them):\n\n"
        )
        text += table(["label", "expected value"], [[f"`{k}`", f"`{v}`"] for k, v in discovered.items()])
    text += (
        "\n## kubelet flags\n\nFor nodes you bootstrap yourself (kubelet command line or its systemd "
        "drop-in):\n\n"
    )
    text += "```sh\n" + " \\\n  ".join(["kubelet", *kubelet_flags(pool)]) + "\n```\n"
    text += (
        "\n## Karpenter NodePool\n\nThe `nodeClassRef` names your provider's node class (here AWS's "
        "`EC2NodeClass`), which chooses the GPU instance type; `limits` stops Karpenter at the GPUs "
        "pool.yaml declares.\n\n"
    )
    text += f"```yaml\n{_yaml(karpenter_node_pool(pool))}```\n"
    for cluster in clusters:
        text += (
            f"\n## Cluster API MachineDeployment ({cluster.name})\n\nOne MachineDeployment per zone; "
            "the "
            "labels and taints travel in the kubeadm join configuration. `infrastructureRef` names your "
            "provider's machine template; set `spec.template.spec.version` to the cluster's Kubernetes "
            f"patch release ({cluster.facts.kubernetes_version}.x).\n\n"
        )
        objects = cluster_api_objects(pool, cluster.name)
        text += f"```yaml\n{_yaml(*objects)}```\n"
    return text
