"""`tracegrade compare` on real logs of replay files that differ in known
ways. BASE: 14 passes, one generation and one retrieval failure, one
unresolved, one data error, and `gone` (BASE only: a lost result). WORSE
turns 12 passes into generation failures (significant); SLIGHT has 2
regressions and 1 fix (too few to tell). Both add `added`."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.log import read_eval_log
from inspect_ai.scorer import match
from scipy.stats import binomtest

from tests.commands import Completed, run_tracegrade
from tests.support import split_into_parts, write_lines
from tracegrade import ordered_extraction_recorded, stage_diagnosis
from tracegrade.tasks.replay import replay

OK = {"required": ["D1"], "context": ["D1"], "correct": True}
WRONG = {"required": ["D1"], "context": ["D1"], "correct": False}
PASSES = [f"p{index:02d}" for index in range(1, 15)]
BASE: dict[str, Any] = {
    **dict.fromkeys(PASSES, OK),
    "gen": WRONG,
    "ret": {"required": ["D1", "D2"], "context": ["D1"], "correct": False},
    "unres": {"required": [], "context": [], "correct": True},
    "nolabel": {"required": ["D1"], "context": ["D1"]},
    "gone": OK,
}
COMMON = {sample_id: run for sample_id, run in BASE.items() if sample_id != "gone"}
WORSE = COMMON | dict.fromkeys(PASSES[:12], WRONG) | {"added": OK}
SLIGHT = COMMON | dict.fromkeys(["gen", "nolabel", "added"], OK) | {"p02": WRONG}
SLIGHT["p01"] = {"required": ["D1"], "context": [], "correct": True}
SLIGHT["ret"] = {"required": ["D1", "D2"], "context": ["D2"], "correct": False}


def answers(**letters: str) -> dict[str, dict[str, list[str]]]:
    """Answers drawn from the source A, B, C, each spelt as its IDs' letters."""
    source = ["A", "B", "C"]
    return {x: {"source": source, "answer": list(a)} for x, a in letters.items()}


EXTRACTION_BASE = answers(x1="ABC", x2="A", x3="ABC", x4="BAC", x5="AABC")
EXTRACTION_BASE["x6"] = {"source": ["A", "A"], "answer": ["A"]}
EXTRACTION_NEW = EXTRACTION_BASE | answers(x1="BAC", x2="ABC", x4="AB", x5="ABC")
ROOT = Path(__file__).resolve().parent.parent
STATES = ["retrieval", "generation", "pass", "unresolved", "data error", "no score"]
PASS_EXPLANATION = (
    "Every required document reached the context and the answer is labelled "
    "correct: a grounded pass."
)
GENERATION_EXPLANATION = (
    "Every required document reached the context, so the wrong-answer label "
    "points to generation."
)


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One log per run, each in a directory of its own; `other` shares no
    sample with the rest, and `scored_by_match` has Inspect's scorer alone."""
    directory = tmp_path_factory.mktemp("compare-runs")
    runs = {"base": BASE, "worse": WORSE, "slight": SLIGHT, "other": {"x": OK}}
    runs |= {"extraction_base": EXTRACTION_BASE, "extraction_new": EXTRACTION_NEW}
    tasks = []
    for name, run in runs.items():
        lines = [{"id": sample, "input": record} for sample, record in run.items()]
        dataset = write_lines(directory / f"{name}.jsonl", lines)
        task = ordered_extraction_recorded if "extraction" in name else stage_diagnosis
        tasks.append(task(dataset=dataset))
    sample = Sample(id="p01", input="q", target="a")
    tasks.append(Task(dataset=[sample], solver=replay(), scorer=match()))
    log_dir = str(tmp_path_factory.mktemp("compare-logs"))
    evaluated = eval(tasks, display="none", log_dir=log_dir, log_realtime=False)
    placed = {}
    for name, log in zip([*runs, "scored_by_match"], evaluated, strict=True):
        assert log.status == "success", log.error
        placed[name] = str(tmp_path_factory.mktemp(name) / Path(log.location).name)
        shutil.copy(log.location, placed[name])
    return placed


def invoke(*args: str, exit_code: int | None = None) -> Completed:
    result = run_tracegrade("compare", *args, cwd=ROOT)
    assert exit_code in (None, result.returncode), result.stderr
    return result


def compared(base: str, new: str, *args: str) -> Any:
    return json.loads(invoke(base, new, "--json", *args, exit_code=0).stdout)


def matrix(stage: dict[str, Any]) -> str:
    """The non-zero cells of a transition matrix: `BASE > NEW: count; ...`."""
    states = stage["states"]
    return "; ".join(
        f"{states[row]} > {states[column]}: {count}"
        for row, counts in enumerate(stage["transitions"])
        for column, count in enumerate(counts)
        if count
    )


def test_twelve_regressions_are_significant_in_the_documented_json(
    logs: dict[str, str],
) -> None:
    result = invoke(logs["base"], logs["worse"], "--json")
    read = json.loads(result.stdout)
    assert result.stderr == ""
    assert (read["format"], read["unit"], read["alpha"]) == (3, "sample-epoch", 0.05)
    assert read["thresholds"] == read["warnings"] == read["only_in_new"] == []
    (evaluated,) = read["base"]["evals"]
    task = "tracegrade/stage_diagnosis"
    assert (evaluated["task"], evaluated["logs"]) == (task, [logs["base"]])
    (pair,) = read["pairs"]
    assert pair["name"] == "tracegrade/stage_diagnosis (none/none)"
    base_log, new_log = pair["logs"]
    assert (new_log["path"], new_log["samples"]) == (logs["worse"], 19)
    assert new_log["part"] is None
    (stage,) = pair["stage_diagnosis"]
    assert stage["states"] == STATES
    assert matrix(stage) == (
        "retrieval > retrieval: 1; generation > generation: 1; pass > generation: "
        "12; pass > pass: 2; unresolved > unresolved: 1; data error > data error: 1"
    )
    passed, retrieval = stage["tests"]
    # The data error is no stage, so it is not tested: 17 pairs.
    assert (passed["pairs"], passed["base_count"], passed["new_count"]) == (17, 14, 2)
    assert (passed["b"], passed["c"], passed["verdict"]) == (12, 0, "worse")
    assert passed["p_value"] == 2 * 0.5**12 == binomtest(12, 12, 0.5).pvalue
    assert passed["difference"] == pytest.approx(-12 / 17)
    assert (retrieval["outcome"], retrieval["p_value"]) == ("retrieval failure", None)
    regression = stage["regressions"][0]
    regressed = [(change["id"], change["epoch"]) for change in stage["regressions"]]
    assert regressed == [(sample, 1) for sample in PASSES[:12]]
    base = {"state": "pass", "missing": [], "explanation": PASS_EXPLANATION}
    assert regression["base"] == base | {"log": logs["base"]}
    assert regression["new"]["explanation"] == GENERATION_EXPLANATION
    assert stage["fixes"] == stage["newly_missing"] == stage["newly_found"] == []
    assert stage["ids_compared"] == 16
    assert stage["only_in_base"] == [{"id": "gone", "epoch": 1, "log": logs["base"]}]
    assert stage["only_in_new"] == [{"id": "added", "epoch": 1, "log": logs["worse"]}]
    # `gone` passed in BASE and is not in NEW: a result lost.
    assert stage["lost_from"] == [{"base": "pass", "new": "not in NEW", "count": 1}]
    assert [lost["id"] for lost in stage["lost_runs"]] == ["gone"]
    runs = stage["new_runs"]
    assert (runs["runs"], runs["diagnosed"]) == (19, 18)
    # p13, p14 and `added` pass, of every run. Recall: `ret` found 1 of 2
    # required, the rest all; `unres` requires nothing, so has none.
    over = {"pass": 3 / 19, "context_recall": 17.5 / 18, "context_precision": 1.0}
    assert runs["over_all_runs"] == over
    gate = read["gate"]
    assert pair["gate"] == gate
    assert gate["regressed"] == ["stage_diagnosis: 12 regressions"]
    assert gate["significant"] == gate["outcomes"] == ["stage_diagnosis: pass"]
    assert gate["lost_results"] == ["stage_diagnosis: lost 1 (1 pass → not in NEW)"]
    assert gate["fails"] and gate["lost_gated"] and gate["missing_evals"] == []
    assert (read["verdict"]["asked"], read["verdict"]["failed"]) == ([], False)
    # Every key, and no other, is in docs/compare.md's JSON shape.
    documented = (ROOT / "docs" / "compare.md").read_text(encoding="utf-8")
    shape = documented[documented.index("## JSON shape") :]
    objects = [read, read["base"], evaluated, pair, base_log, gate, read["verdict"]]
    objects += [stage, *stage["tests"], *stage["figures"], runs, regression]
    objects += [stage["lost_from"][0], regression["base"]]
    for key in {key for found in objects for key in found}:
        assert f'"{key}"' in shape, key
    # A figure pairs where both runs have it: 18 in both, but `unres` has none.
    figures = [(figure["figure"], figure["pairs"]) for figure in stage["figures"]]
    assert figures == [("recall", 17), ("precision", 17)]
    assert len(set(stage)) == 21 and len(set(stage["tests"][0])) == 19
    assert len(set(read)) == 15 and len(set(stage["figures"][0])) == 17


def test_two_regressions_and_one_fix_are_too_few_to_tell(
    logs: dict[str, str], tmp_path: Path
) -> None:
    """In the JSON, and on the page with its heatmap and every table."""
    out = tmp_path / "compare.html"
    result = compared(logs["base"], logs["slight"], "--html", str(out))
    (stage,) = result["pairs"][0]["stage_diagnosis"]
    assert matrix(stage) == (
        "retrieval > retrieval: 1; generation > pass: 1; pass > retrieval: 1; "
        "pass > generation: 1; pass > pass: 12; unresolved > unresolved: 1; "
        "data error > pass: 1"
    )
    passed, retrieval = stage["tests"]
    assert (passed["pairs"], passed["b"], passed["c"]) == (17, 2, 1)
    assert passed["p_value"] == 1.0 == binomtest(2, 3, 0.5).pvalue
    assert (passed["smallest_p_value"], passed["discordant_needed"]) == (0.25, 6)
    assert passed["verdict"] == "too few to tell" and not passed["significant"]
    assert passed["note"].startswith("Too few to tell: 2 of 17 pairs")
    assert (retrieval["b"], retrieval["c"], retrieval["p_value"]) == (0, 1, 1.0)
    p01, _ = stage["regressions"]
    assert (p01["id"], p01["new"]["state"]) == ("p01", "retrieval")
    assert p01["new"]["missing"] == ["D1"]
    assert p01["new"]["explanation"].startswith("D1 never reached the supplied context")
    # A fix is anything that passes now: the data error labelled too, though
    # only `gen` is a diagnosed pair the test counts.
    fixes = [(c["id"], c["base"]["state"]) for c in stage["fixes"]]
    assert fixes == [("gen", "generation"), ("nolabel", "data error")]
    assert stage["fixes"][1]["base"]["explanation"].startswith("No staff label")
    assert stage["newly_missing"] == [{"id": "D1", "count": 2}]
    assert stage["newly_found"] == [{"id": "D2", "count": 1}]
    # Not significant, but `gone` is lost: the gate fails on it.
    gate = result["gate"]
    assert (gate["regressions"], gate["lost"], gate["significant"]) == (2, 1, [])
    assert gate["fails"] and gate["fails_strict"]
    assert [path.name for path in tmp_path.iterdir()] == ["compare.html"]
    # Self-contained as the report's page is (test_cli_report holds it).
    page = out.read_text(encoding="utf-8")
    call = re.search(r'newPlot\(\s*"chart-transitions-1-stage_diagnosis",\s*', page)
    assert call is not None
    (heatmap,), _ = json.JSONDecoder().raw_decode(page, call.end())
    assert heatmap["type"] == "heatmap" and heatmap["z"] == stage["transitions"]
    assert heatmap["x"] == heatmap["y"] == STATES
    for key in ("summary", "runs", "tests", "figures", "one-run", "logs", "evals"):
        assert f'id="table-{key}"' in page
    for key in ("transitions", "lost", "regressions", "fixes", "ids"):
        assert f'id="table-{key}-stage_diagnosis"' in page
    assert "Too few to tell: 2 of 17 pairs" in page
    args = (logs["base"], logs["worse"], "--html", logs["worse"], "--force")
    assert "is the input" in invoke(*args, exit_code=2).stderr


@pytest.mark.parametrize(
    ("new", "options", "exit_code"),
    [
        ("worse", ["--fail-on-regression"], 3),
        # p = 0.00049 is not significant at 0.0001; `gone`, lost, not gated.
        ("worse", ["--fail-on-regression", "--alpha", "0.0001", "--allow-lost"], 0),
        ("slight", ["--fail-on-regression", "--allow-lost", "--strict"], 3),
        ("base", ["--fail-on-regression", "--strict"], 0),
    ],
)
def test_the_gate_exits_3_on_regression(
    logs: dict[str, str], new: str, options: list[str], exit_code: int
) -> None:
    for output in ([], ["--json"], ["--markdown"]):
        result = invoke(logs["base"], logs[new], *options, *output, exit_code=exit_code)
        failed = "tracegrade compare: Gate failed (" in result.stderr
        assert failed == (exit_code == 3)
    if exit_code == 3 and "--strict" in options:
        # The regressions named by their score, not every score tested.
        strict = "- regressions (--strict): stage_diagnosis: 2 regressions"
        assert strict in result.stderr


def test_extraction_pairs_gain_and_lose_membership_and_order(
    logs: dict[str, str],
) -> None:
    result = compared(logs["extraction_base"], logs["extraction_new"])
    (extraction,) = result["pairs"][0]["ordered_extraction"]
    assert matrix(extraction) == (
        "pass > pass: 1; pass > order fail: 1; order fail > membership fail: 1; "
        "membership fail > pass: 2; data error > data error: 1"
    )
    lists = ("lost_membership", "gained_membership", "lost_order", "gained_order")
    ids = [" ".join(c["id"] for c in extraction[key]) for key in lists]
    assert ids == ["x4", "x2 x5", "x1", "x2 x5"]
    # The repeated answer ID is an answer failure: graded, and failed.
    repeated = extraction["gained_membership"][1]["base"]["explanation"]
    assert repeated.startswith("The answer repeats A")
    membership, order = extraction["tests"]
    assert (membership["pairs"], membership["b"], membership["c"]) == (5, 1, 2)
    assert (order["pairs"], order["b"], order["c"]) == (5, 1, 2)
    assert membership["p_value"] == binomtest(1, 3, 0.5).pvalue == 1.0
    gate = result["gate"]
    outcomes = ["ordered_extraction: membership", "ordered_extraction: order"]
    assert gate["outcomes"] == outcomes
    assert gate["regressions"] == 2 and gate["fails_strict"] and not gate["fails"]


def row(*cells: str) -> str:
    """A table row on one line of the terminal, its cells in this order."""
    return r"^\s*" + r"\s+".join(map(re.escape, cells)) + r"(\s|$)"


def test_the_terminal_shows_the_verdict_first_and_verbose_every_legend(
    logs: dict[str, str], tmp_path: Path
) -> None:
    page = tmp_path / "compare.html"
    result = invoke(logs["base"], logs["worse"], "--html", str(page), exit_code=0)
    assert result.stderr.strip() == f"HTML comparison written to {page}"
    out = result.stdout
    lines = out.splitlines()
    assert lines[0] == "tracegrade compare: No gate asked"
    assert "Regressions: 12 regressions (stage_diagnosis: 12 regressions)" in out
    # One score: it is named in the titles, not in a column. 10 of the 12
    # regressions by default, and a line saying so.
    for cells in [
        ("pass", "0", "12", "2", "0", "0", "14"),
        ("pass", "17", "14", "2", "12", "0", "0.00049", "-70.6 pp", "worse"),
        ("p01", "1", "pass → generation", "none", "none"),
        ("gone", "1", "pass → not in NEW", "none"),
        ("BASE", "gone", "1"),
        ("NEW", "added", "1"),
        ("p10", "1"),
    ]:
        assert re.search(row(*cells), out, re.M), cells
    assert "p11" not in out
    assert "12 pairs. The first 10 are shown (--show); --json lists all." in out
    # The long form only when asked.
    assert PASS_EXPLANATION not in out and "b: pairs with the outcome" not in out
    assert lines[-1] == "--verbose: what each column means, and every table."
    out = invoke(logs["base"], logs["worse"], "--verbose").stdout
    assert "1 pair." in out and "1 pairs" not in out
    tested = ("stage_diagnosis", "pass", "McNemar", "17", "17", "14", "2", "12")
    assert re.search(row(*tested, "0", "12", "0", "0.00049", "-70.6 pp"), out, re.M)
    runs = row("stage_diagnosis", "NEW", "19", "18", "1", "1 answer-label")
    assert re.search(runs, out, re.M)
    assert re.search(row("no score", *["0"] * 7), out, re.M)
    assert (
        "- stage_diagnosis pass: Worse in NEW: 12 of 17 pairs had pass in BASE "
        "only and 0 in NEW only (exact McNemar test); p = 0.00049 <= alpha = 0.05."
    ) in out
    assert "Regressions: stage_diagnosis (pass → retrieval or generation)" in out
    assert PASS_EXPLANATION in out and GENERATION_EXPLANATION in out
    assert "b: pairs with the outcome in BASE only" in out


def test_a_missing_part_is_warned_of_and_its_samples_listed(
    logs: dict[str, str], tmp_path: Path
) -> None:
    """WORSE in three parts, as `tracegrade score` splits a run; one lost."""
    _, second, _ = split_into_parts(logs["worse"], tmp_path, 3)
    missing = [str(sample.id) for sample in read_eval_log(second).samples or []]
    Path(second).unlink()
    result = invoke(logs["base"], str(tmp_path), "--json")
    (pair,) = json.loads(result.stdout)["pairs"]
    parts = [log["part"] for log in pair["logs"][1:]]
    assert parts == [{"index": 1, "count": 3}, {"index": 3, "count": 3}]
    warning = next(w for w in pair["warnings"] if "part" in w)
    said = ".eval (3 parts) is missing part 2; only the parts read are compared."
    assert warning.startswith("NEW: ") and warning.endswith(said)
    assert f"warning: {warning}" in result.stderr
    (stage,) = pair["stage_diagnosis"]
    assert len(missing) == 7 and "added" not in missing
    only_in_base = sorted(ref["id"] for ref in stage["only_in_base"])
    assert only_in_base == sorted(["gone", *missing])


@pytest.mark.parametrize(
    ("runs", "said"),
    [
        ("base scored_by_match", "holds no tracegrade score .*; scores found: match"),
        ("base extraction_base", "BASE has 'stage_diagnosis', NEW has 'ordered_"),
        ("base other", r"both runs \(stage_diagnosis: 19 in BASE only, 1 in NEW only"),
        ("base broken", "cannot read .*broken.eval. as an Inspect log"),
        ("two worse", r"BASE holds 2 evals of task 'tracegrade/stage_diagnosis' and"),
        ("base worse --task nope", "BASE has no eval of task .nope.; it has "),
    ],
)
def test_runs_that_cannot_be_compared_exit_1(
    logs: dict[str, str], tmp_path: Path, runs: str, said: str
) -> None:
    (tmp_path / "broken.eval").write_bytes(b"not a zip file")
    (tmp_path / "two").mkdir()
    for name in ("base", "slight", "extraction_base"):
        shutil.copy(logs[name], tmp_path / "two")
    found = logs | {"broken": str(tmp_path / "broken.eval"), "two": f"{tmp_path}/two"}
    result = invoke(*(found.get(name, name) for name in runs.split()), exit_code=1)
    assert re.search(said, result.stderr) and "Traceback" not in result.stderr
