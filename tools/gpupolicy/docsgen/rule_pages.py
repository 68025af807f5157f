"""One page per rule, from the rule's own docstring, and an index by category."""

from __future__ import annotations

from ..rules import builtin_rules
from . import Context, table


def pages(context: Context) -> dict[str, str]:
    rules = builtin_rules()
    result = {}
    index = (
        "# Rules\n\nEvery check `gpupolicy validate` runs. Each page says why the rule matters, shows a "
        "bad example and the fix. `gpupolicy rules ID` prints the same text.\n\n"
    )
    by_category: dict[str, list] = {}
    for rule in rules.values():
        by_category.setdefault(rule.category, []).append(rule)
        result[f"rules/{rule.id}.md"] = (
            f"# {rule.id}: {rule.summary}\n\n**Severity:** "
            f"{rule.severity.value} · **Category:** {rule.category}\n\n{_body(rule.doc)}\n"
        )
    for category, members in by_category.items():
        index += (
            f"## {category}\n\n"
            + table(
                ["rule", "severity", "summary"],
                [[f"[{r.id}]({r.id}.md)", r.severity.value, r.summary] for r in members],
            )
            + "\n"
        )
    result["rules/index.md"] = index
    return result


def _body(doc: str) -> str:
    """The docstring without its first line (the summary is the title)."""
    return doc.split("\n", 1)[1].strip() if "\n" in doc else ""
