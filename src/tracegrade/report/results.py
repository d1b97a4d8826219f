"""Parquet results decoded a batch at a time into a log's scores."""

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
from ..logs.evals import files_under, logs_under
from ..schema import (
    DIAGNOSED_STAGES,
    ERROR_SIDES,
    EXTRACTION_SCORER,
    STAGE_SCORER,
    ExtractionScore,
    InvalidScore,
    ScoreError,
    StageScore,
    read_as,
    read_itemised,
    read_lost,
    read_share,
    read_stage_value,
)

SUFFIX: Final = ".parquet"
BATCH_ROWS: Final = 8_192  # rows decoded at a time, so memory stays bounded
TASK: Final = "parquet"
MODEL: Final = "unknown"
_ERRORS: Final = ("error_kind", "error_side", "error_field", "error_message")
# The columns the report reads of each task's results (`table.result_schema`).
COLUMNS: Final[Mapping[str, tuple[str, ...]]] = {
    STAGE_SCORER: (
        *("id", "stage", "missing", "recall", "precision", "required"),
        *("labelled_correct", *_ERRORS),
    ),
    EXTRACTION_SCORER: (
        *("id", "membership", "order", "dropped", "invented", "source"),
        *("first_order_break", "kept_in_order", "read_as", *_ERRORS),
    ),
}
STEP_COLUMNS: Final = ("lost", "steps", "context_size")


class ResultsError(ValueError):
    """Not tracegrade results; names the file, and a cell's row and column."""


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


def split_paths(paths: Sequence[str]) -> tuple[list[str], list[ResultsDataset]]:
    """The logs, and the Parquet results opened once each."""
    logs: list[str] = []
    results: dict[str, tuple[str, list[str]]] = {}
    for path in paths:
        given = Path(path)
        files = [path] if given.is_file() and given.suffix == SUFFIX else []
        if given.is_dir():
            try:
                # Hidden and engine files (`_SUCCESS`, `.crc`) are not results.
                under = files_under(given, lambda name: name.startswith((".", "_")))
                parquet = [str(file) for file in under if file.suffix == SUFFIX]
                files = parquet if parquet and not logs_under(given) else []
            except OSError:
                pass  # read as logs, which says what cannot be listed
        if files:
            results.setdefault(os.path.realpath(path), (path, files))
        else:
            logs.append(path)
    return logs, [open_results(path, files) for path, files in results.values()]


def open_results(path: str, files: list[str]) -> ResultsDataset:
    """The results at `path`, every file's columns checked, no row read."""
    try:
        import pyarrow as pa
        import pyarrow.dataset as ds
    except ImportError:
        from ..table import PARQUET_NEEDS

        raise ResultsError(f"{path!r}: {PARQUET_NEEDS}") from None
    kinds: list[str] = []
    rows, newest = 0, 0.0
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
        if "stage" not in names and "membership" not in names:
            raise ResultsError(
                f"{file!r} is not tracegrade results: it has no column 'stage' "
                f"({STAGE_SCORER}) or 'membership' ({EXTRACTION_SCORER})"
            )
        scorer = STAGE_SCORER if "stage" in names else EXTRACTION_SCORER
        steps = scorer == STAGE_SCORER and not names.isdisjoint(STEP_COLUMNS)
        for column in (*COLUMNS[scorer], *(STEP_COLUMNS if steps else ())):
            if column not in names:
                raise ResultsError(
                    f"{file!r} has no column {column!r}, which {scorer} results "
                    f"{'with steps ' * steps}have; results written before tracegrade "
                    "read them back lack it: score the records again"
                )
        kinds.append(scorer + " (with steps)" * steps)
        if kinds[-1] != kinds[0]:
            raise ResultsError(
                f"{file!r} holds {kinds[-1]} results, but {files[0]!r} holds "
                f"{kinds[0]}; one directory of results is one run: report each apart"
            )
    created = datetime.fromtimestamp(newest, timezone.utc).isoformat()
    # Every file's kind is the first's: the last file's scorer and steps are all's.
    return ResultsDataset(path, tuple(files), scorer, steps, rows, created)


def read_results(
    results: ResultsDataset,
) -> Iterator[tuple[Any, StageScore | ExtractionScore]]:
    """Each row's `id` and score; `ResultsError` for a bad cell or id."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    columns = [*COLUMNS[results.scorer], *(STEP_COLUMNS if results.steps else ())]
    decode = _stage if results.scorer == STAGE_SCORER else _extraction
    # Each id's first file and row: a repeat is two runs pooled silently.
    first_rows: dict[Any, tuple[str, int]] = {}
    for file in results.files:
        row = 0
        try:
            # pyarrow reads 16 batches ahead by default: memory that buys no speed.
            batches = ds.dataset(file, format="parquet").to_batches(
                columns=columns, batch_size=BATCH_ROWS, batch_readahead=2
            )
            for batch in batches:
                for cell in batch.to_pylist():
                    try:
                        score = decode(cell)
                    except InvalidScore as invalid:
                        raise ResultsError(f"{file!r}, row {row}: {invalid}") from None
                    sample_id = cell["id"]
                    # A repeat `tracegrade score` marked is a row of its own.
                    marked = score.error and score.error.kind == DUPLICATE_SAMPLE_ID
                    if sample_id is not None and not marked:
                        first = first_rows.setdefault(sample_id, (file, row))
                        if first != (file, row):
                            where = "" if first[0] == file else f" of {first[0]!r}"
                            raise ResultsError(
                                f"{file!r}, row {row}: id {quote(sample_id)} is also "
                                f"in row {first[1]}{where}; results that repeat an "
                                "id are two runs (a job run again into the same "
                                "directory, or a file copied), which are never "
                                "pooled, as `tracegrade score` refuses a repeated "
                                f"id ({DUPLICATE_SAMPLE_ID}): report each run's "
                                "results apart"
                            )
                    yield sample_id, score
                    row += 1
        except OSError as error:
            raise ResultsError(f"cannot read {file!r} ({error})") from None
        except pa.ArrowException as error:
            # A file changed since opened, or a column's type between row groups.
            raise ResultsError(f"cannot read {file!r}, row {row} ({error})") from None


def _bad(column: str, what: str, value: Any) -> InvalidScore:
    return InvalidScore(f"column {column} must be {what}, got {quote(value)}")


def _null(row: Mapping[str, Any], columns: Sequence[str], why: str) -> None:
    for column in columns:
        if row.get(column) is not None:
            raise _bad(column, f"null {why}", row[column])


def _error(row: Mapping[str, Any]) -> ScoreError | None:
    kind, side, field, message = (row[column] for column in _ERRORS)
    if kind is None and side is None:
        _null(row, _ERRORS[2:], "without an error_kind")
        return None
    if type(kind) is not str or not kind:
        raise _bad("error_kind", "a kind where error_side is set", kind)
    if side not in ERROR_SIDES:
        sides = ", ".join(ERROR_SIDES)
        raise _bad("error_side", f"one of {sides} where error_kind is set", side)
    for column, text in zip(_ERRORS[2:], (field, message), strict=True):
        if text is not None and type(text) is not str:
            raise _bad(column, "text or null", text)
    return ScoreError(kind, side, field, message)


def _ids(row: Mapping[str, Any], column: str) -> list[str]:
    if not is_id_list(ids := row[column]):
        raise _bad(column, "a list of IDs", ids)
    return ids


def _stage(row: Mapping[str, Any]) -> StageScore:
    error = _error(row)
    recall = read_share(row, "recall", "column")
    precision = read_share(row, "precision", "column")
    lost = read_lost(row.get("lost"), "column lost")
    diagnosed = ("required", "labelled_correct", "steps", "context_size")
    if error is not None and error.unscored:
        _null(row, ("stage", "missing", *diagnosed), "on an unscored row")
        return StageScore(None, error, recall, precision, None, None, False, lost)
    stage = read_stage_value(row["stage"], "column stage")
    if stage not in DIAGNOSED_STAGES:
        _null(row, diagnosed, f"where stage is {stage}")
        return StageScore(stage, error, recall, precision, None, None, False, lost)
    required, missing = _ids(row, "required"), _ids(row, "missing")
    if type(correct := row["labelled_correct"]) is not bool:
        raise _bad("labelled_correct", f"true or false where stage is {stage}", correct)
    if recall is None:
        raise InvalidScore(f"column recall must be a share where stage is {stage}")
    try:
        steps = read_steps({"steps": row.get("steps")})
    except InvalidRecord as invalid:
        raise InvalidScore(
            f"column {invalid.field} {invalid.problem}, got {quote(invalid.value)}"
        ) from None
    size = row.get("context_size")
    if steps is None:
        _null(row, ("context_size", "lost"), "where steps is null")
    elif type(size) is not int or size < 0:
        raise _bad("context_size", "a count of IDs where steps is set", size)
    elif lost is None:
        raise InvalidScore(f"column lost must be set where steps is, on a {stage} row")
    score = (stage, error, recall, precision, required, missing, correct, lost)
    return StageScore(*score, None, steps, size)  # size is null where steps is


def _extraction(row: Mapping[str, Any]) -> ExtractionScore:
    error = _error(row)
    read = read_as(row, "column")
    itemised = ("dropped", "invented", "source", "first_order_break", "kept_in_order")
    if error is not None and error.unscored:
        _null(row, ("membership", "order", *itemised), "on an unscored row")
        return ExtractionScore(None, None, error, read)
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
        _null(row, itemised, "where source is null")
        return ExtractionScore(membership, order, error, read)
    items = read_itemised(row, "a graded row")
    return ExtractionScore(membership, order, error, read, _ids(row, "source"), items)
