"""A log's samples one at a time, each reduced to what report and compare
read (id, epoch, scores, error) before the next: `read_eval_log` would hold
and validate them all (docs/architecture.md, "Reading logs")."""

from __future__ import annotations

import itertools
import json
import re
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any, Final, NamedTuple, Protocol

import ijson  # type: ignore[import-untyped]
import zstandard
from inspect_ai.log import EvalLog, EvalSample
from pydantic_core import from_json

from ..core.errors import quote

SAMPLES_DIR: Final = "samples/"
HEADER_MEMBER: Final = "header.json"
# Members above this many bytes of JSON are parsed as a stream.
STREAM_OVER: Final = 16 * 1024 * 1024
# A member parsed as a stream is read in about this many pieces.
STREAM_READS: Final = 16
# The fields of a sample the report reads ("score" for old logs).
READ_FIELDS: Final = frozenset({"id", "epoch", "scores", "score", "error"})

_MIN_READ = 1 << 16
_CHUNK = 1 << 20


class UnreadableLog(ValueError):
    """The log, or one of its samples, cannot be read; says why."""


class ScoreRead(NamedTuple):
    """A score's value, metadata and explanation, as logged."""

    value: Any
    metadata: Any
    explanation: str | None = None


class SampleRead(NamedTuple):
    """What the report reads of one sample."""

    id: int | str
    epoch: int
    scores: dict[str, ScoreRead]
    errored: bool


def log_samples(path: str) -> Iterator[SampleRead]:
    """The samples of the log at `path`, `.eval` or else `.json`; raises
    `UnreadableLog` (or `OSError`) at the first one that cannot be read."""
    if path.endswith(".eval"):
        return eval_samples(path)
    return json_samples(path)


def sample_read(data: Any) -> SampleRead:
    """The fields the report reads of one sample's JSON, checked as
    `EvalSample` would check them."""
    if not isinstance(data, dict):
        raise UnreadableLog(f"a sample must be an object, got {type(data).__name__}")
    if "score" in data:
        return _migrated(data)
    sample_id = data.get("id")
    epoch = data.get("epoch")
    if (
        not isinstance(sample_id, (str, int))
        or isinstance(sample_id, bool)
        or type(epoch) is not int
    ):
        raise UnreadableLog(
            f"a sample needs an id and an integer epoch, got {quote(sample_id)} "
            f"and {quote(epoch)}"
        )
    logged = data.get("scores")
    scores: dict[str, ScoreRead] = {}
    if logged is not None:
        if not isinstance(logged, dict):
            raise UnreadableLog(f"sample {quote(sample_id)}: scores must be an object")
        for name, score in logged.items():
            if not isinstance(score, dict) or "value" not in score:
                raise UnreadableLog(
                    f"sample {quote(sample_id)}: score {quote(name)} has no value"
                )
            metadata = score.get("metadata")
            if metadata is not None and not isinstance(metadata, dict):
                raise UnreadableLog(
                    f"sample {quote(sample_id)}: score {quote(name)} metadata must be "
                    "an object"
                )
            explanation = score.get("explanation")
            if explanation is not None and not isinstance(explanation, str):
                raise UnreadableLog(
                    f"sample {quote(sample_id)}: score {quote(name)} explanation "
                    f"must be a string, got {quote(explanation)}"
                )
            scores[name] = ScoreRead(score["value"], metadata, explanation)
    return SampleRead(sample_id, epoch, scores, data.get("error") is not None)


def from_eval_sample(sample: EvalSample) -> SampleRead:
    """The same fields of a validated sample."""
    return SampleRead(
        sample.id,
        sample.epoch,
        {
            name: ScoreRead(score.value, score.metadata, score.explanation)
            for name, score in (sample.scores or {}).items()
        },
        sample.error is not None,
    )


def _migrated(data: dict[str, Any]) -> SampleRead:
    try:
        return from_eval_sample(EvalSample.model_validate(data))
    except (ValueError, TypeError) as error:
        # TypeError: both `score` and `scores`, which Inspect refuses so.
        raise UnreadableLog(f"a sample in the old score shape: {error}") from error
    except RecursionError as error:
        raise UnreadableLog(f"a sample in the old score shape: {_TOO_DEEP}") from error


_TOO_DEEP: Final = "it is nested too deeply to read"


def _not_utf8(byte: int) -> str:
    return f"it holds a byte that is not UTF-8 (0x{byte:02x})"


def _parse(text: bytes) -> Any:
    try:
        return from_json(text, cache_strings="keys")
    except ValueError:
        # The standard library reads what Inspect may have written that
        # pydantic refuses, such as a lone surrogate escape.
        try:
            return json.loads(text)
        except UnicodeDecodeError as error:
            raise UnreadableLog(_not_utf8(text[error.start])) from error
        except ValueError as error:
            raise UnreadableLog(f"a sample is not JSON ({error})") from error
        except RecursionError as error:
            raise UnreadableLog(_TOO_DEEP) from error


# --- .eval logs ------------------------------------------------------------------


def eval_samples(path: str) -> Iterator[SampleRead]:
    """The samples of a `.eval` log, in archive order, each read once; of a
    name written twice (a re-logged sample), only the last, as Inspect."""
    with _open_archive(path) as archive:
        for info in archive.infolist():
            name = info.filename
            if _is_sample(name) and archive.getinfo(name) is info:
                yield _read_member(archive, info)


def eval_header(path: str) -> EvalLog | None:
    """A `.eval` log's `header.json`, or None for a log still being written.
    Not `read_eval_log(header_only=True)`, which also validates every
    reduced score, which the report does not need."""
    with _open_archive(path) as archive:
        if HEADER_MEMBER not in archive.NameToInfo:
            return None
        try:
            data = _parse(archive.read(HEADER_MEMBER))
        except _MEMBER_ERRORS as error:
            raise UnreadableLog(f"member {HEADER_MEMBER}: {error}") from error
    header = EvalLog.model_validate(data)
    header.location = path
    return header


@contextmanager
def _open_archive(path: str) -> Iterator[zipfile.ZipFile]:
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile as error:
        raise UnreadableLog(f"not a ZIP archive ({error})") from error
    with archive:
        yield archive


def _is_sample(name: str) -> bool:
    return name.startswith(SAMPLES_DIR) and name.endswith(".json")


# What reading a damaged member raises: zipfile's (a bad header or CRC),
# a corrupt stream's, invalid JSON.
_MEMBER_ERRORS = (
    UnreadableLog,
    zipfile.BadZipFile,
    zlib.error,
    zstandard.ZstdError,
    EOFError,
)
# zstd, as Inspect writes it: importing `inspect_ai.log` teaches `zipfile` to
# read it before Python 3.14 (tests/test_inspect_internals.py holds this).
_METHODS = (
    zipfile.ZIP_STORED,
    zipfile.ZIP_DEFLATED,
    getattr(zipfile, "ZIP_ZSTANDARD", 93),
)


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> SampleRead:
    try:
        if info.flag_bits & 0x1:
            raise UnreadableLog("it is encrypted")
        if info.compress_type not in _METHODS:
            raise UnreadableLog(
                f"compression method {info.compress_type} is not supported"
            )
        data = None
        if info.file_size > STREAM_OVER:
            with archive.open(info) as stream:
                data = _streamed_fields(stream, info.file_size)
        if data is None:
            data = _parse(archive.read(info))
        return sample_read(data)
    except _MEMBER_ERRORS as error:
        raise UnreadableLog(f"member {info.filename}: {error}") from error


class _Readable(Protocol):
    def read(self, wanted: int = -1, /) -> bytes: ...


def _streamed_fields(stream: _Readable, size: int) -> dict[str, Any] | None:
    """The top-level `READ_FIELDS` of a JSON object of `size` bytes, read
    in about `STREAM_READS` pieces (yajl rescans a split value at each read);
    None where ijson cannot parse it (NaN), to be parsed whole, as Inspect does."""
    data: dict[str, Any] = {}
    key: str | None = None
    builder: Any = None
    pieces = max(_MIN_READ, -(-size // STREAM_READS))
    try:
        for prefix, event, value in ijson.parse(
            stream, use_float=True, buf_size=pieces
        ):
            if prefix == "":
                if builder is not None:
                    data[key or ""] = builder.value
                    builder = None
                if event == "map_key":
                    key = value
                    if value in READ_FIELDS:
                        builder = ijson.ObjectBuilder()
            elif builder is not None:
                builder.event(event, value)
    except (ijson.JSONError, ValueError):
        return None
    return data


# --- .json logs ------------------------------------------------------------------


def json_samples(path: str) -> Iterator[SampleRead]:
    """The samples of a `.json` log, in file order, one decoded at a time;
    what follows `samples` is not read."""
    # Bytes that are not UTF-8 are decoded as lone surrogates, so that the
    # sample they are in, not the read that met them, is named.
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as file:
        text = _JsonText(file)
        text.expect("{")
        while text.peek() != "}":
            key = text.value()
            text.expect(":")
            if key == "samples":
                yield from _samples_array(text)
                return
            text.value()
            if text.peek() == ",":
                text.expect(",")


def _samples_array(text: _JsonText) -> Iterator[SampleRead]:
    if text.peek() == "n":
        text.value()  # null: no samples
        return
    text.expect("[")
    if text.peek() == "]":
        return
    for position in itertools.count(1):
        try:
            data = text.value()
        except UnreadableLog as error:
            raise UnreadableLog(f"sample {position} in file order: {error}") from error
        yield sample_read(data)
        if text.peek() == "]":
            return
        text.expect(",")


class _JsonText:
    """JSON text decoded a value at a time by `raw_decode` through a window
    that doubles when a value does not fit (docs/architecture.md, "Reading
    logs"); it ends before the first byte that is not UTF-8."""

    def __init__(self, file: IO[str]) -> None:
        self.file = file
        self.text = ""
        self.at = 0
        self.read_size = _CHUNK
        self.ended = False
        self.decoder = json.JSONDecoder()
        self.undecodable: int | None = None
        """The first byte that is not UTF-8, once read."""

    def _more(self) -> bool:
        if self.undecodable is not None:
            raise UnreadableLog(_not_utf8(self.undecodable))
        chunk = self.file.read(self.read_size)
        if not chunk:
            self.ended = True
            return False
        if (bad := _UNDECODABLE.search(chunk)) is not None:
            self.undecodable = ord(bad.group()) - 0xDC00
            chunk = chunk[: bad.start()]
        self.text = self.text[self.at :] + chunk
        self.at = 0
        return True

    def peek(self) -> str:
        """The next character that is not whitespace, not consumed."""
        while True:
            found = _NOT_WHITESPACE.search(self.text, self.at)
            if found is not None:
                self.at = found.start()
                return self.text[self.at]
            self.at = len(self.text)
            if not self._more():
                raise UnreadableLog("the log ends before its JSON does")

    def expect(self, character: str) -> None:
        found = self.peek()
        if found != character:
            raise UnreadableLog(f"expected {character!r} in the log, got {found!r}")
        self.at += 1

    def value(self) -> Any:
        self.peek()
        while True:
            try:
                value, end = self.decoder.raw_decode(self.text, self.at)
            except json.JSONDecodeError as error:
                if self.ended:
                    raise UnreadableLog(f"not JSON ({error})") from error
                end = None
            except RecursionError as error:
                raise UnreadableLog(_TOO_DEEP) from error
            # A value that ends with the window may be a number cut short.
            if end is not None and (end < len(self.text) or self.ended):
                self.at = end
                return value
            if len(self.text) - self.at >= self.read_size:
                self.read_size *= 2
            self._more()


_NOT_WHITESPACE = re.compile(r"[^ \t\n\r]")
# What `surrogateescape` decodes a byte that is not UTF-8 to; valid UTF-8
# never decodes to a surrogate.
_UNDECODABLE = re.compile("[\udc80-\udcff]")


__all__ = [
    "READ_FIELDS",
    "STREAM_OVER",
    "SampleRead",
    "ScoreRead",
    "UnreadableLog",
    "eval_samples",
    "from_eval_sample",
    "json_samples",
    "log_samples",
    "sample_read",
]
