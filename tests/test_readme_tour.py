"""The README's five-minute tour, run as written, says what the README says.

Each command of the tour's code block runs in a real process, from a
folder holding the repository's `examples/`, as a new user runs it from a
clone. What the prose quotes from the output (the paired test's verdict,
a sample's explanation) must come out of these very commands.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from inspect_ai.log import list_eval_logs, read_eval_log

from tests.commands import run_inspect, run_tracegrade, tracegrade_shell

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text("utf-8")


def tour_commands() -> list[list[str]]:
    """The commands of the tour's block, in order: the block that follows
    the tour's heading."""
    tour = README[README.index("## A five-minute tour") :]
    (block,) = re.findall(r"```bash\n(.*?)```", tour, re.DOTALL)[:1]
    return [shlex.split(line) for line in block.splitlines() if line.strip()]


def said_in_the_tour(pattern: str) -> str:
    """A phrase the tour quotes in double quotes, found by `pattern`."""
    tour = " ".join(README[README.index("## A five-minute tour") :].split())
    found = re.search(pattern, tour)
    assert found is not None, pattern
    return found.group(1)


@dataclass
class Tour:
    """Where the tour ran, and each command's process by its line."""

    work: Path
    runs: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict)


@pytest.fixture(scope="module")
def tour(tmp_path_factory: pytest.TempPathFactory) -> Tour:
    """Every command of the tour run once, in order."""
    done = Tour(tmp_path_factory.mktemp("tour"))
    shutil.copytree(ROOT / "examples", done.work / "examples")
    for command in tour_commands():
        line = " ".join(command)
        if command[:3] == ["python3", "-m", "pip"]:
            continue  # the package is installed where the tests run
        if command[:2] == ["inspect", "view"]:
            continue  # a server: the logs it would show are checked below
        if command[0] == "inspect":
            done.runs[line] = run_inspect(*command[1:], cwd=done.work)
        else:
            assert command[0] == "tracegrade", line
            done.runs[line] = run_tracegrade(*command[1:], cwd=done.work)
    return done


def test_the_tour_block_is_what_the_prose_walks_through() -> None:
    lines = [" ".join(command) for command in tour_commands()]
    assert lines[0] == "python3 -m pip install ."
    assert lines[-1] == "inspect view --log-dir logs"
    for path in re.findall(r"examples/[\w./-]+", " ".join(lines)):
        assert (ROOT / path).is_file(), path


def test_every_tour_command_succeeds(tour: Tour) -> None:
    assert len(tour.runs) == len(tour_commands()) - 2
    for line, done in tour.runs.items():
        expected = 3 if "--fail-on-regression" in line else 0
        assert done.returncode == expected, (line, done.stderr)
        assert "Traceback" not in done.stderr
    # inspect eval exits 0 even when the eval fails: the logs say.
    for side in ("base", "new", "bulk"):
        (info,) = list_eval_logs(str(tour.work / "logs" / side))
        assert read_eval_log(info.name, header_only=True).status == "success", side
    assert "<html" in (tour.work / "compare.html").read_text("utf-8")
    assert len(list((tour.work / "logs" / "bulk").glob("*.results.jsonl"))) == 1


def test_the_verdict_the_tour_quotes_is_compares(tour: Tour) -> None:
    verdict = said_in_the_tour(r'"Worse in NEW \.\.\. (p = [^"]+)"')
    done = tour.runs["tracegrade compare logs/base logs/new"]
    # The verdict first, and the whole comparison in 60 lines of a terminal
    # 80 columns wide.
    narrow = run_tracegrade(
        "compare", "logs/base", "logs/new", cwd=tour.work, env={"COLUMNS": "80"}
    )
    lines = narrow.stdout.splitlines()
    assert lines[0] == "tracegrade compare: No gate asked"
    assert len(lines) <= 60 and max(map(len, lines)) <= 80, narrow.stdout
    said = " ".join(done.stdout.split())
    assert re.search(r"pass 29 24 17 8 1 0\.039 -24\.1 pp worse", said), said
    verbose = run_tracegrade(
        "compare", "logs/base", "logs/new", "--verbose", cwd=tour.work
    )
    printed = " ".join(verbose.stdout.split())
    assert re.search(r"Worse in NEW: .*?" + re.escape(verdict), printed), verdict


def test_the_explanation_the_tour_quotes_is_a_samples(tour: Tour) -> None:
    quoted = said_in_the_tour(r'\("([^"]+?) \.\.\."\)')
    (info,) = list_eval_logs(str(tour.work / "logs" / "new"))
    explanations = [
        score.explanation or ""
        for sample in read_eval_log(info.name).samples or []
        for score in (sample.scores or {}).values()
    ]
    assert any(explanation.startswith(quoted) for explanation in explanations), quoted


def test_the_report_rows_are_the_evals_it_lists(tour: Tour) -> None:
    printed = tour.runs["tracegrade report logs/base"].stdout
    assert "1 eval in 1 log" in printed
    assert re.search(r"^E1: \S+\.eval$", printed, re.M)
    as_json = run_tracegrade("report", "logs/base", "--json", cwd=tour.work)
    (stage,) = json.loads(as_json.stdout)["stage_diagnosis"]
    assert stage["runs"] == 30


def records(name: str) -> dict[str, dict[str, object]]:
    lines = (ROOT / "examples" / "runs" / name).read_text("utf-8").splitlines()
    return {line["id"]: line["input"] for line in map(json.loads, lines)}


def test_the_changes_the_tour_counts_are_compares(tour: Tour) -> None:
    dropped = said_in_the_tour(r"drops a required document in (\d+) runs that passed")
    fixed = said_in_the_tour(r"One run passes that did not, (q\d+), but not thanks")
    # Not the retriever's doing: the same context, another label.
    before, after = records("base.jsonl")[fixed], records("new.jsonl")[fixed]
    assert before["context"] == after["context"]
    assert (before["correct"], after["correct"]) == (False, True)
    as_json = run_tracegrade(
        "compare", "logs/base", "logs/new", "--json", cwd=tour.work
    )
    (pair,) = json.loads(as_json.stdout)["pairs"]
    (stage,) = pair["stage_diagnosis"]
    regressions = stage["regressions"]
    assert len(regressions) == int(dropped)
    for regression in regressions:
        assert (regression["base"]["state"], regression["new"]["state"]) == (
            "pass",
            "retrieval",
        )
        assert regression["new"]["missing"], regression
    assert [fix["id"] for fix in stage["fixes"]] == [fixed]
    assert stage["lost"] == 0


def ci_gate_script(page: str) -> str:
    """The `run:` script of the CI step named "Gate on regressions" in a
    page's YAML block, as GitHub Actions runs it."""
    (block,) = [
        block
        for block in re.findall(r"```yaml\n(.*?)```", page, re.DOTALL)
        if "- name: Gate on regressions" in block
    ]
    step = block.split("- name: Gate on regressions\n", 1)[1]
    assert step.startswith("  run: |\n"), step
    lines = []
    for line in step.splitlines()[1:]:
        if not line.startswith("    "):
            break
        lines.append(line[4:])
    return "\n".join(lines) + "\n"


def gate(step: str, work: Path) -> subprocess.CompletedProcess[str]:
    """The gate step as GitHub Actions runs it: `bash -e`, in `work`."""
    return tracegrade_shell(step, work, errexit=True)


def rerun_gate(
    script: str, work: Path, summary: Path
) -> subprocess.CompletedProcess[str]:
    """The gate script's one command, `tracegrade ARGS >> "$GITHUB_STEP_SUMMARY"`,
    run in this interpreter in `work`, its standard output appended to
    `summary`."""
    words = shlex.split(script.replace("\\\n", " "))
    assert words[0] == "tracegrade" and words[-2:] == [">>", "$GITHUB_STEP_SUMMARY"]
    assert not {";", "&&", "|", "||"} & set(words), script
    done = run_tracegrade(*words[1:-2], cwd=work)
    with summary.open("a", encoding="utf-8") as out:
        out.write(done.stdout)
    return done


def test_the_readmes_ci_gate_runs_as_written_twice(tour: Tour) -> None:
    """The gate step, verbatim, twice in one directory, as a job rerun
    runs it, on the tour's logs: the evaluate step before it needs a model
    and a key, so the tour's `inspect eval` logs stand in for its output.
    Then on a NEW that is BASE evaluated again, which passes.

    The first run is the script itself under `bash -e`, as GitHub Actions
    runs it; the rerun and the passing run are its one command, in-process,
    its standard output appended to the summary as its `>>` does."""
    script = ci_gate_script(README)
    assert script == ci_gate_script((ROOT / "docs" / "cli.md").read_text("utf-8"))
    assert "--fail-under" in script and "--markdown" in script
    work = tour.work / "ci"
    for side, logs in (("baseline", "base"), ("new", "new")):
        shutil.copytree(tour.work / "logs" / logs, work / "eval" / side)
    summary = work / "summary.md"
    summary.touch()
    # The runner's own environment, not part of the step.
    step = f"GITHUB_STEP_SUMMARY={shlex.quote(str(summary))}\n{script}"
    for rerun in (False, True):
        done = rerun_gate(script, work, summary) if rerun else gate(step, work)
        assert done.returncode == 3, done.stderr
        assert "Traceback" not in done.stderr
        assert "- significantly worse at alpha = 0.05: stage_diagnosis: pass" in (
            done.stderr
        )
    pages = summary.read_text("utf-8").split("## tracegrade compare\n")
    assert pages[0] == "" and len(pages) == 3
    for page in pages[1:]:
        assert page.startswith(
            "\n**Gate failed (--fail-on-regression, --fail-under pass=0.7)**\n"
        )
        assert len(page) < 65_536
    assert "<html" in (work / "compare.html").read_text("utf-8")

    shutil.rmtree(work / "eval" / "new")
    evaluated = run_inspect(
        *("eval", "tracegrade/stage_diagnosis", "--log-dir", "eval/new"),
        *("-T", f"dataset={tour.work / 'examples' / 'runs' / 'base.jsonl'}"),
        cwd=work,
    )
    (info,) = list_eval_logs(str(work / "eval" / "new"))
    assert read_eval_log(info.name, header_only=True).status == "success", (
        evaluated.stderr
    )
    done = rerun_gate(script, work, summary)
    assert done.returncode == 0, done.stderr
    last = summary.read_text("utf-8").split("## tracegrade compare\n")[-1]
    assert last.startswith(
        "\n**Gate passed (--fail-on-regression, --fail-under pass=0.7)**\n"
    )
