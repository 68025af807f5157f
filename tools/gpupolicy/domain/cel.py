"""Evaluate Kubernetes ValidatingAdmissionPolicies offline, the way the API server would.

The CEL engine is `common-expression-language` (module `cel`, Rust `cel-interpreter` bindings); see
docs/decisions/0013-admission-and-cel.md for why it was chosen over `cel-python`. This module adds what the
API server adds around plain CEL:

- matching: `matchConstraints` (resourceRules, excludeResourceRules, namespaceSelector, objectSelector) of the
  policy and `matchResources` of each binding;
- `matchConditions` (all must be true), `variables` (in order, visible as `variables.<name>`), `validations`
  (with `message` / `messageExpression`), `failurePolicy` (an expression error denies under `Fail`);
- the binding's `validationActions` (`Deny` denies; `Warn` and `Audit` do not);
- a few Kubernetes CEL library functions (strings and quantities) the engine lacks.

Semantics follow the Kubernetes documentation "Validating Admission Policy" (kubernetes.io/docs/reference/
access-authn-authz/validating-admission-policy/) and the CEL-in-Kubernetes library page
(kubernetes.io/docs/reference/using-api/cel/). Not supported: `paramKind`/`params` values, `authorizer`, the
optional syntax (`.?field`, `orValue`); policies using them are reported by `compile_errors()`.

Every evaluation is bounded like the API server's (the cost section below): an expression whose estimated cost
is over the per-call limit is refused when it compiles (from its literals) or before it runs (from its input),
and a policy's evaluations for one request share the runtime budget; a refusal is an expression error, never a
run without bound.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..infra.quiet_imports import without_submodule

with without_submodule("cel.cli"):  # its command line pulls in typer, rich and prompt_toolkit: 0.2 s per run
    import cel as _cel

from ..infra.yamlload import mapping, mappings
from ..model.selectors import label_selector_matches
from .quantity import QuantityError, parse_quantity

POLICY_KIND = "ValidatingAdmissionPolicy"
BINDING_KIND = "ValidatingAdmissionPolicyBinding"

# kind -> (API group, resource) for the workload kinds the repository deals with; others fall back to
# the lower-cased plural of the kind.
RESOURCES: dict[str, tuple[str, str]] = {
    "Pod": ("", "pods"),
    "Namespace": ("", "namespaces"),
    "Deployment": ("apps", "deployments"),
    "StatefulSet": ("apps", "statefulsets"),
    "DaemonSet": ("apps", "daemonsets"),
    "ReplicaSet": ("apps", "replicasets"),
    "Job": ("batch", "jobs"),
    "CronJob": ("batch", "cronjobs"),
    "JobSet": ("jobset.x-k8s.io", "jobsets"),
    "RayJob": ("ray.io", "rayjobs"),
    "RayCluster": ("ray.io", "rayclusters"),
    "PyTorchJob": ("kubeflow.org", "pytorchjobs"),
    "TrainJob": ("trainer.kubeflow.org", "trainjobs"),
    "LeaderWorkerSet": ("leaderworkerset.x-k8s.io", "leaderworkersets"),
}

# Standard CEL functions the engine implements, plus the Kubernetes library functions added below.
_STANDARD_FUNCTIONS = {
    "size",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "dyn",
    "type",
    "duration",
    "timestamp",
    "matches",
    "contains",
    "startsWith",
    "endsWith",
    "max",
    "min",
    "getDate",
    "getDayOfMonth",
    "getDayOfWeek",
    "getDayOfYear",
    "getFullYear",
    "getHours",
    "getMilliseconds",
    "getMinutes",
    "getMonth",
    "getSeconds",
}
_VARIABLE_NAMES = ("object", "oldObject", "request", "params", "namespaceObject", "variables")


# --- Kubernetes CEL library functions (a subset), as plain Python -----------------------------------------


def _quantity(text: Any) -> float:
    try:
        return float(parse_quantity(text))
    except QuantityError as exc:
        raise ValueError(f"quantity: {exc}") from exc


def _is_quantity(text: Any) -> bool:
    try:
        parse_quantity(text)
        return True
    except QuantityError:
        return False


def _compare(left: float, right: float) -> int:
    return (left > right) - (left < right)


def _as_integer(value: float) -> int:
    if value != int(value):
        raise ValueError("quantity is not an integer")
    return int(value)


KUBERNETES_FUNCTIONS: dict[str, Callable[..., Any]] = {
    # strings library
    "lowerAscii": lambda s: s.lower(),
    "upperAscii": lambda s: s.upper(),
    "trim": lambda s: s.strip(),
    "split": lambda s, sep: s.split(sep),
    "join": lambda items, sep="": sep.join(items),
    "replace": lambda s, old, new: s.replace(old, new),
    "indexOf": lambda s, sub: s.find(sub),
    "lastIndexOf": lambda s, sub: s.rfind(sub),
    # quantity library; a quantity is modelled as its float value
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "asApproximateFloat": float,
    "asInteger": _as_integer,
    "isInteger": lambda q: q == int(q),
    "sign": lambda q: _compare(q, 0.0),
    "isGreaterThan": lambda a, b: a > b,
    "isLessThan": lambda a, b: a < b,
    "compareTo": _compare,
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
}
KNOWN_FUNCTIONS = _STANDARD_FUNCTIONS | set(KUBERNETES_FUNCTIONS)


# --- cost: an estimate and budget like the API server's ----------------------------------------------

# The API server runs every admission-policy expression with a per-call cost limit and each policy binding's
# evaluation with a total budget (k8s.io/apiserver/pkg/apis/cel/config.go: `PerCallLimit` = 1,000,000,
# "roughly 0.1 second for each expression validation call"; `RuntimeCELCostBudget` = 10,000,000), counted by
# cel-go's cost tracker: about one unit per operation, and a comprehension (`all`, `exists`, `exists_one`,
# `map`, `filter`) costs its body once per element of its range, so nested comprehensions multiply (cel-go
# checker/cost.go: a comprehension's cost is its range's size estimate times its loop step's). The Rust engine
# has no cost tracker and cannot be interrupted, so the toolkit estimates the cost before an expression runs:
# every token costs 1, times the size bound of every comprehension around it. A range's bound is the size of
# what it names in the actual input (a path such as `object.spec.containers`, or `c.env` with `c` an element
# of an enclosing range: the largest such list), a literal list's length, a `map`/`filter` result's source
# size, a group's sum (`(a + b)`); anything else gets the largest list or map in the whole input times one
# plus the expression's `+` count. Statically (when a policy or check is read) inputs are unknown and count 1,
# so only literal ranges count: a nest of literal lists (the 10^8-element case) is refused at its line. The
# estimate over-counts (`exists` stops early) and does not under-count what the engine does, the side a
# guardrail must err on. docs/decisions/0065-bounded-evaluation.md has the reasons.

PER_CALL_LIMIT = 1_000_000  # k8s.io/apiserver/pkg/apis/cel/config.go PerCallLimit
RUNTIME_BUDGET = 10_000_000  # k8s.io/apiserver/pkg/apis/cel/config.go RuntimeCELCostBudget
COMPREHENSIONS = frozenset({"all", "exists", "exists_one", "map", "filter"})

_TOKEN = re.compile(
    r"""
    (?P<string>(?:[rR][bB]?|[bB][rR]?)?(?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'))
  | (?P<number>0[xX][0-9a-fA-F]+[uU]?|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?[uU]?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>\|\||&&|==|!=|<=|>=|[-+*/%!<>?:.,()\[\]{}])
  | (?P<space>\s+)
  | (?P<other>.)
""",
    re.VERBOSE,
)
_OPEN, _CLOSE = "([{", ")]}"
_UNKNOWN = None  # a size or a set of values the estimate cannot know


class CostExceeded(Exception):
    """An expression whose estimated cost is over its limit; the message says by how much."""


@dataclass(frozen=True)
class _Macro:
    """One comprehension: its receiver's tokens [start, end], its argument brackets, its iteration
    variables."""

    name: str
    start: int
    end: int
    open: int
    close: int
    names: tuple[str, ...]


@dataclass(frozen=True)
class _Form:
    """An expression as the estimate reads it: its tokens, matching brackets, comprehensions, and how many
    tokens sit inside each chain of enclosing comprehensions (indices into `macros`)."""

    tokens: tuple[str, ...]
    pair: dict[int, int]
    macros: tuple[_Macro, ...]
    counts: dict[tuple[int, ...], int]
    splits: bool
    largest_literal: int  # elements of the longest list or map literal


@lru_cache(maxsize=4096)
def _form(expression: str) -> _Form:
    tokens = tuple(m.group() for m in _TOKEN.finditer(expression) if m.lastgroup != "space")
    pair: dict[int, int] = {}
    stack: list[int] = []
    for index, text in enumerate(tokens):
        if text in _OPEN and len(text) == 1:
            stack.append(index)
        elif text in _CLOSE and len(text) == 1 and stack:
            opened = stack.pop()
            pair[opened], pair[index] = index, opened
    macros = tuple(
        _macro(tokens, pair, index)
        for index in range(2, len(tokens) - 1)
        if tokens[index] in COMPREHENSIONS
        and tokens[index - 1] == "."
        and tokens[index + 1] == "("
        and index + 1 in pair
    )
    counts: dict[tuple[int, ...], int] = {}
    opens = {m.open: n for n, m in enumerate(macros)}
    around: list[int] = []  # the comprehensions whose arguments hold this token, outermost first
    for index in range(len(tokens)):
        if around and macros[around[-1]].close == index:
            around.pop()
        chain = tuple(around)
        counts[chain] = counts.get(chain, 0) + 1
        if index in opens:
            around.append(opens[index])
    literals = [
        _literal_size(tokens[opened + 1 : pair[opened]])
        for opened in pair
        if tokens[opened] in ("[", "{") and pair[opened] > opened
    ]
    return _Form(tokens, pair, macros, counts, "split" in tokens, max(literals, default=0))


def _literal_size(inner: tuple[str, ...]) -> int:
    """The elements of a list or map literal: its top-level commas plus one (0 when empty)."""
    depth, size = 0, 1 if inner else 0
    for text in inner:
        depth += (text in _OPEN and len(text) == 1) - (text in _CLOSE and len(text) == 1)
        size += depth == 0 and text == ","
    return size


def _macro(tokens: tuple[str, ...], pair: dict[int, int], index: int) -> _Macro:
    open_, close = index + 1, pair[index + 1]
    names = [tokens[open_ + 1]] if open_ + 2 < close and tokens[open_ + 2] == "," else []
    if names and open_ + 4 < close and tokens[open_ + 4] == "," and tokens[open_ + 3][:1].isalpha():
        names.append(tokens[open_ + 3])  # the two-variable form: all(i, v, ...), all(k, v, ...)
    return _Macro(
        tokens[index], _receiver_start(tokens, pair, index - 2), index - 2, open_, close, tuple(names)
    )


def _receiver_start(tokens: tuple[str, ...], pair: dict[int, int], end: int) -> int:
    """The first token of the operand that ends at `end` (a path, an index, a call, a group or a literal)."""
    index = end
    while index >= 0:
        if tokens[index] in _CLOSE and index in pair:
            index = pair[index]
            if index > 0 and tokens[index] == "(" and tokens[index - 1][:1].isalpha():
                index -= 1  # a call: f(...) or x.f(...)
        if index > 1 and tokens[index - 1] == ".":
            index -= 2
            continue
        if index > 0 and tokens[index][:1] == "[" and tokens[index - 1][:1].isalnum():
            index -= 1
            continue
        return index
    return 0


class _Estimate:
    """The cost of one expression over `inputs` (None: statically, from its literals alone)."""

    def __init__(self, form: _Form, inputs: dict | None) -> None:
        self.form = form
        self.inputs = inputs
        self._fallback: int | None = None
        self.bounds: list[int] = []
        self.elements: list[tuple[list | None, list | None]] = []  # per macro: values of its variables

    def fallback(self) -> int:
        """The bound for a range the estimate cannot resolve: the largest list or map (or, when the expression
        splits strings, string) anywhere in the input or among its literals, times one plus its `+` count
        (concatenation). Statically, 1: an input's size is unknown then, and only literal ranges count."""
        if self._fallback is None:
            grows = 1 + self.form.tokens.count("+")
            largest = max(largest_size(self.inputs, self.form.splits), self.form.largest_literal, 1)
            self._fallback = 1 if self.inputs is None else largest * grows
        return self._fallback

    def cost(self) -> int:
        if not self.form.macros:
            return len(self.form.tokens)
        for number, macro in enumerate(self.form.macros):
            size, values = self._range(macro.start, macro.end, number)
            self.bounds.append(max(1, self.fallback() if size is _UNKNOWN else size))
            self.elements.append(_members(values))
        total = 0
        for chain, count in self.form.counts.items():
            product = count
            for number in chain:
                product *= self.bounds[number]
            total += product
        return total

    def _range(self, start: int, end: int, number: int) -> tuple[int | None, list | None]:
        """(size bound, candidate values) of the operand tokens[start..end], seen from inside no macro after
        `number` (the macros before it are the ones that can bind its names)."""
        tokens = self.form.tokens
        if tokens[start] in ("[", "{") and self.form.pair.get(start) == end:
            return _literal_size(tokens[start + 1 : end]), _UNKNOWN
        if tokens[end] == ")" and end in self.form.pair:
            opened = self.form.pair[end]
            if opened >= 2 and tokens[opened - 1] in ("map", "filter") and tokens[opened - 2] == ".":
                inner = next((n for n, m in enumerate(self.form.macros) if m.open == opened), None)
                if inner is not None and inner < len(self.bounds):
                    return self.bounds[inner], self._results(inner)
            if start == opened:  # a group: (a + b), (c ? x : y); at most the sum of what is in it
                return self._group(start + 1, end - 1, number)
            return _UNKNOWN, _UNKNOWN
        return self._path(start, end, number)

    def _results(self, number: int) -> list | None:
        """What a `filter` or `map` returns, as one candidate list: a filter's items, or a map's values when
        its
        body is a path (`.map(r, r.template.spec)`, `.map(k, variables.specs[k].template)`); else unknown."""
        macro = self.form.macros[number]
        items = self.elements[number][0]
        if items is _UNKNOWN:
            return _UNKNOWN
        if macro.name == "filter":
            return [items]
        body = macro.open + 3, macro.close - 1
        if body[0] > body[1] or not self.form.tokens[body[0]][:1].isalpha():
            return _UNKNOWN
        _size, values = self._path(body[0], body[1], number + 1)
        return _UNKNOWN if values is _UNKNOWN else [values]

    def _group(self, start: int, end: int, number: int) -> tuple[int | None, list | None]:
        total, values = 0, []
        index = start
        while index <= end:
            if self.form.tokens[index][:1].isalpha() and (
                index == start or self.form.tokens[index - 1] != "."
            ):
                stop = index
                while (
                    stop + 2 <= end
                    and self.form.tokens[stop + 1] == "."
                    and self.form.tokens[stop + 2][:1].isalpha()
                ):
                    stop += 2
                size, found = self._path(index, stop, number)
                if size is _UNKNOWN and self.form.tokens[index] not in (
                    "has",
                    "size",
                    "true",
                    "false",
                    "null",
                ):
                    return _UNKNOWN, _UNKNOWN
                total += size or 0
                values += found or []
                index = stop + 1
            elif self.form.tokens[index] == "[" and index in self.form.pair:
                size, _ = self._range(index, self.form.pair[index], number)
                total += size or 0
                index = self.form.pair[index] + 1
            else:
                index += 1
        return total, values

    def _path(self, start: int, end: int, number: int) -> tuple[int | None, list | None]:
        """A dotted path with indexes, rooted at an input or an iteration variable of an enclosing macro."""
        tokens = self.form.tokens
        values = self._root(tokens[start], start, number)
        if values is _UNKNOWN:
            return _UNKNOWN, _UNKNOWN
        index = start + 1
        while index <= end:
            if tokens[index] == "." and index + 1 <= end and tokens[index + 1][:1].isalpha():
                field = tokens[index + 1]
                values = [v[field] for v in values if isinstance(v, dict) and field in v]
                index += 2
            elif tokens[index] == "[" and index in self.form.pair:
                values = [
                    item
                    for v in values
                    for item in (v.values() if isinstance(v, dict) else v if isinstance(v, list) else [])
                ]
                index = self.form.pair[index] + 1
            else:
                return _UNKNOWN, _UNKNOWN
        sizes = [len(v) for v in values if isinstance(v, dict | list)]
        return max(sizes, default=0), values

    def _root(self, name: str, at: int, number: int) -> list | None:
        for inner in range(min(number, len(self.elements)) - 1, -1, -1):
            macro = self.form.macros[inner]
            if macro.open < at < macro.close and name in macro.names:
                return self.elements[inner][macro.names.index(name)]
        if self.inputs is not None and name in self.inputs:
            return [self.inputs[name]]
        return _UNKNOWN


def _members(values: list | None) -> tuple[list | None, list | None]:
    """What a comprehension's first and second variables range over: items or keys, items or values."""
    if values is _UNKNOWN:
        return _UNKNOWN, _UNKNOWN
    first, second = [], []
    for value in values:
        if isinstance(value, dict):
            first.extend(value)
            second.extend(value.values())
        elif isinstance(value, list):
            first.extend(value)
            second.extend(value)
    return first, second


def largest_size(values: Any, strings: bool) -> int:
    """The largest list or map (and string, when `strings`) in `values`, walked without recursion."""
    largest = 0
    stack = [values]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            largest = max(largest, len(value))
            stack.extend(value.values())
        elif isinstance(value, list | tuple):
            largest = max(largest, len(value))
            stack.extend(value)
        elif strings and isinstance(value, str | bytes):
            largest = max(largest, len(value))
    return largest


def estimated_cost(expression: str, inputs: dict | None) -> int:
    """The estimate over these named inputs (`object`, `variables`, ...), or from the literals alone
    (None)."""
    return _Estimate(_form(expression), inputs).cost()


def static_problem(expression: str) -> str | None:
    """Why an expression is refused before any input: its estimate from its own literals is over the per-call
    limit; None when it is not."""
    estimate = estimated_cost(expression, None)
    if estimate <= PER_CALL_LIMIT:
        return None
    return (
        f"its estimated cost of {estimate:,} is over the per-expression limit of {PER_CALL_LIMIT:,} "
        "(the API server's PerCallLimit; nested comprehensions multiply their list sizes)"
    )


def check_runtime(expression: str, inputs: dict) -> int:
    """The estimate over `inputs`; `CostExceeded` when it is over the per-call limit (then it is not run)."""
    estimate = estimated_cost(expression, inputs)
    if estimate > PER_CALL_LIMIT:
        raise CostExceeded(
            f"estimated cost {estimate:,} over the per-expression limit of {PER_CALL_LIMIT:,} "
            "for this input (the API server's PerCallLimit); not evaluated"
        )
    return estimate


# --- compiled expressions ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CelProblem:
    """An expression that cannot be evaluated; `path` is the field path inside the policy object."""

    path: tuple
    expression: str
    message: str
    unsupported: bool = False  # Kubernetes accepts it, the toolkit cannot evaluate it


def compile_expression(expression: Any, path: tuple) -> tuple[Any | None, CelProblem | None]:
    if not isinstance(expression, str) or not expression.strip():
        return None, CelProblem(path, str(expression), "expression is empty or not a string")
    if ".?" in expression or "?." in expression:
        return None, CelProblem(
            path,
            expression,
            "uses CEL optional syntax (`.?field`), which the toolkit's CEL engine cannot evaluate",
            unsupported=True,
        )
    program, error = _compiled(expression)
    if program is None:
        return None, CelProblem(path, expression, error)
    unknown = [f for f in program.functions() if f[:1].isalpha() and f not in KNOWN_FUNCTIONS]
    if unknown:
        return None, CelProblem(
            path,
            expression,
            f"calls {', '.join(unknown)}, which is not a CEL or "
            "Kubernetes "
            "library function the toolkit knows",
            unsupported=True,
        )
    too_costly = static_problem(expression)
    if too_costly:
        return None, CelProblem(path, expression, too_costly)
    return program, None


@lru_cache(maxsize=4096)
def _compiled(expression: str) -> tuple[Any | None, str]:
    """A compiled program (or the compile error), once per expression text: every cluster binds the same
    policies, and a fleet of a hundred clusters would otherwise compile them a hundred times."""
    try:
        return _cel.compile(expression), ""
    except (ValueError, RuntimeError) as exc:
        return None, _first_line(exc)


def _first_line(exc: Exception) -> str:
    text = str(exc)
    marker = text.find("ERROR: ")
    detail = text[marker + len("ERROR: ") :] if marker >= 0 else text
    return detail.splitlines()[0].replace("<input>:", "at ") if detail else type(exc).__name__


@dataclass
class Policy:
    """A ValidatingAdmissionPolicy with its expressions compiled."""

    name: str
    body: dict
    failure_policy: str
    match_conditions: list[tuple[str, Any]] = field(default_factory=list)  # (name, program)
    variables: list[tuple[str, Any]] = field(default_factory=list)  # (name, program)
    validations: list[dict] = field(default_factory=list)  # {program, message, message_program, reason}
    problems: list[CelProblem] = field(default_factory=list)

    @classmethod
    def from_body(cls, body: dict) -> Policy:
        spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
        policy = cls(
            name=str(mapping(body.get("metadata")).get("name", "")),
            body=body,
            failure_policy=str(spec.get("failurePolicy") or "Fail"),
        )
        for index, condition in enumerate(mappings(spec.get("matchConditions"))):
            program = policy._compile(
                condition.get("expression"), ("spec", "matchConditions", index, "expression")
            )
            policy.match_conditions.append((str(condition.get("name", index)), program))
        for index, variable in enumerate(mappings(spec.get("variables"))):
            program = policy._compile(variable.get("expression"), ("spec", "variables", index, "expression"))
            policy.variables.append((str(variable.get("name", "")), program))
        for index, validation in enumerate(mappings(spec.get("validations"))):
            base = ("spec", "validations", index)
            message_program = None
            if validation.get("messageExpression"):
                message_program = policy._compile(
                    validation["messageExpression"], (*base, "messageExpression")
                )
            policy.validations.append(
                {
                    "program": policy._compile(validation.get("expression"), (*base, "expression")),
                    "expression": str(validation.get("expression", "")),
                    "message": validation.get("message"),
                    "message_program": message_program,
                }
            )
        return policy

    def _compile(self, expression: Any, path: tuple) -> Any | None:
        program, problem = compile_expression(expression, path)
        if problem:
            self.problems.append(problem)
        return program


def compile_errors(body: dict) -> list[CelProblem]:
    """Every expression of a ValidatingAdmissionPolicy that does not compile (or that the toolkit cannot
    run)."""
    problems = list(Policy.from_body(body).problems)
    spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
    if spec.get("paramKind"):
        problems.append(
            CelProblem(
                ("spec", "paramKind"),
                "",
                "uses paramKind; the toolkit evaluates policies without parameters",
                unsupported=True,
            )
        )
    return problems


# --- admission requests ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """One admission request: the object, its namespace and who sends it."""

    object: dict
    namespace: dict | None = None  # the Namespace object (None for cluster-scoped objects)
    operation: str = "CREATE"
    sub_resource: str = ""
    old_object: dict | None = None
    username: str = "alice@example.com"
    groups: tuple[str, ...] = ("system:authenticated",)

    @property
    def kind(self) -> str:
        return str(self.object.get("kind", ""))

    @property
    def group_version(self) -> tuple[str, str]:
        api_version = str(self.object.get("apiVersion", "v1"))
        group, _, version = api_version.rpartition("/")
        return group, version

    @property
    def resource(self) -> str:
        return RESOURCES.get(self.kind, ("", self.kind.lower() + "s"))[1]

    def as_cel(self) -> dict:
        group, version = self.group_version
        metadata = mapping(self.object.get("metadata"))
        return {
            "kind": {"group": group, "version": version, "kind": self.kind},
            "resource": {"group": group, "version": version, "resource": self.resource},
            "subResource": self.sub_resource,
            "name": metadata.get("name", ""),
            "namespace": metadata.get("namespace", ""),
            "operation": self.operation,
            "userInfo": {"username": self.username, "groups": list(self.groups)},
            "dryRun": False,
        }


@dataclass(frozen=True)
class Violation:
    policy: str
    binding: str
    message: str
    actions: tuple[str, ...]
    validation: int | None = None  # index into spec.validations; None for a matchCondition error

    @property
    def denies(self) -> bool:
        return "Deny" in self.actions


# --- workloads and the pods their controllers create ----------------------------------------------------

# Who creates the pods of a workload kind (the built-in controllers run as kube-system service accounts).
_POD_CREATOR = {
    "Deployment": "system:serviceaccount:kube-system:replicaset-controller",
    "ReplicaSet": "system:serviceaccount:kube-system:replicaset-controller",
    "StatefulSet": "system:serviceaccount:kube-system:statefulset-controller",
    "DaemonSet": "system:serviceaccount:kube-system:daemon-set-controller",
    "Job": "system:serviceaccount:kube-system:job-controller",
    "CronJob": "system:serviceaccount:kube-system:job-controller",
    "JobSet": "system:serviceaccount:kube-system:job-controller",  # JobSet makes Jobs; Jobs make pods
}


def pod_templates(obj: dict) -> list[tuple[tuple, dict]]:
    """(field path, pod template) for every pod template of a workload; a Pod is its own template."""
    kind = obj.get("kind")
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    if kind == "Pod":
        return [((), obj)]
    if kind == "CronJob":
        return _templates_at(spec, ("spec", "jobTemplate", "spec", "template"))
    if kind == "JobSet":
        return [
            item
            for index, _ in enumerate(mappings(spec.get("replicatedJobs")))
            for item in _templates_at(spec, ("spec", "replicatedJobs", index, "template", "spec", "template"))
        ]
    if kind == "PyTorchJob":
        return [
            item
            for role in (spec.get("pytorchReplicaSpecs") or {})
            for item in _templates_at(spec, ("spec", "pytorchReplicaSpecs", role, "template"))
        ]
    if kind in ("RayJob", "RayCluster"):
        base = ("spec", "rayClusterSpec") if kind == "RayJob" else ("spec",)
        cluster = _dig(obj, base) or {}
        found = _templates_at(spec, (*base, "headGroupSpec", "template"))
        for index, _ in enumerate(mappings(cluster.get("workerGroupSpecs"))):
            found += _templates_at(spec, (*base, "workerGroupSpecs", index, "template"))
        return found
    if kind == "LeaderWorkerSet":
        return [
            item
            for role in ("leaderTemplate", "workerTemplate")
            for item in _templates_at(spec, ("spec", "leaderWorkerTemplate", role))
        ]
    return _templates_at(spec, ("spec", "template"))


def _templates_at(spec: dict, path: tuple) -> list[tuple[tuple, dict]]:
    template = _dig({"spec": spec}, path)
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        return [(path, template)]
    return []


def _dig(data: Any, path: tuple) -> Any:
    for part in path:
        if isinstance(part, int):
            data = data[part] if isinstance(data, list) and part < len(data) else None
        else:
            data = data.get(part) if isinstance(data, dict) else None
    return data


def derived_pods(obj: dict) -> list[dict]:
    """The pods a workload's controllers would create: template labels and spec, namespace, owner."""
    if obj.get("kind") == "Pod":
        return []
    metadata = mapping(obj.get("metadata"))
    pods = []
    for index, (_path, template) in enumerate(pod_templates(obj)):
        pod_metadata = dict(mapping(template.get("metadata")))
        pod_metadata.update(
            {
                "name": f"{metadata.get('name', 'workload')}-{index}",
                "namespace": metadata.get("namespace", ""),
                "ownerReferences": [
                    {
                        "apiVersion": obj.get("apiVersion", ""),
                        "kind": obj.get("kind"),
                        "name": metadata.get("name", ""),
                        "controller": True,
                    }
                ],
            }
        )
        pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": pod_metadata, "spec": template["spec"]})
    return pods


def pod_creator(kind: str) -> str:
    slug = kind.lower()
    return _POD_CREATOR.get(kind, f"system:serviceaccount:{slug}-system:{slug}-controller")


def workload_requests(
    obj: dict, namespace: dict | None, username: str = "alice@example.com"
) -> list[Request]:
    """The admission requests a workload causes: its own creation, then each pod its controllers create."""
    requests = [Request(object=obj, namespace=namespace, username=username)]
    creator = pod_creator(str(obj.get("kind", "")))
    requests += [
        Request(
            object=pod,
            namespace=namespace,
            username=creator,
            groups=("system:serviceaccounts", "system:authenticated"),
        )
        for pod in derived_pods(obj)
    ]
    return requests


# --- selectors and rules -----------------------------------------------------------------------------------


def selector_matches(selector: Any, labels: dict) -> bool:
    """A metav1.LabelSelector against a label map; an absent or empty selector matches everything."""
    return not isinstance(selector, dict) or label_selector_matches(selector, labels or {})


def _rule_matches(rule: dict, request: Request) -> bool:
    group, version = request.group_version
    resource = request.resource + (f"/{request.sub_resource}" if request.sub_resource else "")
    resources = rule.get("resources") or []
    resource_ok = any(
        r == "*"
        or r == resource
        or (r == "*/*")
        or (r.endswith("/*") and request.sub_resource and r[:-2] in ("*", request.resource))
        or (r.startswith("*/") and request.sub_resource and r[2:] == request.sub_resource)
        for r in resources
    )
    return (
        resource_ok
        and _any_or_star(rule.get("apiGroups"), group)
        and _any_or_star(rule.get("apiVersions"), version)
        and _any_or_star(rule.get("operations"), request.operation)
    )


def _any_or_star(allowed: Any, value: str) -> bool:
    return isinstance(allowed, list) and ("*" in allowed or value in allowed)


def resources_match(match: Any, request: Request, require_rules: bool) -> bool:
    """matchConstraints (policy) or matchResources (binding) against a request."""
    if not isinstance(match, dict):
        return not require_rules
    rules = mappings(match.get("resourceRules"))
    if (rules or require_rules) and not any(_rule_matches(rule, request) for rule in rules):
        return False
    if any(_rule_matches(rule, request) for rule in mappings(match.get("excludeResourceRules"))):
        return False
    namespace_labels = mapping(mapping(mapping(request.namespace).get("metadata")).get("labels"))
    if request.namespace is not None and not selector_matches(
        match.get("namespaceSelector"), namespace_labels
    ):
        return False
    object_labels = mapping(mapping(request.object.get("metadata")).get("labels"))
    return selector_matches(match.get("objectSelector"), object_labels)


# --- evaluation --------------------------------------------------------------------------------------------


class _EvaluationError(Exception):
    pass


EvaluationError = _EvaluationError  # what `check_holds` raises


def _run(program: Any, context: Any) -> Any:
    try:
        return program.execute(context)
    except Exception as exc:  # the engine raises KeyError, TypeError, RuntimeError, ValueError
        raise _EvaluationError(f"{type(exc).__name__}: {exc}") from exc


def _engine_context(request: Request) -> Any:
    return _cel.Context(variables=_context(request), functions=KUBERNETES_FUNCTIONS)


def _run_bool(program: Any, context: Any) -> bool:
    return _as_bool(_run(program, context))


def _as_bool(result: Any) -> bool:
    if not isinstance(result, bool):
        raise _EvaluationError(f"expression returned {type(result).__name__}, not bool")
    return result


def check_holds(program: Any, variables: dict) -> bool:
    """A compiled expression's boolean result over `variables`, with the Kubernetes library functions (for
    checks outside admission: `orgchecks`). Raises `EvaluationError` when it fails, is not a bool, or would
    cost more than the per-call limit on these variables (then it is not run)."""
    _within_limit(program.source, variables)
    return _run_bool(program, _cel.Context(variables=variables, functions=KUBERNETES_FUNCTIONS))


def _within_limit(expression: str, inputs: dict) -> int:
    try:
        return check_runtime(expression, inputs)
    except CostExceeded as exc:
        raise _EvaluationError(str(exc)) from None


def _context(request: Request) -> dict:
    return {
        "object": request.object,
        "oldObject": request.old_object,
        "request": request.as_cel(),
        "namespaceObject": request.namespace,
        "params": None,
        "variables": {},
    }


_generations = itertools.count()


class _Variables:
    """A policy's `variables` map as its evaluation fills it; `generation` changes with every value set and
    is never reused, so the engine can tell whether the map it holds is this one as it stands."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.generation = next(_generations)

    def set(self, name: str, value: Any) -> None:
        self.values[name] = value
        self.generation = next(_generations)


@lru_cache(maxsize=4096)
def _reads_variables(expression: str) -> bool:
    """Whether an expression (one that compiled) names `variables` at all; one that does not cannot see it."""
    program, _ = _compiled(expression)
    return program is None or "variables" in program.variables()


class RequestEngine:
    """The engine context of one admission request, shared by every policy reviewed for it.

    Handing the engine a request (object, namespace, request attributes) costs about ten times running a
    typical expression, and the engine rebuilds its environment after every change, so the context is built
    once, when the first policy applies, and only `variables` changes afterwards. Each policy has its own
    `variables` (`_Variables`); it is handed to the engine only before a program that names `variables`, and
    only when the engine holds another map (another policy's, or this one's before its latest value): a policy
    never sees another's variables, and a large value is converted once, not once per later variable.
    """

    def __init__(self, request: Request) -> None:
        self.request = request
        self._context: Any = None
        self._held: int | None = None  # the generation of the `variables` map the engine holds
        self._inputs: dict | None = None  # what the cost estimate reads: the request's variables
        self.spent = 0  # the estimated cost of the current policy's evaluations (`begin_policy` resets it)

    def begin_policy(self) -> None:
        self.spent = 0

    def run(self, program: Any, variables: _Variables) -> Any:
        if self._inputs is None:
            self._inputs = _context(self.request)
        self.spent += _within_limit(program.source, {**self._inputs, "variables": variables.values})
        if self.spent > RUNTIME_BUDGET:
            raise _EvaluationError(
                f"the policy's expressions for this request are over the runtime cost "
                f"budget of {RUNTIME_BUDGET:,} (the API server's RuntimeCELCostBudget); not evaluated"
            )
        if self._context is None:
            self._context = _engine_context(self.request)
        if self._held != variables.generation and _reads_variables(program.source):
            self._context.add_variable("variables", variables.values)
            self._held = variables.generation
        return _run(program, self._context)

    def run_bool(self, program: Any, variables: _Variables) -> bool:
        return _as_bool(self.run(program, variables))


def evaluate(
    policy: Policy, request: Request, binding: dict | None = None, engine: RequestEngine | None = None
) -> list[Violation]:
    """The violations of one policy (through one binding) for one request; [] when it does not apply.
    `engine`: the request's engine context when the caller reviews several policies for it."""
    binding_name = str(mapping(mapping(binding).get("metadata")).get("name", ""))
    binding_spec = (binding or {}).get("spec") or {}
    actions = tuple(binding_spec.get("validationActions") or ("Deny",))
    spec = policy.body.get("spec") or {}
    if not resources_match(spec.get("matchConstraints"), request, require_rules=True):
        return []
    if binding is not None and not resources_match(binding_spec.get("matchResources"), request, False):
        return []
    fail = policy.failure_policy != "Ignore"
    engine = engine or RequestEngine(request)
    engine.begin_policy()  # the budget is per policy binding, as the API server's
    empty = _Variables()  # match conditions see no variables
    for name, program in policy.match_conditions:
        try:
            if program is None or not engine.run_bool(program, empty):
                return []
        except _EvaluationError as exc:
            return (
                [Violation(policy.name, binding_name, f"matchCondition {name}: {exc}", actions)]
                if fail
                else []
            )
    variables = _variables(policy, engine)
    violations = []
    for index, validation in enumerate(policy.validations):
        message = _violation_message(validation, engine, variables)
        if message is not None and (fail or not message.startswith("expression error")):
            violations.append(Violation(policy.name, binding_name, message, actions, index))
    return violations


def _variables(policy: Policy, engine: RequestEngine) -> _Variables:
    """Variables in declaration order, each seeing those before it; one that fails is left out, so using it
    fails the validation."""
    variables = _Variables()
    for name, program in policy.variables:
        if program is None:
            continue
        try:
            variables.set(name, engine.run(program, variables))
        except _EvaluationError:
            continue
    return variables


def _violation_message(validation: dict, engine: RequestEngine, variables: _Variables) -> str | None:
    program = validation["program"]
    if program is None:
        return "expression error: it does not compile"
    try:
        if engine.run_bool(program, variables):
            return None
    except _EvaluationError as exc:
        return f"expression error: {exc}"
    if validation["message_program"] is not None:
        try:
            text = engine.run(validation["message_program"], variables)
            if isinstance(text, str) and text.strip():
                return text
        except _EvaluationError:
            pass
    return str(validation["message"] or f"failed expression: {validation['expression']}")


# --- a set of policies and bindings, as an API server would hold them ---------------------------------------


@dataclass
class AdmissionChain:
    policies: dict[str, Policy]
    bindings: list[dict]
    # verdicts kept between runs (`keptreviews.KeptReviews`) and this chain's key there; None: not kept
    kept: Any = None
    kept_key: str | None = None

    @classmethod
    def from_objects(cls, objects: Iterable[dict], kept: Any = None) -> AdmissionChain:
        """The chain of these policies and bindings; `kept`: the run's kept verdicts, if it keeps them."""
        policies: dict[str, Policy] = {}
        bindings: list[dict] = []
        bodies = [body for body in objects if isinstance(body, dict)]
        for body in bodies:
            if body.get("kind") == POLICY_KIND:
                policy = Policy.from_body(body)
                policies[policy.name] = policy
            elif body.get("kind") == BINDING_KIND:
                bindings.append(body)
        key = kept.chain_key(bodies) if kept is not None and policies else None
        return cls(policies, bindings, kept if key else None, key)

    def review(self, request: Request) -> list[Violation]:
        """Every violation of every bound policy; a policy without a binding is not enforced."""
        if self.kept is not None and self.kept_key:
            return self.kept.review(self.kept_key, request, lambda: self._evaluate(request))
        return self._evaluate(request)

    def _evaluate(self, request: Request) -> list[Violation]:
        violations: list[Violation] = []
        engine = RequestEngine(request)
        for binding in self.bindings:
            name = str((binding.get("spec") or {}).get("policyName", ""))
            if name in self.policies:
                violations.extend(evaluate(self.policies[name], request, binding, engine))
        return violations

    def denials(self, request: Request) -> list[Violation]:
        return [v for v in self.review(request) if v.denies]
