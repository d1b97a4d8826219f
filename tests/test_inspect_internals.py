"""Private Inspect AI symbols are used in one module only.

`tracegrade._inspect_internals` is the one place to follow a release that
moves them; an import of `inspect_ai._...` (or of a private submodule such
as `inspect_ai.log._log`) anywhere else in the package would escape it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tracegrade
import tracegrade._inspect_internals as internals

PACKAGE = Path(tracegrade.__file__).parent


def _private_inspect_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "inspect_ai" and any(p.startswith("_") for p in parts):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {name}")
    return found


def test_only_the_adapter_imports_private_inspect_modules() -> None:
    offenders = [
        found
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "_inspect_internals.py"
        for found in _private_inspect_imports(path)
    ]
    assert offenders == []


def test_the_adapter_documents_every_symbol_it_exports() -> None:
    doc = internals.__doc__ or ""
    undocumented = [name for name in internals.__all__ if f"`{name}`" not in doc]
    assert undocumented == []
    assert all(hasattr(internals, name) for name in internals.__all__)
