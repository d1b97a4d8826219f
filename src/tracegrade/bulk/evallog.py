"""Inspect `.eval` logs written in a stream, a sample at a time.

`tracegrade score` writes logs of a million samples. Inspect's own `.eval`
writer goes through its recorder, which keeps a `ZipInfo` per member (about
560 bytes each, so 560 MB of bookkeeping for a million samples), and makes
a twelve-thread zstd compressor per member (close to a millisecond each).
`EvalArchive` writes the same archive directly: each sample is compressed
and appended as it comes, its central-directory record goes to a spool
file, and only a chunk of the journal's summaries is ever in memory. Memory
stays flat however many samples are written.

The archive is laid out as `EvalRecorder` (Inspect 0.3.285) lays out a
finished log, so `read_eval_log`, `read_eval_log_sample`,
`read_eval_log_sample_summaries`, `inspect_ai.analysis` and `inspect view`
read it as they read one from `inspect eval`:

    _journal/start.json        {"version", "eval", "plan"}, written by `start`
    samples/{id}_epoch_{n}.json   one per sample, in the order added
    _journal/summaries/{k}.json   the summaries of each `journal_every` samples
    summaries.json             every summary, in the order added
    reductions.json            when `finish` is given reductions
    header.json                the log without samples or reductions

Members are compressed as Inspect compresses them: zstd (ZIP method 93),
level 3, no frame checksum or content size, and no frame over 200 MiB of
input (the browser viewer's decoder fails on larger frames). Member
headers, the ZIP64 rules and the end records are those of Python's
`zipfile`, which Inspect writes with.

The file is written under `<name>.partial` beside the final name, created
exclusively, and renamed only once complete and synced; a writer that
fails, is aborted or killed leaves at most the `.partial` file, which
neither `list_eval_logs` nor `inspect view` lists.

Nothing here imports Inspect's private modules. What is mirrored from them
instead, and checked against them by `tests/test_evalarchive.py`:

- `inspect_ai._util.json.to_json_safe`, the serialiser behind every Inspect
  log member (`_json_bytes`);
- `inspect_ai.log._util.thin_text`, `truncate_text`, `thin_metadata` and
  their limits, with which `EvalSampleSummary` trims what a summary keeps
  (`sample_summary`);
- `inspect_ai._util.zipfile`: method 93, level 3, 200 MiB frames;
- the member names and the header's fields from
  `inspect_ai.log._recorders.eval` (`EvalRecorder.log_finish`).
"""

from __future__ import annotations

import contextlib
import io
import os
import struct
import tempfile
import textwrap
import time
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Final, Literal

import zstandard
from inspect_ai.log import (
    EvalLog,
    EvalPlan,
    EvalSample,
    EvalSampleReductions,
    EvalSampleSummary,
    EvalSpec,
)
from inspect_ai.scorer import Score
from pydantic_core import PydanticSerializationError, to_json, to_jsonable_python

from ..outputs import PARTIAL_SUFFIX, publish

# --- Inspect's member names ----------------------------------------------------

START_JSON: Final = "_journal/start.json"
JOURNAL_SUMMARIES: Final = "_journal/summaries"
SUMMARIES_JSON: Final = "summaries.json"
REDUCTIONS_JSON: Final = "reductions.json"
HEADER_JSON: Final = "header.json"


def sample_member(sample_id: int | str, epoch: int) -> str:
    """The member a sample is stored under; readers find samples by this name."""
    return f"samples/{sample_id}_epoch_{epoch}.json"


# --- Serialising as Inspect does -------------------------------------------------


def _no_value(_: Any) -> None:
    return None


def _clean_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", errors="backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {key: _clean_surrogates(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_clean_surrogates(item) for item in value]
    return value


def _json_bytes(value: Any, indent: int | None = None) -> bytes:
    """`to_json_safe`'s output: None fields of models left out, NaN kept as
    NaN, unserialisable values as null, lone surrogates escaped."""
    normal = to_jsonable_python(value, exclude_none=True, fallback=_no_value)
    try:
        return to_json(normal, indent=indent, exclude_none=True, fallback=_no_value)
    except PydanticSerializationError as error:
        if "surrogates not allowed" not in str(error):
            raise
        return to_json(
            _clean_surrogates(normal),
            indent=indent,
            exclude_none=True,
            fallback=_no_value,
        )


def _plain_json_bytes(value: Any, indent: int | None = None) -> bytes:
    """`_json_bytes` in one pass, for values that are JSON already."""
    try:
        return to_json(value, indent=indent, exclude_none=True, fallback=_no_value)
    except PydanticSerializationError:
        return _json_bytes(value, indent)


# --- Sample summaries ------------------------------------------------------------

# `inspect_ai.log._util`: summaries keep 5120 characters of an input or target,
# and shorten other text to 1024 characters after collapsing its whitespace
# (looking at 8x that much), and drop a metadata value over 1024 characters
# of indented JSON.
MAX_TEXT_LENGTH: Final = 5120
THIN_TEXT_WIDTH: Final = 1024
THIN_TEXT_SCAN: Final = THIN_TEXT_WIDTH * 8
METADATA_VALUE_LIMIT: Final = 1024
METADATA_VALUE_REMOVED: Final = "Key removed from summary (> 1k)"

# `EvalSample` fields a summary copies when they are set, in summary order.
_COPIED_BEFORE_ERROR = (
    "model_fallbacks",
    "started_at",
    "completed_at",
    "total_time",
    "working_time",
    "uuid",
)
_COPIED_AFTER_COUNTS = (
    "turn_count",
    "token_limit",
    "token_limit_type",
    "token_limit_usage",
    "message_limit",
    "time_limit",
)


def _truncate_text(text: str) -> str:
    if len(text) > MAX_TEXT_LENGTH:
        return text[:MAX_TEXT_LENGTH] + "...\n(content truncated)"
    return text


def _thin_text(text: str) -> str:
    # `textwrap.shorten` returns text whose whitespace is already collapsed
    # and which fits unchanged; checking that first skips building a
    # TextWrapper for nearly every string.
    if len(text) <= THIN_TEXT_WIDTH and " ".join(text.split()) == text:
        return text
    return textwrap.shorten(
        text[:THIN_TEXT_SCAN], width=THIN_TEXT_WIDTH, placeholder="..."
    )


def _thin_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    if _json_length_within(metadata, METADATA_VALUE_LIMIT):
        # Each value alone is shorter than inside the whole, indented one
        # level deeper: all are kept, and only text can change. One
        # serialisation instead of one a value.
        return {
            key: _thin_text(value) if isinstance(value, str) else value
            for key, value in metadata.items()
        }
    thinned: dict[str, Any] = {}
    for key, value in metadata.items():
        if value is None or isinstance(value, (int, float)):  # bool is an int
            thinned[key] = value
        elif isinstance(value, str):
            thinned[key] = _thin_text(value)
        elif _json_length_within(value, METADATA_VALUE_LIMIT):
            thinned[key] = value
        else:
            thinned[key] = METADATA_VALUE_REMOVED
    return thinned


def _json_length_within(value: Any, limit: int) -> bool:
    """Whether `value`, as indented JSON, has at most `limit` characters."""
    if isinstance(value, (list, dict)) and len(value) > limit:
        return False  # every item takes at least a character
    encoded = _plain_json_bytes(value, indent=2)
    # UTF-8 has at least one byte a character, so few bytes settle it.
    return len(encoded) <= limit or len(encoded.decode("utf-8")) <= limit


def _utc_iso(value: str) -> str:
    """A timestamp as `UtcDatetimeStr` normalises it (Inspect's summaries do)."""
    # What `datetime.isoformat` gives for UTC already: seconds or non-zero
    # microseconds, then +00:00.
    if (
        value.endswith("+00:00")
        and value[10:11] == "T"
        and (len(value) == 25 or (len(value) == 32 and value[20:26] != "000000"))
    ):
        return value
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).isoformat()


def _thin_score(score: Mapping[str, Any] | Score) -> dict[str, Any]:
    """The score a summary keeps: value, texts shortened, metadata thinned;
    the edit history is left behind."""
    # A `Score` is read field by field: dumping it in JSON mode would turn
    # a NaN value (unscored) into null.
    fields: Mapping[str, Any] = vars(score) if isinstance(score, Score) else score
    thinned: dict[str, Any] = {"value": fields["value"]}
    for key in ("answer", "explanation"):
        text = fields.get(key)
        if text is not None:
            thinned[key] = _thin_text(text)
    reason = fields.get("reason")
    if reason is not None:
        thinned["reason"] = _thin_text(reason) if isinstance(reason, str) else reason
    metadata = fields.get("metadata")
    if metadata is not None:
        thinned["metadata"] = _thin_metadata(metadata)
    thinned["history"] = []
    return thinned


def _fast_summary_applies(sample: Mapping[str, Any]) -> bool:
    target = sample.get("target", "")
    return (
        isinstance(sample["input"], str)
        and (
            isinstance(target, str)
            or (isinstance(target, list) and all(isinstance(t, str) for t in target))
        )
        and isinstance(sample.get("metadata") or {}, dict)
    )


# The `EvalSample` fields a summary reads, but for its messages: only their
# number, under a key no `EvalSample` has.
_SUMMARY_FIELDS = (
    "id",
    "epoch",
    "input",
    "choices",
    "target",
    "description",
    "metadata",
    "scores",
    "model_usage",
    "role_usage",
    *_COPIED_BEFORE_ERROR,
    "error",
    "limit",
    "error_retries",
    *_COPIED_AFTER_COUNTS,
)
_MESSAGE_COUNT: Final = "__message_count__"


def summary_source(sample: Mapping[str, Any]) -> dict[str, Any]:
    """What `sample_summary` reads of `sample`, with the scores as plain
    dicts and the messages as their number: little to copy to the process
    that makes the summary (see `bulk.forked`). A sample the fast path does
    not take is kept whole."""
    if not _fast_summary_applies(sample):
        return dict(sample)
    source = {key: sample[key] for key in _SUMMARY_FIELDS if key in sample}
    if (scores := source.get("scores")) is not None:
        source["scores"] = {
            name: dict(vars(score)) if isinstance(score, Score) else score
            for name, score in scores.items()
        }
    source[_MESSAGE_COUNT] = len(sample.get("messages") or [])
    return source


def sample_summary(sample: Mapping[str, Any]) -> dict[str, Any]:
    """What `EvalSample.summary()` would give for this sample, serialised.

    `sample` is an `EvalSample` as JSON-safe data (what its log member
    holds). Building and validating an `EvalSample` per sample would cost
    more than writing it; this builds the summary's JSON directly, trimmed
    by the same rules, for the common case of a text input. Anything else
    (an input of chat messages, with images to replace) goes through
    Inspect's own models. Timestamps are normalised to UTC, as Inspect does.
    """
    if not _fast_summary_applies(sample):
        validated = EvalSample.model_validate(dict(sample)).summary()
        summary: dict[str, Any] = to_jsonable_python(
            validated, exclude_none=True, fallback=_no_value
        )
        return summary
    summary = {
        "id": sample["id"],
        "epoch": sample["epoch"],
        "input": _truncate_text(sample["input"]),
    }
    if (choices := sample.get("choices")) is not None:
        summary["choices"] = choices
    target = sample.get("target", "")
    summary["target"] = (
        _truncate_text(target)
        if isinstance(target, str)
        else [_truncate_text(item) for item in target]
    )
    if (description := sample.get("description")) is not None:
        summary["description"] = description
    summary["metadata"] = _thin_metadata(sample.get("metadata") or {})
    if (scores := sample.get("scores")) is not None:
        summary["scores"] = {name: _thin_score(score) for name, score in scores.items()}
    summary["model_usage"] = sample.get("model_usage") or {}
    summary["role_usage"] = sample.get("role_usage") or {}
    for key in _COPIED_BEFORE_ERROR:
        if (value := sample.get(key)) is not None:
            summary[key] = (
                _utc_iso(value) if key in ("started_at", "completed_at") else value
            )
    if (error := sample.get("error")) is not None:
        summary["error"] = error["message"]
    if (limit := sample.get("limit")) is not None:
        summary["limit"] = f"{limit['type']}"
        if limit.get("reason") is not None:
            summary["limit_reason"] = limit["reason"]
    if (retries := sample.get("error_retries")) is not None:
        summary["retries"] = len(retries)
    summary["completed"] = True
    summary["message_count"] = (
        sample[_MESSAGE_COUNT]
        if _MESSAGE_COUNT in sample
        else len(sample.get("messages") or [])
    )
    for key in _COPIED_AFTER_COUNTS:
        if (value := sample.get(key)) is not None:
            summary[key] = value
    return summary


# --- ZIP structures, as Python's zipfile writes them ---------------------------

_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")
_CENTRAL_HEADER = struct.Struct("<4s4B4HL2L5H2L")
_ZIP64_END = struct.Struct("<4sQ2H2L4Q")
_ZIP64_LOCATOR = struct.Struct("<4sLQL")
_END = struct.Struct("<4s4H2LH")

ZIP_ZSTANDARD: Final = 93
ZSTD_LEVEL: Final = 3
# Below the browser viewer's zstd decoder's 256 MiB frame limit.
MAX_FRAME_INPUT: Final = 200 * 1024 * 1024

_ZIP64_LIMIT: Final = (1 << 31) - 1
_ZIP_FILECOUNT_LIMIT: Final = (1 << 16) - 1
_DEFAULT_VERSION: Final = 20
_ZIP64_VERSION: Final = 45
_UNIX: Final = 3
_UTF8_NAME: Final = 0x800
_READ_WRITE_OWNER: Final = 0o600 << 16
_COPY_CHUNK: Final = 1 << 20


class _DosClock:
    """Each member's modification time, as zipfile stamps it (local time,
    two-second steps), worked out once a second rather than per member."""

    def __init__(self) -> None:
        self._second = -1
        self._stamp = (0, 0)

    def now(self) -> tuple[int, int]:
        second = int(time.time())
        if second != self._second:
            year, month, day, hour, minute, sec = time.localtime(second)[:6]
            self._stamp = (
                hour << 11 | minute << 5 | sec // 2,
                (year - 1980) << 9 | month << 5 | day,
            )
            self._second = second
        return self._stamp


class _Compressed:
    """A member's content, compressed, with what its headers need."""

    __slots__ = ("chunks", "compressed_size", "crc", "size")

    def __init__(
        self, chunks: Iterable[bytes], crc: int, size: int, compressed_size: int
    ) -> None:
        self.chunks = chunks
        self.crc = crc
        self.size = size
        self.compressed_size = compressed_size


def _zstd_compressor() -> zstandard.ZstdCompressor:
    return zstandard.ZstdCompressor(
        level=ZSTD_LEVEL, write_content_size=False, write_checksum=False
    )


class _CompressedSpool:
    """A member too large to hold, compressed into an unnamed temporary file
    as it is produced and copied into the archive at the end."""

    def __init__(self, directory: Path) -> None:
        # A context of its own: a zstd context runs one operation at a time,
        # and this one stays open while other members are compressed.
        self._compressor: zstandard.ZstdCompressor | None = None
        self._file: IO[bytes] = tempfile.TemporaryFile(dir=directory)  # noqa: SIM115
        self._frame: zstandard.ZstdCompressionObj | None = None
        self._frame_input = 0
        self.crc = 0
        self.size = 0
        self.compressed_size = 0

    def _current_frame(self) -> zstandard.ZstdCompressionObj:
        if self._frame is None:
            if self._compressor is None:
                self._compressor = _zstd_compressor()
            self._frame = self._compressor.compressobj()
        return self._frame

    def write(self, data: bytes) -> None:
        self.crc = zlib.crc32(data, self.crc)
        self.size += len(data)
        if self._frame_input + len(data) < MAX_FRAME_INPUT:
            self._frame_input += len(data)
            self._emit(self._current_frame().compress(data))
            return
        view = memoryview(data)
        while view:
            room = MAX_FRAME_INPUT - self._frame_input
            piece, view = view[:room], view[room:]
            self._emit(self._current_frame().compress(piece))
            self._frame_input += len(piece)
            if self._frame_input >= MAX_FRAME_INPUT:
                self._end_frame()

    def _emit(self, compressed: bytes) -> None:
        if compressed:
            self._file.write(compressed)
            self.compressed_size += len(compressed)

    def _end_frame(self) -> None:
        self._emit(self._current_frame().flush(zstandard.COMPRESSOBJ_FLUSH_FINISH))
        self._frame = None
        self._frame_input = 0

    def suspend(self) -> None:
        """End the frame and let the compressor go; `write` makes another.

        A suspended spool holds only its file: a zstd context costs a few
        megabytes, and a run split into parts keeps every part's summaries
        open until the end."""
        if self._frame_input:
            self._end_frame()
        self._compressor = None
        self._frame = None

    def done(self) -> _Compressed:
        if self._frame_input:
            self._end_frame()
        self._file.flush()
        self._file.seek(0)
        return _Compressed(
            iter(lambda: self._file.read(_COPY_CHUNK), b""),
            self.crc,
            self.size,
            self.compressed_size,
        )

    def close(self) -> None:
        self._file.close()


class _ZipWriter:
    """Appends zstd-compressed members to a ZIP file; their central directory
    waits in an unnamed temporary file until `close`."""

    def __init__(self, out: IO[bytes], directory: Path) -> None:
        self._out = out
        self._central: IO[bytes] = tempfile.TemporaryFile(dir=directory)  # noqa: SIM115
        self._offset = 0
        self._central_size = 0
        self._count = 0
        self._clock = _DosClock()
        # One context reused for every member: Inspect's patched zipfile
        # makes a new twelve-thread one per member, close to a millisecond.
        self._compressor: zstandard.ZstdCompressor | None = None

    def suspend(self) -> None:
        """Let the compressor go until the next member."""
        self._compressor = None

    def reopen(self, out: IO[bytes]) -> None:
        """Go on writing into `out`, the same file reopened."""
        self._out = out

    def add(self, name: str, data: bytes) -> None:
        """Compress and append one member held in memory."""
        if self._compressor is None:
            self._compressor = _zstd_compressor()
        if len(data) <= MAX_FRAME_INPUT:
            compressed = self._compressor.compress(data)
            self._add(name, (compressed,), zlib.crc32(data), len(data), len(compressed))
            return
        view = memoryview(data)
        compressor = self._compressor
        frames = [
            compressor.compress(view[start : start + MAX_FRAME_INPUT])
            for start in range(0, len(data), MAX_FRAME_INPUT)
        ]
        self._add(name, frames, zlib.crc32(data), len(data), sum(map(len, frames)))

    def add_spooled(self, name: str, member: _Compressed) -> None:
        """Append a member compressed beforehand, copying it in chunks."""
        self._add(name, member.chunks, member.crc, member.size, member.compressed_size)

    def _add(
        self,
        name: str,
        chunks: Iterable[bytes],
        crc: int,
        size: int,
        compressed_size: int,
    ) -> None:
        try:
            encoded, flags = name.encode("ascii"), 0
        except UnicodeEncodeError:
            encoded, flags = name.encode("utf-8"), _UTF8_NAME
        dos_time, dos_date = self._clock.now()
        # zipfile's rules: ZIP64 sizes in the local header when the content
        # might pass 2 GiB, a ZIP64 extra in the central directory for any
        # size or offset past it.
        if size * 1.05 > _ZIP64_LIMIT or compressed_size > _ZIP64_LIMIT:
            version = _ZIP64_VERSION
            local_extra = struct.pack("<HHQQ", 1, 16, size, compressed_size)
            local_sizes = (0xFFFFFFFF, 0xFFFFFFFF)
        else:
            version = _DEFAULT_VERSION
            local_extra = b""
            local_sizes = (compressed_size, size)
        offset = self._offset
        out = self._out
        out.write(
            _LOCAL_HEADER.pack(
                b"PK\x03\x04",
                version,
                0,
                flags,
                ZIP_ZSTANDARD,
                dos_time,
                dos_date,
                crc,
                *local_sizes,
                len(encoded),
                len(local_extra),
            )
        )
        out.write(encoded + local_extra)
        written = _LOCAL_HEADER.size + len(encoded) + len(local_extra)
        for chunk in chunks:
            out.write(chunk)
            written += len(chunk)
        self._offset += written

        central_extra = b""
        central_sizes = (compressed_size, size)
        central_offset = offset
        if (
            size > _ZIP64_LIMIT
            or compressed_size > _ZIP64_LIMIT
            or offset > _ZIP64_LIMIT
        ):
            values: list[int] = []
            if size > _ZIP64_LIMIT or compressed_size > _ZIP64_LIMIT:
                values += [size, compressed_size]
                central_sizes = (0xFFFFFFFF, 0xFFFFFFFF)
            if offset > _ZIP64_LIMIT:
                values.append(offset)
                central_offset = 0xFFFFFFFF
            central_extra = struct.pack(
                f"<HH{len(values)}Q", 1, 8 * len(values), *values
            )
            version = _ZIP64_VERSION
        record = (
            _CENTRAL_HEADER.pack(
                b"PK\x01\x02",
                version,
                _UNIX,
                version,
                0,
                flags,
                ZIP_ZSTANDARD,
                dos_time,
                dos_date,
                crc,
                *central_sizes,
                len(encoded),
                len(central_extra),
                0,
                0,
                0,
                _READ_WRITE_OWNER,
                central_offset,
            )
            + encoded
            + central_extra
        )
        self._central.write(record)
        self._central_size += len(record)
        self._count += 1

    def close(self) -> None:
        """Write the central directory and the end records."""
        out = self._out
        start = self._offset
        self._central.flush()
        self._central.seek(0)
        while chunk := self._central.read(_COPY_CHUNK):
            out.write(chunk)
        self._central.close()
        size, count = self._central_size, self._count
        if count > _ZIP_FILECOUNT_LIMIT or start > _ZIP64_LIMIT or size > _ZIP64_LIMIT:
            end64 = start + size
            out.write(
                _ZIP64_END.pack(
                    b"PK\x06\x06", 44, 45, 45, 0, 0, count, count, size, start
                )
            )
            out.write(_ZIP64_LOCATOR.pack(b"PK\x06\x07", 0, end64, 1))
            count = min(count, 0xFFFF)
            size = min(size, 0xFFFFFFFF)
            start = min(start, 0xFFFFFFFF)
        out.write(_END.pack(b"PK\x05\x06", 0, 0, count, count, size, start, 0))

    def discard(self) -> None:
        self._central.close()


# --- The archive -----------------------------------------------------------------

DEFAULT_JOURNAL_EVERY: Final = 1000
_BUFFER_SIZE: Final = 1 << 20

_State = Literal[
    "created", "started", "suspended", "completed", "finished", "aborted", "failed"
]


@dataclass(frozen=True)
class StreamedReductions:
    """One scorer's reductions whose sample scores are already serialised.

    A million reduced scores held as `EvalSampleScore` objects would be a
    second copy of the run in memory; `samples_json` yields them as JSON
    objects joined by commas (chunks may split them anywhere).
    """

    head: EvalSampleReductions
    """The scorer and reducer; its `samples` are ignored."""
    samples_json: Iterable[bytes]


class EvalArchiveError(RuntimeError):
    """The archive was used out of order, or an earlier write failed."""


class EvalArchive:
    """One `.eval` log, written sample by sample; see the module docstring.

    Call `start`, then `add_sample` for each sample, then `finish`, which
    publishes the log under `location` (or `complete`, then `publish`, to
    publish several logs together once all are complete). Until then the
    bytes are in `partial`; `abort` (or leaving a `with` block without
    `finish`) removes them. After any failed write the archive only accepts
    `abort`. Between samples, `suspend` lets go of the memory only writing
    needs, until `resume`.

    Sample ids and epochs must be unique: like Inspect's readers, every
    reader would take the last member of a name, but the summaries would
    still list both.
    """

    def __init__(
        self, location: Path, *, journal_every: int = DEFAULT_JOURNAL_EVERY
    ) -> None:
        if location.suffix != ".eval":
            raise ValueError(f"an .eval log's name ends in .eval: {location}")
        if journal_every < 1:
            raise ValueError("journal_every must be at least 1")
        self.location = location
        self.partial = location.with_name(location.name + PARTIAL_SUFFIX)
        self._journal_every = journal_every
        # "x": never reuse another writer's partial file.
        self._file = io.FileIO(self.partial, "xb")
        self._out = io.BufferedWriter(self._file, buffer_size=_BUFFER_SIZE)
        self._suspended = False
        self._state: _State = "created"
        self._zip: _ZipWriter | None = None
        self._summaries: _CompressedSpool | None = None
        try:
            self._zip = _ZipWriter(self._out, location.parent)
            self._summaries = _CompressedSpool(location.parent)
            self._summaries.write(b"[")
        except BaseException:
            self.abort()
            raise
        self._journal: list[bytes] = []
        self._journal_files = 0
        self.samples_written = 0

    # -- writing ------------------------------------------------------------------

    def start(self, eval_spec: EvalSpec, plan: EvalPlan) -> None:
        """Write `_journal/start.json`, which the log's header is read from
        while it has no `header.json`."""
        self._expect("created")
        version = EvalLog.model_fields["version"].default
        start = {"version": version, "eval": eval_spec, "plan": plan}
        self._add(START_JSON, _json_bytes(start))
        self._state = "started"

    def add_sample(
        self,
        sample: Mapping[str, Any] | bytes,
        summary: EvalSampleSummary | Mapping[str, Any],
    ) -> None:
        """Write one sample now, and keep its summary for the summaries.

        `sample` is an `EvalSample` serialised as Inspect serialises it, or
        as JSON-safe data (serialised here as Inspect would). `summary` is
        an `EvalSampleSummary`, or its JSON-safe data as `sample_summary`
        returns it: already trimmed, as it is written as given. The
        sample's member is named from the summary's id and epoch.
        """
        self._expect("started")
        if isinstance(summary, EvalSampleSummary):
            sample_id, epoch = summary.id, summary.epoch
            summary_json = _json_bytes(summary)
        else:
            sample_id, epoch = summary["id"], summary["epoch"]
            summary_json = _plain_json_bytes(summary)
        data = sample if isinstance(sample, bytes) else _json_bytes(sample)
        self._add(sample_member(sample_id, epoch), data)
        self._add_summary(summary_json)
        self.samples_written += 1

    def _add_summary(self, summary_json: bytes) -> None:
        assert self._summaries is not None
        try:
            self._summaries.write(
                b"," + summary_json if self.samples_written else summary_json
            )
        except BaseException:
            self._state = "failed"
            raise
        self._journal.append(summary_json)
        if len(self._journal) >= self._journal_every:
            self._flush_journal()

    def _flush_journal(self) -> None:
        if not self._journal:
            return
        self._journal_files += 1
        chunk = b"[" + b",".join(self._journal) + b"]"
        self._journal.clear()
        self._add(f"{JOURNAL_SUMMARIES}/{self._journal_files}.json", chunk)

    def _add(self, name: str, data: bytes) -> None:
        assert self._zip is not None
        try:
            self._zip.add(name, data)
        except BaseException:
            self._state = "failed"
            raise

    def suspend(self) -> None:
        """Write the journal so far and let go of the compressors and the
        write buffer, keeping only open files; `resume` goes on."""
        self._expect("started")
        assert self._zip is not None and self._summaries is not None
        try:
            self._flush_journal()
            self._summaries.suspend()
            self._zip.suspend()
            self._out.flush()
            self._out.detach()
            self._suspended = True
        except BaseException:
            self._state = "failed"
            raise
        self._state = "suspended"

    def resume(self) -> None:
        """Go on after `suspend`, in the same file."""
        self._expect("suspended")
        assert self._zip is not None
        self._out = io.BufferedWriter(self._file, _BUFFER_SIZE)
        self._suspended = False
        self._zip.reopen(self._out)
        self._state = "started"

    def finish(
        self,
        header: EvalLog,
        reductions: Sequence[EvalSampleReductions] | StreamedReductions | None,
    ) -> Path:
        """`complete`, then `publish` under `location`."""
        self.complete(header, reductions)
        return self.publish()

    def complete(
        self,
        header: EvalLog,
        reductions: Sequence[EvalSampleReductions] | StreamedReductions | None,
    ) -> None:
        """Write the summaries, reductions and header, and sync the file,
        still under its `.partial` name.

        `header` gives the header's fields as `EvalRecorder.log_finish`
        writes them (its samples and reductions are ignored); its `eval`
        and `plan` may differ from those given to `start`, for instance
        sample ids known only at the end.
        """
        if self._state == "suspended":
            self.resume()
        self._expect("started")
        assert self._zip is not None and self._summaries is not None
        try:
            self._flush_journal()
            self._summaries.write(b"]")
            self._zip.add_spooled(SUMMARIES_JSON, self._summaries.done())
            self._summaries.close()
            if reductions is not None:
                self._add_reductions(reductions)
            self._zip.add(HEADER_JSON, _json_bytes(_header(header)))
            self._zip.close()
            self._out.flush()
            os.fsync(self._out.fileno())
            self._out.close()
        except BaseException:
            self._state = "failed"
            raise
        self._state = "completed"

    def publish(self, location: Path | None = None) -> Path:
        """Rename the completed file to `location` (by default the one it
        was made for), then sync the directory so the rename is durable."""
        self._expect("completed")
        target = self.location if location is None else location
        try:
            publish(str(self.partial), str(target), replace=False)
            _sync_directory(target.parent)
        except BaseException:
            self._state = "failed"
            raise
        self.location = target
        self._state = "finished"
        return target

    def _add_reductions(
        self, reductions: Sequence[EvalSampleReductions] | StreamedReductions
    ) -> None:
        """`reductions.json`, a reduced score at a time: serialised whole, a
        million of them would be a second copy in memory."""
        assert self._zip is not None
        spool = _CompressedSpool(self.location.parent)
        try:
            spool.write(b"[")
            if isinstance(reductions, StreamedReductions):
                spool.write(_reductions_head(reductions.head))
                for chunk in reductions.samples_json:
                    spool.write(chunk)
                spool.write(b"]}")
            else:
                for index, reduction in enumerate(reductions):
                    if index:
                        spool.write(b",")
                    spool.write(_reductions_head(reduction))
                    for position, sample_score in enumerate(reduction.samples):
                        if position:
                            spool.write(b",")
                        spool.write(_json_bytes(sample_score))
                    spool.write(b"]}")
            spool.write(b"]")
            self._zip.add_spooled(REDUCTIONS_JSON, spool.done())
        finally:
            spool.close()

    # -- giving up ----------------------------------------------------------------

    def abort(self) -> None:
        """Remove the partial file. Safe to call again, and after `finish`
        (when it does nothing); it raises nothing on a full disk, since the
        buffered bytes it fails to write are being thrown away."""
        if self._state in ("finished", "aborted"):
            return
        self._state = "aborted"
        for close in (
            self._file.close if self._suspended else self._out.close,
            *((self._zip.discard,) if self._zip is not None else ()),
            *((self._summaries.close,) if self._summaries is not None else ()),
        ):
            with contextlib.suppress(OSError):
                close()
        self.partial.unlink(missing_ok=True)

    def __enter__(self) -> EvalArchive:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        # An archive left unfinished is never published.
        if self._state != "finished":
            self.abort()

    def _expect(self, state: _State) -> None:
        if self._state != state:
            raise EvalArchiveError(
                f"the archive is {self._state}; this needs it {state}"
            )


def _reductions_head(reductions: EvalSampleReductions) -> bytes:
    """A reduction serialised up to its samples' opening bracket."""
    head = _json_bytes(reductions.model_copy(update={"samples": []}))
    if not head.endswith(b"[]}"):
        raise EvalArchiveError("Inspect's reductions did not serialise as expected")
    return head[:-2]


def _header(log: EvalLog) -> EvalLog:
    """The log as `header.json` holds it: `EvalRecorder.log_finish` builds
    a new `EvalLog` from these fields, so tags and metadata are derived
    afresh and samples, reductions and location left out."""
    return EvalLog(
        version=log.version,
        invalidated=log.invalidated,
        log_updates=log.log_updates,
        config_updates=log.config_updates or None,
        eval=log.eval,
        plan=log.plan,
        results=log.results,
        stats=log.stats,
        status=log.status,
        error=log.error,
    )


def _sync_directory(directory: Path) -> None:
    """Make the rename itself durable."""
    handle = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


class EvalLogWriter:
    """`tracegrade score`'s log writer for the `.eval` format: each sample
    goes into an `EvalArchive` as it is scored, with its summary."""

    def __init__(self, working: Path, eval_spec: EvalSpec, plan: EvalPlan) -> None:
        self._archive = EvalArchive(working)
        self.partial = self._archive.partial
        self.published: Path | None = None
        try:
            self._archive.start(eval_spec, plan)
        except BaseException:
            self._archive.abort()
            raise
        self.spooled = 0

    def add(self, sample_id: str, sample: bytes, data: dict[str, Any]) -> None:
        self._archive.add_sample(sample, sample_summary(data))
        self.spooled += len(sample)

    def suspend(self) -> None:
        self._archive.suspend()

    def resume(self) -> None:
        self._archive.resume()

    def complete(self, header: EvalLog, reductions: StreamedReductions | None) -> None:
        self._archive.complete(header, [] if reductions is None else reductions)

    def publish(self, location: Path) -> None:
        self.published = self._archive.publish(location)

    def abort(self) -> str | None:
        try:
            self._archive.abort()
        except OSError:
            return str(self.partial)
        return None
