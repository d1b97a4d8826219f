"""A log's samples one at a time, holding only what the report reads.

`read_eval_log` validates every sample as a pydantic `EvalSample` and keeps
the whole log in memory, which on a bulk log of many thousands of samples
is more than a report should cost (`docs/speed.md`). The report needs four
things of a sample: its id and epoch (to name it in an error), its scores'
values and metadata, and whether it errored; `tracegrade compare` also
reads each score's explanation, to show why a run changed. So each sample
is parsed as plain JSON, those are taken, and the rest is dropped before
the next sample is read. Inspect's public per-sample readers
(`read_eval_log_samples`) validate an `EvalSample` each, which alone costs
several times the budget, and its sample summaries drop metadata values
over 1 KB, such as a long list of missing IDs.

`.eval` logs are ZIP archives (`samples/{id}_epoch_{n}.json`): members
are deflated (`tracegrade score`, older Inspect logs) or zstd (`inspect
eval`). The central directory is read with `struct` into a few numbers a
sample member (where it lies, its sizes, method and CRC), not through
`zipfile`, which builds an object for every member as it opens; then
the samples are read in archive order, each dropped before the next; of
a name logged twice, the last, as Inspect reads. What stays in memory
is those numbers and the counters. A
member too large to parse whole (`STREAM_OVER` bytes) is parsed as a
stream with ijson, keeping only the fields read here, as Inspect's
`exclude_fields` does (or whole, if it holds a NaN, which ijson
refuses).

`.json` logs are one JSON object: its values are decoded one at a time
with the standard library, the samples among them, each dropped before
the next (`_JsonText`); what follows the samples is not read.

A sample still in the old `score` shape (one unnamed score) is validated
as an `EvalSample`, which migrates it, so it reads as Inspect reads it.
A sample that cannot be read (not JSON, not UTF-8, nested deeper than
Python's parser goes) raises `UnreadableLog` naming it.
"""

from __future__ import annotations

import itertools
import json
import re
import struct
import zlib
from array import array
from collections.abc import Iterator
from typing import IO, Any, Final, NamedTuple, Protocol

import ijson  # type: ignore[import-untyped]
import zstandard
from inspect_ai.log import EvalLog, EvalSample
from pydantic_core import from_json

from ..core.errors import quote

SAMPLES_DIR: Final = "samples/"
HEADER_MEMBER: Final = "header.json"
_SAMPLES_DIR: Final = SAMPLES_DIR.encode()
_HEADER_MEMBER: Final = HEADER_MEMBER.encode()
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
    """The samples of the log at `path`, `.eval` or else `.json`.

    Raises `UnreadableLog` (or `OSError`) while iterating, at the first
    sample or structure that cannot be read.
    """
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
    with _open_archive(path) as file:
        members = _SampleMembers(file)
        for position in range(len(members)):
            if not members.superseded(position):
                yield _read_member(file, members.entry(position))


def eval_header(path: str) -> EvalLog | None:
    """A `.eval` log's `header.json`, or None if it has none yet (a log
    still being written; Inspect's reader then reads its journal).

    `read_eval_log(header_only=True)` also reads and validates every
    reduced score (`reductions.json`), which the report does not need.
    """
    with _open_archive(path) as file:
        found = next(
            (entry for entry in _directory(file) if entry.name == _HEADER_MEMBER),
            None,
        )
        if found is None:
            return None
        try:
            _, _, raw = _local_member(file, found, with_data=True)
            assert raw is not None
            data = _parse(_decompressed(raw, found))
        except _MEMBER_ERRORS as error:
            raise UnreadableLog(f"member {HEADER_MEMBER}: {error}") from error
    header = EvalLog.model_validate(data)
    header.location = path
    return header


def _open_archive(path: str) -> IO[bytes]:
    return open(path, "rb")


# --- the ZIP archive -------------------------------------------------------------
#
# The archive is read with `struct` and `zlib` or `zstandard`, not
# `zipfile`: a `ZipFile` builds a `ZipInfo` for every member as it opens,
# memory that grows with the log, where the report needs one member at a
# time. The central directory is read a
# chunk at a time into a few numbers a sample member (`_SampleMembers`).

_END = struct.Struct("<4s4H2LH")
_END_SIGNATURE = b"PK\x05\x06"
_END64_LOCATOR = struct.Struct("<4sLQL")
_END64_LOCATOR_SIGNATURE = b"PK\x06\x07"
_END64 = struct.Struct("<4sQ2H2L4Q")
_END64_SIGNATURE = b"PK\x06\x06"
_CENTRAL = struct.Struct("<4s6H3L5H2L")
_CENTRAL_SIGNATURE = b"PK\x01\x02"
_LOCAL = struct.Struct("<4s5H3L2H")
_LOCAL_SIGNATURE = b"PK\x03\x04"
_ZIP64_EXTRA = 0x0001
_STORED, _DEFLATED, _ZSTD = 0, 8, 93
_ENCRYPTED = 0x1
_LIMIT32 = 0xFFFFFFFF
_HASH_BITS = 1 << 24


class _Entry(NamedTuple):
    """One member, as its central directory entry describes it (its name
    as stored, undecoded: names are only compared)."""

    name: bytes
    offset: int
    compressed: int
    size: int
    method: int
    flags: int
    crc: int


def _directory(file: IO[bytes]) -> Iterator[_Entry]:
    """The central directory's entries, in archive order, read a chunk at a
    time."""
    start, count = _find_directory(file)
    file.seek(start)
    buffer = b""
    at = 0

    def holds(length: int) -> bool:
        nonlocal buffer, at
        if len(buffer) - at < length:
            pieces = [buffer[at:]]
            held = len(pieces[0])
            while held < length and (piece := file.read(max(_CHUNK, length))):
                pieces.append(piece)
                held += len(piece)
            buffer, at = b"".join(pieces), 0
        return len(buffer) - at >= length

    for _ in range(count):
        if not holds(_CENTRAL.size) or buffer[at : at + 4] != _CENTRAL_SIGNATURE:
            raise UnreadableLog("its central directory is damaged")
        fields = _CENTRAL.unpack_from(buffer, at)
        (_, _, _, flags, method, _, _, crc, compressed, size) = fields[:10]
        name_length, extra_length, comment_length = fields[10:13]
        offset = fields[16]
        length = _CENTRAL.size + name_length + extra_length + comment_length
        if not holds(length):
            raise UnreadableLog("its central directory is damaged")
        name_end = at + _CENTRAL.size + name_length
        name = buffer[at + _CENTRAL.size : name_end]
        if _LIMIT32 in (compressed, size, offset):
            size, compressed, offset = _zip64_sizes(
                buffer[name_end : name_end + extra_length], size, compressed, offset
            )
        yield _Entry(name, offset, compressed, size, method, flags, crc)
        at += length


def _find_directory(file: IO[bytes]) -> tuple[int, int]:
    """Where the central directory starts, and how many entries it has."""
    file.seek(0, 2)
    end = file.tell()
    # The end record is 22 bytes and a comment of at most 65,535.
    tail_start = max(0, end - _END.size - 0xFFFF)
    file.seek(tail_start)
    tail = file.read()
    found = tail.rfind(_END_SIGNATURE)
    if found < 0 or len(tail) - found < _END.size:
        raise UnreadableLog("not a ZIP archive (no end of central directory)")
    fields = _END.unpack_from(tail, found)
    count, start = fields[4], fields[6]
    locator_at = found - _END64_LOCATOR.size
    if (
        locator_at >= 0
        and tail[locator_at : locator_at + 4] == _END64_LOCATOR_SIGNATURE
    ):
        end64_at = _END64_LOCATOR.unpack_from(tail, locator_at)[2]
        file.seek(end64_at)
        record = file.read(_END64.size)
        if len(record) < _END64.size or record[:4] != _END64_SIGNATURE:
            raise UnreadableLog("not a ZIP archive (its zip64 end record is damaged)")
        end64 = _END64.unpack(record)
        count, start = end64[7], end64[9]
    return start, count


def _zip64_sizes(
    extra: bytes, size: int, compressed: int, offset: int
) -> tuple[int, int, int]:
    """The 64-bit sizes and offset a zip64 extra field holds for those
    the entry gives as 0xFFFFFFFF, in that order."""
    at = 0
    while at + 4 <= len(extra):
        kind, length = struct.unpack_from("<2H", extra, at)
        if kind == _ZIP64_EXTRA:
            values = iter(struct.unpack_from(f"<{length // 8}Q", extra, at + 4))
            try:
                size = next(values) if size == _LIMIT32 else size
                compressed = next(values) if compressed == _LIMIT32 else compressed
                offset = next(values) if offset == _LIMIT32 else offset
            except StopIteration:
                break
            return size, compressed, offset
        at += 4 + length
    raise UnreadableLog("its central directory is damaged (a zip64 size is missing)")


class _SampleMembers:
    """The sample members of an archive, a few numbers each, and which of
    them a later member of the same name supersedes."""

    def __init__(self, file: IO[bytes]) -> None:
        self._offsets = array("Q")
        self._compressed = array("Q")
        self._sizes = array("Q")
        self._methods = array("L")
        self._crcs = array("L")
        hashes = array("q")
        for entry in _directory(file):
            if _is_sample(entry.name):
                self._offsets.append(entry.offset)
                self._compressed.append(entry.compressed)
                self._sizes.append(entry.size)
                self._methods.append(entry.method << 16 | entry.flags)
                self._crcs.append(entry.crc)
                hashes.append(hash(entry.name))
        self._superseded = _superseded(file, hashes) if hashes else set()

    def __len__(self) -> int:
        return len(self._offsets)

    def superseded(self, position: int) -> bool:
        return position in self._superseded

    def entry(self, position: int) -> _Entry:
        method = self._methods[position]
        return _Entry(
            b"",
            self._offsets[position],
            self._compressed[position],
            self._sizes[position],
            method >> 16,
            method & 0xFFFF,
            self._crcs[position],
        )


def _superseded(file: IO[bytes], hashes: array[int]) -> set[int]:
    """The positions of the sample members a later one of the same name
    replaces. Names are compared by hash first, and by name only where
    two hashes agree, so no name is kept for a log without repeats.

    The hashes seen are marked in a bitmap, not a set: a set of every
    hash would be the largest thing the report holds. A hash whose bit
    was already set is a candidate, counted exactly in a second pass.
    """
    bits = bytearray(_HASH_BITS // 8)
    candidates: set[int] = set()
    for value in hashes:
        slot = value & (_HASH_BITS - 1)
        if bits[slot >> 3] & (1 << (slot & 7)):
            candidates.add(value)
        else:
            bits[slot >> 3] |= 1 << (slot & 7)
    del bits
    seen: set[int] = set()
    repeated: set[int] = set()
    for value in hashes:
        if value in candidates:
            (repeated if value in seen else seen).add(value)
    if not repeated:
        return set()
    last: dict[bytes, int] = {}
    superseded: set[int] = set()
    position = 0
    for entry in _directory(file):
        if not _is_sample(entry.name):
            continue
        if hashes[position] in repeated:
            earlier = last.get(entry.name)
            if earlier is not None:
                superseded.add(earlier)
            last[entry.name] = position
        position += 1
    return superseded


def _is_sample(name: bytes) -> bool:
    return name.startswith(_SAMPLES_DIR) and name.endswith(b".json")


# What reading a damaged member raises: a truncated or corrupt stream's
# errors, and invalid JSON (UnreadableLog).
_MEMBER_ERRORS = (UnreadableLog, zlib.error, zstandard.ZstdError, EOFError)


def _read_member(file: IO[bytes], entry: _Entry) -> SampleRead:
    name = b""
    try:
        whole = entry.size <= STREAM_OVER
        name, data_start, raw = _local_member(file, entry, with_data=whole)
        if entry.flags & _ENCRYPTED:
            raise UnreadableLog("it is encrypted")
        data = None
        if raw is None:
            data = _streamed_fields(_MemberStream(file, entry, data_start), entry.size)
            if data is None:
                _, _, raw = _local_member(file, entry, with_data=True)
        if data is None:
            assert raw is not None
            data = _parse(_decompressed(raw, entry))
        return sample_read(data)
    except _MEMBER_ERRORS as error:
        # Bit 11: the name is UTF-8; else CP437, as zipfile reads it.
        shown = name.decode("utf-8" if entry.flags & 0x800 else "cp437", "replace")
        raise UnreadableLog(f"member {shown or entry.offset}: {error}") from error


def _local_member(
    file: IO[bytes], entry: _Entry, *, with_data: bool
) -> tuple[bytes, int, bytes | None]:
    """The member's stored name, where its data starts, and (`with_data`)
    its compressed data, read with its local header in one read."""
    file.seek(entry.offset)
    header = file.read(_LOCAL.size)
    if len(header) < _LOCAL.size or header[:4] != _LOCAL_SIGNATURE:
        raise UnreadableLog("its local header is damaged")
    fields = _LOCAL.unpack(header)
    name_length, extra_length = fields[9], fields[10]
    data_start = entry.offset + _LOCAL.size + name_length + extra_length
    if not with_data:
        return file.read(name_length), data_start, None
    rest = file.read(name_length + extra_length + entry.compressed)
    raw = rest[name_length + extra_length :]
    if len(raw) < entry.compressed:
        raise UnreadableLog("the archive ends inside it")
    return rest[:name_length], data_start, raw


def _decompressed(raw: bytes, entry: _Entry) -> bytes:
    """The member's data, decompressed and checked against its size and CRC."""
    if entry.method == _DEFLATED:
        data = zlib.decompress(raw, -zlib.MAX_WBITS)
    elif entry.method == _ZSTD:
        unzstd = _Unzstd()
        data = unzstd.decompress(raw)
        if not unzstd.ended:
            raise UnreadableLog("its zstd stream is cut short")
    elif entry.method == _STORED:
        data = raw
    else:
        raise UnreadableLog(f"compression method {entry.method} is not supported")
    if len(data) != entry.size or zlib.crc32(data) != entry.crc:
        raise UnreadableLog("its data does not match its size and CRC")
    return data


class _Unzstd:
    """Decompresses a zstd member of any number of frames (Inspect writes
    several); a zstandard decompression object reads one."""

    def __init__(self) -> None:
        self._frame = zstandard.ZstdDecompressor().decompressobj()
        self.ended = False

    def decompress(self, raw: bytes) -> bytes:
        pieces = []
        while raw:
            pieces.append(self._frame.decompress(raw))
            self.ended = self._frame.eof
            raw = self._frame.unused_data if self.ended else b""
            if raw:
                self._frame = zstandard.ZstdDecompressor().decompressobj()
        return b"".join(pieces)


class _MemberStream:
    """A member's decompressed data as a stream, for one too large to
    hold decompressed whole."""

    def __init__(self, file: IO[bytes], entry: _Entry, data_start: int) -> None:
        self._file = file
        self._at = data_start
        self._left = entry.compressed
        self._method = entry.method
        self._pending = b""
        self._inflate: Any
        if entry.method == _DEFLATED:
            self._inflate = zlib.decompressobj(-zlib.MAX_WBITS)
        elif entry.method == _ZSTD:
            self._inflate = _Unzstd()
        elif entry.method != _STORED:
            raise UnreadableLog(f"compression method {entry.method} is not supported")

    def read(self, wanted: int = -1) -> bytes:
        while (wanted < 0 or len(self._pending) < wanted) and self._left:
            self._file.seek(self._at)
            raw = self._file.read(min(self._left, _CHUNK))
            if not raw:
                raise UnreadableLog("the archive ends inside it")
            self._at += len(raw)
            self._left -= len(raw)
            self._pending += (
                raw if self._method == _STORED else self._inflate.decompress(raw)
            )
        if wanted < 0 or wanted >= len(self._pending):
            chunk, self._pending = self._pending, b""
        else:
            chunk, self._pending = self._pending[:wanted], self._pending[wanted:]
        return chunk


class _Readable(Protocol):
    def read(self, wanted: int = -1, /) -> bytes: ...


def _streamed_fields(stream: _Readable, size: int) -> dict[str, Any] | None:
    """The top-level `READ_FIELDS` of a JSON object of `size` bytes read as
    a stream; the other fields are parsed past without being built.

    The stream is read in `STREAM_READS` pieces or so: yajl, ijson's
    parser, scans a value split across reads again from its start at each
    read, so a value of n pieces costs n times its length. Few pieces keep
    the reading linear; none is held longer than it takes to parse.

    None when ijson cannot parse it (NaN, Infinity, an integer over 64
    bits): the member is then parsed whole, as Inspect does then.
    """
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
    """The samples of a `.json` log, in file order, one parsed at a time.

    The log is one JSON object. Its top-level values are decoded in turn
    until `samples`, whose items are then decoded and dropped one by one;
    what follows the samples is not read.
    """
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
    """JSON text read a window at a time, decoded a value at a time.

    `json.JSONDecoder.raw_decode` decodes one value where it starts and
    says where it ends; the window grows when a value does not fit, twice
    as much each time, so a huge sample costs a few tries, not one per
    chunk. The standard library parser reads the NaN and Infinity that
    Inspect writes (an unscored extraction's value is NaN), which ijson
    refuses, and parses a sample faster than ijson builds one.

    The window ends before the first byte that is not UTF-8 (read as a
    lone surrogate): a value that needs what lies past it is unreadable.
    """

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
