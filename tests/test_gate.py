"""A gate that a broken run cannot pass, on real logs from `inspect eval`.

BASE is the tour's 30 runs (24 pass). NEW runs lose results: every other
label removed (`nolabel`), 12 samples raising (`errors`), an eval stopped
(`stopped`) or missing (`pairs-new`); `control` is BASE again."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task, eval, task_with
from inspect_ai.log import read_eval_log
from inspect_ai.solver import Generate, Solver, TaskState, solver
from scipy.stats import binomtest  # type: ignore[import-untyped]

from tests.commands import Completed, run_tracegrade
from tests.support import write_lines
from tracegrade import ordered_extraction_recorded, stage_diagnosis
from tracegrade.report.page import COMMENT_LIMIT, MarkdownPage, Table, escape
from tracegrade.report.thresholds import ThresholdCheck, threshold_line
from tracegrade.tasks.replay import replay

ROOT = Path(__file__).resolve().parent.parent
TOUR_BASE = str(ROOT / "examples" / "runs" / "base.jsonl")
# Twelve runs that pass in BASE, which raise in `errors`.
RAISING = [f"q{n:02d}" for n in (1, 2, 4, 5, 6, 7, 8, 9, 10, 12, 13, 14)]
STAGES = ("retrieval", "generation", "pass", "unresolved")
# Recall: 16 runs that fail at retrieval with 3 of 4 required documents
# retrieved, and 4 grounded passes; NEW halves what the retriever finds for
# the 16 (1 of 4) and loses p01's document: one pass regression.
REQUIRED = ["D1", "D2", "D3", "D4"]
FAILING = [f"r{n:02d}" for n in range(1, 17)]
PASSING = ["p01", "p02", "p03", "p04"]


def step_record(retrieved: list[str], required: list[str]) -> dict[str, Any]:
    found = [doc for doc in retrieved if doc in required]
    steps = [{"name": "retriever", "ids": retrieved}]
    return {"required": required, "context": found, "steps": steps, "correct": True}


@solver
def replay_raising(failing: list[str]) -> Solver:
    """Replay, but the samples `failing` raise before they are scored."""
    replayed = replay()

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        if state.sample_id in failing:
            raise RuntimeError(f"the retriever timed out on {state.sample_id}")
        return await replayed(state, generate)

    return solve


def raising_task(failing: list[str], *, fail_on_error: bool) -> Task:
    task, solve = stage_diagnosis(dataset=TOUR_BASE), replay_raising(failing)
    return task_with(
        task, solver=solve, name="stage_diagnosis", fail_on_error=fail_on_error
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Each run's log by name, from one `eval`; and two directories of logs."""
    work = tmp_path_factory.mktemp("gate")
    tour = [json.loads(line) for line in Path(TOUR_BASE).read_text().splitlines()]
    passing = {"required": ["D1"], "context": ["D1"], "correct": True}
    # Run for two epochs: two of BASE's passes, and three other passes.
    others = [{"id": f"o{n}", "input": passing} for n in (1, 2, 3)]
    twice = {
        "epochs2": write_lines(work / "two.jsonl", tour[:2]),
        "other2": write_lines(work / "other.jsonl", others),
    }
    for line in tour[::2]:
        line["input"].pop("correct", None)
    datasets = {"base": TOUR_BASE, "control": TOUR_BASE}
    datasets["nolabel"] = write_lines(work / "nolabel.jsonl", tour)
    for name, kept, p01 in (("recall_base", 3, ["D1", "X"]), ("recall_new", 1, ["X"])):
        records = {q: step_record([*REQUIRED[:kept], "X"], REQUIRED) for q in FAILING}
        records |= {q: step_record(["D1", "X"], ["D1"]) for q in PASSING}
        records["p01"] = step_record(p01, ["D1"])
        lines = [{"id": sample, "input": value} for sample, value in records.items()]
        datasets[name] = write_lines(work / f"{name}.jsonl", lines)
    tasks = {name: stage_diagnosis(dataset=path) for name, path in datasets.items()}
    for name, path in twice.items():
        tasks[name] = task_with(stage_diagnosis(dataset=path), epochs=2)
    tasks |= {
        "extraction": ordered_extraction_recorded(),
        "errors": raising_task(RAISING, fail_on_error=False),
        "stopped": raising_task(["q05"], fail_on_error=True),
    }
    # Nothing watches these evals live: no event buffer for `inspect view`.
    options = {"display": "none", "log_dir": str(work / "logs")}
    logs = eval([*tasks.values()], log_realtime=False, **options)
    found: dict[str, str] = {}
    for name, log in zip(tasks, logs, strict=True):
        # inspect eval exits 0 even when the eval fails: the log says.
        assert log.status == ("error" if name == "stopped" else "success"), log.error
        found[name] = log.location
    for side, names in (("base", ["base", "extraction"]), ("new", ["control"])):
        (work / f"pairs-{side}").mkdir()
        for name in names:
            shutil.copy(found[name], work / f"pairs-{side}")
        found[f"pairs-{side}"] = str(work / f"pairs-{side}")
    return found


def invoke(*args: str, exit_code: int | None = None) -> Completed:
    result = run_tracegrade(*args, cwd=ROOT)
    assert exit_code in (None, result.returncode), result.stderr
    return result


def as_json(*args: str, exit_code: int) -> Any:
    return json.loads(invoke(*args, "--json", exit_code=exit_code).stdout)


def flat(text: str) -> str:
    """Each run of spaces and line ends as one space."""
    return " ".join(text.split())


def stages(path: str) -> dict[str, str | None]:
    """Each sample's stage as the raw log holds it, None without one."""
    found: dict[str, str | None] = {}
    for sample in read_eval_log(path).samples or []:
        score = (sample.scores or {}).get("stage_diagnosis")
        value = None if score is None else score.value
        found[str(sample.id)] = value if value in STAGES else None
    return found


LABELS_LOST = r"lost results: stage_diagnosis: lost 14 \(11 pass → data error, "
ERRORS_LOST = r"lost results: stage_diagnosis: lost 12 \(12 pass → no score\)"
STOPPED = r"NEW: \S+\.eval \(stage_diagnosis, none/none\) has status 'error'"
MISSING = r"BASE: \S+\.eval \(tracegrade/ordered_extraction_recorded, none/none\) "


@pytest.mark.parametrize(
    ("base", "new", "failed_on", "why"),
    [
        ("base", "nolabel", LABELS_LOST, "answer-label"),
        ("base", "errors", ERRORS_LOST, "sample-error"),
        # The samples it never ran pair as no score: lost where BASE had one.
        ("base", "stopped", STOPPED, "not-run"),
        ("pairs-base", "pairs-new", MISSING + "has no NEW eval", None),
    ],
)
def test_results_lost_fail_the_gate_unless_allowed(
    runs: dict[str, str], base: str, new: str, failed_on: str, why: str | None
) -> None:
    """Labels removed, samples that raised, an eval stopped or missing."""
    args = ("compare", runs[base], runs[new], "--fail-on-regression")
    result = invoke(*args, "--strict", exit_code=3)
    assert re.search(f"^- {failed_on}", result.stderr, re.M), result.stderr
    allowed = invoke(*args, "--allow-lost", exit_code=0)
    assert "Gate passed (--fail-on-regression, --allow-lost)" in allowed.stdout
    gated = rf"^- not gated \(--allow-lost\): {failed_on}"
    assert re.search(gated, allowed.stdout, re.M), allowed.stdout
    read = as_json(*args, "--allow-lost", exit_code=0)
    assert read["gate"]["lost_gated"] is False and read["gate"]["fails"] is False
    if why is None:
        # Directories pair their evals by task and model; the rest are listed.
        ((pair,), (unpaired,)) = read["pairs"], read["only_in_base"]
        assert pair["base"]["task"] == pair["new"]["task"] != unpaired["task"]
        assert "has no eval of the same task and model in NEW" in read["warnings"][0]
        return
    (stage,) = read["pairs"][0]["stage_diagnosis"]
    # Counted as a recount of the raw logs counts them: a stage in BASE and
    # none in NEW, missing samples included.
    had, has = stages(runs[base]), stages(runs[new])
    lost = sum(1 for sample, state in had.items() if state and not has.get(sample))
    assert stage["lost"] == lost == len(stage["lost_runs"])
    assert stage["new_runs"]["runs"] == 30 and stage["only_in_base"] == []
    assert why in {item["why"] for item in stage["new_runs"]["not_diagnosed"]}
    # No test can weigh a run without a result: only the lost ones fail.
    assert stage["worse"] == 0 and read["gate"]["significant"] == []
    if new == "nolabel":
        # The pairs table has its own row of lost results.
        assert re.search(r"\s+0\s+0\s+14 \(11 pass → data error, ", result.stdout)
        states = {change["new"]["state"] for change in stage["lost_runs"]}
        assert states == {"data error"}


def test_the_control_passes_every_gate(runs: dict[str, str]) -> None:
    """NEW is BASE's runs again: nothing lost, nothing worse."""
    gates = ["--fail-on-regression", "--strict", "--fail-under", "pass=0.8"]
    gates += ["--fail-under", "context_recall=0.9"]
    result = invoke("compare", runs["base"], runs["control"], *gates, exit_code=0)
    passed = "Gate passed (--fail-on-regression, --strict, --fail-under pass=0.8, "
    assert passed in result.stdout
    assert "no result lost" in result.stdout and "warning" not in result.stdout


def test_a_report_counts_the_runs_that_errored_or_never_ran(
    runs: dict[str, str],
) -> None:
    assert (
        "E1 (stage_diagnosis, none/none): pass 12 of 30 runs: 17 diagnosed, 70.6% "
        "[46.9, 86.7] of them pass; 13 not diagnosed: 12 sample errors, 1 "
        "answer-label data error."
    ) in flat(invoke("report", runs["errors"], exit_code=0).stdout)
    # An eval that stopped: the samples it never ran count too.
    never_ran = 30 - len(read_eval_log(runs["stopped"]).samples or [])
    text = flat(invoke("report", runs["stopped"], exit_code=0).stdout)
    assert f"{never_ran} not run (the eval stopped)" in text
    assert (
        f"has status 'error'; the {never_ran} sample-epochs it never ran count "
        "as runs not diagnosed"
    ) in text
    (summary,) = as_json("report", runs["stopped"], exit_code=0)["stage_diagnosis"]
    assert summary["runs"] == 30


def test_a_threshold_is_of_every_run(runs: dict[str, str]) -> None:
    result = invoke("report", runs["errors"], "--fail-under", "pass=0.5", exit_code=3)
    assert (
        "tracegrade report: threshold not met: pass 0.4000 < 0.5 in E1 "
        "(stage_diagnosis, none/none), stage_diagnosis, over all 30 runs"
    ) in result.stderr
    read = as_json("report", runs["control"], "--fail-under", "pass=0.8", exit_code=0)
    (check,) = read["thresholds"]
    assert (check["metric"], check["value"], check["met"]) == ("pass", 0.8, True)
    # 70.6% of the diagnosed runs pass; the threshold sees 12 of 30. Every
    # digit a double holds is compared: 0.8 passes 0.8, not one more.
    checks = [("errors", "0.4", 0), ("control", "8e-1", 0), ("control", "0.81", 3)]
    for run, value, code in [*checks, ("control", "0.800000000000001", 3)]:
        result = invoke(
            "report", runs[run], "--fail-under", f"pass={value}", exit_code=code
        )
    assert "pass 0.8000 < 0.800000000000001 in" in result.stderr  # not "< 0.8"
    # compare checks NEW; BASE, which passes 24 of 30, is not what is checked.
    pair = (runs["control"], runs["errors"])
    result = invoke("compare", *pair, "--fail-under", "pass=0.5", exit_code=3)
    assert re.search(
        r"- threshold not met: pass 0.4000 < 0.5 in NEW \S+\.eval "
        r"\(stage_diagnosis, none/none\), stage_diagnosis, over all 30 runs",
        result.stderr,
    )
    invoke("compare", *pair[::-1], "--fail-under", "pass=0.8", exit_code=0)


def test_a_threshold_line_never_rounds_a_figure_to_the_other_side() -> None:
    check = ThresholdCheck("pass", 0.8, 0.79996, False, "E1", "t", "m", "s", 5)
    assert threshold_line(check).startswith("pass 0.79996 < 0.8 in E1 (t, m)")


THRESHOLDS = [
    ("recall=0.5", 'no metric "recall"'),
    ("pass=1.5", "must lie in [0, 1]"),
    ("pass=high", "must be a number in [0, 1]"),
    ("pass", "is not NAME=VALUE"),
    # A double holds it as 0.5, which exactly 0.5 would pass.
    ("pass=0.50000000000000001", "as a double it is 0.5"),
    ("membership=0.5", "no ordered_extraction score was read"),
]


COMMANDS = {
    "report": ("report", "base"),
    "compare": ("compare", "base", "control"),
    "recall": ("compare", "recall_base", "recall_new"),
    "missing": ("compare", "base", "does-not-exist"),
}
BOTH = "--json and --markdown both print on stdout: give one"


@pytest.mark.parametrize(
    ("command", "args", "said"),
    [
        *(("report", ["--fail-under", option], said) for option, said in THRESHOLDS),
        # compare reads its thresholds as report does.
        ("compare", ["--fail-under", "membership=0.5"], "no ordered_extraction score"),
        # A gate the runs do not have.
        ("recall", ["--fail-on-regression", "--gate", "reranker_recall"], "reranker_"),
        ("recall", ["--gate", "context_recall"], "--fail-on-regression"),
        *(
            ("compare", ["--alpha", alpha], f"strictly between 0 and 1, got {alpha}")
            for alpha in ("0.0", "1.0", "nan", "inf")
        ),
        ("compare", ["--show", "0"], "0 is not in the range x>=1"),
        ("missing", [], "Path 'does-not-exist' does not exist"),
        ("compare", ["--json", "--markdown"], BOTH),
        ("report", ["--json", "--markdown"], BOTH),
    ],
)
def test_a_bad_option_is_a_usage_error(
    runs: dict[str, str], command: str, args: list[str], said: str
) -> None:
    name, *logs = COMMANDS[command]
    result = invoke(name, *(runs.get(log, log) for log in logs), *args, exit_code=2)
    assert said in flat(result.stderr) and result.stdout == ""
    assert "Traceback" not in result.stderr


def test_markdown_gives_the_verdict_first(runs: dict[str, str]) -> None:
    args = ("compare", runs["base"], runs["errors"], "--fail-on-regression")
    out = invoke(*args, "--markdown", exit_code=3).stdout
    head = "## tracegrade compare\n\n**Gate failed (--fail-on-regression)**\n"
    assert out.startswith(head)
    assert out.splitlines()[4].startswith("- lost results: stage\\_diagnosis: lost 12")
    assert "### Pairs" in out and "### Runs" in out
    assert "| stage\\_diagnosis | NEW | 30 | 17 | 13 |" in out
    args = ("report", runs["errors"], "--fail-under", "pass=0.5", "--markdown")
    out = invoke(*args, exit_code=3).stdout
    head = "## tracegrade report\n\n**Gate failed: 1 of 1 thresholds not met"
    assert out.startswith(head)
    assert "- E1 (stage\\_diagnosis, none/none): pass 12 of 30 runs" in out


def test_markdown_stays_under_githubs_limit_and_says_what_it_left_out() -> None:
    rows = [[f"D{n}|<b>@x", "1"] for n in range(50_000)]
    table = Table("ids", "IDs", "Every ID.", ["document", "count"], rows)
    page = MarkdownPage("tracegrade compare")
    page.verdict("Gate failed", ["a reason"])
    page.table(table)
    page.table(table)
    text = page.render()
    assert len(text) < COMMENT_LIMIT
    assert text.startswith("## tracegrade compare\n\n**Gate failed**\n\n- a reason")
    shown = len(re.findall(r"^\| D\d+", text, re.M))
    assert 0 < shown < 50_000
    assert (
        "Left out to stay under 65,536 characters (GitHub's limit for a comment): "
        f"table 'IDs': {50_000 - shown} of 50000 rows; table 'IDs' (all 50000 "
        "rows). --json lists everything."
    ) in flat(text)
    # A cell cannot end the table or inject markup, nor mention anyone.
    assert "| D0\\|&lt;b&gt;&#64;x | 1 |" in text
    assert escape("x" * 1000).endswith("\u2026") and len(escape("x" * 1000)) == 300


def test_epochs_that_differ_are_warned_of(runs: dict[str, str]) -> None:
    args = ("compare", runs["base"], runs["epochs2"])
    more = invoke(*args, "--fail-on-regression", "--allow-lost", exit_code=0)
    (stage,) = as_json(*args, exit_code=0)["pairs"][0]["stage_diagnosis"]
    assert [ref["epoch"] for ref in stage["only_in_new"]] == [2, 2]
    assert len(stage["only_in_base"]) == 28 and stage["pairs"] == 2
    assert (
        "warning: BASE ran 1 epoch and NEW 2 epochs: samples pair by epoch, so "
        "only epochs 1 to 1 are compared; NEW's epochs 2 to 2 are in one run only."
    ) in flat(more.stdout)
    # BASE's second epochs were never asked of NEW: not lost.
    back = ("compare", runs["epochs2"], runs["base"], "--fail-on-regression")
    fewer = flat(invoke(*back, exit_code=0).stdout)
    assert "no result lost" in fewer
    assert "BASE's epochs 2 to 2 are in one run only, not counted as lost." in fewer


def test_pooling_one_epoch_then_several_is_counted(
    runs: dict[str, str], tmp_path: Path
) -> None:
    read = as_json("report", "--pool", runs["base"], runs["other2"], exit_code=0)
    (pooled,) = read["stage_diagnosis"]
    assert pooled["evals"] == ["E1", "E2"]
    assert (pooled["runs"], pooled["samples"]) == (36, 33)
    assert pooled["stages"]["pass"]["count"] == 24 + 6
    # Nothing missing (`other2` passes every run): no missing-ID chart.
    invoke("report", runs["other2"], "--html", str(tmp_path / "r.html"), exit_code=0)
    page = (tmp_path / "r.html").read_text("utf-8")
    assert "chart-stages" in page and "chart-missed" not in page


def test_report_rows_follow_the_evals_with_task_and_model(runs: dict[str, str]) -> None:
    """E1's task sorts after E2's; its rows still come first."""
    logs = (runs["base"], runs["errors"], runs["extraction"])
    out = invoke("report", *logs, exit_code=0).stdout
    assert re.findall(r"^(E\d) +(\S+) +(\S+) +pass +", out, re.M) == [
        ("E1", "tracegrade/stage_diagnosis", "none/none"),
        ("E2", "stage_diagnosis", "none/none"),
    ]
    runs_table = out.split("Runs")[1].split("\n\n")[0]
    assert re.findall(r"^(E\d) ", runs_table, re.M) == ["E1", "E2", "E3"]


def test_halved_recall_fails_its_gate_but_not_the_default(runs: dict[str, str]) -> None:
    args = ("compare", runs["recall_base"], runs["recall_new"], "--fail-on-regression")
    gate = as_json(*args, exit_code=0)["gate"]
    assert (gate["regressions"], gate["significant"]) == (1, [])
    assert gate["outcomes"] == ["stage_diagnosis: pass"]
    for measure in ("context_recall", "retriever_recall"):
        read = as_json(*args, "--gate", measure, exit_code=3)
        gated = [f"stage_diagnosis: {measure}"]
        assert read["gate"]["significant"] == read["gate"]["outcomes"] == gated
        (stage,) = read["pairs"][0]["stage_diagnosis"]
        figures = {f["figure"]: f for f in stage["figures"]}
        tested = figures["recall" if measure == "context_recall" else measure]
        # The recall of 17 samples fell (16 from 3/4 to 1/4, p01 from 1 to 0).
        assert (tested["fell"], tested["rose"]) == (17, 0)
        assert "fell in 17 and rose in 0 (exact sign test" in tested["note"]
        assert tested["p_value"] == binomtest(17, 17).pvalue
    both = as_json(*args, "--gate", "pass", "--gate", "context_recall", exit_code=3)
    outcomes = [name.split(": ")[1] for name in both["gate"]["outcomes"]]
    assert outcomes == ["pass", "context_recall"]
