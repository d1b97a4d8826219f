"""No two of tracegrade's packages import each other, however indirectly."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

import tracegrade

SOURCE = Path(tracegrade.__file__).parent


def import_graph() -> dict[str, set[str]]:
    """Each package or top-level module (`bulk`, `table`, `tracegrade` for
    `__init__`) and those it imports, at any depth of its code."""
    graph: dict[str, set[str]] = {}
    for path in SOURCE.rglob("*.py"):
        parts = ["tracegrade", *path.relative_to(SOURCE).with_suffix("").parts]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                # `from . import` in `bulk/run.py` and in `bulk/__init__.py` is `bulk`.
                base = ".".join(parts[: -node.level]) if node.level else ""
                module = ".".join(filter(None, [base, node.module]))
                found |= {module, *(f"{module}.{a.name}" for a in node.names)}
        names = {name.split(".")[1] for name in found if name.startswith("tracegrade.")}
        real = {
            name
            for name in names
            if (SOURCE / name).is_dir() or (SOURCE / f"{name}.py").is_file()
        }
        if "tracegrade" in found:
            real.add("tracegrade")
        importer = "tracegrade" if parts[1] == "__init__" else parts[1]
        graph.setdefault(importer, set()).update(real - {importer})
    return graph


def test_the_packages_import_one_another_without_a_cycle() -> None:
    graph = import_graph()
    assert {"bulk", "table", "report", "scorers", "cli"} <= graph.keys()
    with pytest.raises(CycleError):  # the lowest package importing the highest
        TopologicalSorter({**graph, "core": graph["core"] | {"cli"}}).prepare()
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as error:
        raise AssertionError(f"an import cycle: {' -> '.join(error.args[1])}") from None
