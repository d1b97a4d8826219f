"""The `tracegrade` command line: pre-flight checks, bulk scoring, reports."""

from __future__ import annotations

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tracegrade")
def main() -> None:
    """Deterministic RAG stage diagnosis and ordered-extraction grading.

    Exit codes: 0 success, 1 the data has errors (check) or the run failed,
    2 usage error.
    """


from .check import check  # noqa: E402
from .labels import labels  # noqa: E402
from .report import report  # noqa: E402
from .score import score  # noqa: E402

main.add_command(check)
main.add_command(labels)
main.add_command(report)
main.add_command(score)
