"""Which resource names are GPUs: one predicate per meaning, so a rule, the audit, a diff and the startup
check cannot disagree about a name (issue 30, decision 0084).

- `is_nvidia_resource`: any extended resource under `nvidia.com/`: the quota that the CAP rules, the quota
  page, workpath, recommend and the upgrade drain check count as GPU quota, whatever the name after the
  domain.
- `is_gpu_device_resource`: a GPU device as the device plugin advertises it: `nvidia.com/gpu` (a whole card),
  `nvidia.com/gpu.<suffix>` (a shared replica, `nvidia.com/gpu.shared` under time-slicing's or MPS's
  `renameByDefault`) or `nvidia.com/mig-<profile>` (a MIG slice, also `.shared`; capacity.py lists the same
  names). It is the fleet's own definition of "requests a GPU": the admission policies
  (policies/admission/gpu-pods.yaml, gpu-jobs.yaml, gpu-startup-check.yaml) test exactly
  `r == 'nvidia.com/gpu' || r.startsWith('nvidia.com/gpu.') || r.startsWith('nvidia.com/mig-')`, so the
  toolkit's model of them (workloads, the startup check, WL001) must read a name the same way.
"""

from __future__ import annotations

from ..model import GPU_RESOURCE, MIG_RESOURCE_PREFIX

NVIDIA_DOMAIN = "nvidia.com/"
SHARED_GPU_PREFIX = GPU_RESOURCE + "."  # nvidia.com/gpu.shared, or another suffix a config renames to


def is_nvidia_resource(name: object) -> bool:
    """Any extended resource in NVIDIA's domain (`nvidia.com/...`): what quota is counted for."""
    return isinstance(name, str) and name.startswith(NVIDIA_DOMAIN)


def is_gpu_device_resource(name: object) -> bool:
    """A whole GPU, a shared replica of one, or a MIG slice: what the admission policies call a GPU."""
    return isinstance(name, str) and (
        name == GPU_RESOURCE or name.startswith((SHARED_GPU_PREFIX, MIG_RESOURCE_PREFIX))
    )
