"""The configure stage: gpupolicy.yaml, guardrails read from the base, reviewed exceptions, root causes."""
