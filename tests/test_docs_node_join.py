"""The "how nodes join a pool" pages: what they tell a platform engineer to put on a node is exactly what the
pool's ResourceFlavors select and its taints say, in forms that are well-formed for their APIs.

No Karpenter or Cluster API CRD is carried under ../shared/crds, so the templates are checked by structure:
JSON Schemas written from the upstream Go types (kubernetes-sigs/karpenter pkg/apis/v1 nodepool.go and
nodeclaim.go; kubernetes-sigs/cluster-api api/v1beta1 machinedeployment_types.go, machine_types.go and
bootstrap/kubeadm/api/v1beta1 kubeadm_types.go), each with the fields the page writes and their required
ones."""

from __future__ import annotations

import re

import jsonschema
import pytest
import yaml
from support import REPO

from gpupolicy import pipeline
from gpupolicy.docsgen import Context, node_join
from gpupolicy.model import Pool, Taint, is_discovered_label, selects

DNS_PREFIX = r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
QUALIFIED_NAME = rf"^{DNS_PREFIX}[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
TAINT = {
    "type": "object",
    "required": ["key", "effect"],
    "additionalProperties": False,
    "properties": {
        "key": {"type": "string", "pattern": QUALIFIED_NAME},
        "value": {"type": "string"},
        "effect": {"enum": ["NoSchedule", "PreferNoSchedule", "NoExecute"]},
    },
}
LABELS = {
    "type": "object",
    "propertyNames": {"pattern": QUALIFIED_NAME},
    "additionalProperties": {"type": "string"},
}
REFERENCE = {
    "type": "object",
    "required": ["apiVersion", "kind", "name"],
    "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "name": {"type": "string"}},
}
SCHEMAS = {
    ("karpenter.sh/v1", "NodePool"): {
        "type": "object",
        "required": ["metadata", "spec"],
        "properties": {
            "spec": {
                "type": "object",
                "required": ["template"],
                "properties": {
                    "limits": {"type": "object", "additionalProperties": {"type": ["integer", "string"]}},
                    "template": {
                        "type": "object",
                        "required": ["spec"],
                        "properties": {
                            "metadata": {"type": "object", "properties": {"labels": LABELS}},
                            "spec": {
                                "type": "object",
                                "required": ["nodeClassRef", "requirements"],
                                "properties": {
                                    "nodeClassRef": {"type": "object", "required": ["group", "kind", "name"]},
                                    "requirements": {
                                        "type": "array",
                                        "items": {
                                            "type": "object",
                                            "required": ["key", "operator"],
                                            "properties": {
                                                "operator": {
                                                    "enum": [
                                                        "In",
                                                        "NotIn",
                                                        "Exists",
                                                        "DoesNotExist",
                                                        "Gt",
                                                        "Lt",
                                                    ]
                                                },
                                                "values": {"type": "array", "items": {"type": "string"}},
                                            },
                                        },
                                    },
                                    "taints": {"type": "array", "items": TAINT},
                                },
                            },
                        },
                    },
                },
            }
        },
    },
    ("bootstrap.cluster.x-k8s.io/v1beta1", "KubeadmConfigTemplate"): {
        "type": "object",
        "required": ["metadata", "spec"],
        "properties": {
            "spec": {
                "type": "object",
                "required": ["template"],
                "properties": {
                    "template": {
                        "type": "object",
                        "required": ["spec"],
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "joinConfiguration": {
                                        "type": "object",
                                        "properties": {
                                            "nodeRegistration": {
                                                "type": "object",
                                                "properties": {
                                                    "kubeletExtraArgs": {
                                                        "type": "object",
                                                        "additionalProperties": {"type": "string"},
                                                    },
                                                    "taints": {"type": "array", "items": TAINT},
                                                },
                                            }
                                        },
                                    }
                                },
                            }
                        },
                    }
                },
            }
        },
    },
    ("cluster.x-k8s.io/v1beta1", "MachineDeployment"): {
        "type": "object",
        "required": ["metadata", "spec"],
        "properties": {
            "spec": {
                "type": "object",
                "required": ["clusterName", "selector", "template"],
                "properties": {
                    "replicas": {"type": "integer", "minimum": 0},
                    "template": {
                        "type": "object",
                        "required": ["spec"],
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["clusterName", "bootstrap", "infrastructureRef"],
                                "properties": {
                                    "failureDomain": {"type": "string"},
                                    "bootstrap": {
                                        "type": "object",
                                        "required": ["configRef"],
                                        "properties": {"configRef": REFERENCE},
                                    },
                                    "infrastructureRef": REFERENCE,
                                },
                            }
                        },
                    },
                },
            }
        },
    },
}


@pytest.fixture(scope="module")
def fleet():
    return pipeline.run(REPO, rules=False).fleet


@pytest.fixture(scope="module")
def pages(fleet) -> dict[str, str]:
    return node_join.pages(Context(root=REPO, fleet=fleet))


def _blocks(page: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", page, flags=re.M | re.S)


def _flag_values(command: str, flag: str) -> list[str]:
    found = re.search(rf"--{flag}=(\S+)", command)
    return found.group(1).split(",") if found else []


def test_every_pool_has_a_page(fleet, pages) -> None:
    assert set(pages) == {f"pools/{name}.md" for name in fleet.pools}


def test_the_labels_and_taints_are_what_the_flavors_select_and_the_pool_declares(fleet, pages) -> None:
    for pool in fleet.pools.values():
        page = pages[f"pools/{pool.name}.md"]
        command = _blocks(page, "sh")[0]
        labels = dict(item.split("=", 1) for item in _flag_values(command, "node-labels"))
        assert not any(is_discovered_label(key) for key in labels), "kubelet must not set GFD's labels"
        node = {**labels, **{k: v for k, v in pool.node_labels.items() if is_discovered_label(k)}}
        assert node == pool.node_labels
        for cluster in (fleet.clusters[c] for c in pool.clusters):
            flavors = [f for f in cluster.flavors.values() if pool in cluster.pools_of_flavor(f)]
            assert flavors and all(selects(f.node_labels, node) for f in flavors), (
                f"{pool.name} in {cluster.name}"
            )
        taints = [
            re.fullmatch(r"([^=:]+)(?:=([^:]*))?:(\w+)", item).groups("")
            for item in _flag_values(command, "register-with-taints")
        ]
        assert [Taint(key, value, effect) for key, value, effect in taints] == list(pool.taints)


def test_the_templates_are_well_formed_and_carry_the_same_labels_and_taints(fleet, pages) -> None:
    checked = set()
    for pool in fleet.pools.values():
        expected_taints = [
            {"key": t.key, **({"value": t.value} if t.value else {}), "effect": t.effect} for t in pool.taints
        ]
        for block in _blocks(pages[f"pools/{pool.name}.md"], "yaml"):
            for document in yaml.safe_load_all(block):
                key = (document["apiVersion"], document["kind"])
                jsonschema.validate(document, SCHEMAS[key])
                checked.add(key)
                _same_labels_and_taints(pool, document, expected_taints)
    assert checked == set(SCHEMAS)


def _same_labels_and_taints(pool: Pool, document: dict, expected_taints: list[dict]) -> None:
    provisioned = node_join.provisioned_labels(pool)
    if document["kind"] == "NodePool":
        template = document["spec"]["template"]
        assert template["metadata"]["labels"] == provisioned
        assert template["spec"]["taints"] == expected_taints
        assert document["spec"]["limits"]["nvidia.com/gpu"] == pool.gpus
    elif document["kind"] == "KubeadmConfigTemplate":
        registration = document["spec"]["template"]["spec"]["joinConfiguration"]["nodeRegistration"]
        args = registration["kubeletExtraArgs"].get("node-labels", "")
        assert dict(item.split("=", 1) for item in args.split(",") if item) == provisioned
        assert registration["taints"] == expected_taints
    else:
        zone = document["spec"]["template"]["spec"]["failureDomain"]
        assert document["spec"]["replicas"] == pool.zones[zone]


def test_a_label_discovery_writes_is_left_to_discovery() -> None:
    assert is_discovered_label("nvidia.com/gpu.product") and is_discovered_label(
        "nvidia.com/mig-1g.10gb.count"
    )
    assert not is_discovered_label("nvidia.com/mig.config") and not is_discovered_label("gpupolicy.io/pool")
    assert not is_discovered_label("nvidia.com/device-plugin.config")
