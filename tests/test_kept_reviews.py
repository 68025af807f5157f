"""Admission verdicts kept between runs (keptreviews, decision 0055): the same verdicts as evaluating, a
changed
input evaluated again, values JSON cannot hold exactly never cached, damaged entries ignored."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest
from support import REPO, copy_repo

from gpupolicy import pipeline
from gpupolicy.domain import cel, keptreviews
from gpupolicy.infra.cache import files as cachefiles
from gpupolicy.infra.cache.store import REVIEWS, CacheStore

NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "alpha", "labels": {"team": "a"}}}
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "x", "namespace": "alpha", "labels": {"a": "b"}},
    "spec": {"containers": [{"name": "c", "image": "i"}]},
}


def _policy(expression: str = "object.metadata.name == 'y'") -> dict:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "p"},
        "spec": {
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["pods"],
                    }
                ]
            },
            "validations": [
                {"expression": expression, "messageExpression": "'bad name ' + object.metadata.name"}
            ],
        },
    }


def _binding(actions: tuple[str, ...] = ("Deny",)) -> dict:
    return {
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "b"},
        "spec": {"policyName": "p", "validationActions": list(actions)},
    }


class _Counting:
    """Counts the policy evaluations the chain really does (a kept verdict does none)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        real = cel.evaluate

        def counted(*args, **kwargs):
            self.calls += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(cel, "evaluate", counted)


def _review(store: CacheStore, objects: list[dict], request: cel.Request) -> list[cel.Violation]:
    """One run: a chain with the store's kept verdicts reviews the request, then keeps what it computed."""
    kept = keptreviews.KeptReviews(store)
    verdict = cel.AdmissionChain.from_objects(objects, kept).review(request)
    kept.save()
    return verdict


def test_a_kept_verdict_is_the_evaluated_one_and_costs_no_evaluation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, counting = CacheStore(tmp_path), _Counting(monkeypatch)
    request = cel.Request(object=POD, namespace=NAMESPACE)
    evaluated = cel.AdmissionChain.from_objects([_policy(), _binding()]).review(request)
    assert [v.message for v in evaluated] == ["bad name x"] and counting.calls == 1
    assert _review(store, [_policy(), _binding()], request) == evaluated and counting.calls == 2
    assert _review(store, [_policy(), _binding()], request) == evaluated and counting.calls == 2  # kept


CHANGES = {
    "policy": (
        [_policy("object.metadata.name == 'x'"), _binding()],
        cel.Request(object=POD, namespace=NAMESPACE),
    ),
    "binding": ([_policy(), _binding(("Warn",))], cel.Request(object=POD, namespace=NAMESPACE)),
    "object": (
        [_policy(), _binding()],
        cel.Request(object={**POD, "metadata": {**POD["metadata"], "name": "z"}}, namespace=NAMESPACE),
    ),
    "namespace": ([_policy(), _binding()], cel.Request(object=POD, namespace={**NAMESPACE, "metadata": {}})),
    "user": ([_policy(), _binding()], cel.Request(object=POD, namespace=NAMESPACE, username="bob")),
    "operation": ([_policy(), _binding()], cel.Request(object=POD, namespace=NAMESPACE, operation="UPDATE")),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_changed_input_is_evaluated_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    store = CacheStore(tmp_path)
    _review(store, [_policy(), _binding()], cel.Request(object=POD, namespace=NAMESPACE))
    objects, request = CHANGES[change]
    counting = _Counting(monkeypatch)
    assert _review(store, objects, request) == cel.AdmissionChain.from_objects(objects).review(request)
    assert counting.calls == 2  # once through the kept verdicts (a miss), once directly


def test_the_code_that_evaluates_is_part_of_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    kept = keptreviews.KeptReviews(CacheStore.off())
    before = kept.chain_key([_policy()])
    monkeypatch.setattr(keptreviews, "_salt", lambda: "another version of cel.py")
    assert kept.chain_key([_policy()]) != before


@pytest.mark.parametrize(
    "value", [{1: "a"}, {"a": (1, 2)}, {"a": datetime.date(2026, 1, 1)}, {"a": float("nan")}]
)
def test_a_value_json_cannot_hold_exactly_is_never_a_key(value: dict) -> None:
    assert keptreviews._canonical(value) is None
    assert keptreviews._canonical({"1": "a"}) is not None  # the text {1: 'a'} would have shared with it


def test_a_request_json_cannot_hold_is_evaluated_every_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, counting = CacheStore(tmp_path), _Counting(monkeypatch)
    odd = {**POD, "metadata": {**POD["metadata"], "annotations": {1: "not a string key"}}}
    for _ in range(2):
        assert [v.message for v in _review(store, [_policy(), _binding()], cel.Request(object=odd))] == [
            "bad name x"
        ]
    assert counting.calls == 2
    assert not (store.parsed_version_dir / REVIEWS).exists()


def _entry(store: CacheStore) -> Path:
    (entry,) = [path for path in (store.parsed_version_dir / REVIEWS).rglob("*") if path.is_file()]
    return entry


HOSTILE = {
    "not cache format": lambda entry: entry.write_bytes(b"garbage"),
    "not marshal": lambda entry: cachefiles.write_bytes(entry, b"\xff\xfe not marshal"),
    "a list": lambda entry: cachefiles.write_value(entry, [1, 2]),
    "a verdict of the wrong shape": lambda entry: cachefiles.write_value(
        entry, {key: [("p", "b")] for key in cachefiles.read_value(entry)}
    ),
    "a verdict with the wrong types": lambda entry: cachefiles.write_value(
        entry, {key: [("p", "b", 3, ("Deny",), None)] for key in cachefiles.read_value(entry)}
    ),
    "oversized": lambda entry: cachefiles.write_bytes(entry, b" " * (keptreviews.MAX_ENTRY_BYTES + 1)),
}


@pytest.mark.parametrize("damage", sorted(HOSTILE))
def test_a_damaged_or_hostile_entry_is_ignored(tmp_path: Path, damage: str) -> None:
    store = CacheStore(tmp_path)
    request = cel.Request(object=POD, namespace=NAMESPACE)
    expected = _review(store, [_policy(), _binding()], request)
    HOSTILE[damage](_entry(store))
    assert _review(store, [_policy(), _binding()], request) == expected


def test_a_run_keeps_only_the_requests_it_reviewed(tmp_path: Path) -> None:
    store = CacheStore(tmp_path)
    for name in ("first", "second"):
        _review(
            store,
            [_policy(), _binding()],
            cel.Request(object={**POD, "metadata": {**POD["metadata"], "name": name}}, namespace=NAMESPACE),
        )
    assert len(cachefiles.read_value(_entry(store))) == 1


def _findings(result: pipeline.RunResult) -> list[str]:
    return sorted(json.dumps([f.rule, f.path, f.line, f.message, f.cluster]) for f in result.findings)


def test_a_warm_run_reports_what_a_run_without_cache_does(tmp_path: Path) -> None:
    repo = copy_repo(REPO, tmp_path / "repo")
    policy = repo / "policies" / "admission" / "gpu-pods.yaml"
    policy.write_text(
        policy.read_text().replace(
            "object.metadata.labels['kueue.x-k8s.io/queue-name'] != '')",
            "object.metadata.labels['kueue.x-k8s.io/queue-name'] == 'none')",
            1,
        )
    )
    store = CacheStore(tmp_path / "cache")
    uncached = _findings(pipeline.run(repo, store=CacheStore.off()))
    assert any("denied by admission policy gpu-pods-require-queue" in f for f in uncached)
    assert _findings(pipeline.run(repo, store=store)) == uncached
    assert list((store.parsed_version_dir / REVIEWS).rglob("*"))
    assert _findings(pipeline.run(repo, store=store)) == uncached
