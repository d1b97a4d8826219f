"""The README and docs/ hold to the code: the paths their commands run and
their links exist, the exit codes are each command's `--help`, and the
architecture page's package table is the tree, whose packages import one
another without a cycle."""

from __future__ import annotations

import ast
import importlib
import re
import shutil
import subprocess
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracegrade.cli import main

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "src" / "tracegrade"
PAGES = [ROOT / "README.md", ROOT / "examples" / "README.md"]
PAGES += sorted((ROOT / "docs").glob("*.md"))
TEXT = {page: page.read_text("utf-8") for page in PAGES}
CLI = TEXT[ROOT / "docs" / "cli.md"]
BASH = r"```bash\n(.*?)```"
# A path of this repo that a command in a page runs or reads.
COMMAND_PATH = (
    r"(?:python3? |bash |inspect eval )((?:benchmarks|scripts|examples|\.ci)/[\w./-]+)"
)


@pytest.mark.parametrize("page", PAGES, ids=lambda path: path.name)
def test_the_paths_and_links_of_a_page_exist(page: Path) -> None:
    text = TEXT[page]
    for path in re.findall(COMMAND_PATH, text):
        assert (ROOT / path).exists(), path
    for link in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", link):
            continue
        target, _, anchor = link.partition("#")
        found = (page.parent / target).resolve() if target else page
        assert found.exists(), link
        if anchor and found.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", found.read_text("utf-8"), re.M)
            slugs = {
                re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
                for heading in headings
            }
            assert anchor in slugs, link


def test_the_ci_script_runs_the_readmes_test_command() -> None:
    script = (ROOT / ".ci" / "run").read_text("utf-8")
    steps = [line.replace(" --quiet", "") for line in script.splitlines()]
    steps = [line for line in steps if line and line[0] != "#"]
    assert steps[0] == "set -euo pipefail" and steps[1].startswith("cd ")
    assert " && ".join(steps[2:]) == "python3 -m pip install nox && nox"
    assert "python3 -m pip install nox && nox" in TEXT[ROOT / "README.md"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_placeholders_in_commands_are_refused_by_the_shell() -> None:
    """A line pasted before its `<placeholder>` is filled in fails at once:
    `OPENAI_API_KEY=sk-...` set a key that hung `inspect eval`."""
    blocks = [b for text in TEXT.values() for b in re.findall(BASH, text, re.DOTALL)]
    lines = [line for block in blocks for line in block.splitlines()]
    placeholders = [line for line in lines if re.search(r"<[\w-]+>", line)]
    assert len(placeholders) >= 4
    assert {line for line in lines if "_API_KEY=" in line} <= set(placeholders)
    for line in placeholders:
        checked = subprocess.run(
            ["bash", "-n", "-c", line], capture_output=True, text=True
        )
        assert checked.returncode == 2 and "syntax error" in checked.stderr, line


COMMANDS = ["check", "score", "report", "compare", "labels export", "labels apply"]
COMMANDS += ["import trec", "import ragas", "import openinference"]


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_cli_page_gives_each_commands_exit_codes_as_its_help(command: str) -> None:
    result = CliRunner().invoke(
        main, [*command.split(), "--help"], env={"COLUMNS": "1000"}, terminal_width=1000
    )
    assert result.exit_code == 0, result.output
    codes = " ".join(result.output.split()).split("Exit codes: ", 1)[1]
    codes = codes.split("Options:")[0]
    assert codes.startswith("0 "), codes
    if command:
        assert f"| `{command}` | {codes.strip()} |" in CLI
    else:
        assert codes.split(" Each command's")[0] in " ".join(CLI.split())


def test_the_architecture_pages_package_table_is_the_tree() -> None:
    """Each package is named in a row's first cell, and each name there is a
    package or module; each `name.py` a row mentions is in one of its
    packages; a `lines` column is each row's count within 10%."""
    page = (ROOT / "docs" / "architecture.md").read_text("utf-8")
    table = re.findall(r"\n## Packages\n\n((?:\|.*\n)+)", page)[0].splitlines()
    header = [cell.strip() for cell in table[0].strip("|").split("|")]
    named: set[str] = set()
    for line in table[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        names = re.findall(r"`(?:tracegrade\.)?(\w+)`", cells[0])
        paths = [SOURCE / name for name in names]
        for path in paths:
            assert path.is_dir() or path.with_suffix(".py").is_file(), path.name
        for module in re.findall(r"([\w/]+)\.py\b", line):
            homes = [*paths, SOURCE, SOURCE.parent]
            assert any((home / f"{module}.py").is_file() for home in homes), module
        if "lines" in header:
            said = int(cells[header.index("lines")].replace(",", ""))
            files = [f for p in paths for f in [*p.rglob("*.py"), p.with_suffix(".py")]]
            counted = sum(
                len(f.read_text("utf-8").splitlines()) for f in files if f.is_file()
            )
            assert abs(said - counted) <= counted / 10, (names, said, counted)
        named.update(names)
    packages = {path.parent.name for path in SOURCE.glob("*/__init__.py")}
    assert packages <= named, packages - named
    for module, function in re.findall(
        r"`(stage|extraction|steps)\.(?!py`)(\w+)`", page
    ):
        core = importlib.import_module(f"tracegrade.core.{module}")
        assert callable(getattr(core, function)), f"{module}.{function}"


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
