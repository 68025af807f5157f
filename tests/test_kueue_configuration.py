"""domain/kueue_configuration.py on a Configuration a pull request wrote: every refusal found in one pass over
the embedded text, whatever its length (WL015 runs on untrusted pull requests)."""

from __future__ import annotations

from gpupolicy.domain import kueue_configuration
from gpupolicy.infra.yamlload import parse_source

FRAMEWORKS = 2000


def _values(frameworks: list[str]) -> list:
    listed = "".join(f"        - {name}\n" for name in frameworks)
    text = (
        "managerConfig:\n  controllerManagerConfigYaml: |-\n    apiVersion: config.kueue.x-k8s.io/v1beta2\n"
        f"    kind: Configuration\n    integrations:\n      frameworks:\n{listed}"
    )
    return parse_source(text.encode(), kueue_configuration.KUEUE_VALUES).documents


def test_a_long_list_of_refused_names_is_read_and_located_in_one_parse(monkeypatch):
    documents = _values([f"batch/jobs{index}" for index in range(FRAMEWORKS)] + ["pod", "pod"])
    parses = []
    original = kueue_configuration.parse_source

    def counted(*args, **kwargs):
        parses.append(args[1])
        return original(*args, **kwargs)

    monkeypatch.setattr(kueue_configuration, "parse_source", counted)
    config, _ = kueue_configuration.read(documents)
    refused = kueue_configuration.refusals(config)
    locate = kueue_configuration.field_locator(documents)
    lines = [locate(field).line for field, _ in refused]
    assert len(parses) == 2  # once to read, once to locate: not once per finding
    assert len(refused) == FRAMEWORKS + 1
    assert refused[-1] == (f"integrations.frameworks[{FRAMEWORKS + 1}]", "'pod' is named twice")
    assert lines == sorted(lines) and lines[0] == 7 and lines[-1] == 7 + FRAMEWORKS + 1  # the items, in order


def test_a_close_name_gets_a_suggestion():
    config, _ = kueue_configuration.read(_values(["kubeflow.org/pytorchjobs", "mpi"]))
    refused = dict(kueue_configuration.refusals(config))
    assert "did you mean 'kubeflow.org/pytorchjob'?" in refused["integrations.frameworks[0]"]
    assert "the rule's page lists those it has" in refused["integrations.frameworks[1]"]


def test_a_huge_value_is_shown_cut():
    config, _ = kueue_configuration.read(_values(["x" * 100_000]))
    (field, why), *_ = kueue_configuration.refusals(config)
    assert field == "integrations.frameworks[0]" and len(why) < 200 and "..." in why
