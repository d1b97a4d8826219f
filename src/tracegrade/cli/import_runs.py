"""`tracegrade import`: other tools' files as records, every command one shape:
its inputs, the importer's records, and the shared options, output and notes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any, TypeVar

import click

from ._failures import CommandStopped
from ._paths import check_output_format

_INPUT = click.Path(exists=True, dir_okay=False, readable=True, path_type=str)

Command = TypeVar("Command", bound=Callable[..., Any])
Records = Iterable[dict[str, Any]]


def _output_options(command: Command) -> Command:
    """`--labels`, `--output`, `--output-format` and `--force`, for every importer."""
    for option in reversed(
        [
            click.option(
                "--labels",
                type=_INPUT,
                help='Staff labels, JSON Lines {"id": ID, "correct": true|false}.',
            ),
            click.option(
                "-o",
                "--output",
                "--out",
                "output",
                type=click.Path(dir_okay=False, path_type=str),
                help="Write the records to this file instead of stdout.",
            ),
            click.option(
                "--force",
                is_flag=True,
                help="Replace an existing --output file (never an input).",
            ),
            click.option(
                "--output-format",
                type=click.Choice(["jsonl", "parquet"]),
                default="jsonl",
                show_default=True,
                help="jsonl, or parquet: the records as the columns "
                "tracegrade.score_table reads (needs --output and pyarrow).",
            ),
        ]
    ):
        command = option(command)
    return command


class _InputUnreadable(Exception):
    """An input's own `OSError`, told apart from a failed write of the output."""

    def __init__(self, error: OSError) -> None:
        self.error = error
        super().__init__(str(error))


def _read(build: Callable[[], Records]) -> Iterator[dict[str, Any]]:
    try:
        yield from build()
    except OSError as error:
        raise _InputUnreadable(error) from None


def _run_import(
    inputs: list[str | None],
    build: Callable[[], Records],
    noun: str,
    notes: Callable[[int], list[str]],
    *,
    labels: str | None,
    output: str | None,
    output_format: str,
    force: bool,
) -> None:
    """Write the records `build` gives whole or not at all (they may be refused
    part way), then the notes; errors as one line and an exit code."""
    from ..importers.common import ImportRefused, needs_label, plural
    from ..outputs import check_output, check_standard_streams

    named_inputs = [path for path in [*inputs, labels] if path is not None]
    check_standard_streams(named_inputs)
    check_output_format(
        output,
        output_format,
        path_option="--output",
        format_option="--output-format",
        holding="records",
        stdout_default=True,
    )
    if output is not None:
        check_output(output, inputs=named_inputs, option="--output", force=force)
    counts = [0, 0]  # records, and those that need a label

    def counted() -> Iterator[dict[str, Any]]:
        for record in _read(build):
            counts[0] += 1
            counts[1] += needs_label(record)
            yield record

    try:
        _write(counted(), output, output_format, force)
    except ImportRefused as error:
        raise CommandStopped(f"Error: {error.message}", error.exit_code) from None
    except _InputUnreadable as error:
        raise CommandStopped(f"Error: {error.error}", 2) from None

    # Said once the records are out: a write that fails says only that.
    count, unlabelled = counts
    for note in notes(count):
        click.echo(f"note: {note}", err=True)
    if unlabelled:
        why = f"no label in {labels}" if labels else "no label (no --labels given)"
        click.echo(
            f"note: {unlabelled} of {count} {plural(noun)} have required "
            f"documents and {why}; they score answer-label until labelled",
            err=True,
        )
    if output is not None:
        click.echo(f"{count} records written to {output}", err=True)


def _write(
    records: Records, output: str | None, output_format: str, force: bool
) -> None:
    """JSON Lines to --output atomically, or to stdout through an unnamed
    spool (stdout stays empty if a record is refused); or a Parquet table."""
    from ..outputs import AtomicFile

    if output_format == "parquet":
        assert output is not None
        _write_parquet(list(records), output, replace=force)
    elif output is not None:
        AtomicFile.write_through(
            output, lambda handle: _write_lines(records, handle), replace=force
        )
    else:
        _spool_to_stdout(records)


def _write_lines(records: Records, handle: IO[str]) -> None:
    from ..importers.common import record_line

    for record in records:
        handle.write(record_line(record))


def _spool_to_stdout(records: Records) -> None:
    import tempfile

    from ..importers.common import NoTemporarySpace

    with tempfile.TemporaryFile("w+", encoding="utf-8", newline="\n") as spool:
        try:
            _write_lines(records, spool)
            spool.flush()
        except OSError as error:
            raise NoTemporarySpace(error, "records") from None
        spool.seek(0)
        while chunk := spool.read(1 << 16):
            click.echo(chunk, nl=False)


def _write_parquet(
    records: list[dict[str, Any]], output: str, *, replace: bool
) -> None:
    """The records as `tracegrade.table.record_schema` columns, whole or not at all."""
    import pyarrow.parquet as pq

    from ..outputs import AtomicFile
    from ..table import ScoreTableError, records_table

    try:
        table = records_table(records, "stage_diagnosis")
    except ScoreTableError as error:
        raise click.ClickException(str(error)) from None
    AtomicFile.write_through(
        output,
        lambda handle: pq.write_table(table, handle),
        binary=True,
        replace=replace,
    )


@click.group("import")
def import_group() -> None:
    """Other tools' files as records for check, score and inspect eval.

    One fixture-format record per query of TREC files (trec), per sample of
    a Ragas dataset (ragas), per trace of OpenInference spans (openinference).
    """


@import_group.command("trec")
@click.option("--qrels", required=True, type=_INPUT, help="TREC qrels file.")
@click.option("--run", "run_file", required=True, type=_INPUT, help="TREC run file.")
@click.option(
    "-k",
    "--k",
    "k",
    required=True,
    type=click.IntRange(min=1),
    metavar="K",
    help="Context: each query's top K documents of the run.",
)
@click.option(
    "--min-rel",
    type=int,
    default=1,
    show_default=True,
    metavar="N",
    help="Required: documents judged N or higher (trec_eval -l N).",
)
@click.option(
    "-c",
    "--complete",
    is_flag=True,
    help=(
        "A query judged in the qrels but absent from the run retrieved "
        "nothing: import it with an empty context, a retrieval failure "
        "(trec_eval -c). Off by default, when such a query is refused: a "
        "query missing from a run is more often a run cut short, or made "
        "for other queries, than a retriever that found nothing."
    ),
)
@_output_options
def trec(
    qrels: str, run_file: str, k: int, min_rel: int, complete: bool, **output: Any
) -> None:
    """One stage-diagnosis record per query of TREC qrels and a run.

    \b
      tracegrade import trec --qrels QRELS --run RUN --k 10 > runs.jsonl
      inspect eval tracegrade/stage_diagnosis -T dataset=runs.jsonl

    Queries in qrels order, as trec_eval counts them: required, the
    documents judged N or higher (--min-rel, inclusive as trec_eval -l);
    context, the run's top K by score, ties broken by document id
    descending (the rank column is ignored); steps, the whole ranking;
    correct, from --labels only, else absent (it scores answer-label).

    A field Python's int(), float() or str.split() would read otherwise
    than trec_eval (1_0, +1, inf, a Unicode space ...), a query in one file
    only (see -c), a malformed line or a document listed twice is refused,
    naming the file, line and field, and nothing is written. A .gz file is
    read through gzip. docs/import-trec.md gives the details.

    \b
    Exit codes: 0 success, 1 the files are malformed or disagree,
    2 usage error, or a file that cannot be read or written.
    """
    from ..importers.common import named
    from ..importers.trec import import_trec

    not_run: list[str] = []

    def build() -> Records:
        imported = import_trec(
            qrels,
            run_file,
            k=k,
            min_rel=min_rel,
            labels_path=output["labels"],
            complete=complete,
        )
        not_run.extend(imported.not_run)
        return imported.records

    def notes(count: int) -> list[str]:
        if not not_run:
            return []
        return [
            f"{len(not_run)} of {count} queries judged in {qrels} are not "
            f"in {run_file}; imported with an empty context (-c): {named(not_run)}"
        ]

    _run_import([qrels, run_file], build, "query", notes, **output)


@import_group.command("ragas")
@click.argument("dataset", type=_INPUT)
@click.option(
    "--format",
    "file_format",
    type=click.Choice(["jsonl", "csv"]),
    help="How DATASET is written; by default CSV for a .csv name, else JSONL.",
)
@_output_options
def ragas(dataset: str, file_format: Any, **output: Any) -> None:
    """One stage-diagnosis record per sample of a Ragas evaluation dataset.

    \b
      tracegrade import ragas dataset.jsonl --labels labels.jsonl > runs.jsonl
      inspect eval tracegrade/stage_diagnosis -T dataset=runs.jsonl

    DATASET is JSON Lines or CSV as EvaluationDataset.to_jsonl and to_csv
    write it. Samples in order, id their index from "0": required,
    reference_context_ids; context, retrieved_context_ids (an integer ID as
    its text, as IDBasedContextRecall compares str(id)); correct, from
    --labels only, else absent (it scores answer-label); question, answer
    and reference, from user_input, response and reference.

    A row that cannot be read, a sample without either ID list, an ID that
    is neither text nor an integer, a multi-turn sample or an empty file
    is refused, naming the file, line and field, and nothing is written.
    docs/import-ragas.md gives the details.

    \b
    Exit codes: 0 success, 1 the dataset or labels are malformed,
    2 usage error, or a file that cannot be read or written.
    """
    from ..importers.ragas import stream_ragas

    def build() -> Records:
        return stream_ragas(
            dataset, labels_path=output["labels"], file_format=file_format
        )

    _run_import([dataset], build, "sample", lambda count: [], **output)


@import_group.command("openinference")
@click.argument("spans", type=_INPUT)
@click.option(
    "--gold",
    required=True,
    type=_INPUT,
    help='What each trace needed: JSON Lines {"key": K, "required": [...]}.',
)
@click.option(
    "--key",
    required=True,
    metavar="ATTRIBUTE",
    help="The span attribute whose value is the gold key, and the record's "
    "id: a question id the harness sets, such as session.id.",
)
@click.option(
    "--id",
    "sample_id",
    metavar="ATTRIBUTE",
    help="The span attribute whose value is the record's id, instead of --key's.",
)
@click.option(
    "--context",
    "context_rule",
    type=click.Choice(["model-input", "last-step"]),
    default="model-input",
    show_default=True,
    help="model-input: the documents a model's input shows (a trace that "
    "shows none: its last retrieval step's output); last-step: that output "
    "for every trace.",
)
@click.option(
    "--id-in-metadata",
    metavar="KEY",
    help="A document without document.id has the id its document.metadata "
    "holds as KEY (LangChain's instrumentor records no document.id).",
)
@click.option(
    "--allow-unmatched",
    is_flag=True,
    help="Write a trace that matches no gold line without required (it "
    "scores unresolved) instead of refusing the import.",
)
@_output_options
def openinference(
    spans: str,
    gold: str,
    key: str,
    sample_id: str | None,
    context_rule: str,
    allow_unmatched: bool,
    id_in_metadata: str | None,
    **output: Any,
) -> None:
    """One stage-diagnosis record per trace of OpenInference spans.

    \b
      tracegrade import openinference spans.jsonl --gold gold.jsonl \\
          --key session.id > runs.jsonl
      inspect eval tracegrade/stage_diagnosis -T dataset=runs.jsonl

    SPANS is OTLP JSON, one ExportTraceServiceRequest a line. Traces in
    order: id, the trace's --key (or --id) value; context, the documents a
    model received, by id or content (with none shown, the last retrieval
    step's output); steps, its RETRIEVER and RERANKER spans; required and
    correct, from the gold line whose key equals the trace's; correct may
    come from --labels instead, never both; answer, the last model's
    output; question, the user's text.

    A trace matching no gold line is refused (exit 2), unless
    --allow-unmatched; what else is refused or noted is in
    docs/import-openinference.md. Nothing is written unless every file is
    read and checked.

    \b
    Exit codes: 0 success, 1 the files are malformed or disagree,
    2 usage error, a trace matching no gold line, or a file that cannot
    be read or written.
    """
    from ..importers.openinference import (
        ImportRules,
        OpenInferenceNotes,
        stream_openinference,
    )

    said = OpenInferenceNotes()
    rules = ImportRules(key, sample_id, context_rule, allow_unmatched, id_in_metadata)

    def build() -> Records:
        return stream_openinference(
            spans, gold, rules=rules, labels_path=output["labels"], notes=said
        )

    def notes(count: int) -> list[str]:
        return said.lines(count, key, gold)

    _run_import([spans, gold], build, "trace", notes, **output)
