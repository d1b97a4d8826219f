"""`tracegrade labels`: the staff-label round trip for stage diagnosis."""

from __future__ import annotations

import json

import click


@click.group("labels")
def labels() -> None:
    """Staff labels for stage diagnosis: export a run's answers to label.

    \b
    1. tracegrade labels export LOG > labels.jsonl
    2. staff set "correct" to true or false on every line
    3. inspect score LOG --scorer tracegrade/stage_diagnosis \\
           -S labels=labels.jsonl --action append --overwrite
    """


@labels.command("export")
@click.argument("log", type=click.Path(exists=True, dir_okay=False, path_type=str))
@click.option(
    "--out",
    type=click.Path(),
    help="Write the lines to this file instead of stdout.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Replace an existing --out file, such as labels already filled in.",
)
def export(log: str, out: str | None, force: bool) -> None:
    """Write one JSON line per run of LOG for staff to label.

    Each line holds the sample id, the question, the model's answer, the
    required and context document IDs, and "correct": null to fill in
    with true or false. A log run with several epochs gets one line per
    sample and epoch, with an "epoch" field: each answer is labelled on
    its own. The filled file is what `-S labels=` of the stage scorer
    reads; other fields in it are ignored.

    --out never replaces the log, and replaces an existing file (staff
    may have filled it in already) only with --force; the file appears
    complete or not at all.

    Exit codes: 0 success, 1 the log cannot be read or holds no stage
    diagnosis scores, 2 usage error or a file that cannot be written.
    """
    # Imported here so that `tracegrade --help` does not load Inspect.
    from inspect_ai.log import read_eval_log

    from ..labels import LabelsError, label_requests, stage_score
    from ..outputs import AtomicFile, check_output

    if out is not None:
        check_output(out, inputs=[log], option="--out", force=force)

    try:
        eval_log = read_eval_log(log)
    except Exception as error:
        # Inspect raises whatever its readers raise (JSON, zip, pydantic,
        # OS errors); any of them means the same here: not a readable log.
        raise click.ClickException(
            f"cannot read {log!r} as an Inspect log ({error})"
        ) from error
    try:
        lines = label_requests(eval_log)
    except LabelsError as error:
        raise click.ClickException(str(error)) from error

    if eval_log.status != "success":
        click.echo(
            f"warning: {log} has status {eval_log.status!r}; "
            "only its logged samples are exported.",
            err=True,
        )
    unscored = [
        sample for sample in eval_log.samples or [] if stage_score(sample) is None
    ]
    if unscored:
        first = unscored[0]
        click.echo(
            f"warning: {len(unscored)} run(s) have no stage_diagnosis score "
            f"(first: sample {first.id!r} epoch {first.epoch}); their required "
            "and context are null.",
            err=True,
        )

    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    if out is None:
        click.echo(text, nl=False)
        return
    written = AtomicFile(out)
    try:
        written.handle.write(text)
        written.commit()
    except BaseException:
        written.discard()
        raise
    click.echo(f"{len(lines)} lines to label written to {out}", err=True)
