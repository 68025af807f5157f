"""Schema checks for the JSON and YAML files the toolkit reads that are not repository files: shard reports
(`report merge`) and cluster snapshots (`audit --snapshot`). Each format has a small JSON Schema under
`schemas/inputs/`; a file that breaks it is a named refusal (`InputRefused`: the file, the field, what is
wrong), never a KeyError or TypeError deeper in (docs/decisions/0065-bounded-evaluation.md).
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import jsonschema
import yaml

from ...errors import ToolError

MAX_ERRORS_SHOWN = 3


class InputRefused(ToolError):
    """An input file that is not the format it claims (exit 2: no verdict)."""


@cache
def _validator(name: str) -> jsonschema.protocols.Validator:
    text = (
        resources.files("gpupolicy").joinpath("schemas", "inputs", f"{name}.yaml").read_text(encoding="utf-8")
    )
    schema = yaml.safe_load(text)
    return jsonschema.Draft202012Validator(schema)


def check(name: str, data: Any, source: str, what: str) -> None:
    """Raise `InputRefused` naming `source` when `data` breaks the `name` schema; `what` says what the file
    should be (for the message)."""
    errors = sorted(_validator(name).iter_errors(data), key=lambda error: list(error.absolute_path))
    if not errors:
        return
    shown = "; ".join(f"{_where(error)}: {_short(error)}" for error in errors[:MAX_ERRORS_SHOWN])
    more = f" (and {len(errors) - MAX_ERRORS_SHOWN} more)" if len(errors) > MAX_ERRORS_SHOWN else ""
    raise InputRefused(f"{source}: not {what}: {shown}{more}")


def _where(error: jsonschema.ValidationError) -> str:
    path = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error.absolute_path)
    return path.lstrip(".") or "the document"


def _short(error: jsonschema.ValidationError) -> str:
    message = error.message
    return message if len(message) <= 160 else message[:157] + "..."
