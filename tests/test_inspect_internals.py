"""Private Inspect AI symbols are used in `_inspect_internals` only, and what
is mirrored from Inspect is held to Inspect's own output, so `nox -s compat`
(the newest `inspect-ai`) fails the day Inspect changes one of them."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import EvalSample, EvalSampleSummary, list_eval_logs
from inspect_ai.scorer import SampleScore, Score
from pydantic_core import to_jsonable_python

import tracegrade
import tracegrade._inspect_internals as internals
from tests.support import SUBPROCESS_ENV
from tracegrade._inspect_internals import (
    MAX_TEXT_LENGTH,
    METADATA_VALUE_LIMIT,
    METADATA_VALUE_REMOVED,
    THIN_TEXT_SCAN,
    THIN_TEXT_WIDTH,
    compute_eval_scores,
)
from tracegrade.bulk.evallog import sample_summary
from tracegrade.bulk.results import (
    RunResults,
    _reducer_name,
    _split_views,
    pooled_results,
)
from tracegrade.bulk.scoring import TASKS
from tracegrade.logs.evals import is_log_name

PACKAGE = Path(tracegrade.__file__).parent


def test_only_the_adapter_imports_private_inspect_modules() -> None:
    private = re.compile(r"^\s*(?:from|import)\s+(inspect_ai\.[\w.]+)", re.M)
    offenders = [
        f"{path.relative_to(PACKAGE)} {name}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "_inspect_internals.py"
        for name in private.findall(path.read_text("utf-8"))
        if any(part.startswith("_") for part in name.split("."))
    ]
    assert offenders == []


def test_every_name_loaded_when_used_is_where_inspect_keeps_it() -> None:
    """Each name `tracegrade score` loads from Inspect, loaded: a release
    that moves one fails here (and `tracegrade score` says which release it
    needs, below)."""
    for name, module in internals._LOADED_WHEN_USED.items():
        loaded = getattr(internals, name)
        assert loaded is getattr(importlib.import_module(module), name), name


_PLUGIN_LOADED = """
import json, sys
import tracegrade._registry
from tracegrade import stage_diagnosis, ordered_extraction_recorded
from tracegrade import stage_diagnosis_scorer, ordered_extraction_scorer
stage_diagnosis(), ordered_extraction_recorded()
stage_diagnosis_scorer(), ordered_extraction_scorer()
internals = sys.modules["tracegrade._inspect_internals"]
loaded = vars(internals)
print(json.dumps([name for name in internals._LOADED_WHEN_USED if name in loaded]))
"""


def test_the_plugin_loads_no_private_name_but_prerequisite_error() -> None:
    """What `inspect eval tracegrade/...` and a user's own task load: the
    registry, the tasks and the scorers, built. None of the names of
    `tracegrade score`'s writer, which an older Inspect may lack."""
    done = subprocess.run(
        [sys.executable, "-c", _PLUGIN_LOADED],
        capture_output=True,
        text=True,
        env=SUBPROCESS_ENV,
        check=True,
    )
    assert json.loads(done.stdout) == []


_MOVED = """
import sys
import tracegrade._inspect_internals as internals
# As on an Inspect without the module (0.3.250 has no _util.log_layout).
internals._LOADED_WHEN_USED["eval_log_name"] = "inspect_ai._util.not_there"
from tracegrade.cli import run
sys.argv = ["tracegrade", *sys.argv[1:]]
run()
"""


def test_score_on_an_inspect_too_old_says_which_release_in_one_line(
    tmp_path: Path,
) -> None:
    (tmp_path / "runs.jsonl").write_text(
        json.dumps({"id": "a", "input": {"required": [], "context": []}}) + "\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", _MOVED, "score", "stage_diagnosis", "runs.jsonl"],
        capture_output=True,
        text=True,
        env=SUBPROCESS_ENV,
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"tracegrade score needs inspect-ai {internals.SCORE_NEEDS} or newer "
        f"({version('inspect_ai')} is installed): pip install --upgrade "
        f"'inspect-ai>={internals.SCORE_NEEDS}'"
    ]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["runs.jsonl"]


# --- Mirrored rules, held to Inspect's own output --------------------------------

# The fields of `EvalSampleSummary` that `sample_summary` was written for.
_SUMMARY = (
    "id epoch input choices target description metadata scores model_usage "
    "role_usage model_fallbacks started_at completed_at total_time "
    "working_time uuid error limit limit_reason retries completed "
    "message_count turn_count token_limit token_limit_type "
    "token_limit_usage message_limit time_limit"
)
SUMMARY_FIELDS = _SUMMARY.split()


def as_json(value: Any) -> str:
    return json.dumps(
        to_jsonable_python(value, exclude_none=True), sort_keys=True, indent=1
    )


def _metadata_value(characters: int) -> list[str]:
    """A list whose indented JSON has exactly `characters` characters."""
    value = ["x" * (characters - 8)]
    assert len(json.dumps(value, indent=2)) == characters
    return value


def _sample_at_every_limit() -> dict[str, Any]:
    """A sample with every field a summary copies set, and each text and
    metadata value at, and one past, the limit that trims it."""
    width, scan, limit = THIN_TEXT_WIDTH, THIN_TEXT_SCAN, METADATA_VALUE_LIMIT
    usage = {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7}
    return {
        "id": "every-limit", "epoch": 2, "description": "described",
        "input": "i" * (MAX_TEXT_LENGTH + 1), "choices": ["A", "B"],
        "target": ["t" * MAX_TEXT_LENGTH, "u" * (MAX_TEXT_LENGTH + 1)],
        "metadata": {
            "at_limit": _metadata_value(limit),
            "past_limit": _metadata_value(limit + 1),
            "long_text": "word " * width, "spaced_text": " \n ".join(["w"] * 10),
            "mostly_space": " " * scan + "tail", "number": 1.5, "flag": True,
            "nothing": None, "nested": {"a": [1, 2, {"b": "c"}]},
        },
        "scores": {"s": {
            "value": float("nan"), "answer": "a" * (width + 1),
            "explanation": "e " * width, "reason": "r", "history": [{"value": 1}],
            "metadata": {"past_limit": _metadata_value(limit + 1), "ok": 1},
        }},
        "messages": [{"role": "user", "content": "hi"}],
        "model_usage": {"m": usage}, "role_usage": {"grader": usage},
        "model_fallbacks": [{"model": "a/b", "fallback_model": "c/d", "count": 2}],
        "started_at": "2026-01-01T02:00:00.5+02:00",
        "completed_at": "2026-01-01T00:00:01",
        "total_time": 1.25, "working_time": 1.0, "uuid": "u",
        "error": {"message": "boom", "traceback": "", "traceback_ansi": ""},
        "limit": {"type": "token", "limit": 10, "reason": "too many"},
        "error_retries": [{"message": "m", "traceback": "", "traceback_ansi": ""}],
        "turn_count": 3, "token_limit": 100, "token_limit_type": "total",
        "token_limit_usage": 90, "message_limit": 20, "time_limit": 60,
    }  # fmt: skip


# Chat input: an image becomes "(Image)", a long message is trimmed.
CHAT = [
    {"id": "m1", "role": "user", "content": [{"type": "image", "image": "data:,"}]},
    {"id": "m2", "role": "user", "content": "y" * 6000},
]


@pytest.mark.parametrize("chat", [False, True], ids=["text input", "chat input"])
def test_the_summary_copy_trims_as_inspect_at_every_limit(chat: bool) -> None:
    # A field Inspect adds to summaries must be added to `sample_summary`.
    assert list(EvalSampleSummary.model_fields) == SUMMARY_FIELDS
    sample = _sample_at_every_limit() | ({"input": CHAT} if chat else {})
    theirs = EvalSample.model_validate(sample).summary()

    assert as_json(sample_summary(sample)) == as_json(theirs)
    # The mirrored literals, read off Inspect's own output.
    assert theirs.metadata["past_limit"] == METADATA_VALUE_REMOVED
    assert theirs.metadata["at_limit"] == sample["metadata"]["at_limit"]
    assert {
        field for field in SUMMARY_FIELDS if getattr(theirs, field) is None
    } == set(), "every field set, so every rule is compared"


RECORDS = {
    "stage_diagnosis": [
        {"required": ["D1", "D2"], "context": ["D1", "D2"], "correct": True},
        {"required": ["D1", "D2"], "context": ["D1"], "correct": True},
        {"required": ["D1", "D2"], "context": ["D2", "D1"], "correct": False},
        {"required": ["D1"], "context": ["D1"]},
        {"required": ["D1"], "context": None, "correct": True},
        {"required": ["D1", "D1"], "context": ["D1"], "correct": True},
        # With steps: a `{step}_recall` metric each.
        {"required": ["D1", "D2"], "context": ["D1"], "correct": True, "steps": [
            {"name": "retriever", "ids": ["D2", "D1"]},
            {"name": "reranker", "ids": ["D1"]}]},
    ],
    "ordered_extraction": [
        {"source": ["a", "b"], "answer": ["a", "b"]},
        {"source": ["a", "b"], "answer": ["b", "a"]},
        {"source": ["a", "b", "c"], "answer": ["a", "x"]},
        {"source": ["a"], "answer": []},
        {"source": "not a list", "answer": ["a"]},
        {"source": ["a", "a"], "answer": ["a"]},
    ],
}  # fmt: skip


@pytest.mark.parametrize("task", sorted(RECORDS))
def test_metrics_over_the_stand_in_are_inspects_over_sample_scores(
    task: str, tmp_path: Path
) -> None:
    """The packaged scorer's own metrics, through `compute_eval_scores`,
    over `LightScore`s and over Inspect's `SampleScore`s of the same
    scores (each record twice over, so shares are not all 0 or 1)."""
    # A field Inspect adds to either may be one a metric reads.
    assert list(Score.model_fields) == [
        *("value", "answer", "explanation", "reason", "metadata", "history")
    ]
    assert list(SampleScore.model_fields) == [
        *("score", "sample_id", "sample_metadata", "scorer")
    ]
    bulk = TASKS[task]
    results = RunResults(bulk.make_scorer(), task, str(tmp_path))
    scores = [bulk.score_input(record) for record in RECORDS[task] * 2]
    for number, score in enumerate(scores):
        results.add(f"s{number}", score)
    views = _split_views(results.info.metrics)

    theirs = []
    for view, reduce in ((views.reduced, True), (views.unreduced, False)):
        if view is None:
            continue
        sample_scores = [
            SampleScore(
                score=results.reducer([score]) if reduce else score,
                sample_id=f"s{number}",
            )
            for number, score in enumerate(scores)
        ]
        reducer = _reducer_name(views) if reduce else None
        theirs += compute_eval_scores(sample_scores, view, task, results.info, reducer)
    ours = pooled_results([results], len(scores)).scores
    results.close()

    assert theirs, "the scorer has metrics"
    assert as_json(ours) == as_json(theirs)
    if task == "stage_diagnosis":
        assert '"reranker_recall"' in as_json(ours)


def test_the_log_names_are_those_inspect_lists(tmp_path: Path) -> None:
    """`is_log_name` against `list_eval_logs` over one directory of files
    named as logs, results and manifests are."""
    names = [
        "2026-01-01T00-00-00+00-00_task_abc.eval", "2026-01-01_task.json",
        "2026-01-01T00-00-00+00-00_task_abc.json", "2026-01-01T00-00_task.json",
        "2026-01-01T00:00:00_task.json", "x2026-01-01T00-00-00_task.json",
        "run.eval", "part-1.eval", "metadata.json", "logs.json", "run.eval.txt",
        "run.results.jsonl", "run.results.parquet",
    ]  # fmt: skip
    for name in names:
        (tmp_path / name).write_text("{}")

    listed = {Path(info.name).name for info in list_eval_logs(str(tmp_path))}
    assert {name for name in names if is_log_name(name)} == listed
    assert "metadata.json" not in listed and "run.eval" in listed
