"""The README and docs/ state what the repo does; these keep them honest.

The README is what a newcomer reads to the end: short, in a fixed order,
every command and link working. Reference material lives in `docs/`, one
page per subject, and each page is held to its source here: the
deviations table to `parity/DEVIATIONS.md`, speed figures to the committed
benchmark runs, exit codes to each command's `--help`.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracegrade.cli import main

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text("utf-8")
DOCS = {path: path.read_text("utf-8") for path in sorted((ROOT / "docs").glob("*.md"))}
PAGES = {
    ROOT / "README.md": README,
    **DOCS,
    ROOT / "examples" / "README.md": (ROOT / "examples" / "README.md").read_text(
        "utf-8"
    ),
}
PARITY = DOCS[ROOT / "docs" / "parity.md"]
SPEED = DOCS[ROOT / "docs" / "speed.md"]
CLI = DOCS[ROOT / "docs" / "cli.md"]


# A path of this repo that a command in a page runs or reads.
COMMAND_PATH = (
    r"(?:python3? |bash |inspect eval )((?:benchmarks|scripts|examples|\.ci)/[\w./-]+)"
)


def flat(text: str) -> str:
    return " ".join(text.split())


def table_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("|")]


def test_the_readme_is_short_and_in_a_newcomers_order() -> None:
    assert len(README.splitlines()) <= 250
    headings = re.findall(r"^## (.+)$", README, re.M)
    assert headings == [
        "Two commands",
        "A five-minute tour",
        "The rules",
        "Tests",
        "Read more",
    ]
    assert README.index("python3 -m pip install . && inspect eval") < README.index(
        "python3 -m pip install nox && nox"
    )


def test_the_ci_script_runs_the_readmes_test_command() -> None:
    """Quieter, but the same two steps, and a failure fails the script."""
    script = (ROOT / ".ci" / "run").read_text("utf-8")
    steps = [
        line.replace(" --quiet", "")
        for line in script.splitlines()
        if line and not line.startswith(("#", "set ", "cd "))
    ]
    assert " && ".join(steps) == "python3 -m pip install nox && nox"
    assert "python3 -m pip install nox && nox" in README
    assert "set -euo pipefail" in script


def test_parity_page_carries_the_deviations_table_verbatim() -> None:
    deviations = (ROOT / "parity" / "DEVIATIONS.md").read_text("utf-8")
    rows = table_rows(deviations)

    assert len(rows) > 3
    start = PARITY.index(rows[0])
    assert PARITY[start:].splitlines()[: len(rows)] == rows


def test_readme_case_tables_are_the_packaged_documents_cases() -> None:
    for name in ("stage_diagnosis", "ordered_extraction"):
        fixture = ROOT / "src" / "tracegrade" / "data" / f"{name}.jsonl"
        cases = {
            case["id"]: case
            for case in map(json.loads, fixture.read_text("utf-8").splitlines())
        }
        rows = [
            row
            for row in table_rows(README)
            if re.match(r"\| `[a-z-]+` \| `\{", row) and row.split("`")[1] in cases
        ]
        assert rows, name
        for row in rows:
            case = cases[row.split("`")[1]]
            compact = json.dumps(case["input"], separators=(",", ":"))
            expected = json.dumps(case["expected"], separators=(",", ":"))
            assert f"`{compact}`" in row
            assert f"`{expected}`" in row
            assert row.rstrip(" |").endswith(case["reason"])


@pytest.mark.parametrize("page", list(PAGES), ids=lambda path: path.name)
def test_commands_name_existing_files(page: Path) -> None:
    for path in re.findall(COMMAND_PATH, PAGES[page]):
        assert (ROOT / path).exists(), path


@pytest.mark.parametrize("page", list(PAGES), ids=lambda path: path.name)
def test_relative_links_lead_somewhere(page: Path) -> None:
    text = PAGES[page]
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    relative = [link for link in links if not re.match(r"[a-z]+:", link)]
    for link in relative:
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


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_placeholders_in_commands_are_refused_by_the_shell() -> None:
    """A line pasted before its `<placeholder>` is filled in must fail at
    once: `OPENAI_API_KEY=sk-...` set a key that hung `inspect eval`."""
    placeholders = 0
    for text in PAGES.values():
        for block in re.findall(r"```bash\n(.*?)```", text, re.DOTALL):
            for line in block.splitlines():
                if not re.search(r"<[\w-]+>", line):
                    assert "_API_KEY=" not in line, line
                    continue
                placeholders += 1
                checked = subprocess.run(
                    ["bash", "-n", "-c", line], capture_output=True, text=True
                )
                assert checked.returncode == 2, line
                assert "syntax error" in checked.stderr, line
    assert placeholders >= 4


def help_exit_codes(*command: str) -> str:
    """The `Exit codes:` sentence of a command's `--help`, on one line."""
    result = CliRunner().invoke(
        main, [*command, "--help"], env={"COLUMNS": "1000"}, terminal_width=1000
    )
    assert result.exit_code == 0, result.output
    codes = flat(result.output).split("Exit codes: ", 1)[1]
    return codes.split("Options:")[0].strip()


COMMANDS = [
    ("check",),
    ("score",),
    ("report",),
    ("compare",),
    ("labels", "export"),
    ("labels", "apply"),
    ("import", "trec"),
    ("import", "ragas"),
    ("import", "openinference"),
]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_cli_page_gives_each_commands_exit_codes_as_its_help(
    command: tuple[str, ...],
) -> None:
    codes = help_exit_codes(*command)
    assert codes.startswith("0 "), codes
    assert f"| `{' '.join(command)}` | {codes} |" in CLI


def test_cli_page_gives_the_top_level_exit_codes_as_the_help() -> None:
    codes = help_exit_codes()
    assert codes.startswith("0 success"), codes
    assert codes.split(" Each command's")[0] in flat(CLI)


def test_the_architecture_page_names_every_package_and_only_real_ones() -> None:
    import importlib
    import pkgutil

    import tracegrade

    page = DOCS[ROOT / "docs" / "architecture.md"]
    first_cells = re.findall(r"^\| ([^|]*) \|", page, re.MULTILINE)
    named = {
        name for cell in first_cells for name in re.findall(r"tracegrade\.\w+", cell)
    }
    packages = {
        f"tracegrade.{module.name}"
        for module in pkgutil.iter_modules(tracegrade.__path__)
        if module.ispkg
    }
    assert packages <= named, packages - named
    for module in named:
        importlib.import_module(module)
    for module, function in re.findall(
        r"`(stage|extraction|steps)\.(?!py`)(\w+)`", page
    ):
        core = importlib.import_module(f"tracegrade.core.{module}")
        assert callable(getattr(core, function)), f"{module}.{function}"
