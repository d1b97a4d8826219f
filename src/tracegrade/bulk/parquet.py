"""`tracegrade score`'s per-record results as Parquet: `line`, then
`score_table`'s columns, so a directory of either reads as one dataset."""

from __future__ import annotations

from typing import IO, TYPE_CHECKING, Any, Final

from ..table import arrow_column, result_schema

if TYPE_CHECKING:
    import pyarrow as pa

BATCH_ROWS: Final = 8_192
"""Rows held before they are written as a row group: under a MiB."""


def results_file_schema(task: str) -> pa.Schema:
    """`line`, then `score_table`'s columns (stage runs with steps')."""
    import pyarrow as pa

    schema = result_schema(task, steps=task == "stage_diagnosis")
    return schema.insert(0, pa.field("line", pa.int64()))


class ParquetResults:
    """Rows appended one per record, written a batch at a time to `handle`."""

    def __init__(self, handle: IO[bytes], task: str) -> None:
        import pyarrow.parquet as pq

        self.schema = results_file_schema(task)
        self._writer = pq.ParquetWriter(handle, self.schema)
        self._rows: list[tuple[Any, ...]] = []

    def add(self, line: int, sample_id: str | None, cells: tuple[Any, ...]) -> None:
        self._rows.append((line, sample_id, *cells))
        if len(self._rows) >= BATCH_ROWS:
            self._write()

    def _write(self) -> None:
        import pyarrow as pa

        if not self._rows:
            return
        columns = zip(*self._rows, strict=True)
        arrays = [
            arrow_column(list(column), field.type)
            for column, field in zip(columns, self.schema, strict=True)
        ]
        self._rows = []
        self._writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=self.schema))

    def close(self) -> None:
        """Write what is left and the file's footer."""
        self._write()
        self._writer.close()

    def abandon(self) -> None:
        """Give the file up unfinished: its temporary file is removed by
        its owner. pyarrow's writer would otherwise write a footer when
        collected, into a file already closed, and print that it could not."""
        self._rows = []
        self._writer.is_open = False


__all__ = ["ParquetResults", "results_file_schema"]
