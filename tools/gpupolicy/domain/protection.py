"""The rules nothing a repository writes can silence: no `gpupolicy.yaml` entry lowers or disables them, no
reviewed exception (file or annotation) accepts their findings.

- a crash (INTERNAL): the run did not do its whole job;
- the configuration's and the exceptions' own checks (CFG*, EXC*): a guardrail must not switch off the check
  of
  itself, and an org check that failed on every object (CFG002) checked nothing;
- the security rules: SEC* (GPU isolation, admission), RBAC* (who holds what: a team group bound to
  cluster-admin is RBAC004), and the trust-boundary rules a pull request would use to reach outside the
  repository (a remote kustomize base, a path or symlink or origin outside the repository).

One home for the list: `repoconfig` (raise only) and `waivers` (never accepted) both ask here. Decision 0062.
"""

from __future__ import annotations

from ..internal import INTERNAL
from ..rules import kust001_remote as kust001
from ..rules import kust002_outside as kust002
from ..rules import yaml008_symlink as yaml008

SECURITY_PREFIXES = ("SEC", "RBAC")
# KUST009 (an origin annotation outside the repository) is a check rule whose module imports the model: named
# here, not imported, so this module stays importable from the loader's side.
TRUST_BOUNDARY_RULES = frozenset({kust001.ID, kust002.ID, "KUST009", yaml008.ID})
SELF_PREFIXES = ("EXC", "CFG")  # the exceptions' checks and the configuration's


def is_security_rule(rule: str) -> bool:
    return rule.startswith(SECURITY_PREFIXES) or rule in TRUST_BOUNDARY_RULES


def is_protected(rule: str) -> bool:
    """True for a rule that can be raised but never lowered, disabled or waived."""
    return rule == INTERNAL or rule.startswith(SELF_PREFIXES) or is_security_rule(rule)


def why(rule: str) -> str:
    """In words, why `rule` is protected (for the finding that refuses silencing it)."""
    if rule == INTERNAL:
        return "a crashed check: the run is incomplete"
    if rule.startswith(SELF_PREFIXES):
        return "the configuration's and the exceptions' own checks"
    return "a security rule"
