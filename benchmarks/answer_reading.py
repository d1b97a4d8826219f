"""Reading hostile answers of up to 1 MB: time and memory against length.

Each family is read at each size; linear work shows as the time growing as the
length does. CPU time best of `--repeat`; the memory peak on a run of its own.

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


def point(text: str, repeat: int) -> dict[str, Any]:
    """CPU time best of `repeat`, then the memory peak on a run of its own."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        read_once(text)
        best = min(best, time.process_time() - start)
    tracemalloc.start()
    try:
        outcome = read_once(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return {
        "characters": len(text),
        "seconds": best,
        "peak_multiple": peak / len(text),
        "outcome": outcome,
    }


def measure(name: str, sizes: Sequence[int], repeat: int) -> dict[str, Any]:
    points = [point(FAMILIES[name](size), repeat) for size in sizes]
    last, quarter = points[-1], points[-3] if len(points) >= 3 else points[0]
    return {
        "family": name,
        "points": points,
        "growth": last["seconds"] / max(quarter["seconds"], 1e-6),
        "length_growth": last["characters"] / quarter["characters"],
        "max_peak_multiple": max(point["peak_multiple"] for point in points),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        type=lambda text: [int(size) for size in text.split(",")],
        default=[125_000, 250_000, 500_000, 1_000_000],
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--families", type=lambda text: text.split(","))
    parser.add_argument("--json", type=Path, metavar="OUT")
    args = parser.parse_args(argv)
    if max(args.sizes) > MAX_ANSWER_CHARACTERS:
        raise SystemExit(
            f"sizes over {MAX_ANSWER_CHARACTERS:,} characters are refused unread"
        )
    rows = [
        measure(name, args.sizes, args.repeat) for name in args.families or FAMILIES
    ]
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
    print(f"{'family':<32} {'characters':>10} {'seconds':>8} {'growth':>14} peak  read")
    for row in rows:
        last = row["points"][-1]
        growth = f"{row['growth']:.1f} for {row['length_growth']:.0f}x"
        print(
            f"{row['family']:<32} {last['characters']:>10,} {last['seconds']:>8.3f} "
            f"{growth:>14} {row['max_peak_multiple']:>4.1f}  {last['outcome']}"
        )
    print(
        f"Slowest at the longest: {report['slowest_seconds']:.2f} s; largest "
        f"growth {report['max_growth']:.1f} (linear: the length's growth); "
        f"largest peak {report['max_peak_multiple']:.1f} times the text.\n"
        f"Reproduce: {report['command']}"
    )
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
