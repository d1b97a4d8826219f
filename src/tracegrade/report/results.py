"""Parquet results read for `tracegrade report`, a batch at a time.

Each row is decoded into the `StageScore` or `ExtractionScore` a log's
score is read into, and counted by the same code; memory stays flat in the
rows. What a results file is, and what is refused: docs/report.md.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Final

from ..core.errors import InvalidRecord, quote
from ..core.fields import is_id_list
from ..core.steps import read_steps
from ..datasets import DUPLICATE_SAMPLE_ID
from ..schema import (
    DIAGNOSED_STAGES,
    ERROR_SIDES,
    EXTRACTION_SCORER,
    STAGE_SCORER,
    STAGES,
    ExtractionScore,
    InvalidScore,
    Itemised,
    ScoreError,
    StageScore,
    is_share,
    read_lost,
)

SUFFIX: Final = ".parquet"
BATCH_ROWS: Final = 8_192
"""Rows decoded at a time: Python values for a few MiB at most."""
TASK: Final = "parquet"
MODEL: Final = "unknown"

_ERROR_COLUMNS: Final = ("error_kind", "error_side", "error_field", "error_message")
COLUMNS: Final[Mapping[str, tuple[str, ...]]] = {
    STAGE_SCORER: (
        "id",
        "stage",
        "missing",
        "recall",
        "precision",
        "required",
        "labelled_correct",
        *_ERROR_COLUMNS,
    ),
    EXTRACTION_SCORER: (
        "id",
        "membership",
        "order",
        "dropped",
        "invented",
        "source",
        "first_order_break",
        "kept_in_order",
        "read_as",
        *_ERROR_COLUMNS,
    ),
}
"""The columns the report reads of each task's results
(`tracegrade.table.result_schema`)."""
STEP_COLUMNS: Final = ("lost", "steps", "context_size")
"""Stage results of records with steps have these three, or none of them."""


class ResultsError(ValueError):
    """Parquet input that is not tracegrade results; the message names the
    file, and for a cell its row and column."""


@dataclass(frozen=True)
class ResultsDataset:
    """A Parquet file or directory of results: one eval of the report."""

    path: str
    files: tuple[str, ...]
    scorer: str
    steps: bool
    rows: int
    created: str
    task: str = TASK
    model: str = MODEL
    status: str = "success"
    epochs: int = 1


def is_results_path(path: str) -> bool:
    """A Parquet file, or a directory with no Inspect log (as `inspect
    view` lists them: a stray `metadata.json` is none) and at least one
    Parquet file under it (logs beside their results are read as logs)."""
    given = Path(path)
    if given.is_file():
        return given.suffix == SUFFIX
    if not given.is_dir():
        return False
    from ..logs.evals import files_under, logs_under

    try:
        found = any(file.suffix == SUFFIX for file in files_under(given, _bookkeeping))
    except OSError:
        return False  # read as logs, which says what cannot be listed
    return found and not logs_under(given)


def split_paths(paths: Sequence[str]) -> tuple[list[str], list[ResultsDataset]]:
    """The paths of logs, and the Parquet results opened (each once, however
    often or by whichever name it is given)."""
    logs: list[str] = []
    results: dict[str, str] = {}
    for path in paths:
        if is_results_path(path):
            results.setdefault(os.path.realpath(path), path)
        else:
            logs.append(path)
    return logs, [open_results(path) for path in results.values()]


def _files_under(directory: Path) -> Iterator[Path]:
    """The files under `directory`, links followed, each real file once;
    hidden and engine bookkeeping (`_SUCCESS`, `.crc`) left, as pyarrow
    leaves them."""
    from ..logs.evals import files_under

    try:
        yield from files_under(directory, _bookkeeping)
    except OSError as error:
        raise ResultsError(f"cannot list {str(directory)!r} ({error})") from None


def _bookkeeping(name: str) -> bool:
    return name.startswith((".", "_"))


def open_results(path: str) -> ResultsDataset:
    """The results at `path`, every file's columns checked, no row read."""
    try:
        import pyarrow as pa
        import pyarrow.dataset as ds
    except ImportError:
        from ..table import PARQUET_NEEDS

        raise ResultsError(f"{path!r}: {PARQUET_NEEDS}") from None

    given = Path(path)
    files = (
        [str(given)]
        if given.is_file()
        else [str(file) for file in _files_under(given) if file.suffix == SUFFIX]
    )
    if not files:
        raise ResultsError(f"no Parquet results ({SUFFIX}) under {path!r}")
    scorer: str | None = None
    steps: bool | None = None
    rows = 0
    newest = 0.0
    for file in files:
        try:
            dataset = ds.dataset(file, format="parquet")
            rows += dataset.count_rows()
            newest = max(newest, os.stat(file).st_mtime)
        except OSError as error:
            raise ResultsError(f"cannot read {file!r} ({error})") from None
        except pa.ArrowException as error:
            raise ResultsError(f"{file!r} is not a Parquet file ({error})") from None
        names = set(dataset.schema.names)
        this = _scorer_of(file, names)
        this_steps = _steps_of(file, names) if this == STAGE_SCORER else False
        if scorer is not None and (this, this_steps) != (scorer, steps):
            raise ResultsError(
                f"{file!r} holds {_kind(this, this_steps)} results, but "
                f"{files[0]!r} holds {_kind(scorer, bool(steps))}; one directory "
                "of results is one run: report each apart"
            )
        scorer, steps = this, this_steps
    assert scorer is not None and steps is not None
    created = datetime.fromtimestamp(newest, timezone.utc).isoformat()
    return ResultsDataset(path, tuple(files), scorer, steps, rows, created)


def _kind(scorer: str, steps: bool) -> str:
    return f"{scorer}{' (with steps)' if steps else ''}"


def _scorer_of(file: str, names: set[str]) -> str:
    if "stage" in names:
        scorer = STAGE_SCORER
    elif "membership" in names:
        scorer = EXTRACTION_SCORER
    else:
        raise ResultsError(
            f"{file!r} is not tracegrade results: it has no column 'stage' "
            f"({STAGE_SCORER}) or 'membership' ({EXTRACTION_SCORER})"
        )
    for column in COLUMNS[scorer]:
        if column not in names:
            raise ResultsError(
                f"{file!r} has no column {column!r}, which {scorer} results "
                "have; results written before tracegrade read them back lack "
                "it: score the records again"
            )
    return scorer


def _steps_of(file: str, names: set[str]) -> bool:
    present = [column for column in STEP_COLUMNS if column in names]
    if present and len(present) != len(STEP_COLUMNS):
        absent = next(column for column in STEP_COLUMNS if column not in names)
        raise ResultsError(
            f"{file!r} has no column {absent!r}, which stage results with "
            f"{present[0]!r} have"
        )
    return bool(present)


def read_results(
    results: ResultsDataset,
) -> Iterator[tuple[Any, StageScore | ExtractionScore]]:
    """Each row's `id` and score, a batch at a time; `ResultsError` for a
    cell no tracegrade result holds, naming file, row and column."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    columns = list(COLUMNS[results.scorer])
    if results.steps:
        columns += STEP_COLUMNS
    decode = _stage if results.scorer == STAGE_SCORER else _extraction
    # Each id's first file and row: a repeat is two runs pooled silently.
    first_rows: dict[Any, tuple[int, int]] = {}
    for number, file in enumerate(results.files):
        row = 0
        try:
            batches = ds.dataset(file, format="parquet").to_batches(
                columns=columns,
                batch_size=BATCH_ROWS,
                # pyarrow reads up to 16 batches ahead by default: memory
                # that buys no speed here, where decoding is the slow part.
                batch_readahead=2,
            )
            for batch in batches:
                values = [batch.column(name).to_pylist() for name in columns]
                for cells in zip(*values, strict=True):
                    cell = dict(zip(columns, cells, strict=True))
                    try:
                        score = decode(cell)
                    except InvalidScore as invalid:
                        raise ResultsError(f"{file!r}, row {row}: {invalid}") from None
                    sample_id = cell["id"]
                    if sample_id is not None and not _marked_repeat(score):
                        first = first_rows.setdefault(sample_id, (number, row))
                        if first != (number, row):
                            raise _repeated(results.files, first, file, row, sample_id)
                    yield sample_id, score
                    row += 1
        except OSError as error:
            raise ResultsError(f"cannot read {file!r} ({error})") from None
        except pa.ArrowException as error:
            # A file changed since it was opened, or a column's type changed
            # between its row groups.
            raise ResultsError(f"cannot read {file!r}, row {row} ({error})") from None


def _marked_repeat(score: StageScore | ExtractionScore) -> bool:
    """A line `tracegrade score` found repeating an id: a row of its own."""
    return score.error is not None and score.error.kind == DUPLICATE_SAMPLE_ID


def _repeated(
    files: Sequence[str], first: tuple[int, int], file: str, row: int, sample_id: Any
) -> ResultsError:
    where = "" if files[first[0]] == file else f" of {files[first[0]]!r}"
    return ResultsError(
        f"{file!r}, row {row}: id {quote(sample_id)} is also in row {first[1]}"
        f"{where}; results that repeat an id are two runs (a job run again into "
        "the same directory, or a file copied), which are never pooled, as "
        f"`tracegrade score` refuses a repeated id ({DUPLICATE_SAMPLE_ID}): "
        "report each run's results apart"
    )


# --- one row --------------------------------------------------------------------


def _error(row: Mapping[str, Any]) -> ScoreError | None:
    kind, side, field, message = (row[column] for column in _ERROR_COLUMNS)
    if kind is None and side is None:
        if field is not None or message is not None:
            raise InvalidScore(
                "column error_field and error_message must be null without an "
                f"error_kind, got {quote(field)} and {quote(message)}"
            )
        return None
    if type(kind) is not str or not kind:
        raise InvalidScore(
            "column error_kind must be a kind where error_side is set, got "
            + quote(kind)
        )
    if side not in ERROR_SIDES:
        raise InvalidScore(
            f"column error_side must be one of {', '.join(ERROR_SIDES)} where "
            f"error_kind is set, got {quote(side)}"
        )
    for column, text in (("error_field", field), ("error_message", message)):
        if text is not None and type(text) is not str:
            raise InvalidScore(
                f"column {column} must be text or null, got {quote(text)}"
            )
    return ScoreError(kind, side, field, message)


def _share(row: Mapping[str, Any], column: str) -> float | None:
    share = row[column]
    if share is None or is_share(share):
        return share
    raise InvalidScore(
        f"column {column} must be null or a share from 0.0 to 1.0, got {quote(share)}"
    )


def _ids(row: Mapping[str, Any], column: str) -> list[str]:
    ids = row[column]
    if not is_id_list(ids):
        raise InvalidScore(f"column {column} must be a list of IDs, got {quote(ids)}")
    return ids


def _null(row: Mapping[str, Any], columns: Sequence[str], why: str) -> None:
    for column in columns:
        if row.get(column) is not None:
            raise InvalidScore(
                f"column {column} must be null {why}, got {quote(row[column])}"
            )


def _stage(row: Mapping[str, Any]) -> StageScore:
    error = _error(row)
    recall = _share(row, "recall")
    precision = _share(row, "precision")
    lost = read_lost(row.get("lost"), "column lost")
    diagnosed_columns = ("required", "labelled_correct", "steps", "context_size")
    stage = row["stage"]
    if error is not None and error.unscored:
        _null(row, ("stage", "missing", *diagnosed_columns), "on an unscored row")
        return StageScore(None, error, recall, precision, None, None, False, lost)
    if stage not in STAGES:
        raise InvalidScore(
            f"column stage must be one of {', '.join(STAGES)}, got {quote(stage)}"
        )
    if stage not in DIAGNOSED_STAGES:
        _null(row, diagnosed_columns, f"where stage is {stage}")
        return StageScore(stage, error, recall, precision, None, None, False, lost)
    required, missing = _ids(row, "required"), _ids(row, "missing")
    correct = row["labelled_correct"]
    if type(correct) is not bool:
        raise InvalidScore(
            f"column labelled_correct must be true or false where stage is "
            f"{stage}, got {quote(correct)}"
        )
    if recall is None:
        raise InvalidScore(f"column recall must be a share where stage is {stage}")
    try:
        steps = read_steps({"steps": row.get("steps")})
    except InvalidRecord as invalid:
        raise InvalidScore(
            f"column {invalid.field} {invalid.problem}, got {quote(invalid.value)}"
        ) from None
    context_size = row.get("context_size")
    if steps is None:
        _null(row, ("context_size", "lost"), "where steps is null")
    elif type(context_size) is not int or context_size < 0:
        raise InvalidScore(
            "column context_size must be a count of IDs where steps is set, got "
            f"{quote(context_size)}"
        )
    elif lost is None:
        raise InvalidScore(f"column lost must be set where steps is, on a {stage} row")
    return StageScore(
        stage,
        error,
        recall,
        precision,
        required,
        missing,
        correct,
        lost,
        None,
        steps,
        context_size if steps is not None else None,
    )


def _extraction(row: Mapping[str, Any]) -> ExtractionScore:
    error = _error(row)
    reading = row["read_as"]
    if reading is not None and (type(reading) is not str or not reading):
        raise InvalidScore(
            f"column read_as must be a reading's name or null, got {quote(reading)}"
        )
    itemised_columns = ("dropped", "invented", "source")
    counts = ("first_order_break", "kept_in_order")
    if error is not None and error.unscored:
        _null(
            row,
            ("membership", "order", *itemised_columns, *counts),
            "on an unscored row",
        )
        return ExtractionScore(None, None, error, reading)
    membership, order = row["membership"], row["order"]
    if type(membership) is not bool or type(order) is not bool:
        raise InvalidScore(
            "columns membership and order must be true or false on a graded "
            f"row, got {quote(membership)} and {quote(order)}"
        )
    if order and not membership:
        raise InvalidScore(
            "column order is true where membership is false, which the grading "
            "rules never give"
        )
    if row["source"] is None:
        _null(row, (*itemised_columns, *counts), "where source is null")
        return ExtractionScore(membership, order, error, reading)
    first_break, kept = row["first_order_break"], row["kept_in_order"]
    if (
        first_break is not None and (type(first_break) is not int or first_break < 1)
    ) or (type(kept) is not int or kept < 0):
        raise InvalidScore(
            "columns first_order_break (from 1, or null) and kept_in_order (from "
            f"0) are wrong, got {quote(first_break)} and {quote(kept)}"
        )
    itemised = Itemised(_ids(row, "dropped"), _ids(row, "invented"), first_break, kept)
    return ExtractionScore(
        membership, order, error, reading, _ids(row, "source"), itemised
    )
