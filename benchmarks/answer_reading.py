"""Reading hostile answers of up to 1 MB: time and memory against length.

Each family of answer text (docs/answer-formats.md's readings pushed to
their worst: unclosed brackets, a million list items, ten thousand
different arrays, prose of colons and periods ...) is read at four
lengths, each twice the last, up to the 1,000,000 characters an answer may
have. Linear work shows as a doubling of the time with each doubling of
the text; the report gives, for each family, the time at the longest, the
growth from a quarter of that length (4 for linear time), and the peak
memory as a multiple of the text's size. CPU time of this process, best of
`--repeat`, so other load on the machine counts for less; the memory peak
is traced on a run of its own (`tracemalloc`).

    python benchmarks/answer_reading.py [--sizes 125000,250000,500000,1000000]
        [--repeat 3] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tracegrade.scorers.answer_parsing import (  # noqa: E402
    MAX_ANSWER_CHARACTERS,
    UnreadableAnswer,
    read_answer_ids,
)


def _repeat_to(unit: str, size: int, head: str = "", tail: str = "") -> str:
    count = max(1, (size - len(head) - len(tail)) // len(unit))
    return head + unit * count + tail


def _distinct_arrays(size: int) -> str:
    arrays: list[str] = []
    length = 0
    while length < size - 12:
        arrays.append(f'["a{len(arrays)}"] ')
        length += len(arrays[-1])
    return "".join(arrays)


FAMILIES: dict[str, Callable[[int], str]] = {
    # Issue 27's quadratic cases.
    "digits then a word": lambda n: _repeat_to("1", n, tail=" x"),
    "a Python list of spaces": lambda n: _repeat_to(" ", n, "['a'", "x]"),
    "distinct JSON arrays": lambda n: _distinct_arrays(n),
    "ones, a trailing comma": lambda n: _repeat_to("1,", n, "[", "]"),
    # Brackets.
    "unclosed brackets": lambda n: _repeat_to("[", n),
    "nested brackets": lambda n: "[" * (n // 2) + "]" * (n // 2),
    "the same JSON array": lambda n: _repeat_to('["a"] ', n),
    "one JSON array of IDs": lambda n: _repeat_to('"ID-1", ', n, "[", '"ID-2"]'),
    "one Python list of IDs": lambda n: _repeat_to("'ID-1', ", n, "[", "]"),
    # Bare lists and prose.
    "bulleted lines": lambda n: _repeat_to("- ID-1\n", n),
    "plain lines": lambda n: _repeat_to("ID-1\n", n),
    "a comma list": lambda n: _repeat_to("ID-1, ", n, tail="ID-2"),
    "lists between prose": lambda n: _repeat_to("a1\nb2\nsome prose\n", n),
    "colons": lambda n: _repeat_to(": ", n),
    "sentences": lambda n: _repeat_to(". ", n),
    "ANSWER lines": lambda n: _repeat_to("ANSWER: a1\n", n),
    # Issue 39's quadratic cases.
    "sentences of a comma list": lambda n: _repeat_to("A-1, B-2. ", n),
    "a long first line then a list": lambda n: _repeat_to(
        "C-3\nA-1\n\n", n, "x" * (n * 2 // 5) + "\n"
    ),
    "ANSWER markers on one line": lambda n: _repeat_to("answer:", n, "x"),
}


def read_once(text: str) -> str:
    """What the reading gave: a reading's name, or the refusal."""
    try:
        return read_answer_ids(text).read_as
    except UnreadableAnswer as refused:
        return f"unreadable: {str(refused)[:60]}"


def seconds(text: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        read_once(text)
        best = min(best, time.process_time() - start)
    return best


def peak_bytes(text: str) -> int:
    tracemalloc.start()
    try:
        read_once(text)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def measure(name: str, sizes: Sequence[int], repeat: int) -> dict[str, Any]:
    points: list[dict[str, Any]] = []
    for size in sizes:
        text = FAMILIES[name](size)
        points.append(
            {
                "characters": len(text),
                "seconds": seconds(text, repeat),
                "peak_multiple": peak_bytes(text) / len(text),
                "outcome": read_once(text),
            }
        )
    last, quarter = points[-1], points[-3] if len(points) >= 3 else points[0]
    growth = last["seconds"] / max(quarter["seconds"], 1e-6)
    return {
        "family": name,
        "points": points,
        "growth": growth,
        "length_growth": last["characters"] / quarter["characters"],
        "max_peak_multiple": max(point["peak_multiple"] for point in points),
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        type=lambda text: [int(size) for size in text.split(",")],
        default=[125_000, 250_000, 500_000, 1_000_000],
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--families", type=lambda text: text.split(","))
    parser.add_argument("--json", type=Path, metavar="OUT")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if max(args.sizes) > MAX_ANSWER_CHARACTERS:
        raise SystemExit(
            f"sizes over {MAX_ANSWER_CHARACTERS:,} characters are refused unread"
        )
    families = args.families or list(FAMILIES)
    rows = [measure(name, args.sizes, args.repeat) for name in families]
    sizes = ",".join(str(size) for size in args.sizes)
    report = {
        "command": (
            f"python benchmarks/answer_reading.py --sizes={sizes} "
            f"--repeat={args.repeat}"
        ),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "rows": rows,
        "slowest_seconds": max(row["points"][-1]["seconds"] for row in rows),
        "max_growth": max(row["growth"] for row in rows),
        "max_peak_multiple": max(row["max_peak_multiple"] for row in rows),
    }
    table = Table(title="Reading hostile answers: CPU time and memory against length")
    for column in ("family", "characters", "seconds", "growth", "peak x text", "read"):
        table.add_column(
            column, justify="left" if column in ("family", "read") else "right"
        )
    for row in rows:
        last = row["points"][-1]
        table.add_row(
            row["family"],
            f"{last['characters']:,}",
            f"{last['seconds']:.3f}",
            f"{row['growth']:.1f} for {row['length_growth']:.0f}x",
            f"{row['max_peak_multiple']:.1f}",
            last["outcome"],
        )
    console = Console(width=max(Console().width, 120))
    console.print(table)
    console.print(
        f"Slowest at the longest: {report['slowest_seconds']:.2f} s; largest "
        f"growth {report['max_growth']:.1f} (linear: the length's growth); "
        f"largest peak {report['max_peak_multiple']:.1f} times the text."
    )
    console.print(f"Reproduce: {report['command']}", soft_wrap=True)
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
