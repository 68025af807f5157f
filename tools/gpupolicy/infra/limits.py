"""Upper bounds on magnitudes that come from repository content, each grounded in a public fact.

The repository schemas (schemas/repo/*.yaml) carry the same numbers as JSON Schema `maximum`s, so an absurd
value is a SCHEMA005 finding with file and line before anything sizes memory by it; tests/test_limits.py keeps
the two in step. Rules that check a bound the schemas cannot express (a sum over files) import it from here.
"""

from __future__ import annotations

# Kubernetes' scalability thresholds: 5000 nodes per cluster (kubernetes/community,
# sig-scalability/configs-and-limits/thresholds.md, "#Nodes ... 5000"). No pool, zone or cluster of pools may
# declare more nodes than one cluster supports.
MAX_NODES_PER_CLUSTER = 5000

# The largest GPU node boards: 8 GPUs on HGX/DGX H100, H200 and B200, 16 on HGX-2 / DGX-2 (V100). A GB200
# NVL72 rack is 18 compute trays of 4 GPUs, each tray its own node.
MAX_GPUS_PER_NODE = 16

# MPS: the device plugin refuses more than 48 replicas per GPU (Volta and newer; 16 before) because an MPS
# server takes at most 48 clients (NVIDIA/k8s-device-plugin cmd/mps-control-daemon/mps/device.go, maxClients).
MAX_MPS_REPLICAS = 48

# Time-slicing: the device plugin requires replicas >= 2 and sets no maximum (api/config/v1/replicas.go). Each
# replica is a device the kubelet lists; 64 is far above any documented use (the README's examples use 10) and
# keeps GPUs x replicas within what the kubelet and the capacity arithmetic handle.
MAX_TIME_SLICING_REPLICAS = 64

# The zones a pool spans: cloud regions have at most six availability zones (AWS us-east-1 has six); 16 leaves
# room for on-premises failure domains.
MAX_ZONES = 16

# ConfigMap and Secret data: the API server rejects an object whose data (+ binaryData) values total more than
# MaxSecretSize = 1 * 1024 * 1024 bytes (kubernetes/kubernetes pkg/apis/core/types.go; applied by
# ValidateConfigMap and ValidateSecret in pkg/apis/core/validation/validation.go, `totalSize >
# core.MaxSecretSize`).
MAX_OBJECT_DATA_BYTES = 1024 * 1024

# A count of pods in a rollback criterion: Kubernetes' threshold is 150,000 pods per cluster (thresholds.md).
MAX_PODS_PER_CLUSTER = 150_000

# Any other event counter (XID errors in a window): int32, the width Kubernetes gives its own counters
# (core Event.count is int32); it also keeps every count exact as a float.
MAX_COUNTER = 2**31 - 1

# vCPUs of one node (pool.yaml `node.cpu`): the largest GPU servers have 224 threads (DGX H100/H200/B200: two
# 56-core Xeon 8480C/8570, Hyper-Threading) and the largest cloud instances 896 vCPUs (AWS
# u7in-32tb.224xlarge).
MAX_NODE_CPUS = 1024
