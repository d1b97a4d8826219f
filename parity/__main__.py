"""`python -m parity`: diff the Python evaluators against the original Node ones.

Always runs the fixtures packaged with tracegrade; `--stage-diagnosis PATH`
and `--ordered-extraction PATH` (each repeatable) add files of your own, in
which `expected` and `reason` may be omitted.

Two Python sides are held to the same Node answers: the core called
directly, and the results logged by `inspect eval` of the packaged tasks on
the same files (`--core-only` skips the second, for a quick run).

Exit status: 0 no difference, 1 a difference or an expected mismatch,
2 the run could not be made (bad fixture line, no usable `node`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .compare import (
    CoreSource,
    FixtureError,
    FixtureFile,
    PythonSource,
    compare_files,
    fixture_files,
    load_fixture,
    packaged_fixtures,
    passed,
    render,
)
from .logs import EvalRunError, LogSource
from .node import HarnessError, NodeUnavailable


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m parity",
        description=(
            "Run the packaged fixtures, and any files given, through the Python "
            "core and the original Node evaluators, and diff the canonical JSON."
        ),
    )
    parser.add_argument(
        "--stage-diagnosis",
        action="append",
        default=[],
        metavar="PATH",
        help="an extra JSON Lines fixture file for stage diagnosis (repeatable)",
    )
    parser.add_argument(
        "--ordered-extraction",
        action="append",
        default=[],
        metavar="PATH",
        help="an extra JSON Lines fixture file for ordered extraction (repeatable)",
    )
    parser.add_argument(
        "--core-only",
        action="store_true",
        help="skip running the fixtures through `inspect eval` and its logs",
    )
    return parser


def main(
    argv: Sequence[str] | None = None,
    *,
    packaged: Sequence[FixtureFile] | None = None,
) -> int:
    """Run the parity check; `packaged` replaces the shipped fixtures in tests."""
    arguments = _parser().parse_args(argv)
    fixtures = [
        *(packaged_fixtures() if packaged is None else packaged),
        *fixture_files(
            {
                "stage_diagnosis": arguments.stage_diagnosis,
                "ordered_extraction": arguments.ordered_extraction,
            }
        ),
    ]
    all_passed = True
    try:
        for fixture in fixtures:
            load_fixture(fixture)  # a malformed line stops before anything runs
        sources: list[PythonSource] = [CoreSource()]
        if not arguments.core_only:
            sources.append(LogSource(fixtures))
        for number, source in enumerate(sources):
            reports = compare_files(fixtures, source)
            heading = f"== {source.label} against the original Node evaluators =="
            print(("\n" if number else "") + heading)
            print(render(reports, source.label))
            all_passed = all_passed and passed(reports)
    except (FixtureError, NodeUnavailable, HarnessError, EvalRunError) as error:
        print(f"parity: {error}", file=sys.stderr)
        return 2
    return 0 if all_passed else 1


if __name__ == "__main__":
    sys.exit(main())
