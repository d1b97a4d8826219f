"""No two of tracegrade's packages import each other, however indirectly."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import tracegrade

SOURCE = Path(tracegrade.__file__).parent


def _package(module: str) -> str:
    """`tracegrade.bulk.run` -> `bulk`, `tracegrade.table` -> `table`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "tracegrade"


def _imported(path: Path) -> set[str]:
    """Every tracegrade module `path` imports, at any depth of its code."""
    # `from . import` in `bulk/run.py` and in `bulk/__init__.py` is `bulk`.
    parts = ["tracegrade", *path.relative_to(SOURCE).with_suffix("").parts]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(parts[: -node.level]) if node.level else ""
            module = ".".join(filter(None, [base, node.module]))
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return {name for name in found if name.split(".")[0] == "tracegrade"}


def _import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in SOURCE.rglob("*.py"):
        importer = _package(
            ".".join(["tracegrade", *path.relative_to(SOURCE).with_suffix("").parts])
        )
        if importer == "__init__":
            importer = "tracegrade"
        imported = {_package(name) for name in _imported(path)}
        packages = {
            name
            for name in imported
            if name == "tracegrade"
            or (SOURCE / name).is_dir()
            or (SOURCE / f"{name}.py").is_file()
        }
        graph.setdefault(importer, set()).update(packages - {importer})
    return graph


def test_the_packages_import_one_another_without_a_cycle() -> None:
    graph = _import_graph()
    assert {"bulk", "table", "report", "scorers", "cli"} <= graph.keys()
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as error:
        raise AssertionError(f"an import cycle: {' -> '.join(error.args[1])}") from None


def test_a_cycle_is_found() -> None:
    graph = _import_graph()
    graph["core"].add("cli")  # the lowest package importing the highest
    try:
        TopologicalSorter(graph).prepare()
    except CycleError:
        return
    raise AssertionError("a cycle through core and cli went unseen")
