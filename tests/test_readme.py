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
from typing import Any

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


def benchmark(name: str) -> Any:
    return json.loads((ROOT / "benchmarks" / "results" / f"{name}.json").read_text())


def test_speed_figures_are_the_committed_benchmark_run() -> None:
    for row in benchmark("throughput")["rows"]:
        if row["target"] is None:
            continue
        line = (
            f"| {row['python_records_per_s']:,.0f} | {row['node_records_per_s']:,.0f} |"
        )
        assert line in SPEED, line
        ratio = row["ratio"]
        shown = f"{ratio:.2f}x" if ratio < 1 else f"{ratio:.1f}x"
        assert f"{line} {shown} |" in SPEED, shown
    # The bulk table is the one the benchmark renders from its own report.
    rendered = (ROOT / "benchmarks" / "results" / "bulk_scoring.md").read_text()
    table = [line for line in rendered.splitlines() if line.startswith("|")]
    assert len(table) == 2 + len(benchmark("bulk_scoring")["rows"])
    for line in table:
        assert line in SPEED, line
    _bulk_prose_is_the_committed_run(flat(SPEED))


def _bulk_prose_is_the_committed_run(text: str) -> None:
    """The figures the bulk paragraph quotes, from the benchmark's JSON."""
    report = benchmark("bulk_scoring")
    run = {(row["task"], row["records"], row["format"]): row for row in report["rows"]}

    def ours(task: str, records: int, log_format: str) -> dict[str, Any]:
        found: dict[str, Any] = run[task, records, log_format]["tracegrade"]
        return found

    stage, extraction = "stage_diagnosis", "ordered_extraction"
    said = (
        f"1,000,000 stage records in {ours(stage, 1_000_000, 'eval')['seconds']:.1f} s "
        f"(`.eval`) and {ours(stage, 1_000_000, 'json')['seconds']:.1f} s (`.json`), "
        f"100,000 in {ours(stage, 100_000, 'eval')['seconds']:.1f} s and "
        f"{ours(stage, 100_000, 'json')['seconds']:.1f} s, and peaks of "
        f"{ours(stage, 1_000_000, 'eval')['peak_mib']:.0f} and "
        f"{ours(stage, 1_000_000, 'json')['peak_mib']:.0f} MiB (stage) and "
        f"{ours(extraction, 1_000_000, 'eval')['peak_mib']:.0f} and "
        f"{ours(extraction, 1_000_000, 'json')['peak_mib']:.0f} MiB (extraction)"
    )
    assert said in text, said
    targets = [(target, row) for row in report["rows"] for target in row["targets"]]
    missed = sum(not target["met"] for target, _ in targets)
    assert ("All three are met" in text) == (missed == 0)
    assert ("**One is missed**" in text) == (missed == 1)
    # The target with the least room (or the most over it), and the
    # slowest sample list.
    margin, closest = min(
        ((1 - target["value"] / target["at_most"], row) for target, row in targets),
        key=lambda room: room[0],
    )
    if margin >= 0:
        assert f"{round(100 * margin)}% under it" in text
    else:
        assert f"{round(-100 * margin)}% over it" in text
    kind = "stage" if closest["task"] == stage else "extraction"
    closest_format = f"`.{closest['format']}`"
    assert f"{closest['records']:,} {kind} records as {closest_format}" in text
    slowest = max(row["viewer"]["seconds"] or 0 for row in report["rows"])
    assert f"slowest sample list in the viewer took {slowest:.1f} s" in text


def assert_paired_rows_in_speed(run: dict[str, Any]) -> None:
    """A `bulk_scoring.py --baseline` run's rows are docs/speed.md's table
    of them (seconds, CPU and peak, this code's then the baseline's), and
    the command that made it stands beside."""
    assert f"`python {run['command'].removeprefix('python ')}`" in flat(SPEED)
    for row in run["rows"]:
        ours, before = row["tracegrade"], row["baseline"]
        line = (
            f"| {row['records']:,} | {ours['seconds']:.1f} | "
            f"{ours['cpu_seconds']:.1f} | {ours['peak_mib']:.0f} | "
            f"{before['seconds']:.1f} | {before['cpu_seconds']:.1f} | "
            f"{before['peak_mib']:.0f} |"
        )
        assert line in SPEED, line


def test_thread_writer_figures_are_the_committed_benchmark_run() -> None:
    """docs/speed.md's table of the `.eval` writer thread against the forked
    writer it replaced is `benchmarks/results/bulk_thread.json`, row by row,
    with the command that made it."""
    run = benchmark("bulk_thread")
    text = flat(SPEED)
    assert_paired_rows_in_speed(run)
    assert f"forked (`{run['baseline']}`)" in SPEED
    small, large = run["rows"]
    thread, forked = large["tracegrade"], large["baseline"]
    for said in (
        f"spent {thread['timings']['serialize']:.1f} s of the "
        f"{thread['seconds']:.1f} handing samples to the writer",
        f"the thread peaked at {thread['peak_mib']:.0f} MiB",
        f"against {forked['peak_mib']:.0f} MiB for the two forked processes",
        f"took {small['baseline']['seconds']:.1f} s in the same minute",
    ):
        assert said in text, said
    assert thread["seconds"] > 2 * forked["seconds"]  # "by more than twice"


def test_writer_process_figures_are_the_committed_benchmark_run() -> None:
    """docs/speed.md's table of the `.eval` writer process against the
    forked writer is `benchmarks/results/bulk_writer.json`, row by row,
    with the command that made it and the figures said of it."""
    run = benchmark("bulk_writer")
    thread_run = benchmark("bulk_thread")
    text = flat(SPEED)
    assert_paired_rows_in_speed(run)
    rows = {row["records"]: row for row in run["rows"]}
    assert sorted(rows) == [10_000, 100_000, 1_000_000]
    ratios = [
        row["tracegrade"]["seconds"] / row["baseline"]["seconds"] for row in run["rows"]
    ]
    thread_ratios = [
        row["tracegrade"]["seconds"] / row["baseline"]["seconds"]
        for row in thread_run["rows"]
    ]
    large, hundred = rows[1_000_000], rows[100_000]
    process, forked = large["tracegrade"], large["baseline"]
    thread_large = thread_run["rows"][-1]["tracegrade"]
    for said in (
        f"takes {min(ratios):.1f} to {max(ratios):.1f} times the forked writer's time",
        f"where the thread took {min(thread_ratios):.1f} times it",
        f"it took {process['seconds']:.1f} s against the forked writer's "
        f"{forked['seconds']:.1f} s",
        f"peaked at {process['peak_mib']:.0f} MiB together (the larger one at "
        f"{process['largest_process_peak_mib']:.0f} MiB), against "
        f"{forked['peak_mib']:.0f} MiB for the forked pair",
        f"missed by {process['peak_mib'] - 381:.0f} MiB, where the thread missed "
        f"it by {thread_large['peak_mib'] - 381:.0f}",
        f"100,000 records in {hundred['tracegrade']['seconds']:.1f} s",
        f"({hundred['baseline']['seconds']:.1f} s and {forked['seconds']:.1f} s)",
    ):
        assert said in text, said
    assert max(ratios) < min(thread_ratios)  # faster than the thread, by the pairs
    assert process["peak_mib"] > 381  # "further from the memory target"


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
