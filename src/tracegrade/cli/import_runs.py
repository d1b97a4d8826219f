"""`tracegrade import`: other tools' files as records, every command one shape."""

from __future__ import annotations

import functools
import json
import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

import click

from ._failures import CommandStopped
from ._stream import check_output_format

_INPUT = click.Path(exists=True, dir_okay=False, readable=True, path_type=str)
_SHARED_OPTIONS = [
    click.option(
        "--labels",
        type=_INPUT,
        help='Staff labels, JSON Lines {"id": ID, "correct": true|false}.',
    ),
    click.option(
        *("-o", "--output", "--out", "output"),
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


# Inputs, records (read once iterated), their noun, notes (complete after them).
Shape = tuple[list[str], Iterable[dict[str, Any]], str, list[str]]


def _importer(name: str, *options: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def decorate(shape: Callable[..., Shape]) -> Any:
        @functools.wraps(shape)
        def command(
            output: str | None, force: bool, output_format: str, **own: Any
        ) -> None:
            _write(shape(**own), own["labels"], output, force, output_format)

        for option in reversed([*options, *_SHARED_OPTIONS]):
            command = option(command)
        return import_group.command(name)(command)

    return decorate


def _write(
    shape: Shape, labels: str | None, output: str | None, force: bool, form: str
) -> None:
    """The records whole or not at all, then the notes; errors as one line.
    The records read nothing until iterated, after the output is checked."""
    from ..importers.common import ImportRefused, NoTemporarySpace
    from ..outputs import AtomicFile, check_output

    inputs, records, noun, notes = shape
    named = [*inputs, *([labels] if labels else [])]
    check_output_format(output, form, "--output", "--output-format", "records")
    check_output(output, inputs=named, option="--output", force=force)
    counts = [0, 0]  # records, and those with required documents and no label

    def counted() -> Iterator[dict[str, Any]]:
        try:
            for record in records:
                fields = record["input"]
                counts[0] += 1
                counts[1] += bool(fields.get("required")) and "correct" not in fields
                yield record
        except OSError as error:  # an input's, told apart from the output's
            raise CommandStopped(f"Error: {error}", 2) from None

    def write_lines(handle: IO[str]) -> None:
        compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
        handle.writelines(compact(record) + "\n" for record in counted())

    def write_parquet(handle: IO[bytes]) -> None:
        import pyarrow.parquet as pq

        from ..table import records_table  # importers write only its columns

        pq.write_table(records_table(list(counted()), "stage_diagnosis"), handle)

    try:
        if output is not None:
            parquet = form == "parquet"
            write = write_parquet if parquet else write_lines
            AtomicFile.write_through(output, write, binary=parquet, replace=force)
        else:  # through a spool: stdout stays empty if a record is refused
            with tempfile.TemporaryFile("w+", encoding="utf-8", newline="\n") as spool:
                try:
                    write_lines(spool)
                    spool.flush()
                except OSError as error:
                    raise NoTemporarySpace(error, "records") from None
                spool.seek(0)
                while chunk := spool.read(1 << 16):
                    click.echo(chunk, nl=False)
    except ImportRefused as error:
        raise CommandStopped(f"Error: {error}", error.exit_code) from None
    # Said once the records are out: a write that fails says only that.
    count, unlabelled = counts
    for note in notes:
        click.echo(f"note: {note}", err=True)
    if unlabelled:
        why = f"no label in {labels}" if labels else "no label (no --labels given)"
        note = f"{unlabelled} of {count} {noun} have required documents and {why}"
        click.echo(f"note: {note}; they score answer-label until labelled", err=True)
    if output is not None:
        click.echo(f"{count} records written to {output}", err=True)


@click.group("import")
def import_group() -> None:
    """Other tools' files as records for check, score and inspect eval.

    One fixture-format record per query of TREC files (trec), per sample of
    a Ragas dataset (ragas), per trace of OpenInference spans (openinference).
    """


@_importer(
    "trec",
    click.option("--qrels", required=True, type=_INPUT, help="TREC qrels file."),
    click.option("--run", required=True, type=_INPUT, help="TREC run file."),
    click.option(
        *("-k", "--k", "k"),
        required=True,
        type=click.IntRange(min=1),
        metavar="K",
        help="Context: each query's top K documents of the run.",
    ),
    click.option(
        "--min-rel",
        type=int,
        default=1,
        show_default=True,
        metavar="N",
        help="Required: documents judged N or higher (trec_eval -l N).",
    ),
    click.option(
        *("-c", "--complete"),
        is_flag=True,
        help="A query judged in the qrels but absent from the run retrieved "
        "nothing: import it with an empty context (trec_eval -c). Without it, "
        "such a query is refused: more often a run cut short than a retriever "
        "that found nothing.",
    ),
)
def trec(qrels: str, run: str, labels: str | None, **options: Any) -> Shape:
    """One stage-diagnosis record per query of TREC qrels and a run.

    \b
      tracegrade import trec --qrels QRELS --run RUN --k 10 > runs.jsonl
      inspect eval tracegrade/stage_diagnosis -T dataset=runs.jsonl

    Context: the run's top K as trec_eval ranks it; correct: from --labels
    only. docs/import-trec.md gives the rest.

    \b
    Exit codes: 0 success, 1 the files are malformed or disagree,
    2 usage error, or a file that cannot be read or written.
    """
    from ..importers.trec import stream_trec

    notes: list[str] = []
    records = stream_trec(qrels, run, labels_path=labels, notes=notes, **options)
    return [qrels, run], records, "queries", notes


@_importer(
    "ragas",
    click.argument("dataset", type=_INPUT),
    click.option(
        "--format",
        "file_format",
        type=click.Choice(["jsonl", "csv"]),
        help="How DATASET is written; by default CSV for a .csv name, else JSONL.",
    ),
)
def ragas(dataset: str, file_format: Any, labels: str | None) -> Shape:
    """One stage-diagnosis record per sample of a Ragas evaluation dataset.

    \b
      tracegrade import ragas dataset.jsonl --labels labels.jsonl > runs.jsonl
      inspect eval tracegrade/stage_diagnosis -T dataset=runs.jsonl

    DATASET is JSON Lines or CSV, as EvaluationDataset.to_jsonl and to_csv
    write it; correct: from --labels only. docs/import-ragas.md gives the rest.

    \b
    Exit codes: 0 success, 1 the dataset or labels are malformed,
    2 usage error, or a file that cannot be read or written.
    """
    from ..importers.ragas import stream_ragas

    records = stream_ragas(dataset, labels_path=labels, file_format=file_format)
    return [dataset], records, "samples", []


@_importer(
    "openinference",
    click.argument("spans", type=_INPUT),
    click.option(
        "--gold",
        required=True,
        type=_INPUT,
        help='What each trace needed: JSON Lines {"key": K, "required": [...]}.',
    ),
    click.option(
        "--key",
        required=True,
        metavar="ATTRIBUTE",
        help="The span attribute whose value is the gold key, and the record's "
        "id: a question id the harness sets, such as session.id.",
    ),
    click.option(
        "--id",
        "sample_id",
        metavar="ATTRIBUTE",
        help="The span attribute whose value is the record's id, instead of --key's.",
    ),
    click.option(
        "--context",
        type=click.Choice(["model-input", "last-step"]),
        default="model-input",
        show_default=True,
        help="model-input: the documents a model's input shows (a trace that "
        "shows none: its last retrieval step's output); last-step: that output "
        "for every trace.",
    ),
    click.option(
        "--id-in-metadata",
        metavar="KEY",
        help="A document without document.id has the id its document.metadata "
        "holds as KEY (LangChain's instrumentor records no document.id).",
    ),
    click.option(
        "--allow-unmatched",
        is_flag=True,
        help="Write a trace that matches no gold line without required (it "
        "scores unresolved) instead of refusing the import.",
    ),
)
def openinference(spans: str, gold: str, labels: str | None, **rules: Any) -> Shape:
    """One stage-diagnosis record per trace of OpenInference spans.

    \b
      tracegrade import openinference spans.jsonl --gold gold.jsonl \\
          --key session.id > runs.jsonl
      inspect eval tracegrade/stage_diagnosis -T dataset=runs.jsonl

    SPANS is OTLP JSON, one ExportTraceServiceRequest a line; context: the
    documents the model received. docs/import-openinference.md gives the rest.

    \b
    Exit codes: 0 success, 1 the files are malformed or disagree,
    2 usage error, a trace matching no gold line, or a file that cannot
    be read or written.
    """
    from ..importers.openinference import ImportRules, stream_openinference

    notes: list[str] = []
    records = stream_openinference(
        spans, gold, rules=ImportRules(**rules), labels_path=labels, notes=notes
    )
    return [spans, gold], records, "traces", notes
