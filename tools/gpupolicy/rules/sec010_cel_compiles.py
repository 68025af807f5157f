"""A ValidatingAdmissionPolicy has a CEL expression that does not compile.

## Why it matters
The API server rejects a policy whose expressions do not compile, so the sync fails; or, for a runtime type
error, every request hits `failurePolicy` (with `Fail`, the whole namespace stops admitting pods). The rule
compiles every `matchConditions`, `variables`, `validations` and `messageExpression` expression with the
toolkit's CEL engine. Expressions that Kubernetes accepts but the toolkit cannot evaluate (optional syntax
`.?`, `paramKind`, library functions it does not implement) are reported as warnings, since the admission
tests cannot cover them. An expression whose estimated cost from its own literals is over the API server's
per-call limit (a nest of literal lists that builds 10^8 elements) is an error too: the API server would stop
it on every request (decision 0065).

## Bad example
```yaml
validations:
  - expression: "object.spec.containers.all(c, !has(c.securityContext.privileged)"   # missing ')'
```

## Fix
Fix the expression at the reported line; test it with `pytest tests/admission`.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..domain import cel
from ..findings import Finding, Severity, at
from ..model import Fleet

ID = "SEC010"
SEVERITY = Severity.ERROR
SUMMARY = "Admission policy CEL expressions compile"


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for obj in cluster.of_kind(cel.POLICY_KIND):
            for problem in cel.compile_errors(obj.body):
                where = ".".join(str(p) for p in problem.path)
                yield Finding(
                    rule=ID,
                    severity=Severity.WARNING if problem.unsupported else SEVERITY,
                    cluster=cluster.name,
                    message=f"ValidatingAdmissionPolicy {obj.name} {where}: {problem.message}",
                    hint="the toolkit cannot test this expression"
                    if problem.unsupported
                    else "fix the CEL expression",
                    **at(fleet.locate(obj, *problem.path)),
                )
