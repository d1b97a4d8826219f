"""A log's samples one at a time, each reduced to what report and compare read."""

from __future__ import annotations

import contextlib
import json
import re
import zipfile
import zlib
from collections.abc import Iterator
from typing import IO, Any, Final, NamedTuple
from zipfile import BadZipFile

import ijson  # type: ignore[import-untyped]
import zstandard
from inspect_ai.log import EvalLog, EvalSample
from pydantic_core import from_json

from ..core.errors import quote
from ..lines import ESCAPED_BYTE

# Members over this are streamed, in about `STREAM_READS` reads (yajl rescans).
STREAM_OVER: Final = 16 * 1024 * 1024
STREAM_READS: Final = 16
# The fields of a sample the report reads ("score" for old logs).
READ_FIELDS: Final = frozenset({"id", "epoch", "scores", "score", "error"})
_TOO_DEEP: Final = "it is nested too deeply to read"


class UnreadableLog(ValueError):
    """The log, or one of its samples, cannot be read; says why."""


class ScoreRead(NamedTuple):
    value: Any
    metadata: Any
    explanation: str | None = None


class SampleRead(NamedTuple):
    id: int | str
    epoch: int
    scores: dict[str, ScoreRead]
    errored: bool


def log_samples(path: str) -> Iterator[SampleRead]:
    """The samples of the log at `path`; `UnreadableLog` at the first bad one."""
    return eval_samples(path) if path.endswith(".eval") else json_samples(path)


def sample_read(data: Any) -> SampleRead:
    """The fields read of one sample's JSON, checked as `EvalSample` would."""
    if not isinstance(data, dict):
        raise UnreadableLog(f"a sample must be an object, got {type(data).__name__}")
    if "score" in data:
        return _migrated(data)
    sample_id, epoch, logged = data.get("id"), data.get("epoch"), data.get("scores")
    if (
        not isinstance(sample_id, (str, int))
        or isinstance(sample_id, bool)
        or type(epoch) is not int
    ):
        raise UnreadableLog(
            f"a sample needs an id and an integer epoch, got {quote(sample_id)} "
            f"and {quote(epoch)}"
        )
    if logged is not None and not isinstance(logged, dict):
        raise UnreadableLog(f"sample {quote(sample_id)}: scores must be an object")
    scores: dict[str, ScoreRead] = {}
    for name, score in (logged or {}).items():
        if not isinstance(score, dict) or "value" not in score:
            problem = "has no value"
        elif not isinstance(score.get("metadata"), (dict, type(None))):
            problem = "metadata must be an object"
        elif not isinstance(explanation := score.get("explanation"), (str, type(None))):
            problem = f"explanation must be a string, got {quote(explanation)}"
        else:
            scores[name] = ScoreRead(score["value"], score.get("metadata"), explanation)
            continue
        raise UnreadableLog(f"sample {quote(sample_id)}: score {quote(name)} {problem}")
    return SampleRead(sample_id, epoch, scores, data.get("error") is not None)


def from_eval_sample(sample: EvalSample) -> SampleRead:
    """The same fields of a validated sample."""
    scores = {
        name: ScoreRead(score.value, score.metadata, score.explanation)
        for name, score in (sample.scores or {}).items()
    }
    return SampleRead(sample.id, sample.epoch, scores, sample.error is not None)


def _migrated(data: dict[str, Any]) -> SampleRead:
    try:
        return from_eval_sample(EvalSample.model_validate(data))
    except (ValueError, TypeError) as error:
        # TypeError: both `score` and `scores`, which Inspect refuses so.
        raise UnreadableLog(f"a sample in the old score shape: {error}") from error
    except RecursionError as error:
        raise UnreadableLog(f"a sample in the old score shape: {_TOO_DEEP}") from error


def _not_utf8(byte: int) -> str:
    return f"it holds a byte that is not UTF-8 (0x{byte:02x})"


def _parse(text: bytes) -> Any:
    with contextlib.suppress(ValueError):
        return from_json(text, cache_strings="keys")
    # `json` reads what pydantic refuses and Inspect may write: a lone surrogate.
    try:
        return json.loads(text)
    except UnicodeDecodeError as error:
        raise UnreadableLog(_not_utf8(text[error.start])) from error
    except ValueError as error:
        raise UnreadableLog(f"a sample is not JSON ({error})") from error
    except RecursionError as error:
        raise UnreadableLog(_TOO_DEEP) from error


# What reading a damaged member raises: zipfile's, a corrupt stream's, ours.
_MEMBER_ERRORS = (UnreadableLog, BadZipFile, zlib.error, zstandard.ZstdError, EOFError)

_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, 93)  # 93: zstd


def _open_archive(path: str) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except BadZipFile as error:
        raise UnreadableLog(f"not a ZIP archive ({error})") from error


def eval_samples(path: str) -> Iterator[SampleRead]:
    """A `.eval` log's samples in order; of a name written twice, the last."""
    with _open_archive(path) as archive:
        for info in archive.infolist():
            name = info.filename
            is_sample = name.startswith("samples/") and name.endswith(".json")
            if is_sample and archive.getinfo(name) is info:
                yield _read_member(archive, info)


def eval_header(path: str) -> EvalLog | None:
    """A `.eval` log's `header.json`, or None for a log still being written."""
    with _open_archive(path) as archive:
        if "header.json" not in archive.NameToInfo:
            return None
        try:
            data = _parse(archive.read("header.json"))
        except _MEMBER_ERRORS as error:
            raise UnreadableLog(f"member header.json: {error}") from error
    header = EvalLog.model_validate(data)
    header.location = path
    return header


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> SampleRead:
    try:
        data = None
        if info.file_size > STREAM_OVER:
            with archive.open(info) as stream:
                data = _streamed_fields(stream, info.file_size)
        if data is None:
            data = _parse(_member_data(archive, info))
        return sample_read(data)
    except _MEMBER_ERRORS as error:
        why = str(error)
        if isinstance(error, BadZipFile) and "CRC" in why:
            why = "its data does not match its size and CRC"
        raise UnreadableLog(f"member {info.filename}: {why}") from error


# Read raw past its local header: half the cost of `ZipFile.read`.
def _member_data(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    if info.flag_bits & 0x1:
        raise UnreadableLog("it is encrypted")
    if info.compress_type not in _METHODS:
        raise UnreadableLog(f"compression method {info.compress_type} is not supported")
    file = archive.fp
    assert file is not None
    file.seek(info.header_offset)
    local = file.read(30)  # the lengths of the name and extra field last
    if len(local) < 30 or local[:4] != b"PK\x03\x04":
        raise UnreadableLog("its local header is damaged")
    file.seek(sum(int.from_bytes(local[at : at + 2], "little") for at in (26, 28)), 1)
    data = file.read(info.compress_size)
    if info.compress_type == zipfile.ZIP_DEFLATED:
        data = zlib.decompress(data, -zlib.MAX_WBITS)
    elif info.compress_type != zipfile.ZIP_STORED:
        pieces = []  # zstd: Inspect writes a large member in several frames
        while data:
            unzstd = zstandard.ZstdDecompressor().decompressobj()
            pieces.append(unzstd.decompress(data))
            data = unzstd.unused_data
        data = b"".join(pieces)
    if len(data) != info.file_size or zlib.crc32(data) != info.CRC:
        raise UnreadableLog("its data does not match its size and CRC")
    return data


# None where ijson cannot parse it (NaN): it is then parsed whole.
def _streamed_fields(stream: IO[bytes], size: int) -> dict[str, Any] | None:
    data: dict[str, Any] = {}
    key, builder = "", None
    read = max(1 << 16, -(-size // STREAM_READS))
    try:
        for prefix, event, value in ijson.parse(stream, use_float=True, buf_size=read):
            if prefix != "":
                if builder is not None:
                    builder.event(event, value)
                continue
            if builder is not None:
                data[key] = builder.value
                builder = None
            if event == "map_key" and value in READ_FIELDS:
                key, builder = value, ijson.ObjectBuilder()
    except (ijson.JSONError, ValueError):
        return None
    return data


def json_samples(path: str) -> Iterator[SampleRead]:
    """A `.json` log's samples, one decoded at a time; what follows is not read."""
    # A byte that is not UTF-8 is decoded as a surrogate, to name its sample.
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as file:
        text = _JsonText(file)
        text.take("{")
        while not text.take("}", needed=False):
            key = text.value()
            text.take(":")
            if key == "samples":
                break
            text.value()
            text.take(",", needed=False)
        else:
            return
        if text.peek() == "n":
            return  # null: no samples
        text.take("[")
        position = 0
        while not text.take("]", needed=False):
            if position:
                text.take(",")
            position += 1
            try:
                data = text.value()
            except UnreadableLog as error:
                where = f"sample {position} in file order"
                raise UnreadableLog(f"{where}: {error}") from error
            yield sample_read(data)


_NOT_WHITESPACE = re.compile(r"[^ \t\n\r]")


# `raw_decode` reads NaN, as ijson cannot; the window ends at a byte not UTF-8.
class _JsonText:
    def __init__(self, file: IO[str]) -> None:
        self.file, self.text, self.at = file, "", 0
        self.read_size, self.ended = 1 << 20, False
        self.undecodable: int | None = None

    def _more(self) -> bool:
        if self.undecodable is not None:
            raise UnreadableLog(_not_utf8(self.undecodable))
        chunk = self.file.read(self.read_size)
        if not chunk:
            self.ended = True
            return False
        if (bad := ESCAPED_BYTE.search(chunk)) is not None:
            self.undecodable = ord(bad.group()) - 0xDC00
            chunk = chunk[: bad.start()]
        self.text, self.at = self.text[self.at :] + chunk, 0
        return True

    def peek(self) -> str:
        """The next character that is not whitespace, not consumed."""
        while (found := _NOT_WHITESPACE.search(self.text, self.at)) is None:
            self.at = len(self.text)
            if not self._more():
                raise UnreadableLog("the log ends before its JSON does")
        self.at = found.start()
        return self.text[self.at]

    def take(self, character: str, needed: bool = True) -> bool:
        """Consume `character` if it is next; else refuse, if `needed`."""
        if (found := self.peek()) == character:
            self.at += 1
        elif needed:
            raise UnreadableLog(f"expected {character!r} in the log, got {found!r}")
        return found == character

    def value(self) -> Any:
        self.peek()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.text, self.at)
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


_DECODER = json.JSONDecoder()
