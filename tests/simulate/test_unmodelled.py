"""What the replay does not model, named in every report (simulate/unmodelled.py)."""

from __future__ import annotations

from simhelpers import fleet_copy, reloaded, with_configuration, with_queue_spec


def test_settings_the_replay_does_not_model_are_named_with_where_they_are_set(tmp_path):
    """A report must not pass off figures as Kueue's where the cluster turns on something the replay ignores:
    unmodelled.not_modelled names each such setting and where it is set."""
    from gpupolicy.simulate.report import kueue_line, kueue_settings
    from gpupolicy.simulate.unmodelled import not_modelled

    repo, cluster = fleet_copy(tmp_path)
    assert not_modelled(cluster) == []
    with_configuration(repo, "    admissionFairSharing:\n      usageHalfLifeTime: 168h\n")
    queue = next(iter(cluster.cluster_queues.values()))
    with_queue_spec(repo, queue, "  stopPolicy: Hold\n")
    cluster = reloaded(repo, cluster.name)
    assert not_modelled(cluster) == [
        "AdmissionFairSharing (the Configuration)",
        f"a stopPolicy (ClusterQueue {queue.name})",
    ]
    line = kueue_line(kueue_settings(cluster))
    assert line.endswith(
        f"AdmissionFairSharing (the Configuration); a stopPolicy (ClusterQueue {queue.name})"
    )


def _fake_cluster(config=None, queues=(), flavors=()):
    from types import SimpleNamespace

    def obj(spec):
        return SimpleNamespace(obj=SimpleNamespace(spec=spec))

    return SimpleNamespace(
        kueue_configuration=config,
        cluster_queues={name: SimpleNamespace(name=name, **vars(obj(spec))) for name, spec in queues},
        flavors={name: SimpleNamespace(name=name, **vars(obj(spec))) for name, spec in flavors},
    )


def test_each_setting_is_named_and_long_lists_are_counted():
    from gpupolicy.simulate.unmodelled import not_modelled

    queues = [(f"q{i}", {"admissionChecks": ["prov"]}) for i in range(5)]
    queues.append(("fair", {"admissionScope": {"admissionMode": "UsageBasedAdmissionFairSharing"}}))
    cluster = _fake_cluster(
        {"waitForPodsReady": {"recoveryTimeout": "3m"}},
        queues,
        [("h100", {"topologyName": "default"}), ("plain", {})],
    )
    assert not_modelled(cluster) == [
        "AdmissionFairSharing (ClusterQueue fair)",
        "topology-aware scheduling (ResourceFlavor h100)",
        "admission checks (ClusterQueue q0, q1, q2 and 2 more)",
        "waitForPodsReady.recoveryTimeout",
    ]
    # malformed settings (the API server refuses them) name nothing and break nothing
    assert not_modelled(_fake_cluster("not a mapping", [("q", {"admissionScope": "x"})], [("f", None)])) == []
