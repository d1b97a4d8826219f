"""The README and docs/ hold to the code (paths, links, exit codes, the package
table, no import cycle), and the tour, run as written, prints what they quote."""

from __future__ import annotations

import ast
import importlib
import json
import re
import shlex
import shutil
import subprocess
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from inspect_ai.log import EvalLog, list_eval_logs, read_eval_log

from tests.commands import run_inspect, run_tracegrade, tracegrade_shell
from tracegrade.cli import main

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "src" / "tracegrade"
PAGES = [ROOT / "README.md", ROOT / "examples" / "README.md"]
PAGES += sorted((ROOT / "docs").glob("*.md"))
TEXT = {page: page.read_text("utf-8") for page in PAGES}
CLI = TEXT[ROOT / "docs" / "cli.md"]
README = TEXT[ROOT / "README.md"]
TOUR = README[README.index("## A five-minute tour") :]
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
                re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings
            }
            assert anchor in slugs, link


def test_the_ci_script_runs_the_readmes_test_command() -> None:
    script = (ROOT / ".ci" / "run").read_text("utf-8")
    steps = [line.replace(" --quiet", "") for line in script.splitlines()]
    steps = [line for line in steps if line and line[0] != "#"]
    assert steps[0] == "set -euo pipefail" and steps[1].startswith("cd ")
    assert " && ".join(steps[2:]) == "python3 -m pip install nox && nox"
    assert "python3 -m pip install nox && nox" in README


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
    result = CliRunner().invoke(main, [*command.split(), "--help"], terminal_width=1000)
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
    """Each package or top-level module and those it imports, at any depth."""
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
        real = names & {path.stem for path in SOURCE.iterdir()}  # packages, modules
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


def said_in_the_tour(pattern: str) -> str:
    found = re.search(pattern, " ".join(TOUR.split()))
    assert found is not None, pattern
    return found.group(1)


def read_one(log_dir: Path, header_only: bool = True) -> EvalLog:
    (info,) = list_eval_logs(str(log_dir))
    return read_eval_log(info.name, header_only=header_only)


Tour = tuple[Path, dict[str, subprocess.CompletedProcess[str]]]


@pytest.fixture(scope="module")
def tour(tmp_path_factory: pytest.TempPathFactory) -> Tour:
    """Each command of the tour once, but `pip install` and `inspect view`."""
    work = tmp_path_factory.mktemp("tour")
    shutil.copytree(ROOT / "examples", work / "examples")
    (block,) = re.findall(BASH, TOUR, re.DOTALL)[:1]
    runs = {}
    for line in filter(str.strip, block.splitlines()):
        command = shlex.split(line)
        if command[0] == "inspect" and command[1] == "eval":
            runs[line] = run_inspect(*command[1:], cwd=work)
        elif command[0] == "tracegrade":
            runs[line] = run_tracegrade(*command[1:], cwd=work)
        else:
            assert line in ("python3 -m pip install .", "inspect view --log-dir logs")
    assert len(runs) == 6
    return work, runs


def test_every_tour_command_succeeds(tour: Tour) -> None:
    work, runs = tour
    for line, done in runs.items():
        expected = 3 if "--fail-on-regression" in line else 0
        assert done.returncode == expected, (line, done.stderr)
        assert "Traceback" not in done.stderr
    for side in ("base", "new", "bulk"):
        assert read_one(work / "logs" / side).status == "success", side
    assert "<html" in (work / "compare.html").read_text("utf-8")
    assert len(list((work / "logs" / "bulk").glob("*.results.jsonl"))) == 1
    quoted = said_in_the_tour(r'\("([^"]+?) \.\.\."\)')
    samples = read_one(work / "logs" / "new", header_only=False).samples or []
    scores = [score for sample in samples for score in (sample.scores or {}).values()]
    assert any((score.explanation or "").startswith(quoted) for score in scores)
    printed = runs["tracegrade report logs/base"].stdout
    assert "1 eval in 1 log" in printed
    assert re.search(r"^E1: \S+\.eval$", printed, re.M)


def test_compare_says_what_the_tour_quotes_verdict_first(tour: Tour) -> None:
    work, runs = tour
    verdict = said_in_the_tour(r'"Worse in NEW \.\.\. (p = [^"]+)"')
    # The verdict first, and the whole in 60 lines of 80 columns.
    narrow = run_tracegrade(
        "compare", "logs/base", "logs/new", cwd=work, env={"COLUMNS": "80"}
    )
    lines = narrow.stdout.splitlines()
    assert lines[0] == "tracegrade compare: No gate asked"
    assert len(lines) <= 60 and max(map(len, lines)) <= 80, narrow.stdout
    said = " ".join(runs["tracegrade compare logs/base logs/new"].stdout.split())
    assert re.search(r"pass 29 24 17 8 1 0\.039 -24\.1 pp worse", said), said
    verbose = run_tracegrade("compare", "logs/base", "logs/new", "--verbose", cwd=work)
    printed = " ".join(verbose.stdout.split())
    assert re.search(r"Worse in NEW: .*?" + re.escape(verdict), printed), verdict
    dropped = said_in_the_tour(r"drops a required document in (\d+) runs that passed")
    fixed = said_in_the_tour(r"One run passes that did not, (q\d+), but not thanks")
    as_json = run_tracegrade("compare", "logs/base", "logs/new", "--json", cwd=work)
    (pair,) = json.loads(as_json.stdout)["pairs"]
    (stage,) = pair["stage_diagnosis"]
    assert len(stage["regressions"]) == int(dropped)
    for regression in stage["regressions"]:
        states = (regression["base"]["state"], regression["new"]["state"])
        assert states == ("pass", "retrieval") and regression["new"]["missing"]
    assert [fix["id"] for fix in stage["fixes"]] == [fixed]
    assert stage["lost"] == 0


def ci_gate_script(page: str) -> str:
    """The `run:` script of the YAML step "Gate on regressions"."""
    blocks = re.findall(r"```yaml\n(.*?)```", page, re.DOTALL)
    steps = [step for block in blocks for step in yaml.safe_load(block)]
    (script,) = [s["run"] for s in steps if s.get("name") == "Gate on regressions"]
    return str(script)


def test_the_readmes_ci_gate_runs_as_written_twice(tour: Tour) -> None:
    """Verbatim under `bash -e` on the tour's logs, twice (as a job rerun)."""
    script = ci_gate_script(README)
    assert script == ci_gate_script(CLI)
    tour_dir, _ = tour
    work = tour_dir / "ci"
    for side, logs in (("baseline", "base"), ("new", "new")):
        shutil.copytree(tour_dir / "logs" / logs, work / "eval" / side)
    summary = work / "summary.md"
    summary.touch()
    step = f"GITHUB_STEP_SUMMARY={shlex.quote(str(summary))}\n{script}"
    for _ in range(2):
        done = tracegrade_shell(step, work, errexit=True)
        assert done.returncode == 3, done.stderr
        failed = "- significantly worse at alpha = 0.05: stage_diagnosis: pass"
        assert failed in done.stderr
    pages = summary.read_text("utf-8").split("## tracegrade compare\n")
    assert pages[0] == "" and len(pages) == 3
    for page in pages[1:]:
        assert page.startswith(
            "\n**Gate failed (--fail-on-regression, --fail-under pass=0.7)**\n"
        )
        assert len(page) < 65_536  # GitHub's limit of a step summary
    assert "<html" in (work / "compare.html").read_text("utf-8")
