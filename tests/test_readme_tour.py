"""The README's five-minute tour, run as written from a folder holding
`examples/` as in a clone, prints what the README quotes."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from inspect_ai.log import EvalLog, list_eval_logs, read_eval_log

from tests.commands import run_inspect, run_tracegrade, tracegrade_shell

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text("utf-8")
TOUR = README[README.index("## A five-minute tour") :]


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
    """Each command of the tour's block once, in order, but `pip install`
    (done) and `inspect view` (a server)."""
    work = tmp_path_factory.mktemp("tour")
    shutil.copytree(ROOT / "examples", work / "examples")
    (block,) = re.findall(r"```bash\n(.*?)```", TOUR, re.DOTALL)[:1]
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
    explanations = [
        score.explanation or "" for s in samples for score in (s.scores or {}).values()
    ]
    assert any(explanation.startswith(quoted) for explanation in explanations)
    printed = runs["tracegrade report logs/base"].stdout
    assert "1 eval in 1 log" in printed
    assert re.search(r"^E1: \S+\.eval$", printed, re.M)
    as_json = run_tracegrade("report", "logs/base", "--json", cwd=work)
    (stage,) = json.loads(as_json.stdout)["stage_diagnosis"]
    assert stage["runs"] == 30


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
    """Verbatim under `bash -e` as GitHub Actions runs it, on the tour's
    logs, then again in place as a job rerun does."""
    script = ci_gate_script(README)
    assert script == ci_gate_script((ROOT / "docs" / "cli.md").read_text("utf-8"))
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
