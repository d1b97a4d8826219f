"""`tracegrade import`: other tools' files as tracegrade's JSON Lines records.

The logic is in `tracegrade.trec`; this only reads options, writes the
records, and turns its errors into one line and an exit code.
"""

from __future__ import annotations

import click

from ._failures import CommandStopped

_INPUT = click.Path(exists=True, dir_okay=False, readable=True, path_type=str)


@click.group("import")
def import_group() -> None:
    """Other tools' files as records for check, score and inspect eval.

    The JSON Lines written are fixture-format records that `tracegrade
    check`, `tracegrade score` and `inspect eval tracegrade/stage_diagnosis
    -T dataset=` read as they are.
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
    "--labels",
    type=_INPUT,
    help='Staff labels, JSON Lines {"id": QUERY, "correct": true|false}.',
)
@click.option(
    "-o",
    "--output",
    "--out",
    "output",
    type=click.Path(dir_okay=False, path_type=str),
    help="Write the records to this file instead of stdout.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Replace an existing --output file (never an input).",
)
def trec(
    qrels: str,
    run_file: str,
    k: int,
    min_rel: int,
    labels: str | None,
    output: str | None,
    force: bool,
) -> None:
    """One stage-diagnosis record per query of TREC qrels and a run.

    \b
      tracegrade import trec --qrels QRELS --run RUN --k 10 > runs.jsonl
      inspect eval tracegrade/stage_diagnosis -T dataset=runs.jsonl

    Each line is {"id": QUERY, "input": {"required": [...], "context":
    [...], "correct": ...}}, queries in the order the qrels first name them.
    As trec_eval and ir-measures count them:

    \b
    - required: the query's documents judged N or higher (--min-rel,
      default 1), in qrels order. "Relevant" is inclusive, as trec_eval's
      -l ("minimum relevance judgement value needed for a document to be
      called relevant") and ir-measures' rel= ("minimum relevance score
      to be considered relevant (inclusive)"). A query with none has
      required [] and scores unresolved.
    - context: the run's top K for the query, by score highest first,
      ties broken by document id descending (byte order), as trec_eval
      sorts; the rank column is ignored, as trec_eval ignores it.
    - correct: the query's label from --labels (the `tracegrade labels`
      format; "epoch" is refused), else absent, which scores
      answer-label. Labels are never guessed.

    Refused, with file, line and field, and nothing written: a query in
    one file and not the other (the first 10 of each file named, all
    counted), a line of the wrong shape or not UTF-8, a relevance that is
    not an integer, a score that is not a number (NaN included), a
    document judged or ranked twice for a query, an empty file, a label
    naming no query. A .gz file is read through gzip.

    The files are read with ir-measures' readers, the `trec` extra:
    pip install 'tracegrade[trec]'.

    Records are written only once both files are read and checked; --output
    appears complete or not at all, never replaces an input, and replaces
    an existing file only with --force.

    \b
    Exit codes: 0 success, 1 the files are malformed or disagree,
    2 usage error, ir-measures not installed, or a file that cannot be
    read or written.
    """
    from ..outputs import AtomicFile, check_output, check_standard_streams
    from ..trec import IrMeasuresMissing, TrecError, import_trec, records_text

    inputs = [qrels, run_file, *([labels] if labels is not None else [])]
    check_standard_streams(inputs)
    if output is not None:
        check_output(output, inputs=inputs, option="--output", force=force)
    try:
        records = import_trec(qrels, run_file, k=k, min_rel=min_rel, labels_path=labels)
    except IrMeasuresMissing as error:
        raise CommandStopped(f"Error: {error.message}", 2) from None
    except TrecError as error:
        raise click.ClickException(error.message) from None

    unlabelled = sum(
        1
        for record in records
        if record["input"]["required"] and "correct" not in record["input"]
    )
    if unlabelled:
        why = f"no label in {labels}" if labels else "no label (no --labels given)"
        click.echo(
            f"note: {unlabelled} of {len(records)} queries have relevant "
            f"documents and {why}; they score answer-label until labelled",
            err=True,
        )

    text = records_text(records)
    if output is None:
        click.echo(text, nl=False)
        return
    AtomicFile.write_text(output, text, replace=force)
    click.echo(f"{len(records)} records written to {output}", err=True)
