"""Importing a package without one of the submodules its `__init__` imports but we never use."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def without_submodule(name: str) -> Iterator[None]:
    """While the block runs, `import name` finds an empty placeholder; afterwards a real import of
    `name` (say, by a user of the package's own command line) loads the real module."""
    if name in sys.modules:
        yield
        return
    sys.modules[name] = types.ModuleType(name, "placeholder: not loaded by gpupolicy")
    try:
        yield
    finally:
        if (
            isinstance(sys.modules.get(name), types.ModuleType)
            and sys.modules[name].__doc__ == "placeholder: not loaded by gpupolicy"
        ):
            del sys.modules[name]
