"""Parity through real eval logs: the whole Inspect path, not only the core.

Each fixture file is run by `inspect eval` as a user would run it (a
subprocess, the packaged task, `-T dataset=PATH`), and every sample's
`metadata["result"]` is read back from the written log. The answers are then
held to exactly the rules the core's answers are held to, against the same
Node results.

`inspect eval` exits 0 even when the eval fails, so the log's status is what
is checked.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from inspect_ai.log import EvalSample, list_eval_logs, read_eval_log

from tracegrade.core import canonical_json

from .compare import Case, FixtureFile, PythonOutcome
from .contract import EvaluatorName

TASKS: Final[dict[EvaluatorName, str]] = {
    "stage_diagnosis": "tracegrade/stage_diagnosis",
    "ordered_extraction": "tracegrade/ordered_extraction_recorded",
}
SCORERS: Final[dict[EvaluatorName, str]] = {
    "stage_diagnosis": "stage_diagnosis",
    "ordered_extraction": "ordered_extraction",
}


class EvalRunError(RuntimeError):
    """`inspect eval` did not leave one successful log behind."""


def _environment() -> dict[str, str]:
    # A caller's default model or log dir must not change what is run.
    return {k: v for k, v in os.environ.items() if not k.startswith("INSPECT_")}


def run_inspect(
    args: Sequence[str], env: Mapping[str, str]
) -> subprocess.CompletedProcess[str]:
    """`inspect ARGS` in an interpreter of its own, as a user runs it.

    Looked up at each call, so that the tests can run it in their own
    interpreter, which has imported Inspect already."""
    return subprocess.run(
        [sys.executable, "-m", "inspect_ai", *args],
        env=dict(env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )


def run_task(
    evaluator: EvaluatorName, dataset: Path, log_dir: Path
) -> list[EvalSample]:
    """Run the packaged task on `dataset` and return the logged samples."""
    args = [
        "eval",
        TASKS[evaluator],
        "-T",
        f"dataset={dataset}",
        "--log-dir",
        str(log_dir),
        "--log-format",
        "json",
        "--display",
        "none",
    ]
    finished = run_inspect(args, _environment())
    command = " ".join(["inspect", *args])
    logs = list_eval_logs(str(log_dir))
    if len(logs) != 1:
        raise EvalRunError(
            f"`{command}` left {len(logs)} logs, expected 1 "
            f"(exit {finished.returncode}): {finished.stderr.strip()[-2000:]}"
        )
    log = read_eval_log(logs[0])
    if log.status != "success" or log.samples is None:
        raise EvalRunError(f"`{command}` ended with status {log.status!r}: {log.error}")
    return log.samples


def _outcome(evaluator: EvaluatorName, sample: EvalSample) -> PythonOutcome:
    scores = sample.scores or {}
    score = scores.get(SCORERS[evaluator])
    if score is None or score.metadata is None:
        raise EvalRunError(f"sample {sample.id!r} has no {SCORERS[evaluator]} score")
    metadata: dict[str, Any] = score.metadata
    error = metadata.get("error")
    if (
        metadata.get("result") is None
        and error
        and error.get("kind") == "invalid-input"
    ):
        return PythonOutcome(None, error.get("field"), error.get("message"))
    return PythonOutcome(canonical_json(metadata["result"]))


class LogSource:
    """Answers read back from logs that `inspect eval` wrote for the fixtures."""

    label = "Inspect log"

    def __init__(self, fixtures: list[FixtureFile]) -> None:
        # Keyed by evaluator too: one file may be given for both evaluators,
        # and its samples then have two different outcomes.
        self._outcomes: dict[tuple[EvaluatorName, str, str], PythonOutcome] = {}
        with tempfile.TemporaryDirectory(prefix="tracegrade-parity-") as scratch:
            for number, fixture in enumerate(fixtures):
                log_dir = Path(scratch) / f"run-{number}"
                with fixture.path.open("rb") as source:
                    dataset = Path(scratch) / f"fixture-{number}.jsonl"
                    dataset.write_bytes(source.read())
                for sample in run_task(fixture.evaluator, dataset, log_dir):
                    key = (fixture.evaluator, fixture.label, str(sample.id))
                    self._outcomes[key] = _outcome(fixture.evaluator, sample)

    def outcome(self, case: Case) -> PythonOutcome:
        try:
            return self._outcomes[(case.evaluator, case.file, case.id)]
        except KeyError:
            raise EvalRunError(
                f"case {case.id!r} ({case.location}) is missing from the eval log"
            ) from None
