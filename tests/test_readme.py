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
    viewer = benchmark("viewer")
    assert f"up to {viewer['limit_samples']:,} samples" in flat(SPEED)
    assert f"within 15 s up to {viewer['limit_samples_deep_link']:,};" in flat(SPEED)
    # The CLI page quotes both where it explains why large runs are split.
    assert f"up to {viewer['limit_samples']:,} samples" in flat(CLI)
    assert f"({viewer['limit_samples_deep_link']:,} when a sample" in flat(CLI)
    small, large = benchmark("check_memory")["rows"]
    assert f"{small['peak_mib']:.1f} MiB on 100,000 lines" in flat(SPEED)
    assert f"{large['peak_mib']:.1f} MiB on 1,000,000 lines" in flat(SPEED)
    one, parts = benchmark("report_scale")["rows"]
    before = benchmark("report_scale")["baseline"]
    slowest = max(run["seconds"] for run in one["runs"])
    for said in (
        f"in one `.eval` log in {one['seconds']:.2f} s (best of three runs, "
        f"the slowest {slowest:.2f} s) at {one['peak_mib']:.1f} MiB",
        f"{parts['logs']} parts of one run in {parts['seconds']:.1f} s at "
        f"{parts['peak_mib']:.1f} MiB",
        f"took {before['seconds']:.0f} s and {before['peak_mib']:,.0f} MiB",
    ):
        assert said in flat(SPEED), said


def test_report_against_the_last_round_is_the_committed_benchmark_run() -> None:
    """docs/speed.md gives `report_scale.py --baseline`'s run as committed:
    its command, every pair with its load, the best of each side and the
    ratios against the target."""
    result = benchmark("report_regression")
    before = result["baseline"]
    text = flat(SPEED)
    assert f"`{result['command']}`" in text
    best, ratios = before["best"], before["ratios"]
    said = [
        f"{before['samples']:,} stage records",
        f"{best['new']['seconds']:.1f} s ({best['new']['cpu_seconds']:.1f} s of "
        f"CPU) and {best['new']['peak_mib']:.1f} MiB",
        f"{best['baseline']['seconds']:.1f} s ({best['baseline']['cpu_seconds']:.1f}"
        f" s of CPU) and {best['baseline']['peak_mib']:.1f} MiB",
        f"time x{ratios['seconds']:.2f}, CPU x{ratios['cpu_seconds']:.2f}, peak "
        f"memory x{ratios['peak_mib']:.2f}",
    ]
    for pair in before["pairs"]:
        new, base = pair["new"], pair["baseline"]
        said.append(
            f"| {pair['first']} | {new['load_average']:.1f} / "
            f"{base['load_average']:.1f} | {new['seconds']:.1f} | "
            f"{new['cpu_seconds']:.1f} | {new['peak_mib']:.1f} | "
            f"{base['seconds']:.1f} | {base['cpu_seconds']:.1f} | "
            f"{base['peak_mib']:.1f} |"
        )
    for line in said:
        assert line in text, line
    assert before["figures_match"] is True


def test_compare_memory_figures_are_the_committed_benchmark_run() -> None:
    found = benchmark("compare_scale")
    rows = {(row["code"], row["output"], row["changed"]): row for row in found["rows"]}
    samples = found["samples"]
    ours = "this tree"
    (before,) = {code for code, _, _ in rows if code != ours}
    revision = before.removeprefix("git ")

    def peak(code: str, output: str, changed: int) -> str:
        return f"{rows[code, output, changed]['peak_mib']:,.0f} MiB"

    text = flat(SPEED)
    for said in (
        f"two runs of {samples:,} stage records peaked at "
        f"{peak(ours, '--json', 0)} with no pair changed",
        f"at {peak(ours, '--json', samples)} (`--json`, "
        f"{rows[ours, '--json', samples]['output_mb']:,.1f} MB of JSON) and "
        f"{peak(ours, '--html', samples)} (`--html`, a "
        f"{rows[ours, '--html', samples]['output_mb']:,.1f} MB page)",
        f"The revision before, {revision}, peaked at "
        f"{peak(before, '--json', samples)} (`--json`) and "
        f"{peak(before, '--html', samples)} (`--html`, a "
        f"{rows[before, '--html', samples]['output_mb']:,.1f} MB page)",
    ):
        assert said in text, said
    # Flat: no changed pair costs memory worth a line of the table.
    assert rows[ours, "--html", 0]["peak_mib"] == pytest.approx(
        rows[ours, "--html", samples]["peak_mib"], rel=0.05
    )
    assert all(row["correct"] in (None, True) for row in found["rows"])


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


def test_answer_reading_figures_are_the_committed_benchmark_run() -> None:
    found = benchmark("answer_reading")
    rows = {row["family"]: row for row in found["rows"]}
    text = flat(SPEED)
    slowest = max(found["rows"], key=lambda row: row["points"][-1]["seconds"])
    growths = sorted(row["growth"] for row in found["rows"])
    steepest = max(found["rows"], key=lambda row: row["growth"])

    def seconds(family: str) -> str:
        return f"{rows[family]['points'][-1]['seconds']:.3f} s"

    for said in (
        f"on {len(rows)} families of hostile answer text",
        f"The slowest family at 1,000,000 characters, `{slowest['family']}`",
        f"took {slowest['points'][-1]['seconds']:.2f} s;",
        f"between {growths[0]:.1f} and {growths[-1]:.1f} times as long",
        f"(the {steepest['growth']:.1f} is `{steepest['family']}`, a whole read of "
        f"{steepest['points'][-1]['seconds']:.3f} s",
        f"now read 1,000,000 characters in {seconds('digits then a word')} (digits "
        f"then a word), {seconds('a Python list of spaces')} (a Python list of "
        f"spaces) and {seconds('distinct JSON arrays')} (ten thousand",
        f"Issue 39's read it in {seconds('sentences of a comma list')} (sentences "
        f"of a comma list), {seconds('a long first line then a list')} (a long "
        f"first line then a list) and {seconds('ANSWER markers on one line')} "
        "(ANSWER markers on one line)",
        f"at most {found['max_peak_multiple']:.1f} times the text",
    ):
        assert said in text, said
    assert found["command"] == (
        "python benchmarks/answer_reading.py "
        "--sizes=125000,250000,500000,1000000 --repeat=5"
    )


def test_score_table_figures_are_the_committed_benchmark_run() -> None:
    run = benchmark("score_table")
    one, ray = run["one_core"], run["ray"]
    text = flat(SPEED)
    rows = [
        f"| one core, in process | {one['records_per_second_per_core']:,} "
        f"| {one['records_per_second_per_core']:,} | CPU seconds of the process |",
        f"| one core, in process | {one['records_per_second_wall']:,} "
        f"| {one['records_per_second_wall']:,} | wall clock |",
        f"| Ray Data, 2 workers | {ray['records_per_second']:,} "
        f"| {ray['records_per_second_per_core']:,} | wall clock, `ray.init` apart |",
    ]
    for row in rows:
        assert row in SPEED, row
    assert f"{run['records']:,} stage records" in text
    assert f"load average was {one['load_average_before'][0]}" in text
    assert f"{ray['load_average_after'][0]} when it ended" in text
    assert f"Ray's wall clock was {ray['wall_seconds']:.1f} s" in text
    assert f"took {ray['unchanged_wall_seconds']:.1f} s" in text
    per_record = 1e6 / one["records_per_second_per_core"]
    assert f"about {per_record:.0f} µs of CPU a record" in text


def test_what_ray_costs_is_the_committed_benchmark_run() -> None:
    found = benchmark("ray_cost")
    page = flat((ROOT / "docs" / "beyond-one-machine.md").read_text())
    only = found["packages_only_ray_needs"]
    named = ", ".join(f"ray {found['ray']}" if name == "ray" else name for name in only)
    for said in (
        f"brings {len(only)} packages nothing else in it needs ({named})",
        f"{found['install_seconds']:.1f} s to install",
        f"{found['installed_mib']:.1f} MiB on disk",
        f"takes {found['ray_test']['seconds']:.1f} s of the suite",
    ):
        assert said in page, said


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
