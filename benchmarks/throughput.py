"""Throughput of the Python core against the original JavaScript `evaluate`.

    python benchmarks/throughput.py [--seed N] [--small-records N]
        [--large-records N] [--large-ids N] [--batch-ids N] [--warmup W]
        [--repeat K] [--json OUT]

Both sides evaluate the same records, parsed from the same JSON texts, under
the same policy: each batch of records is parsed afresh just before its clock
starts and only the `evaluate` calls are timed; `--warmup` untimed passes,
then `--repeat` timed ones, best pass reported. Node and Python passes
alternate, so a busy machine slows both alike. Node runs the original script
unmodified through `parity/load-original.mjs`. The two sides' outputs are
compared as canonical JSON text, record by record, before any number is
shown: a speed ratio between different answers would mean nothing.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from tracegrade.core import canonical_json, diagnose_stage, grade_extraction

ROOT = Path(__file__).resolve().parent.parent
NODE_SCRIPT = ROOT / "benchmarks" / "node_throughput.mjs"

Record = dict[str, Any]
Evaluate = Callable[[Any], Any]

EVALUATORS: dict[str, Evaluate] = {
    "stage_diagnosis": diagnose_stage,
    "ordered_extraction": grade_extraction,
}

# Minimum Python/Node throughput ratio per size class, from the issue. The
# "large-context" class has no target: it is shown so the large-record figure
# is not read as "50x whatever the size", because with few required IDs the
# original's `includes` loop is linear, not quadratic.
TARGETS: dict[str, float | None] = {
    "small": 1 / 3,
    "large": 50.0,
    "large-context": None,
}

SMALL_MAX_IDS = 10


# --- Inputs -----------------------------------------------------------------

# ID shapes seen in retrieval logs, plus non-ASCII ones: the astral and the
# fullwidth (U+FF00 block) shapes sort differently by UTF-16 code unit than
# by code point, so `missing` lists exercise JavaScript's sort order.
_ID_SHAPES: tuple[Callable[[random.Random, int], str], ...] = (
    lambda rng, n: f"D{n}",
    lambda rng, n: f"doc-{n:05d}",
    lambda rng, n: f"PMID:{rng.randrange(10**7, 10**8)}",
    lambda rng, n: f"kb/returns-policy#chunk-{n}",
    lambda rng, n: f"arxiv:2403.{rng.randrange(10**4, 10**5)}v{rng.randint(1, 3)}",
    lambda rng, n: f"文書-{n}",
    lambda rng, n: f"Ärzteblatt-{n}",
    lambda rng, n: f"\U0001f4c4{n}",
    lambda rng, n: f"\uff44\uff4f\uff43-{n}",  # fullwidth "doc"
)


def unique_ids(rng: random.Random, count: int) -> list[str]:
    """`count` distinct IDs of mixed shapes, in no particular order."""
    ids: dict[str, None] = {}
    while len(ids) < count:
        shape = rng.choice(_ID_SHAPES)
        ids[shape(rng, rng.randrange(count * 10 + 100))] = None
    return list(ids)


def _shuffled(rng: random.Random, ids: Sequence[str]) -> list[str]:
    copy = list(ids)
    rng.shuffle(copy)
    return copy


def small_stage_record(rng: random.Random) -> Record:
    """One run: complete, gappy or empty context; labelled or not."""
    kind = rng.choices(
        ["complete", "gap", "empty-context", "no-required", "bad-label"],
        weights=[45, 35, 5, 5, 10],
    )[0]
    required = unique_ids(rng, 0 if kind == "no-required" else rng.randint(1, 6))
    context = list(required)
    if kind == "gap":
        for _ in range(rng.randint(1, len(required))):
            context.remove(rng.choice(context))
    elif kind == "empty-context":
        context = []
    # Distractors and repeated retrievals, within the small-record size.
    room = SMALL_MAX_IDS - len(context)
    context += unique_ids(rng, rng.randint(0, min(room, 3)))
    room = SMALL_MAX_IDS - len(context)
    if context and room:
        context += rng.choices(context, k=rng.randint(0, min(room, 2)))
    record: Record = {"required": required, "context": _shuffled(rng, context)}
    if kind == "bad-label":
        label = rng.choice([None, "yes", 1, "absent"])
        if label != "absent":
            record["correct"] = label
    else:
        record["correct"] = rng.random() < 0.6
    return record


def small_extraction_record(rng: random.Random) -> Record:
    """One extraction: exact, reordered, or wrong in one of the usual ways."""
    kind = rng.choices(
        [
            "exact",
            "permutation",
            "alphabetised",
            "one-missing",
            "one-extra",
            "one-substituted",
            "duplicate-answer",
            "duplicate-source",
            "empty",
        ],
        weights=[30, 15, 10, 10, 10, 10, 6, 4, 5],
    )[0]
    size = 0 if kind == "empty" else rng.randint(2, SMALL_MAX_IDS - 1)
    source = unique_ids(rng, size)
    answer = list(source)
    if kind == "permutation":
        answer = _shuffled(rng, source)
    elif kind == "alphabetised":
        answer = sorted(source)
    elif kind == "one-missing":
        answer.pop(rng.randrange(len(answer)))
    elif kind == "one-extra":
        answer.insert(rng.randrange(len(answer) + 1), f"doc-extra-{rng.random():.6f}")
    elif kind == "one-substituted":
        answer[rng.randrange(len(answer))] = f"doc-wrong-{rng.random():.6f}"
    elif kind == "duplicate-answer":
        answer.insert(rng.randrange(len(answer) + 1), rng.choice(source))
    elif kind == "duplicate-source":
        source.insert(rng.randrange(len(source) + 1), rng.choice(source))
    return {"source": source, "answer": answer}


def large_stage_record(rng: random.Random, size: int) -> Record:
    """`size` required IDs, a context holding all but a few, with repeats."""
    required = unique_ids(rng, size)
    context = _shuffled(rng, required)
    del context[: rng.randint(0, 5)]
    context += rng.choices(context, k=rng.randint(0, 20))
    context += unique_ids(rng, 5)
    return {
        "required": required,
        "context": _shuffled(rng, context),
        "correct": rng.random() < 0.5,
    }


def large_context_stage_record(rng: random.Random, size: int) -> Record:
    """A few required IDs against a `size`-ID context; sometimes one missing."""
    context = unique_ids(rng, size)
    required = rng.sample(context, rng.randint(1, SMALL_MAX_IDS))
    if rng.random() < 0.5:
        required[0] = f"doc-not-retrieved-{rng.random():.6f}"
    return {"required": required, "context": context, "correct": rng.random() < 0.5}


def large_extraction_record(rng: random.Random, size: int) -> Record:
    """`size` source IDs; the answer is exact or a permutation of them."""
    source = unique_ids(rng, size)
    answer = list(source) if rng.random() < 0.5 else _shuffled(rng, source)
    return {"source": source, "answer": answer}


def make_inputs(
    seed: int, small: int, large: int, large_ids: int
) -> dict[str, dict[str, list[Record]]]:
    """Records per evaluator and size class, the same for a given seed."""
    rng = random.Random(seed)
    return {
        "stage_diagnosis": {
            "small": [small_stage_record(rng) for _ in range(small)],
            "large": [large_stage_record(rng, large_ids) for _ in range(large)],
            "large-context": [
                large_context_stage_record(rng, large_ids) for _ in range(large)
            ],
        },
        "ordered_extraction": {
            "small": [small_extraction_record(rng) for _ in range(small)],
            "large": [large_extraction_record(rng, large_ids) for _ in range(large)],
        },
    }


# --- Timing -----------------------------------------------------------------


def batched(records: list[Record], batch_ids: int) -> list[list[Record]]:
    """Consecutive records holding about `batch_ids` IDs per batch, at least one.

    A scorer evaluates each record soon after it is read, while its strings
    are still in the CPU cache, so both sides time batches evaluated right
    after they are parsed rather than thousands of records parsed long before.
    """
    batches: list[list[Record]] = [[]]
    ids = 0
    for record in records:
        size = sum(len(v) for v in record.values() if isinstance(v, list))
        if batches[-1] and ids + size > batch_ids:
            batches.append([])
            ids = 0
        batches[-1].append(record)
        ids += size
    return batches


def time_pass(evaluate: Evaluate, batch_texts: list[str]) -> tuple[int, list[Any]]:
    """One pass, each batch freshly parsed; only the `evaluate` calls are timed.

    Fresh records mean no string arrives with its hash computed by an earlier
    pass, as in real use, where each record is read once. Freezing the heap
    keeps the parsed input out of any collection on the clock, as Node's
    `gc()` before its clock does; `gc.collect()` would do that too, but by
    walking the whole heap it would also evict the batch from the CPU cache.
    """
    elapsed = 0
    results: list[Any] = []
    for text in batch_texts:
        records = json.loads(text)
        gc.freeze()
        start = time.perf_counter_ns()
        batch_results = list(map(evaluate, records))
        elapsed += time.perf_counter_ns() - start
        gc.unfreeze()
        results += batch_results
    return elapsed, results


class NodeEvaluator:
    """The original `evaluate` in a long-lived `node`, timed one pass per call.

    Passes are requested one at a time so that Node and Python passes can
    alternate: on a shared machine, load then falls on both sides alike.
    """

    def __init__(self, evaluator: str, inputs_path: Path) -> None:
        self._process = subprocess.Popen(
            ["node", "--expose-gc", str(NODE_SCRIPT), evaluator, str(inputs_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        self.version: str = self._reply()["node"]

    def _reply(self) -> dict[str, Any]:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            code = self._process.wait()
            raise SystemExit(f"node_throughput.mjs exited with status {code}")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def time_pass(self, size_class: str, outputs: bool) -> tuple[int, list[str] | None]:
        assert self._process.stdin is not None
        request = {"size_class": size_class, "outputs": outputs}
        self._process.stdin.write(json.dumps(request) + "\n")
        self._process.stdin.flush()
        reply = self._reply()
        return reply["elapsed_ns"], reply["outputs"]

    def close(self) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()
        self._process.wait(timeout=60)


@dataclass
class Row:
    evaluator: str
    size_class: str
    records: int
    longest_list: int
    python_best_ns: int
    node_best_ns: int
    python_records_per_s: float
    node_records_per_s: float
    ratio: float
    target: float | None
    met: bool | None
    outputs_identical: bool


def longest_list(records: list[Record]) -> int:
    """The size class's measure: IDs in the longest list of any record."""
    return max(
        (len(v) for r in records for v in r.values() if isinstance(v, list)),
        default=0,
    )


def first_mismatch(python: list[str], node: list[str]) -> str | None:
    if len(python) != len(node):
        return f"{len(python)} Python outputs, {len(node)} Node outputs"
    for index, (ours, theirs) in enumerate(zip(python, node, strict=True)):
        if ours != theirs:
            return f"record {index}: Python {ours} != Node {theirs}"
    return None


@dataclass
class Timing:
    """Best pass of each side on one size class, and their first outputs."""

    python_best_ns: int
    node_best_ns: int
    python_outputs: list[str]
    node_outputs: list[str]


def time_class(
    evaluate: Evaluate,
    node: NodeEvaluator,
    size_class: str,
    batch_texts: list[str],
    warmup: int,
    repeat: int,
) -> Timing:
    """Alternate Node and Python passes: `warmup` untimed, then `repeat` timed."""
    _, node_outputs = node.time_pass(size_class, outputs=True)
    _, results = time_pass(evaluate, batch_texts)
    for _ in range(warmup - 1):
        node.time_pass(size_class, outputs=False)
        time_pass(evaluate, batch_texts)
    node_passes: list[int] = []
    python_passes: list[int] = []
    for _ in range(repeat):
        node_passes.append(node.time_pass(size_class, outputs=False)[0])
        python_passes.append(time_pass(evaluate, batch_texts)[0])
    assert node_outputs is not None
    return Timing(
        python_best_ns=min(python_passes),
        node_best_ns=min(node_passes),
        python_outputs=[canonical_json(result) for result in results],
        node_outputs=node_outputs,
    )


def benchmark(
    inputs: dict[str, dict[str, list[Record]]],
    batch_ids: int,
    warmup: int,
    repeat: int,
) -> tuple[list[Row], list[str], str]:
    """Time both sides on every class; returns rows, mismatches, node version."""
    rows: list[Row] = []
    mismatches: list[str] = []
    node_version = "?"
    with tempfile.TemporaryDirectory() as scratch:
        for evaluator, classes in inputs.items():
            batches = {
                size_class: [json.dumps(batch) for batch in batched(records, batch_ids)]
                for size_class, records in classes.items()
            }
            path = Path(scratch) / f"{evaluator}.json"
            # Both sides parse these very texts, batch by batch.
            path.write_text(json.dumps(batches), encoding="utf-8")
            node = NodeEvaluator(evaluator, path)
            try:
                node_version = node.version
                for size_class, records in classes.items():
                    timing = time_class(
                        EVALUATORS[evaluator],
                        node,
                        size_class,
                        batches[size_class],
                        warmup,
                        repeat,
                    )
                    mismatch = first_mismatch(
                        timing.python_outputs, timing.node_outputs
                    )
                    if mismatch:
                        mismatches.append(f"{evaluator}/{size_class} {mismatch}")
                    rows.append(
                        make_row(evaluator, size_class, records, timing, mismatch)
                    )
            finally:
                node.close()
    return rows, mismatches, node_version


def make_row(
    evaluator: str,
    size_class: str,
    records: list[Record],
    timing: Timing,
    mismatch: str | None,
) -> Row:
    count = len(records)
    python_rate = count / (timing.python_best_ns / 1e9)
    node_rate = count / (timing.node_best_ns / 1e9)
    ratio = python_rate / node_rate
    target = TARGETS[size_class]
    return Row(
        evaluator=evaluator,
        size_class=size_class,
        records=count,
        longest_list=longest_list(records),
        python_best_ns=timing.python_best_ns,
        node_best_ns=timing.node_best_ns,
        python_records_per_s=python_rate,
        node_records_per_s=node_rate,
        ratio=ratio,
        target=target,
        met=None if target is None else ratio >= target,
        outputs_identical=mismatch is None,
    )


# --- Report -----------------------------------------------------------------


def _target_text(target: float | None) -> str:
    if target is None:
        return "-"
    return f">= {target:.3g}x" if target >= 1 else f">= 1/{1 / target:.3g}"


def _result_text(row: Row) -> str:
    if not row.outputs_identical:
        return "[bold red]WRONG OUTPUT[/]"
    if row.met is None:
        return "info"
    return "[green]PASS[/]" if row.met else "[red]MISS[/]"


def render(rows: list[Row], machine: dict[str, Any], console: Console) -> None:
    table = Table(title="tracegrade core vs original evaluate (records/s)")
    for column in ("evaluator", "class", "records", "IDs per list"):
        table.add_column(column)
    for column in ("Python", "Node", "Python/Node", "target"):
        table.add_column(column, justify="right")
    table.add_column("result")
    for row in rows:
        table.add_row(
            row.evaluator,
            row.size_class,
            str(row.records),
            f"<= {row.longest_list}",
            f"{row.python_records_per_s:,.0f}",
            f"{row.node_records_per_s:,.0f}",
            f"{row.ratio:.3g}x",
            _target_text(row.target),
            _result_text(row),
        )
    console.print(table)
    console.print(
        "python {python} | node {node} | {cpus} CPUs | {cpu} | {system}\n"
        "seed {seed} | batches of <= {batch_ids} IDs | warm-up {warmup} passes, "
        "best of {repeat} | wall {wall_seconds:.1f} s".format(**machine),
        highlight=False,
    )


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--seed", type=int, default=20240611, help="inputs depend only on this")
    add("--small-records", type=positive, default=20_000, help="per evaluator")
    add("--large-records", type=positive, default=20, help="per large class")
    add("--large-ids", type=positive, default=10_000, help="IDs per large list")
    add(
        "--batch-ids",
        type=positive,
        default=10_000,
        help="IDs per batch parsed just before it is timed",
    )
    add("--warmup", type=positive, default=3, help="untimed passes per class")
    add("--repeat", type=positive, default=5, help="timed passes; best is kept")
    add("--json", type=Path, metavar="OUT", help="write the numbers here")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    inputs = make_inputs(
        args.seed, args.small_records, args.large_records, args.large_ids
    )
    rows, mismatches, node_version = benchmark(
        inputs, args.batch_ids, args.warmup, args.repeat
    )
    machine = {
        "python": platform.python_version(),
        "node": node_version,
        "cpus": os.cpu_count(),
        "cpu": cpu_model(),
        "system": f"{platform.system()} {platform.machine()}",
        "seed": args.seed,
        "batch_ids": args.batch_ids,
        "warmup": args.warmup,
        "repeat": args.repeat,
        "wall_seconds": time.perf_counter() - started,
    }
    console = Console(width=max(Console().width, 120))
    render(rows, machine, console)
    for mismatch in mismatches:
        console.print(f"[bold red]outputs differ[/] {mismatch}", highlight=False)
    if args.json:
        report = {
            "command": " ".join(["python", "benchmarks/throughput.py", *sys.argv[1:]]),
            "machine": machine,
            "small_records": args.small_records,
            "large_records": args.large_records,
            "large_ids": args.large_ids,
            "rows": [asdict(row) for row in rows],
        }
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
