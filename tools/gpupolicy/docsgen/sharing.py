"""Time-sliced, MPS and exclusive pools: how each card is shared and what that means for a pod."""

from __future__ import annotations

from . import Context, table


def pages(context: Context) -> dict[str, str]:
    text = context.header("GPU sharing per pool", _inputs(context))
    text += (
        "*Exclusive*: a pod gets whole GPUs, full memory and bandwidth. *Time-sliced*: the device "
        "plugin advertises each GPU several times; pods share compute in turns with no memory isolation, so "
        "a pod asking for more than one replica is refused where `failRequestsGreaterThanOne` is set. *MIG*: "
        "hardware partitions with their own memory (see [MIG layouts](mig-layouts.md)). *Isolated*: a "
        "pool only one team's queue can reach (taint plus flavor toleration).\n\n"
    )
    rows = []
    for cluster in context.fleet.clusters.values():
        for pool in cluster.pools:
            config_key = pool.node_labels.get("nvidia.com/device-plugin.config", "default")
            entry = cluster.device_plugin_configs.get(config_key)
            sharing = (entry.data or {}).get("sharing", {}) if entry and isinstance(entry.data, dict) else {}
            slicing = sharing.get("timeSlicing") if isinstance(sharing, dict) else None
            fail_gt_one = slicing.get("failRequestsGreaterThanOne") if isinstance(slicing, dict) else None
            rows.append(
                [
                    cluster.name,
                    pool.name,
                    pool.gpu_model,
                    pool.access_mode,
                    pool.sharing,
                    pool.time_slicing_replicas or pool.mps_replicas or "-",
                    f"`{config_key}`",
                    "-" if fail_gt_one is None else ("yes" if fail_gt_one else "no"),
                    ", ".join(f"`{k}` {v}" for k, v in pool.capacity.items()) or "none",
                    pool.team or "-",
                ]
            )
    text += table(
        [
            "cluster",
            "pool",
            "GPU",
            "access mode",
            "sharing",
            "replicas",
            "device-plugin config",
            "fail >1 replica",
            "exposes",
            "dedicated to",
        ],
        rows,
    )
    return {"sharing.md": text}


def _inputs(context: Context) -> set[str]:
    """Every pool's declaration and the device-plugin config entry its nodes select."""
    found: set[str] = set()
    for cluster in context.fleet.clusters.values():
        for pool in cluster.pools:
            entry = cluster.device_plugin_configs.get(
                pool.node_labels.get("nvidia.com/device-plugin.config", "default")
            )
            found |= {pool.path, *([entry.source.path] if entry else [])}
    return found
