"""Scoring records held as Arrow columns: `score_table`, for engines that
hand a function a batch at a time (Ray Data's `map_batches`, Spark's
`mapInArrow`) and for Parquet on one machine."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from .core.errors import escape_lone_surrogates, quote
from .schema import DIAGNOSED_STAGES

if TYPE_CHECKING:
    import pyarrow as pa
    from inspect_ai.scorer import Score

TASKS: Final = ("stage_diagnosis", "ordered_extraction")

# Each task's key arguments and default columns: `X_key` names the column
# the record field `X` is read from.
KEYS: Final[Mapping[str, Mapping[str, str]]] = {
    task: {f"{name}_key": name for name in fields.split()}
    for task, fields in (
        ("stage_diagnosis", "id required context correct steps"),
        ("ordered_extraction", "id source answer output"),
    )
}

# Without an id column ids are null; an extraction needs answer or output.
OPTIONAL_COLUMNS: Final[Mapping[str, frozenset[str]]] = {
    "stage_diagnosis": frozenset({"id", "steps"}),
    "ordered_extraction": frozenset({"id", "answer", "output"}),
}

PARQUET_NEEDS: Final = (
    "Parquet results need pyarrow: pip install 'tracegrade[parquet]' "
    "(or tracegrade[ray], which includes it)"
)

ERROR_KEYS: Final = ("kind", "side", "field", "message")
# Each table's columns, as `name:type` (`_types`). A stage table has the
# columns of steps (`lost`, `steps`, `context_size`) only with steps.
_RESULT_COLUMNS: Final = {
    "stage_diagnosis": (
        "id:text stage:text missing:ids lost:lost recall:share precision:share"
        # What `tracegrade report` reads of a diagnosed run besides its
        # figures: null on every other row.
        " required:ids labelled_correct:flag steps:steps context_size:count"
    ),
    "ordered_extraction": (
        "id:text membership:flag order:flag dropped:ids invented:ids"
        # The rest of a graded answer's itemisation, and its source: null
        # where the rules graded no lists.
        " source:ids first_order_break:count kept_in_order:count read_as:text"
    ),
}
_WITH_STEPS: Final = ("lost", "steps", "context_size")
_RECORD_COLUMNS: Final = {
    "stage_diagnosis": "id:text required:ids context:ids correct:flag steps:steps"
    " question:text answer:text reference:text",
    "ordered_extraction": "id:text source:ids answer:ids output:text",
}


class ScoreTableError(ValueError):
    """A call `score_table` cannot score any row of (a bad task, key or table)."""


def _types() -> dict[str, pa.DataType]:
    """`lost`: where each missing ID was lost; `steps`: a pipeline's steps."""
    import pyarrow as pa

    text, ids, count = pa.string(), pa.list_(pa.string()), pa.int64()
    lost = [("id", text), ("lost_at", text), ("last_step", text), ("last_rank", count)]
    steps = [("name", text), ("ids", ids), ("inputs", ids)]
    return {
        "text": text,
        "ids": ids,
        "count": count,
        "share": pa.float64(),
        "flag": pa.bool_(),
        "lost": pa.list_(pa.struct(lost)),
        "steps": pa.list_(pa.struct(steps)),
    }


def result_schema(task: str = "stage_diagnosis", *, steps: bool = False) -> pa.Schema:
    """The schema of `score_table`'s results for `task`; with `steps`, a
    stage table's with the columns of steps."""
    import pyarrow as pa

    _check_task(task)
    errors = "".join(f" error_{key}:text" for key in ERROR_KEYS)
    schema = _schema(_RESULT_COLUMNS[task] + errors)
    if steps:
        return schema
    return pa.schema(field for field in schema if field.name not in _WITH_STEPS)


def _schema(columns: str) -> pa.Schema:
    import pyarrow as pa

    types = _types()
    named = (column.split(":") for column in columns.split())
    return pa.schema(pa.field(name, types[kind]) for name, kind in named)


def result_ddl(task: str = "stage_diagnosis", *, steps: bool = False) -> str:
    """`result_schema` as the Spark SQL DDL `DataFrame.mapInArrow` is told."""
    return ", ".join(
        f"`{field.name}` {_ddl_type(field.type)}"
        for field in result_schema(task, steps=steps)
    )


def _ddl_type(kind: pa.DataType) -> str:
    import pyarrow as pa

    if pa.types.is_list(kind):
        return f"array<{_ddl_type(kind.value_type)}>"
    if pa.types.is_struct(kind):
        listed = ", ".join(f"`{field.name}`: {_ddl_type(field.type)}" for field in kind)
        return f"struct<{listed}>"
    return {"string": "string", "bool": "boolean", "double": "double"}.get(
        str(kind), "bigint"
    )


def score_table(table: Any, task: str = "stage_diagnosis", **keys: str) -> pa.Table:
    """Score every row of `table` as `tracegrade score` scores a record."""
    import pyarrow as pa

    from .tasks.recorded import extraction_input_score, stage_input_score

    _check_task(task)
    columns = _columns(task, keys)
    table = _as_arrow(table)
    names = set(table.schema.names)
    _check_columns(task, columns, names)
    present = {column: field for field, column in columns.items() if column in names}
    ids = _ids(table, columns["id"] if present.pop(columns["id"], None) else None)
    # The score the recorded task gives a record: `tracegrade score`'s own.
    score_input = (
        stage_input_score if task == "stage_diagnosis" else extraction_input_score
    )
    steps = task == "stage_diagnosis" and "steps" in present.values()
    schema = result_schema(task, steps=steps)
    rows = []
    for row in table.select(list(present)).to_pylist():
        record = {
            present[column]: cell for column, cell in row.items() if cell is not None
        }
        if steps and type(record.get("steps")) is list:
            record["steps"] = [_absent_inputs(step) for step in record["steps"]]
        rows.append(score_cells(task, score_input(record), steps=steps))
    columns_out = zip(*rows, strict=True) if rows else [()] * (len(schema) - 1)
    arrays = [
        arrow_column(list(column), field.type)
        for column, field in zip(columns_out, list(schema)[1:], strict=True)
    ]
    return pa.Table.from_arrays([ids, *arrays], schema=schema)


def _absent_inputs(step: Any) -> Any:
    """A null `inputs` cell is no `inputs` given: the step before is taken."""
    if type(step) is not dict or "inputs" not in step or step["inputs"] is not None:
        return step
    return {key: value for key, value in step.items() if key != "inputs"}


def _ids(table: pa.Table, column: str | None) -> pa.ChunkedArray:
    """The id column as text, carried over as it is (null without one)."""
    import pyarrow as pa

    if column is None:
        return pa.chunked_array([pa.nulls(table.num_rows, pa.string())])
    ids = table.column(column)
    try:
        return ids.cast(pa.string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise ScoreTableError(
            f"the id column {quote(column)} is {ids.type}, which is not text "
            "and cannot be made text; ids are text or numbers"
        ) from None


def arrow_column(values: list[Any], kind: pa.DataType) -> pa.Array:
    """A result column; a lone surrogate, which Arrow's UTF-8 cannot hold
    (read from an answer's JSON escape), as that escape (`\\ud83d`)."""
    import pyarrow as pa

    try:
        return pa.array(values, kind)
    except UnicodeEncodeError:
        return pa.array(_escaped(values), kind)


def _escaped(value: Any) -> Any:
    if isinstance(value, str):
        return escape_lone_surrogates(value)
    if isinstance(value, list):
        return [_escaped(item) for item in value]
    if isinstance(value, dict):
        return {key: _escaped(item) for key, item in value.items()}
    return value


def score_batches(
    batches: Iterable[pa.RecordBatch], task: str = "stage_diagnosis", **keys: str
) -> Iterator[pa.RecordBatch]:
    """`score_table` over a stream of Arrow batches: the function Spark's
    `DataFrame.mapInArrow` calls on each partition."""
    for batch in batches:
        yield from score_table(batch, task, **keys).to_batches()


def _check_task(task: object) -> None:
    if task not in TASKS:
        raise ScoreTableError(f"task must be {' or '.join(TASKS)}, got {quote(task)}")


def _columns(task: str, keys: Mapping[str, Any]) -> dict[str, str]:
    taken = KEYS[task]
    for key, column in keys.items():
        if key not in taken:
            raise ScoreTableError(
                f"{task} takes no key argument {key}={quote(column)}; "
                f"it takes {', '.join(taken)}"
            )
    named: dict[str, str] = {}
    for key, field in taken.items():
        column = keys.get(key, field)
        if not isinstance(column, str) or not column:
            raise ScoreTableError(
                f"{key} must be a column name, a non-empty string, got {quote(column)}"
            )
        if column in named:
            raise ScoreTableError(
                f"{key} and {named[column]}_key both name the column "
                f"{quote(column)}; each field is read from a column of its own"
            )
        named[column] = field
    return {field: column for column, field in named.items()}


def _as_arrow(table: Any) -> pa.Table:
    import pyarrow as pa

    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    # pandas is not imported to ask: a DataFrame can only come from it.
    if type(table).__module__.split(".")[0] == "pandas" and hasattr(table, "columns"):
        try:
            table = pa.Table.from_pandas(table, preserve_index=False)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
            raise ScoreTableError(
                f"the DataFrame cannot be read as Arrow columns ({error})"
            ) from None
    if not isinstance(table, pa.Table):
        raise ScoreTableError(
            "table must be a pyarrow Table or RecordBatch, or a pandas DataFrame, "
            f"got {type(table).__module__}.{type(table).__qualname__}"
        )
    return table


def _check_columns(task: str, columns: Mapping[str, str], names: set[str]) -> None:
    absent = [
        (field, column)
        for field, column in columns.items()
        if field not in OPTIONAL_COLUMNS[task] and column not in names
    ]
    answers = {columns.get("answer"), columns.get("output")}
    if task == "ordered_extraction" and not answers & names:
        absent.append(("answer", columns["answer"]))
    if absent:
        field, column = absent[0]
        shown = ", ".join(quote(name, 60) for name in sorted(names)) or "none"
        raise ScoreTableError(
            f"the table has no column {quote(column)} ({field}_key), which "
            f"{task} reads; its columns are {shown}"
        )


def record_schema(task: str = "stage_diagnosis") -> pa.Schema:
    """The columns of records as `score_table` reads them by default and
    `tracegrade import --format parquet` writes them."""
    _check_task(task)
    return _schema(_RECORD_COLUMNS[task])


def records_table(records: Sequence[Mapping[str, Any]], task: str) -> pa.Table:
    """Fixture-format records (`{"id", "input": {...}}`) as `record_schema`
    columns; an absent field is a null cell."""
    import pyarrow as pa

    schema = record_schema(task)
    names = schema.names[1:]
    for record in records:
        for field in record["input"]:
            if field not in names:
                raise ScoreTableError(
                    f"record {quote(record['id'])} has a field {quote(field)}, "
                    f"which a {task} record table has no column for; its "
                    f"columns are {', '.join(names)}"
                )
    rows = [{**record["input"], "id": record["id"]} for record in records]
    arrays = []
    for field in schema:
        cells = [row.get(field.name) for row in rows]
        try:
            arrays.append(pa.array(cells, field.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
            raise ScoreTableError(
                f"the field {quote(field.name)} of some record is not "
                f"{field.type} ({error})"
            ) from None
    return pa.Table.from_arrays(arrays, schema=schema)


def score_cells(task: str, score: Score, *, steps: bool) -> tuple[Any, ...]:
    """The result cells (all but `id`) of a tracegrade `Score`, in
    `result_schema(task, steps=steps)`'s order, read through
    `tracegrade.schema` as every reader of a score reads it."""
    from .schema import read_extraction, read_stage

    if task == "stage_diagnosis":
        staged = read_stage(score.value, score.metadata)
        error, lost, pipeline = staged.error, staged.lost, staged.steps
        diagnosed = staged.stage in DIAGNOSED_STAGES
        cells: tuple[Any, ...] = (staged.stage, staged.missing)
        if steps:
            cells += (None if lost is None else [item._asdict() for item in lost],)
        cells += (staged.recall, staged.precision, staged.required)
        cells += (staged.labelled_correct if diagnosed else None,)
        if steps:
            step_cells = None if pipeline is None else [vars(step) for step in pipeline]
            cells += (step_cells, staged.context_size)
    else:
        graded = read_extraction(score.value, score.metadata)
        error, itemised = graded.error, graded.itemised
        cells = (graded.membership, graded.order)
        if itemised is None:
            cells += (None,) * 5
        else:
            cells += (itemised.dropped, itemised.invented, graded.source)
            cells += (itemised.first_order_break, itemised.kept_in_order)
        cells += (graded.read_as,)
    if error is None:
        return cells + (None,) * len(ERROR_KEYS)
    return (*cells, error.kind, error.side, error.field, error.message)


def problem_cells(
    task: str, error: Mapping[str, Any], *, steps: bool
) -> tuple[Any, ...]:
    """The result cells of a line that never became a record: every figure
    null, the error given."""
    width = len(result_schema(task, steps=steps)) - 1 - len(ERROR_KEYS)
    return (None,) * width + tuple(error[key] for key in ERROR_KEYS)
