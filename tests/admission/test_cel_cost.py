"""The CEL cost budget (cel.py, decision 0065): what the API server refuses on its cost limits is refused here
too, before the engine runs it (the Rust engine cannot be interrupted), and never a hang or a silent pass.

Before the budget, the 4-deep comprehension over 100 containers below ran 111 s and the nest of literal lists
(10^8 elements) was still running after 120 s at 1.6 GB; both are now refused in well under a second."""

from __future__ import annotations

import time

import pytest

from gpupolicy.domain import cel

LITERAL = "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]"


def _literal_nest(levels: int) -> str:
    expression = LITERAL
    for name in "abcdefghij"[:levels]:
        expression = f"{LITERAL}.map({name}, {expression})"
    return expression + ".size() > 0"


NESTED = (
    "object.spec.containers.all(a, object.spec.containers.all(b, object.spec.containers.all(c, "
    "object.spec.containers.all(d, a.name != d.name || true))))"
)


def _pod(containers: int, env: int = 0) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "team-a"},
        "spec": {
            "containers": [
                {"name": f"c{i}", "env": [{"name": f"E{j}", "value": "v"} for j in range(env)]}
                for i in range(containers)
            ]
        },
    }


def test_a_nest_of_literal_lists_is_refused_when_it_compiles() -> None:
    began = time.monotonic()
    program, problem = cel.compile_expression(_literal_nest(7), ("spec", "validations", 0, "expression"))
    assert program is None and problem is not None and not problem.unsupported
    assert "estimated cost of 260,000,001 is over the per-expression limit of 1,000,000" in problem.message
    assert time.monotonic() - began < 1


def test_a_small_nest_of_literal_lists_still_compiles() -> None:
    program, problem = cel.compile_expression(_literal_nest(2), ("expression",))
    assert problem is None and cel.check_holds(program, {}) is True


def test_nested_comprehensions_over_a_large_input_are_refused_before_they_run() -> None:
    """40 containers: 40^4 = 2.6 million innermost evaluations (3 s before the budget; 100 containers: 111
    s)."""
    program, problem = cel.compile_expression(NESTED, ("expression",))
    assert problem is None  # statically the input's size is unknown
    began = time.monotonic()
    with pytest.raises(
        cel.EvaluationError, match="over the per-expression limit of 1,000,000 for this input"
    ):
        cel.check_holds(program, {"object": _pod(40)})
    assert time.monotonic() - began < 1
    assert cel.check_holds(program, {"object": _pod(5)}) is True  # 5^4: well within the limit, evaluated


def test_the_estimate_follows_each_range_not_the_largest_list() -> None:
    """`c.env` is bounded by each container's own env, and `variables.x` by the value computed before."""
    expression = "object.spec.containers.all(c, c.env.all(e, e.name != 'X'))"
    wide = {"object": _pod(20, env=100)}
    assert cel.estimated_cost(expression, wide) < 20 * 100 * len(expression)
    assert cel.estimated_cost("variables.xs.all(x, x > 0)", {"variables": {"xs": list(range(1000))}}) > 1000


POLICY = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicy",
    "metadata": {"name": "costly"},
    "spec": {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [
                {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
            ]
        },
        "validations": [{"expression": NESTED, "message": "never"}],
    },
}
BINDING = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicyBinding",
    "metadata": {"name": "costly"},
    "spec": {"policyName": "costly", "validationActions": ["Deny"]},
}


def test_an_admission_validation_over_the_limit_is_an_expression_error_that_denies() -> None:
    """As in the API server: a cost-limit error is an expression error, so failurePolicy Fail denies."""
    chain = cel.AdmissionChain.from_objects([POLICY, BINDING])
    began = time.monotonic()
    [denial] = chain.denials(cel.Request(object=_pod(40)))
    assert "expression error" in denial.message and "per-expression limit" in denial.message
    assert time.monotonic() - began < 1
    assert chain.denials(cel.Request(object=_pod(3))) == []


def test_a_policys_expressions_share_the_runtime_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """RuntimeCELCostBudget is per policy binding: each expression within the per-call limit, their sum
    not."""
    cheap = "object.spec.containers.all(c, c.name != '')"
    policy = {**POLICY, "spec": {**POLICY["spec"], "validations": [{"expression": cheap}] * 3}}
    chain = cel.AdmissionChain.from_objects([policy, BINDING])
    request = cel.Request(object=_pod(10))
    one = cel.estimated_cost(cheap, {"object": request.object, "variables": {}})
    monkeypatch.setattr(cel, "RUNTIME_BUDGET", 2 * one + 1)
    [denial] = chain.denials(request)
    assert denial.validation == 2 and "runtime cost budget" in denial.message
    monkeypatch.setattr(cel, "RUNTIME_BUDGET", 3 * one)
    assert chain.denials(request) == []


def test_a_string_inside_an_expression_is_not_read_as_a_comprehension() -> None:
    assert cel.estimated_cost("object.metadata.name != 'x.all(a, b)'", {"object": _pod(1000)}) < 20
