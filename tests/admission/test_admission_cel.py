"""The admission policies, evaluated with CEL against a corpus of hostile and legitimate pod specs.

Every file in hostile/ must be denied and every file in legitimate/ admitted. A case file holds a
`description`, an optional `request` (operation, subResource, username, groups) and the `object`. The
policies are the repository's own (policies/admission/); the development copies in policies/ here are
checked against the same corpus so the corpus itself stays honest.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from gpupolicy.domain import cel
from gpupolicy.workpath import controllers

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
REPO_POLICIES = REPO / "policies" / "admission"
DEV_POLICIES = HERE / "policies"


def _yaml_objects(folder: Path) -> list[dict]:
    objects = []
    for path in sorted(folder.rglob("*.y*ml")):
        objects.extend(doc for doc in yaml.safe_load_all(path.read_text()) if isinstance(doc, dict))
    return objects


def _chain(source: str) -> cel.AdmissionChain:
    if source == "repository":
        if not REPO_POLICIES.is_dir():
            pytest.skip("policies/admission/ does not exist yet")
        objects = _yaml_objects(REPO_POLICIES)
        if not any(o.get("kind") == cel.BINDING_KIND for o in objects):
            pytest.fail("policies/admission/ has no ValidatingAdmissionPolicyBinding: no policy is enforced")
        return cel.AdmissionChain.from_objects(objects)
    return cel.AdmissionChain.from_objects(_yaml_objects(DEV_POLICIES))


NAMESPACES = {
    doc["metadata"]["name"]: doc for doc in yaml.safe_load_all((HERE / "namespaces.yaml").read_text())
}
SOURCES = ("repository", "development")


def _cases(kind: str) -> list[Path]:
    return sorted((HERE / kind).glob("*.yaml"))


def _requests(case_file: Path) -> list[cel.Request]:
    """The case's own request, then (for a workload) the objects its controllers would create: a JobSet's
    child Jobs (workpath.controllers, as jobset's constructJob builds them), then the pods."""
    case = yaml.safe_load(case_file.read_text())
    obj = case["object"]
    settings = case.get("request") or {}
    namespace = NAMESPACES[obj["metadata"]["namespace"]]
    first = cel.Request(
        object=obj,
        namespace=namespace,
        operation=settings.get("operation", "CREATE"),
        sub_resource=settings.get("subResource", ""),
        old_object=obj if settings.get("operation") == "UPDATE" else None,
        username=settings.get("username", "alice@example.com"),
        groups=tuple(settings.get("groups", ("system:authenticated",))),
    )
    children = [
        cel.Request(object=c.obj, namespace=namespace, username=c.username, groups=c.groups)
        for c in controllers.created_objects(obj)
    ]
    return [first, *children, *cel.workload_requests(obj, namespace)[1:]]


def _denials(chain: cel.AdmissionChain, case: Path) -> list[cel.Violation]:
    return [denial for request in _requests(case) for denial in chain.denials(request)]


def test_corpus_is_large_enough() -> None:
    assert len(_cases("hostile")) >= 20
    assert len(_cases("legitimate")) >= 20


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("case", _cases("hostile"), ids=lambda p: p.stem)
def test_hostile_spec_is_denied(source: str, case: Path) -> None:
    chain = _chain(source)
    denials = _denials(chain, case)
    assert denials, f"{source} policies admit hostile spec {case.stem}"


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("case", _cases("legitimate"), ids=lambda p: p.stem)
def test_legitimate_spec_is_admitted(source: str, case: Path) -> None:
    chain = _chain(source)
    denials = _denials(chain, case)
    assert not denials, f"{source} policies deny {case.stem}: {[d.message for d in denials]}"


@pytest.mark.parametrize("source", SOURCES)
def test_policies_compile(source: str) -> None:
    chain = _chain(source)
    problems = {
        name: [p.message for p in cel.compile_errors(policy.body)] for name, policy in chain.policies.items()
    }
    assert not any(problems.values()), problems


def test_reference_fleet_admits_the_child_jobs_of_a_queued_gpu_jobset() -> None:
    """Reference fleet: the Jobs the JobSet controller creates carry no queue label of their own (issue 33,
    defect 1); the shipped policies must admit them, or Kueue holds the JobSet's quota and no Job exists."""
    chain = _chain("repository")
    case = yaml.safe_load((HERE / "legitimate" / "jobset-with-queue.yaml").read_text())
    namespace = NAMESPACES[case["object"]["metadata"]["namespace"]]
    [child] = controllers.created_objects(case["object"])
    assert "kueue.x-k8s.io/queue-name" not in child.obj["metadata"]["labels"]
    request = cel.Request(object=child.obj, namespace=namespace, username=child.username, groups=child.groups)
    assert [d.message for d in chain.denials(request)] == []


def test_reference_fleet_still_refuses_a_user_made_gpu_job_claiming_a_jobset_owner() -> None:
    """Reference fleet: the JobSet-child exemption holds only for the JobSet controller's own requests."""
    chain = _chain("repository")
    case = yaml.safe_load((HERE / "legitimate" / "jobset-with-queue.yaml").read_text())
    namespace = NAMESPACES[case["object"]["metadata"]["namespace"]]
    [child] = controllers.created_objects(case["object"])
    assert chain.denials(cel.Request(object=child.obj, namespace=namespace))


def test_reference_fleet_refuses_a_job_whose_startup_check_covers_less_than_the_sum() -> None:
    """Reference fleet (issue 33, defect 3): two app containers of 1 GPU each need a check asking for 2; the
    kubelet gives the second container fresh devices (kubernetes pkg/kubelet/cm/devicemanager/manager.go,
    devicesToReuse). The Job itself is refused, before Kueue reserves its quota."""
    chain = _chain("repository")
    job = copy.deepcopy(yaml.safe_load((HERE / "legitimate" / "job-with-queue.yaml").read_text())["object"])
    containers = job["spec"]["template"]["spec"]["containers"]
    containers.append({**containers[0], "name": "second"})
    request = cel.Request(object=job, namespace=NAMESPACES["alpha"])
    assert [d.policy for d in chain.denials(request)] == ["gpu-jobs-require-startup-check"]
    check = job["spec"]["template"]["spec"]["initContainers"][0]["resources"]
    check["limits"]["nvidia.com/gpu"] = check["requests"]["nvidia.com/gpu"] = 2
    assert chain.denials(request) == []


# --- the evaluator's own semantics
# ----------------------------------------------------------------------------


def _policy(validations: list[dict], **spec) -> dict:
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
            "validations": validations,
            **spec,
        },
    }


def _binding(actions: list[str], **spec) -> dict:
    return {
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "b"},
        "spec": {"policyName": "p", "validationActions": actions, **spec},
    }


POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "x", "namespace": "alpha", "labels": {"a": "b"}},
    "spec": {"containers": [{"name": "c", "image": "i"}]},
}


def _review(policy: dict, binding: dict, obj: dict = POD, **request) -> list[cel.Violation]:
    chain = cel.AdmissionChain.from_objects([policy, binding])
    return chain.review(cel.Request(object=obj, namespace=NAMESPACES["alpha"], **request))


def test_false_validation_denies_with_its_message_expression() -> None:
    policy = _policy(
        [
            {
                "expression": "object.metadata.name == 'y'",
                "messageExpression": "'bad name ' + object.metadata.name",
            }
        ]
    )
    [violation] = _review(policy, _binding(["Deny"]))
    assert violation.denies and violation.message == "bad name x"


def test_warn_and_audit_do_not_deny() -> None:
    policy = _policy([{"expression": "false", "message": "no"}])
    [violation] = _review(policy, _binding(["Warn", "Audit"]))
    assert not violation.denies


def test_expression_error_denies_under_fail_and_is_ignored_under_ignore() -> None:
    broken = [{"expression": "object.spec.missing.field == 1"}]
    assert _review(_policy(broken), _binding(["Deny"]))[0].message.startswith("expression error")
    assert _review(_policy(broken, failurePolicy="Ignore"), _binding(["Deny"])) == []


def test_false_match_condition_skips_the_policy() -> None:
    policy = _policy([{"expression": "false"}], matchConditions=[{"name": "never", "expression": "false"}])
    assert _review(policy, _binding(["Deny"])) == []


def test_variables_are_visible_in_order() -> None:
    policy = _policy(
        [{"expression": "variables.second == 2"}],
        variables=[
            {"name": "first", "expression": "1"},
            {"name": "second", "expression": "variables.first + 1"},
        ],
    )
    assert _review(policy, _binding(["Deny"])) == []


def test_binding_namespace_selector_and_resource_rules_limit_the_scope() -> None:
    policy = _policy([{"expression": "false"}])
    elsewhere = _binding(["Deny"], matchResources={"namespaceSelector": {"matchLabels": {"team": "other"}}})
    assert _review(policy, elsewhere) == []
    assert _review(policy, _binding(["Deny"]), operation="UPDATE") == []
    assert _review(policy, _binding(["Deny"]), obj={**POD, "kind": "Service"}) == []


def test_kubernetes_library_functions() -> None:
    policy = _policy(
        [
            {
                "expression": "'A,B'.lowerAscii().split(',').size() == 2 && "
                "quantity('2Gi').isGreaterThan(quantity('1500Mi'))"
            }
        ]
    )
    assert _review(policy, _binding(["Deny"])) == []


@pytest.mark.parametrize(
    "expression, fragment",
    [
        ("object.metadata.name ==", "Syntax error"),
        ("object.?metadata.name == 'x'", "optional syntax"),
        ("object.metadata.name.frobnicate()", "frobnicate"),
    ],
)
def test_compile_errors_are_reported(expression: str, fragment: str) -> None:
    [problem] = cel.compile_errors(_policy([{"expression": expression}]))
    assert fragment in problem.message and problem.path == ("spec", "validations", 0, "expression")


# --- one engine context per request, shared by its policies (decision 0055)
# -----------------------------------


def _named_policy(name: str, validations: list[dict], **spec) -> dict:
    policy = _policy(validations, **spec)
    return {**policy, "metadata": {"name": name}}


def _named_binding(name: str) -> dict:
    return {
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": name, "validationActions": ["Deny"]},
    }


def _chain_of(*policies: dict) -> cel.AdmissionChain:
    names = [p["metadata"]["name"] for p in policies]
    return cel.AdmissionChain.from_objects([*policies, *(_named_binding(n) for n in names)])


def test_a_policy_does_not_see_the_variables_of_a_policy_reviewed_before_it() -> None:
    defines = _named_policy(
        "a", [{"expression": "variables.secret == 'a'"}], variables=[{"name": "secret", "expression": "'a'"}]
    )
    reads = _named_policy("b", [{"expression": "variables.secret != 'a'", "message": "saw a's variable"}])
    conditioned = _named_policy(
        "c",
        [{"expression": "false", "message": "c applied"}],
        matchConditions=[{"name": "none", "expression": "size(variables) == 0"}],
    )
    violations = _chain_of(defines, reads, conditioned).review(
        cel.Request(object=POD, namespace=NAMESPACES["alpha"])
    )
    assert [(v.policy, v.message.split(":")[0]) for v in violations] == [
        ("b", "expression error"),
        ("c", "c applied"),
    ]


def test_a_request_does_not_see_the_object_or_variables_of_the_request_before_it() -> None:
    policy = _named_policy(
        "p",
        [{"expression": "false", "messageExpression": "variables.name"}],
        variables=[{"name": "name", "expression": "object.metadata.name"}],
    )
    chain = _chain_of(policy)
    names = [
        [
            v.message
            for v in chain.review(
                cel.Request(
                    object={**POD, "metadata": {**POD["metadata"], "name": n}}, namespace=NAMESPACES["alpha"]
                )
            )
        ]
        for n in ("first", "second")
    ]
    assert names == [["first"], ["second"]]


def test_a_variable_set_again_is_seen_with_its_new_value() -> None:
    policy = _policy(
        [{"expression": "variables.n == 2 && variables.m == 1", "message": "stale variables"}],
        variables=[
            {"name": "n", "expression": "1"},
            {"name": "m", "expression": "variables.n"},
            {"name": "n", "expression": "variables.n + 1"},
        ],
    )
    assert _review(policy, _binding(["Deny"])) == []


def test_one_engine_context_per_request_whatever_the_number_of_policies(monkeypatch) -> None:
    built: list[str] = []
    real = cel._engine_context
    monkeypatch.setattr(cel, "_engine_context", lambda request: built.append(request.kind) or real(request))
    policies = [
        _named_policy(
            f"p{i}", [{"expression": "variables.x == 1"}], variables=[{"name": "x", "expression": "1"}]
        )
        for i in range(3)
    ]
    chain = _chain_of(*policies)
    assert chain.review(cel.Request(object=POD, namespace=NAMESPACES["alpha"])) == []
    assert chain.review(cel.Request(object={**POD, "kind": "Service"}, namespace=NAMESPACES["alpha"])) == []
    assert built == ["Pod"]  # one for the pod's three policies, none for a request no policy matches
