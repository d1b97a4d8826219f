"""Write a synthetic `.eval` log of N stage samples with `EvalArchive`, timed.

The samples are shaped like those `tracegrade score` logs for
`stage_diagnosis`: one real sample of `inspect eval
tracegrade/stage_diagnosis` (run here, offline) is the template, its
transcript dropped as `tracegrade score` has none, and each copy gets its
own id, uuid, record (required and context IDs, label) and the very
`Score` tracegrade gives that record. The header is the template log's,
with the sample count and ids, and the stage metrics (shares, modes,
lucky answers, mean recall) worked out for the synthetic records.

Timed per sample, separately: making the sample (not the writer's cost),
serialising it as Inspect does (which `tracegrade score` already pays),
`sample_summary`, and `EvalArchive.add_sample` given the serialised
sample; `loop_us` is the whole loop's time per sample, timers included.
The process's resident memory is read before and after the samples, and
at its peak.

    python scripts/bulk_eval_log.py [--samples 100000] [--log-dir DIR]
        [--journal-every N] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from inspect_ai.log import EvalLog, EvalScore, read_eval_log, read_eval_log_sample
from pydantic_core import to_json, to_jsonable_python

from screenshot_report import run_offline_tasks
from tracegrade.bulk.evallog import (
    DEFAULT_JOURNAL_EVERY,
    EvalArchive,
    sample_summary,
)
from tracegrade.bulk.scoring import score_stage_input

TEMPLATE_TASK = "tracegrade/stage_diagnosis"
TEMPLATE_SAMPLE = "lucky-answer-gap"
CONTEXT_KEY = "RetrievalTrace:context"
STAGES = ("retrieval", "generation", "pass", "unresolved")
# Shapes the records cycle through, so every stage and explanation occurs.
RECORD_SHAPES = 6
# The stage counts also count each recall and precision, under "recall="
# (or "precision=") and its hex.
RECALL_KEY = "recall="
PRECISION_KEY = "precision="


@dataclass(frozen=True)
class Template:
    """A real stage sample, as JSON-safe data, and its log's header."""

    sample: dict[str, Any]
    header: EvalLog


def make_template(work_dir: Path) -> Template:
    """Run the offline stage task once and take one sample and the header."""
    (log_file,) = run_offline_tasks(work_dir / "template-logs", [TEMPLATE_TASK])
    header = read_eval_log(log_file, header_only=True)
    sample = read_eval_log_sample(log_file, id=TEMPLATE_SAMPLE, epoch=1)
    data: dict[str, Any] = to_jsonable_python(sample, exclude_none=True)
    # `tracegrade score` runs no solver, so its samples have no transcript.
    data["events"] = []
    data["attachments"] = {}
    data.pop("events_data", None)
    return Template(sample=data, header=header)


def sample_id(index: int) -> str:
    return f"stage-{index:07d}"


def stage_record(index: int) -> dict[str, Any]:
    """A stage run: complete or gappy context, either label, some repeats."""
    shape = index % RECORD_SHAPES
    required = [f"D{(index * 7 + step) % 9973}" for step in range(1 + index % 4)]
    context = list(required)
    if shape in (1, 4):
        context = context[1:]  # the first required document never arrived
    if shape == 5:
        context = [*context, *context[:1], f"X{index % 101}"]
    return {"required": required, "context": context, "correct": shape % 3 != 0}


def synthetic_sample(template: dict[str, Any], index: int) -> dict[str, Any]:
    """A copy of the template for record `index`, with its own score."""
    record = stage_record(index)
    text = json.dumps(record, separators=(",", ":"))
    message = {**template["messages"][0], "id": f"m{index:021d}", "content": text}
    now = "2026-01-01T00:00:00+00:00"
    return {
        **template,
        "id": sample_id(index),
        "input": text,
        "messages": [message],
        "scores": {"stage_diagnosis": score_stage_input(record)},
        "metadata": {**template["metadata"], **record},
        "store": {CONTEXT_KEY: record["context"]},
        "started_at": now,
        "completed_at": now,
        "uuid": f"u{index:021d}",
    }


def count_sample(stages: Counter[str], sample: dict[str, Any]) -> None:
    """Count a synthetic sample's stage, whether it is a lucky answer, and
    its recall and precision, for `stage_score`.

    A share is counted under its exact value (`float.hex`), so the counts
    stay integers that add up across parts, and the mean is exact.
    """
    score = sample["scores"]["stage_diagnosis"]
    stage = score.value
    stages[stage] += 1
    if stage == "retrieval" and sample["metadata"]["correct"] is True:
        stages["lucky"] += 1
    for prefix, name in ((RECALL_KEY, "recall"), (PRECISION_KEY, "precision")):
        share = score.metadata[name]
        if share is not None:
            stages[prefix + share.hex()] += 1


def mean_recall(stages: Counter[str], prefix: str = RECALL_KEY) -> float:
    """The `context_recall` of the counted samples, to the last bit (with
    `PRECISION_KEY`, their `context_precision`).

    The metric divides `math.fsum` of the shares, their exact sum rounded
    once, by their number; the exact sum of the counted values, rounded
    once by `float`, is that same double.
    """
    total = Fraction(0)
    counted = 0
    for key, count in stages.items():
        if key.startswith(prefix):
            total += Fraction(float.fromhex(key.removeprefix(prefix))) * count
            counted += count
    return float(total) / counted if counted else math.nan


def synthetic_header(
    template: Template, count: int, stages: Counter[str] | None = None
) -> EvalLog:
    """The template's header for `count` samples, with the stage metrics of
    the samples written when `stages` counts them (`count_sample`)."""
    header = template.header
    dataset = header.eval.dataset.model_copy(
        update={"samples": count, "sample_ids": [sample_id(i) for i in range(count)]}
    )
    results = header.results
    if results is not None:
        results = results.model_copy(
            update={"total_samples": count, "completed_samples": count}
        )
        if stages is not None:
            results.scores = [
                stage_score(score, stages, count) for score in results.scores
            ]
    return header.model_copy(
        update={
            "eval": header.eval.model_copy(update={"dataset": dataset}),
            "results": results,
        }
    )


def stage_score(score: EvalScore, stages: Counter[str], count: int) -> EvalScore:
    """The stage scorer's metrics over `count` scored samples: every
    synthetic record has required IDs and a label, so none is unscored,
    and with one epoch each stage's mode share is its share."""
    metrics = {}
    for key, metric in score.metrics.items():
        stage = key.removesuffix("_mode")
        if stage in STAGES:
            value = stages[stage] / count
        elif key == "lucky_answers":
            value = float(stages["lucky"])
        elif key == "context_recall":
            value = mean_recall(stages)
        elif key == "context_precision":
            value = mean_recall(stages, PRECISION_KEY)
        elif key == "scored_runs":
            value = float(count)
        else:
            raise ValueError(f"no synthetic value for metric {key!r}")
        metrics[key] = metric.model_copy(update={"value": value})
    return score.model_copy(
        update={"scored_samples": count, "unscored_samples": 0, "metrics": metrics}
    )


def resident_bytes() -> int:
    """This process's resident memory now (Linux)."""
    with open("/proc/self/statm", encoding="ascii") as statm:
        pages = int(statm.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


def peak_resident_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@dataclass
class WriteReport:
    samples: int
    log: str
    log_bytes: int
    seconds_total: float
    make_sample_us: float
    serialise_us: float
    summary_us: float
    add_sample_us: float
    writer_us: float
    loop_us: float
    finish_seconds: float
    rss_before_samples: int
    rss_after_samples: int
    peak_rss: int


def write_synthetic_log(
    log_dir: Path,
    count: int,
    template: Template,
    journal_every: int = DEFAULT_JOURNAL_EVERY,
) -> WriteReport:
    """Write `count` synthetic samples into one `.eval` log in `log_dir`."""
    log_dir.mkdir(parents=True, exist_ok=True)
    location = log_dir / f"stage-diagnosis-bulk-{count}.eval"
    header = synthetic_header(template, count)
    stages: Counter[str] = Counter()
    begun = time.perf_counter()
    making = serialising = summarising = adding = 0.0
    with EvalArchive(location, journal_every=journal_every) as archive:
        archive.start(header.eval, header.plan)
        rss_before = resident_bytes()
        looping = time.perf_counter()
        for index in range(count):
            started = time.perf_counter()
            sample = synthetic_sample(template.sample, index)
            made = time.perf_counter()
            count_sample(stages, sample)
            data = to_json(
                to_jsonable_python(sample, exclude_none=True), exclude_none=True
            )
            serialised = time.perf_counter()
            summary = sample_summary(sample)
            summarised = time.perf_counter()
            archive.add_sample(data, summary)
            added = time.perf_counter()
            making += made - started
            serialising += serialised - made
            summarising += summarised - serialised
            adding += added - summarised
        loop_seconds = time.perf_counter() - looping
        rss_after = resident_bytes()
        finishing = time.perf_counter()
        archive.finish(
            synthetic_header(template, count, stages), template.header.reductions
        )
        finish_seconds = time.perf_counter() - finishing
    per_sample = 1e6 / count
    return WriteReport(
        samples=count,
        log=str(location),
        log_bytes=location.stat().st_size,
        seconds_total=round(time.perf_counter() - begun, 3),
        make_sample_us=round(making * per_sample, 2),
        serialise_us=round(serialising * per_sample, 2),
        summary_us=round(summarising * per_sample, 2),
        add_sample_us=round(adding * per_sample, 2),
        writer_us=round((summarising + adding + finish_seconds) * per_sample, 2),
        loop_us=round(loop_seconds * per_sample, 2),
        finish_seconds=round(finish_seconds, 3),
        rss_before_samples=rss_before,
        rss_after_samples=rss_after,
        peak_rss=peak_resident_bytes(),
    )


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] if __doc__ else None
    )
    parser.add_argument("--samples", type=positive, default=100_000)
    parser.add_argument(
        "--log-dir",
        type=Path,
        help="where to leave the log (default: a temporary directory, removed)",
    )
    parser.add_argument("--journal-every", type=positive, default=DEFAULT_JOURNAL_EVERY)
    parser.add_argument("--json", type=Path, help="also write the report here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tracegrade-bulk-eval-") as temp:
        template = make_template(Path(temp))
        log_dir = args.log_dir or Path(temp) / "logs"
        report = write_synthetic_log(
            log_dir,
            args.samples,
            template,
            args.journal_every,
        )
    result = {
        "command": " ".join(["python", *sys.argv]),
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
        },
        **asdict(report),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
