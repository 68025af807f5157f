"""What the replay does not model, named in every report (simulate/unmodelled.py)."""

from __future__ import annotations


def test_settings_the_replay_does_not_model_are_named_with_where_they_are_set(tmp_path):
    """A report must not pass off figures as Kueue's where the cluster turns on something the replay ignores:
    unmodelled.not_modelled names each such setting and where it is set."""
    from support import copy_repo, fleet_repo

    from gpupolicy import pipeline
    from gpupolicy.domain.kueue_configuration import KUEUE_VALUES
    from gpupolicy.simulate.policy import from_cluster
    from gpupolicy.simulate.report import kueue_line, kueue_settings
    from gpupolicy.simulate.unmodelled import not_modelled

    repo = copy_repo(fleet_repo(), tmp_path / "repo")
    cluster = next(iter(pipeline.load_fleet(repo, use_cache=False).clusters.values()))
    assert not_modelled(cluster) == []
    values = repo / KUEUE_VALUES
    values.write_text(
        values.read_text().replace(
            "    kind: Configuration\n",
            "    kind: Configuration\n    admissionFairSharing:\n      usageHalfLifeTime: 168h\n",
        )
    )
    queue = next(iter(cluster.cluster_queues.values()))
    path = repo / queue.obj.origin
    path.write_text(path.read_text().replace("\nspec:\n", "\nspec:\n  stopPolicy: Hold\n", 1))
    cluster = pipeline.load_fleet(repo, use_cache=False).clusters[cluster.name]
    assert not_modelled(cluster) == [
        "AdmissionFairSharing (the Configuration)",
        f"a stopPolicy (ClusterQueue {queue.name})",
    ]
    line = kueue_line(kueue_settings(from_cluster(cluster), cluster))
    assert line.endswith(
        f"AdmissionFairSharing (the Configuration); a stopPolicy (ClusterQueue {queue.name})"
    )
