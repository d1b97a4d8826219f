"""Scoring records held as Arrow columns: `score_table`, for engines that
hand a function a batch at a time (Ray Data's `map_batches`, Spark's
`mapInArrow`) and for Parquet on one machine."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from .core.errors import _LONE_SURROGATE, _escape_surrogate, quote
from .schema import DIAGNOSED_STAGES

if TYPE_CHECKING:
    import pyarrow as pa
    from inspect_ai.scorer import Score

    from .schema import ScoreError

TASKS: Final = ("stage_diagnosis", "ordered_extraction")

# Each task's key arguments and default columns: `X_key` names the column
# the record field `X` is read from.
KEYS: Final[Mapping[str, Mapping[str, str]]] = {
    "stage_diagnosis": {
        "id_key": "id",
        "required_key": "required",
        "context_key": "context",
        "correct_key": "correct",
        "steps_key": "steps",
    },
    "ordered_extraction": {
        "id_key": "id",
        "source_key": "source",
        "answer_key": "answer",
        "output_key": "output",
    },
}

OPTIONAL_COLUMNS: Final[Mapping[str, frozenset[str]]] = {
    # No steps: no `lost` column. No id: ids are null (results keep row order).
    "stage_diagnosis": frozenset({"id", "steps"}),
    # An extraction records its answer as a list or as output text: one of
    # the two columns is enough (checked apart).
    "ordered_extraction": frozenset({"id", "answer", "output"}),
}


PARQUET_NEEDS: Final = (
    "Parquet results need pyarrow: pip install 'tracegrade[parquet]' "
    "(or tracegrade[ray], which includes it)"
)


class ScoreTableError(ValueError):
    """A call `score_table` cannot score any row of: an unknown task or key
    argument, a key that is no column name, a table of no tabular type, or a
    table without a column the task reads."""


def _schemas() -> dict[str, pa.Schema]:
    import pyarrow as pa

    ids = pa.list_(pa.string())
    errors = [
        pa.field("error_kind", pa.string()),
        pa.field("error_side", pa.string()),
        pa.field("error_field", pa.string()),
        pa.field("error_message", pa.string()),
    ]
    return {
        "stage_diagnosis": pa.schema(
            [
                pa.field("id", pa.string()),
                pa.field("stage", pa.string()),
                pa.field("missing", ids),
                pa.field("recall", pa.float64()),
                pa.field("precision", pa.float64()),
                # What `tracegrade report` reads of a diagnosed run besides
                # its figures: null on every other row.
                pa.field("required", ids),
                pa.field("labelled_correct", pa.bool_()),
                *errors,
            ]
        ),
        "ordered_extraction": pa.schema(
            [
                pa.field("id", pa.string()),
                pa.field("membership", pa.bool_()),
                pa.field("order", pa.bool_()),
                pa.field("dropped", ids),
                pa.field("invented", ids),
                # The rest of a graded answer's itemisation, and its source:
                # null where the rules graded no lists.
                pa.field("source", ids),
                pa.field("first_order_break", pa.int64()),
                pa.field("kept_in_order", pa.int64()),
                pa.field("read_as", pa.string()),
                *errors,
            ]
        ),
    }


def lost_type() -> pa.DataType:
    """`lost`: where each missing ID was lost (`tracegrade.core.steps`)."""
    import pyarrow as pa

    return pa.list_(
        pa.struct(
            [
                pa.field("id", pa.string()),
                pa.field("lost_at", pa.string()),
                pa.field("last_step", pa.string()),
                pa.field("last_rank", pa.int64()),
            ]
        )
    )


def steps_type() -> pa.DataType:
    """`steps`: a pipeline's steps as a record holds them, each step's name,
    the IDs it output in rank order, and the steps it took them from, null
    for the step before it (`tracegrade.core.steps`)."""
    import pyarrow as pa

    ids = pa.list_(pa.string())
    return pa.list_(
        pa.struct(
            [
                pa.field("name", pa.string()),
                pa.field("ids", ids),
                pa.field("inputs", ids),
            ]
        )
    )


def result_schema(task: str = "stage_diagnosis", *, steps: bool = False) -> pa.Schema:
    """The schema of `score_table`'s results for `task`; with `steps`, a
    stage table's, which then has `lost` after `missing`, and the
    diagnosed run's `steps` and `context_size` after `labelled_correct`."""
    import pyarrow as pa

    _check_task(task)
    schema = _schemas()[task]
    if task == "stage_diagnosis" and steps:
        lost = pa.field("lost", lost_type())
        schema = schema.insert(schema.get_field_index("missing") + 1, lost)
        after = schema.get_field_index("labelled_correct") + 1
        schema = schema.insert(after, pa.field("steps", steps_type()))
        schema = schema.insert(after + 1, pa.field("context_size", pa.int64()))
    return schema


def result_ddl(task: str = "stage_diagnosis", *, steps: bool = False) -> str:
    """`result_schema` as a Spark SQL DDL string, the schema
    `DataFrame.mapInArrow` must be told the results have."""
    return ", ".join(
        f"`{field.name}` {_ddl_type(field.type)}"
        for field in result_schema(task, steps=steps)
    )


def _ddl_type(kind: pa.DataType) -> str:
    import pyarrow as pa

    if pa.types.is_list(kind):
        return f"array<{_ddl_type(kind.value_type)}>"
    if pa.types.is_struct(kind):
        fields = (kind.field(position) for position in range(kind.num_fields))
        return (
            "struct<"
            + ", ".join(f"`{field.name}`: {_ddl_type(field.type)}" for field in fields)
            + ">"
        )
    names = {
        pa.string(): "string",
        pa.bool_(): "boolean",
        pa.float64(): "double",
        pa.int64(): "bigint",
    }
    return names[kind]


def score_table(table: Any, task: str = "stage_diagnosis", **keys: str) -> pa.Table:
    """Score every row of `table` as `tracegrade score` scores a record."""
    import pyarrow as pa

    _check_task(task)
    columns = _columns(task, keys)
    table = _as_arrow(table)
    names = set(table.schema.names)
    _check_columns(task, columns, names)
    present = {field: column for field, column in columns.items() if column in names}
    rows = table.num_rows
    ids = _ids(table, present.pop("id", None))
    values = {
        field: table.column(column).to_pylist() for field, column in present.items()
    }
    fields = list(values)
    cells = list(zip(*values.values(), strict=True)) if fields else [()] * rows
    from .tasks.recorded import extraction_input_score, stage_input_score

    # The score the recorded task gives a record: `tracegrade score`'s own.
    score_input = (
        stage_input_score if task == "stage_diagnosis" else extraction_input_score
    )
    steps = task == "stage_diagnosis" and "steps" in present
    schema = result_schema(task, steps=steps)
    results: list[tuple[Any, ...]] = []
    for row in cells:
        record = {
            field: value
            for field, value in zip(fields, row, strict=True)
            if value is not None
        }
        if steps and type(record.get("steps")) is list:
            record["steps"] = [_absent_inputs(step) for step in record["steps"]]
        results.append(score_cells(task, score_input(record), steps=steps))
    outputs = list(zip(*results, strict=True)) if results else [()] * (len(schema) - 1)
    arrays: list[Any] = [ids]
    arrays += [
        arrow_column(list(column), schema.field(position + 1).type)
        for position, column in enumerate(outputs)
    ]
    return pa.Table.from_arrays(arrays, schema=schema)


def _absent_inputs(step: Any) -> Any:
    """A step whose `inputs` cell is null takes the step before it: as a
    null cell is an absent field, a null `inputs` is none given."""
    if type(step) is not dict or "inputs" not in step or step["inputs"] is not None:
        return step
    return {key: value for key, value in step.items() if key != "inputs"}


def _ids(table: pa.Table, column: str | None) -> pa.ChunkedArray:
    """The id column as text, carried over as it is (null without one)."""
    import pyarrow as pa

    if column is None:
        return pa.chunked_array([pa.nulls(table.num_rows, pa.string())])
    ids = table.column(column)
    if ids.type == pa.string():
        return ids
    try:
        return ids.cast(pa.string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise ScoreTableError(
            f"the id column {quote(column)} is {ids.type}, which is not text "
            "and cannot be made text; ids are text or numbers"
        ) from None


def arrow_column(values: list[Any], kind: pa.DataType) -> pa.Array:
    """A result column; a lone surrogate, which Arrow's UTF-8 cannot hold,
    as the JSON escape it was read from (`\\ud83d`), as error messages
    quote it. Only an answer read from output text can hold one (a JSON
    escape in the text); a table's own strings cannot."""
    import pyarrow as pa

    try:
        return pa.array(values, kind)
    except UnicodeEncodeError:
        return pa.array(_escaped(values), kind)


def _escaped(value: Any) -> Any:
    if isinstance(value, str):
        return _LONE_SURROGATE.sub(_escape_surrogate, value)
    if isinstance(value, list):
        return [_escaped(item) for item in value]
    if isinstance(value, dict):
        return {key: _escaped(item) for key, item in value.items()}
    return value


def score_batches(
    batches: Iterable[pa.RecordBatch], task: str = "stage_diagnosis", **keys: str
) -> Iterator[pa.RecordBatch]:
    """`score_table` over a stream of Arrow batches: the function Spark's
    `DataFrame.mapInArrow` calls on each partition (with `functools.partial`
    for the task and keys, and `result_ddl` as its schema). A function of
    this module, so Spark's workers import it rather than unpickle a copy."""
    for batch in batches:
        yield from score_table(batch, task, **keys).to_batches()


def _check_task(task: object) -> None:
    if task not in TASKS:
        raise ScoreTableError(f"task must be {' or '.join(TASKS)}, got {quote(task)}")


def _columns(task: str, keys: Mapping[str, object]) -> dict[str, str]:
    """The column of each record field, checked."""
    taken = KEYS[task]
    unknown = [key for key in keys if key not in taken]
    if unknown:
        raise ScoreTableError(
            f"{task} takes no key argument {unknown[0]}={quote(keys[unknown[0]])}; "
            f"it takes {', '.join(taken)}"
        )
    columns: dict[str, str] = {}
    for key, default in taken.items():
        column = keys.get(key, default)
        if not isinstance(column, str) or not column:
            raise ScoreTableError(
                f"{key} must be a column name, a non-empty string, got {quote(column)}"
            )
        columns[key.removesuffix("_key")] = column
    named: dict[str, str] = {}
    for field, column in columns.items():
        if column in named:
            raise ScoreTableError(
                f"{field}_key and {named[column]}_key both name the column "
                f"{quote(column)}; each field is read from a column of its own"
            )
        named[column] = field
    return columns


def _as_arrow(table: Any) -> pa.Table:
    import pyarrow as pa

    if isinstance(table, pa.Table):
        return table
    if isinstance(table, pa.RecordBatch):
        return pa.Table.from_batches([table])
    # pandas is not imported to ask: a DataFrame can only come from it.
    if type(table).__module__.split(".")[0] == "pandas" and hasattr(table, "columns"):
        try:
            return pa.Table.from_pandas(table, preserve_index=False)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
            raise ScoreTableError(
                f"the DataFrame cannot be read as Arrow columns ({error})"
            ) from None
    raise ScoreTableError(
        "table must be a pyarrow Table or RecordBatch, or a pandas DataFrame, "
        f"got {type(table).__module__}.{type(table).__qualname__}"
    )


def _check_columns(task: str, columns: Mapping[str, str], names: set[str]) -> None:
    optional = OPTIONAL_COLUMNS[task]
    absent = [
        (field, column)
        for field, column in columns.items()
        if field not in optional and column not in names
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


_NO_ERROR: Final = (None, None, None, None)
ERROR_KEYS: Final = ("kind", "side", "field", "message")


def record_schema(task: str = "stage_diagnosis") -> pa.Schema:
    """The columns of records as `score_table` reads them by default, and
    as `tracegrade import --format parquet` writes them: `id`, then each
    field of a record's `input` (the text fields, read by no rule, for
    whoever labels the answers)."""
    import pyarrow as pa

    _check_task(task)
    ids = pa.list_(pa.string())
    if task == "ordered_extraction":
        fields = [("source", ids), ("answer", ids), ("output", pa.string())]
    else:
        fields = [
            ("required", ids),
            ("context", ids),
            ("correct", pa.bool_()),
            ("steps", steps_type()),
            ("question", pa.string()),
            ("answer", pa.string()),
            ("reference", pa.string()),
        ]
    return pa.schema([pa.field("id", pa.string()), *(pa.field(*f) for f in fields)])


def records_table(records: Sequence[Mapping[str, Any]], task: str) -> pa.Table:
    """Fixture-format records (`{"id", "input": {...}}`) as `record_schema`
    columns; an absent field is a null cell."""
    import pyarrow as pa

    schema = record_schema(task)
    names = schema.names[1:]
    columns: dict[str, list[Any]] = {name: [] for name in schema.names}
    for record in records:
        fields = record["input"]
        for field in fields:
            if field not in columns or field == "id":
                raise ScoreTableError(
                    f"record {quote(record['id'])} has a field {quote(field)}, "
                    f"which a {task} record table has no column for; its "
                    f"columns are {', '.join(names)}"
                )
        columns["id"].append(record["id"])
        for name in names:
            columns[name].append(fields.get(name))
    arrays = []
    for field in schema:
        try:
            arrays.append(pa.array(columns[field.name], field.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
            raise ScoreTableError(
                f"the field {quote(field.name)} of some record is not "
                f"{field.type} ({error})"
            ) from None
    return pa.Table.from_arrays(arrays, schema=schema)


# --- One row --------------------------------------------------------------------


def _read_error_cells(error: ScoreError | None) -> tuple[Any, ...]:
    if error is None:
        return _NO_ERROR
    return (error.kind, error.side, error.field, error.message)


def score_cells(task: str, score: Score, *, steps: bool) -> tuple[Any, ...]:
    """The result cells (all but `id`) of a tracegrade `Score`, as
    `result_schema(task, steps=steps)` orders them: what `score_table`
    gives a row that `tracegrade score` scored, and what that command
    writes as Parquet. Read through `tracegrade.schema`, as every reader
    of a score reads it."""

    from .schema import read_extraction, read_stage

    if task == "stage_diagnosis":
        staged = read_stage(score.value, score.metadata)
        error = _read_error_cells(staged.error)
        lost = staged.lost
        diagnosed = staged.stage in DIAGNOSED_STAGES
        step_cells = None if staged.steps is None else [vars(s) for s in staged.steps]
        return (
            staged.stage,
            staged.missing,
            *(
                ([item._asdict() for item in lost] if lost is not None else None,)
                if steps
                else ()
            ),
            staged.recall,
            staged.precision,
            staged.required,
            staged.labelled_correct if diagnosed else None,
            *((step_cells, staged.context_size) if steps else ()),
            *error,
        )
    graded = read_extraction(score.value, score.metadata)
    error = _read_error_cells(graded.error)
    itemised = graded.itemised
    return (
        graded.membership,
        graded.order,
        *(
            (
                itemised.dropped,
                itemised.invented,
                graded.source,
                itemised.first_order_break,
                itemised.kept_in_order,
            )
            if itemised is not None
            else (None,) * 5
        ),
        graded.read_as,
        *error,
    )


def problem_cells(
    task: str, error: Mapping[str, Any], *, steps: bool
) -> tuple[Any, ...]:
    """The result cells of a line that never became a record
    (`malformed-json`, ...): every figure null, the error given."""
    width = len(result_schema(task, steps=steps)) - 1 - len(_NO_ERROR)
    return (None,) * width + tuple(error[key] for key in ERROR_KEYS)
