"""`tracegrade labels`: the staff-label round trip for stage diagnosis."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

from ._stream import InputPath

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog, EvalSample

    from ..label_logs import ApplyAction
    from ..outputs import AtomicFile


@click.group("labels")
def labels() -> None:
    """Staff labels for stage diagnosis: export a run's answers, apply labels.

    \b
    1. tracegrade labels export LOG > labels.jsonl
    2. staff set "correct" to true or false on every line
    3. tracegrade labels apply LOG labels.jsonl
    """


@labels.command("export")
@click.argument("log", type=InputPath(dir_okay=False, path_type=str))
@click.option(
    "--out", type=click.Path(), help="Write the lines to this file instead of stdout."
)
@click.option(
    "--force",
    is_flag=True,
    help="Replace an existing --out file, such as labels already filled in.",
)
def export(log: str, out: str | None, force: bool) -> None:
    """Write one JSON line per run of LOG for staff to label.

    "correct" is to be filled in with true or false (pre-filled with a
    grader's verdict where LOG has one); docs/labels.md has the fields.
    --out replaces an existing file only with --force.

    Exit codes: 0 success, 1 the log cannot be read or holds no stage
    diagnosis scores, 2 usage error or a file that cannot be written.
    """
    from ..label_logs import label_requests, stage_score
    from ..labels import LabelsError
    from ..outputs import AtomicFile, check_output

    check_output(out, inputs=[log], option="--out", force=force)
    eval_log = _read_log(log)
    try:
        lines = label_requests(eval_log)
    except LabelsError as error:
        raise click.ClickException(str(error)) from error
    _warn(log, eval_log, "exported")
    _warn_runs(
        [s for s in eval_log.samples or [] if stage_score(s) is None],
        "have no stage_diagnosis score",
        "their required and context are null",
    )
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    if out is None:
        click.echo(text, nl=False)
    else:
        AtomicFile.write_text(out, text, replace=force)
        click.echo(f"{len(lines)} lines to label written to {out}", err=True)


@labels.command("apply")
@click.argument("log", type=InputPath(dir_okay=False, path_type=str))
@click.argument(
    "labels_file", metavar="LABELS", type=InputPath(dir_okay=False, path_type=str)
)
@click.option(
    "--action",
    type=click.Choice(["append", "overwrite"]),
    default="append",
    show_default=True,
    help="append: add the labelled score beside the existing ones "
    "(stage_diagnosis1); overwrite: replace the log's scores with it.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    help="Write the labelled log to this file instead of rewriting LOG.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Replace an existing --out file; label a log whose eval has not "
    "finished (status started), which that eval may overwrite.",
)
def apply(
    log: str, labels_file: str, action: ApplyAction, out: str | None, force: bool
) -> None:
    """Join the staff labels in LABELS onto LOG's stage diagnosis.

    LABELS is the filled file of `tracegrade labels export`. LOG (or --out)
    is replaced whole, or not at all; docs/labels.md has the rules.

    Exit codes: 0 success, 1 a label names no run of LOG, LOG or LABELS
    cannot be read or used, or LOG's eval has not finished, 2 usage error,
    a file that cannot be written, or LOG changed while it was labelled.
    """
    from .. import outputs
    from ..outputs import OutputError, file_state
    from ._failures import exiting, handling, signals_held

    target = log if out is None else out
    outputs.check_output(out, inputs=[log, labels_file], option="--out", force=force)
    if outputs.is_stream(target):  # a FIFO as LOG would block its rewrite
        named = "LOG" if out is None else "--out"
        raise OutputError(f"{named} {target!r} is not a regular file; give a file")
    before = file_state(target) if os.path.exists(target) else None

    def stopped_by(name: str) -> str:
        now = file_state(target) if os.path.exists(target) else None
        left = "was not changed" if before is not None else "was not written"
        left = "was written" if now != before else left
        return f"tracegrade labels apply: stopped by {name}; {target} {left}"

    changed = OutputError(
        f"{log!r} changed while its labels were applied (an eval or another "
        "program wrote it); nothing was written: run the command again"
    )
    written = outputs.AtomicFile(target, binary=True, replace=force)
    # From the wait for the lock on, a signal ends the command at once.
    with handling(exiting(stopped_by, written.discard)):
        try:
            with _directory_locked(log):
                read = file_state(log)
                if target == log:  # replaced only if no other program rewrote it
                    written.unless_changed = read
                labelled, runs = _labelled(log, labels_file, action, force)
                named = target if target.endswith((".json", ".eval")) else log
                try:  # what cannot be written is named, as for any output
                    _write_log(written, labelled, as_json=named.endswith(".json"))
                    if file_state(log) != read:
                        raise changed
                    with signals_held():  # no name left half claimed
                        written.commit()
                except OSError as error:
                    raise outputs.not_written(target, error) from None
        except BaseException as error:
            written.discard()
            if isinstance(error, outputs.OutputChanged):
                raise OutputError(f"{changed} ({error})") from None
            _quiet_zip_finaliser()
            raise
    click.echo(f"{runs}; log written to {target}", err=True)


def _labelled(
    log: str, labels_file: str, action: ApplyAction, force: bool
) -> tuple[EvalLog, str]:
    from ..label_logs import apply_labels
    from ..labels import LabelsError

    eval_log = _read_log(log)
    if eval_log.status == "started" and not force:
        raise click.ClickException(
            f"{log!r} has status 'started': its eval has not finished, and "
            "would write over the labels when it does; wait until it ends, "
            "or pass --force"
        )
    try:
        labelled, ids, epochs = apply_labels(eval_log, labels_file, action=action)
    except LabelsError as error:
        raise click.ClickException(str(error)) from error
    _warn(log, labelled, "labelled")
    scores = labelled.results.scores if labelled.results else []
    name = [s.name for s in scores if s.name.startswith("stage_diagnosis")][-1]
    outcomes = _outcomes(labelled, labels_file)
    _warn_runs(
        outcomes.get("answer-label", []),
        f"of {log} have no label in {labels_file}",
        "they are answer-label",
    )
    runs = f" ({ids} samples, {epochs} epochs)" if epochs > 1 else ""
    said = [
        f"{len(outcomes.pop('diagnosed', []))} of {len(labelled.samples or [])} "
        f"runs{runs} labelled and diagnosed with the labels in {labels_file} as {name}"
    ]
    for kind in sorted(outcomes, key=[*_NOT_DIAGNOSED, *outcomes].index):
        count = len(outcomes[kind])
        has, needs = ("has", "needs") if count == 1 else ("have", "need")
        words = _NOT_DIAGNOSED.get(kind, kind).format(has=has, needs=needs)
        said.append(f"{count} {words}")
    return labelled, "; ".join(said)


def _write_log(written: AtomicFile, labelled: EvalLog, as_json: bool) -> None:
    """Made afresh by Inspect's writer, which copies a replaced file's
    permissions, which FAT refuses."""
    from inspect_ai.log import write_eval_log

    assert written.temporary is not None  # a stream was refused
    written.handle.close()
    os.unlink(written.temporary)
    write_eval_log(labelled, written.temporary, format="json" if as_json else "eval")
    written.handle = open(written.temporary, "ab")  # noqa: SIM115


def _quiet_zip_finaliser() -> None:
    """Inspect's `ZipLogFile.__del__` retries a failed write into a temporary
    file already removed: its traceback is noise."""
    shown = sys.unraisablehook

    def drop_zip_finaliser(unraisable: sys.UnraisableHookArgs) -> None:
        if "ZipLogFile.__del__" not in repr(unraisable.object):
            shown(unraisable)

    sys.unraisablehook = drop_zip_finaliser


def _warn(log: str, eval_log: EvalLog, done: str) -> None:
    if eval_log.status != "success":
        click.echo(
            f"warning: {log} has status {eval_log.status!r}; only its logged "
            f"samples are {done}.",
            err=True,
        )


def _warn_runs(runs: list[EvalSample], have: str, so: str) -> None:
    if runs:
        click.echo(
            f"warning: {len(runs)} run(s) {have} (first: sample {runs[0].id!r} "
            f"epoch {runs[0].epoch}); {so}.",
            err=True,
        )


# The summary's words for runs not diagnosed; any other kind is named as it is.
_NOT_DIAGNOSED = {
    "answer-label": "{has} no label (answer-label)",
    "unlabelled": "{has} no label and {needs} none (unresolved)",
    "sample-error": "errored before answering (sample-error)",
}


def _outcomes(log: EvalLog, labels_file: str) -> dict[str, list[EvalSample]]:
    """The runs by what the last score read from the labels file (its name can
    differ by run) made of them: diagnosed, unlabelled, or its error kind."""
    from ..scorers.outcome import error_kind

    source = f"labels file {labels_file}"
    outcomes: dict[str, list[EvalSample]] = {}
    for sample in log.samples or []:
        scores = [
            score
            for score in (sample.scores or {}).values()
            if ((score.metadata or {}).get("read_from") or {}).get("correct") == source
        ]
        if scores:
            record = (scores[-1].metadata or {}).get("record") or {}
            found = "diagnosed" if "correct" in record else "unlabelled"
            outcomes.setdefault(error_kind(scores[-1]) or found, []).append(sample)
    return outcomes


def lock_path(log: str) -> str:
    """The lock file of LOG's directory: in the temporary directory, so the
    log's directory gets no file."""
    import tempfile

    directory = os.stat(os.path.dirname(os.path.abspath(log)))
    name = f"tracegrade-labels-{directory.st_dev}-{directory.st_ino}.lock"
    return os.path.join(tempfile.gettempdir(), name)


@contextmanager
def _directory_locked(log: str) -> Iterator[None]:
    """SQLite's exclusive lock, so two applies in a directory take turns.
    Each wait is short: signals are handled between waits."""
    import sqlite3

    path, lock = lock_path(log), None
    waiting = f"waiting for another tracegrade labels apply in {log}'s directory"
    try:
        lock = sqlite3.connect(path, timeout=0.2, isolation_level=None)
        while True:
            try:
                lock.execute("PRAGMA journal_mode = OFF")  # no journal beside it
                lock.execute("BEGIN EXCLUSIVE")
                break
            except sqlite3.OperationalError as error:
                if "locked" not in str(error):
                    raise
            if waiting:
                click.echo(waiting, err=True)
                waiting = ""
    except sqlite3.Error as error:
        click.echo(
            f"warning: {path!r} cannot be a lock ({error}); going on "
            "without taking turns with other labels apply runs",
            err=True,
        )
    try:
        yield
    finally:
        if lock is not None:
            lock.close()  # which releases the lock


def _read_log(log: str) -> EvalLog:
    from inspect_ai.log import read_eval_log

    try:
        return read_eval_log(log)
    except Exception as error:  # whatever Inspect's readers raise: not a log
        raise click.ClickException(
            f"cannot read {log!r} as an Inspect log ({error})"
        ) from error
